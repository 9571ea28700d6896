/* gpt.cu - a GPT-2 trained with zero on GPUs: the model of gpt_model.h, its
   forward and backward in gpt_cuda.cuh (CUDA kernels and cuBLAS, fp32 / fp16
   / bf16), every ZeRO stage and offload option from a DeepSpeed config or
   flags. One process per GPU: started by hand it forks one per visible GPU;
   under torchrun --no-python, srun or mpirun each process is a rank.

       build/gpt --preset 124M --stage 2 --dtype bf16 --batch 8 --steps 200
       build/gpt --config ds_config.json --preset 1.5B --recompute
       build/gpt --preset 1.5B --synthetic --find-max-batch --steps 20
       build/gpt --init-from gpt2/ --data train.bin --eval val.u16 --seq 1024
       CUDA_VISIBLE_DEVICES=0 build/gpt ...                      one GPU

   Each block is an engine group (one stage-3 gather); the model fetches and
   releases a block around its forward and its backward and hands each
   gradient to the engine as soon as it is written, so reductions overlap
   the rest of the backward. Rank 0 prints every steps_per_print steps the
   loss, tokens/s, model TFLOP/s and MFU (gpt_flops_per_token: 6 per matrix
   parameter + 12 L C T per token; the peak is the GPU's dense bf16/fp16
   tensor rate, 989.4 TFLOP/s for an H100 / H200 SXM, or --peak-tflops),
   GPU and host memory, skipped steps and the loss scale, and writes the same
   as JSONL (--metrics). --init-from starts from a Hugging Face GPT-2
   (config.json and safetensors, read by each rank through
   zero_safetensors_bind); --eval prints the loss of a fixed batch before
   and after training. make builds it (build/gpt); docs/gpt.md has more. */
#define ZERO_IMPLEMENTATION
#include "zero.h"
#include "zero_cuda.cuh"
#include "zero_offload.h"
#include "gpt_cuda.cuh"
#include "../tool_args.h" /* tool_int, tool_num: the flags' numbers, range-checked */

#include <algorithm>
#include <glob.h>
#include <string>
#include <vector>

/* ---- options ---- */

typedef struct options {
    gpt_dims d;
    const char *preset, *config, *metrics, *save, *load, *export_path, *nvme;
    const char *init_from, *eval, *eval_logits;
    std::vector<std::string> data;
    int data_kind; /* GPT_DATA_*: every --data file's */
    int synthetic, stage, batch, gas, steps, warmup, print_every, recompute, find_max, tf32, quiet, no_flash, no_lt;
    int has_stage, has_batch, has_gas, has_lr, has_dtype, has_layers, has_dim, has_heads, has_seq, has_vocab;
    int gas_auto; /* --gas auto: the accumulation from a measured step (zero_set_train_batch_size) */
    zero_dtype dtype;
    int offload_opt, offload_param; /* -1: as the config says */
    double offload_ratio;           /* --offload-ratio: offload_optimizer.ratio (0: as the config says) */
    int optimizer;                  /* --optimizer: a zero_optimizer_type; -1: as the config says */
    int no_overlap;                 /* --no-overlap-cpu-step */
    int grad_any_order;             /* --grad-any-order: ZERO_TENSOR_GRAD_ANY_ORDER on wte */
    int zero_alloc;                 /* --zero-alloc: the parameters in the program's own zero_alloc allocation */
    int auto_plan;                  /* --auto: the ZeRO options from zero_estimate_plan (choose_plan) */
    double tokens;                  /* --tokens: a step's tokens on all GPUs (--auto searches batch and gas) */
    double auto_ratio, auto_max_live; /* --auto's offload_optimizer.ratio (0: 1), the pool's parameters (0: derived) */
    int auto_params_host;             /* --auto: with a ratio and the parameters offloaded, the kept units' too */
    int auto_group;                 /* --auto's mics_shard_size (0: the world) */
    double lr, peak_tflops, attn_mib;
    uint64_t seed;
} options;

static void usage(void) {
    printf("usage: gpt [options]   (one process per visible GPU)\n"
           "model:\n"
           "  --preset 124M|350M|774M|1.5B   GPT-2's shapes (default 124M)\n"
           "  --layers N --dim N --heads N   or any shape (dim a multiple of heads)\n"
           "  --seq N                        context length (default 1024; with --init-from at most n_positions)\n"
           "  --vocab N                      with --synthetic (default 256, the byte vocabulary) or token files\n"
           "                                 (default 50257, GPT-2's)\n"
           "  --init-from DIR                a Hugging Face GPT2LMHeadModel directory: config.json gives the shape\n"
           "                                 (the flags above may only repeat it), model.safetensors (or a sharded\n"
           "                                 model.safetensors.index.json) the initial weights\n"
           "data:\n"
           "  --data FILE[,FILE]             text, one token per byte (default: this repository's docs and\n"
           "                                 sources), or GPT-2 token ids: llm.c's token files (*.bin, a 1024-byte\n"
           "                                 header, magic 20240520) or raw little-endian uint16 files (*.u16)\n"
           "  --synthetic                    uniform random tokens (for speed and memory runs)\n"
           "  --eval FILE                    a fixed batch: raw uint16 ids, B rows of seq + 1; its mean next-token\n"
           "                                 loss is printed after the engine is created (and --load) and again\n"
           "                                 after training (\"eval loss X (before training, B x T tokens)\")\n"
           "  --eval-logits FILE             the last evaluation's logits, float32 [B, seq, vocab] (rank 0)\n"
           "training:\n"
           "  --config ds_config.json        a DeepSpeed config (the flags below override it)\n"
           "  --stage 0|1|2|3  --dtype fp32|fp16|bf16  --batch N (micro-batch per GPU)  --gas N|auto\n"
           "                                 auto: after a warm-up step and a timed one at accumulation 2, the\n"
           "                                 least accumulation whose step is within 1.25x of its compute\n"
           "                                 (the fastest micro-batch; at most 64)\n"
           "  --offload-optimizer none|cpu|nvme  --offload-param none|cpu|nvme  --nvme-path DIR\n"
           "  --offload-ratio R                 offload_optimizer.ratio (0 < R <= 1; stage 3, cpu): the share R of the\n"
           "                                 optimizer state on the CPU, the rest's units on the GPU, spread through\n"
           "                                 the layers (ZERO_RATIO_UNITS=first: the leading units)\n"
           "  --lr X  --steps N (default 50; 0: evaluate only)  --seed N\n"
           "  --optimizer adamw|lion|adagrad|sgd|lamb|muon  the optimizer (default AdamW, or the config's); sgd with\n"
           "                                 momentum 0.9; lamb: DeepSpeed's FusedLamb;\n"
           "                                 muon: the blocks' matrices at lr 0.02, wte and wpe (AdamW) at --lr,\n"
           "                                 WarmupCosineLR scaling each side's own lr\n"
           "  --recompute                    activation checkpointing per block\n"
           "  --auto [--tokens N]            the stage, hybrid group, offloads (a ratio, the parameters kept in the\n"
           "                                 pool), recompute and, with --tokens (a step's tokens on all GPUs), the\n"
           "                                 micro-batch and accumulation: zero_estimate_plan's fastest option that\n"
           "                                 fits this machine (every GPU's memory, the node's MemAvailable);\n"
           "                                 --offload-optimizer cpu keeps it to offloaded options\n"
           "  --no-overlap-cpu-step          stage 3 with both offloads to the CPU: the whole CPU Adam in zero_step\n"
           "                                 (cfg.overlap_cpu_step = 0), not beside the next forward\n"
           "  --zero-alloc                   the parameters in one allocation of the program's from zero_alloc, each\n"
           "                                 tensor's .data pointing into it (stage 3: backed only where gathered,\n"
           "                                 zero_param returns those pointers; stages 0-2: plain memory)\n"
           "  --grad-any-order               mark wte ZERO_TENSOR_GRAD_ANY_ORDER: stages 2-3 plan its gradient\n"
           "                                 buffer at create instead of finding the tied embedding in the first\n"
           "                                 micro-batch (the same training; for comparing speed)\n"
           "  --tf32                         TF32 tensor cores for fp32 GEMMs\n"
           "  --attn-mib N                   scratch cap for unfused attention and the head's logits (default 1024)\n"
           "  --no-lt                        cuBLAS and separate bias / GELU / bias-gradient kernels, not cuBLASLt's\n"
           "                                 fused epilogues (the same math; for comparison)\n"
           "  --no-flash                     attention through cuBLAS with the scores in memory, not the fused\n"
           "                                 kernels (which need fp16/bf16, head size 64 or 128, seq %% 64 == 0)\n"
           "output:\n"
           "  --print-every N                (default: steps_per_print, else 10)\n"
           "  --warmup N                     steps left out of the timing summary (default 3)\n"
           "  --metrics FILE.jsonl           JSON lines: start, every print, end (rank 0)\n"
           "  --peak-tflops X                for MFU (default: 989.4 on H100 / H200 for fp16/bf16)\n"
           "  --find-max-batch               the largest micro-batch that fits, then train with it\n"
           "  --load DIR  --save DIR         zero_load before training, zero_save after\n"
           "  --export FILE.safetensors      the trained weights (fp32) after training, HF GPT-2's names without\n"
           "                                 \"transformer.\" (beside --init-from's config.json it is a model directory)\n"
           "  --quiet\n"
           "A bad flag or value is one line on stderr and exit status 2.\n");
}

static int parse_offload(const char *v, int *out) {
    if (!v) return 1;
    if (!strcmp(v, "none")) *out = ZERO_OFFLOAD_NONE;
    else if (!strcmp(v, "cpu")) *out = ZERO_OFFLOAD_CPU;
    else if (!strcmp(v, "nvme")) *out = ZERO_OFFLOAD_NVME;
    else return 1;
    return 0;
}

static int parse_optimizer(const char *v, int *out) {
    if (!v) return 1;
    if (!strcmp(v, "adamw")) *out = ZERO_OPTIMIZER_ADAMW;
    else if (!strcmp(v, "lion")) *out = ZERO_OPTIMIZER_LION;
    else if (!strcmp(v, "adagrad")) *out = ZERO_OPTIMIZER_ADAGRAD;
    else if (!strcmp(v, "sgd")) *out = ZERO_OPTIMIZER_SGD;
    else if (!strcmp(v, "lamb")) *out = ZERO_OPTIMIZER_LAMB;
    else if (!strcmp(v, "muon")) *out = ZERO_OPTIMIZER_MUON;
    else return 1;
    return 0;
}

/* A flag's whole number in [lo, hi], or one line on stderr (tool_args.h's) and 1 */
static int flag_int(const char *flag, const char *v, long long lo, long long hi, int *out) {
    long long n = 0;
    if (tool_int("gpt", flag, v, lo, hi, &n)) return 1;
    *out = (int)n;
    return 0;
}

/* 0: go on; 1: a bad combination or file (printed; exit 1); 2: --help;
   3: a bad flag or value (one line printed; exit 2) */
static int parse_args(int argc, char **argv, options *o) {
    long long n = 0;
    memset(&o->d, 0, sizeof o->d);
    o->d.seq = 1024;
    o->d.vocab = 256;
    o->preset = NULL;
    o->steps = 50;
    o->warmup = 3;
    o->seed = 1;
    o->attn_mib = 1024;
    o->offload_opt = o->offload_param = -1;
    o->optimizer = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0, used = 1; /* bad: 1 say so below, 2 tool_args.h has said it */
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) return 2;
        else if (!strcmp(a, "--preset")) {
            bad = 1;
            for (int k = 0; k < GPT_N_PRESETS; k++)
                if (v && !strcmp(v, gpt_preset_at(k)->name)) o->preset = v, bad = 0;
        } else if (!strcmp(a, "--layers")) bad = 2 * flag_int(a, v, 1, 100000, &o->d.layers), o->has_layers = 1;
        else if (!strcmp(a, "--dim")) bad = 2 * flag_int(a, v, 1, 1 << 20, &o->d.dim), o->has_dim = 1;
        else if (!strcmp(a, "--heads")) bad = 2 * flag_int(a, v, 1, 4096, &o->d.heads), o->has_heads = 1;
        else if (!strcmp(a, "--seq")) bad = 2 * flag_int(a, v, 2, 1 << 16, &o->d.seq), o->has_seq = 1;
        else if (!strcmp(a, "--vocab")) bad = 2 * flag_int(a, v, 2, 1 << 20, &o->d.vocab), o->has_vocab = 1;
        else if (!strcmp(a, "--init-from")) bad = !v, o->init_from = v;
        else if (!strcmp(a, "--eval")) bad = !v, o->eval = v;
        else if (!strcmp(a, "--eval-logits")) bad = !v, o->eval_logits = v;
        else if (!strcmp(a, "--data")) {
            bad = !v;
            for (const char *p = v; p && *p;) {
                const char *c = strchr(p, ',');
                o->data.push_back(c ? std::string(p, c) : std::string(p));
                p = c ? c + 1 : NULL;
            }
        } else if (!strcmp(a, "--synthetic")) o->synthetic = 1, used = 0;
        else if (!strcmp(a, "--config")) bad = !v, o->config = v;
        else if (!strcmp(a, "--stage")) bad = 2 * flag_int(a, v, 0, 3, &o->stage), o->has_stage = 1;
        else if (!strcmp(a, "--batch")) bad = 2 * flag_int(a, v, 1, 1 << 20, &o->batch), o->has_batch = 1;
        else if (!strcmp(a, "--gas") && v && !strcmp(v, "auto")) o->gas = 2, o->gas_auto = o->has_gas = 1;
        else if (!strcmp(a, "--gas")) bad = 2 * flag_int(a, v, 1, 1 << 20, &o->gas), o->has_gas = 1, o->gas_auto = 0;
        else if (!strcmp(a, "--steps")) bad = 2 * flag_int(a, v, 0, 1000000000, &o->steps);
        else if (!strcmp(a, "--warmup")) bad = 2 * flag_int(a, v, 0, 1000000000, &o->warmup);
        else if (!strcmp(a, "--seed")) {
            if (!(bad = 2 * tool_int("gpt", a, v, 0, 2147483647LL, &n))) o->seed = (uint64_t)n;
        } else if (!strcmp(a, "--lr")) bad = 2 * tool_num("gpt", a, v, 0, 10, &o->lr), o->has_lr = 1;
        else if (!strcmp(a, "--print-every")) bad = 2 * flag_int(a, v, 1, 1000000000, &o->print_every);
        else if (!strcmp(a, "--metrics")) bad = !v, o->metrics = v;
        else if (!strcmp(a, "--peak-tflops")) bad = 2 * tool_num("gpt", a, v, 1e-3, 1e6, &o->peak_tflops);
        else if (!strcmp(a, "--attn-mib")) bad = 2 * tool_num("gpt", a, v, 1, 1 << 20, &o->attn_mib);
        else if (!strcmp(a, "--offload-optimizer")) bad = parse_offload(v, &o->offload_opt);
        else if (!strcmp(a, "--optimizer")) bad = parse_optimizer(v, &o->optimizer);
        else if (!strcmp(a, "--offload-param")) bad = parse_offload(v, &o->offload_param);
        else if (!strcmp(a, "--offload-ratio")) bad = 2 * tool_num("gpt", a, v, 1e-3, 1, &o->offload_ratio);
        else if (!strcmp(a, "--nvme-path")) bad = !v, o->nvme = v;
        else if (!strcmp(a, "--recompute")) o->recompute = 1, used = 0;
        else if (!strcmp(a, "--auto")) o->auto_plan = 1, used = 0;
        else if (!strcmp(a, "--tokens")) {
            if (!(bad = 2 * tool_int("gpt", a, v, 1, 1000000000000000LL, &n))) o->tokens = (double)n;
        }
        else if (!strcmp(a, "--find-max-batch")) o->find_max = 1, used = 0;
        else if (!strcmp(a, "--tf32")) o->tf32 = 1, used = 0;
        else if (!strcmp(a, "--no-overlap-cpu-step")) o->no_overlap = 1, used = 0;
        else if (!strcmp(a, "--grad-any-order")) o->grad_any_order = 1, used = 0;
        else if (!strcmp(a, "--zero-alloc")) o->zero_alloc = 1, used = 0;
        else if (!strcmp(a, "--no-flash")) o->no_flash = 1, used = 0;
        else if (!strcmp(a, "--no-lt")) o->no_lt = 1, used = 0;
        else if (!strcmp(a, "--quiet")) o->quiet = 1, used = 0;
        else if (!strcmp(a, "--load")) bad = !v, o->load = v;
        else if (!strcmp(a, "--save")) bad = !v, o->save = v;
        else if (!strcmp(a, "--export")) bad = !v, o->export_path = v;
        else if (!strcmp(a, "--dtype")) {
            o->has_dtype = 1;
            if (v && !strcmp(v, "fp32")) o->dtype = ZERO_DTYPE_FP32;
            else if (v && !strcmp(v, "fp16")) o->dtype = ZERO_DTYPE_FP16;
            else if (v && !strcmp(v, "bf16")) o->dtype = ZERO_DTYPE_BF16;
            else bad = 1;
        } else {
            fprintf(stderr, "gpt: unknown option %s (--help lists them)\n", a);
            return 3;
        }
        if (bad == 1) fprintf(stderr, "gpt: %s needs a valid value (got %s)\n", a, v ? v : "nothing");
        if (bad) return 3;
        i += used;
    }
    const gpt_preset *p = gpt_preset_at(0);
    for (int k = 0; o->preset && k < GPT_N_PRESETS; k++)
        if (!strcmp(o->preset, gpt_preset_at(k)->name)) p = gpt_preset_at(k);
    if (o->init_from) { /* the checkpoint's shape; flags may repeat it, not change it */
        gpt_dims ck = o->d;
        char msg[2048];
        if (gpt_hf_read_config(o->init_from, &ck, msg, sizeof msg)) {
            fprintf(stderr, "gpt: --init-from: %s\n", msg);
            return 1;
        }
        const struct {
            int given, mine, theirs;
            const char *flag, *key;
        } same[] = {{o->has_layers, o->d.layers, ck.layers, "--layers", "n_layer"},
                    {o->has_dim, o->d.dim, ck.dim, "--dim", "n_embd"},
                    {o->has_heads, o->d.heads, ck.heads, "--heads", "n_head"},
                    {o->has_vocab, o->d.vocab, ck.vocab, "--vocab", "vocab_size"}};
        for (const auto &c : same)
            if (c.given && c.mine != c.theirs) {
                fprintf(stderr, "gpt: %s %d conflicts with %s/config.json (%s %d): the checkpoint sets the shape\n",
                        c.flag, c.mine, o->init_from, c.key, c.theirs);
                return 1;
            }
        if (o->preset && (p->layers != ck.layers || p->dim != ck.dim || p->heads != ck.heads)) {
            fprintf(stderr,
                    "gpt: --preset %s (%d layers, dim %d, %d heads) conflicts with %s/config.json (n_layer %d, n_embd "
                    "%d, n_head %d): the checkpoint sets the shape\n",
                    o->preset, p->layers, p->dim, p->heads, o->init_from, ck.layers, ck.dim, ck.heads);
            return 1;
        }
        if (!o->has_seq) ck.seq = ck.positions < 1024 ? ck.positions : 1024;
        if (ck.seq > ck.positions) {
            fprintf(stderr, "gpt: --seq %d is longer than %s/config.json's n_positions %d (wpe's rows)\n", ck.seq,
                    o->init_from, ck.positions);
            return 1;
        }
        o->d = ck;
    }
    if (!o->d.layers) o->d.layers = p->layers;
    if (!o->d.dim) o->d.dim = p->dim;
    if (!o->d.heads) o->d.heads = p->heads;
    if (o->d.dim % 8) {
        fprintf(stderr, "gpt: --dim %d is not a multiple of 8 (the kernels' vector width)\n", o->d.dim);
        return 1;
    }
    if (o->d.dim % o->d.heads) {
        fprintf(stderr, "gpt: --dim %d is not a multiple of --heads %d\n", o->d.dim, o->d.heads);
        return 1;
    }
    /* the data's kind: one for all files, told before the ranks start so a mistake is said once */
    o->data_kind = GPT_DATA_TEXT;
    for (size_t k = 0; !o->synthetic && k < o->data.size(); k++) {
        int kind = gpt_data_kind(o->data[k].c_str());
        if (kind < 0) {
            fprintf(stderr, "gpt: --data %s: cannot open\n", o->data[k].c_str());
            return 1;
        }
        if (k > 0 && kind != o->data_kind) {
            fprintf(stderr, "gpt: --data: %s is %s, %s is %s: one kind per run\n", o->data[0].c_str(),
                    gpt_data_kind_name(o->data_kind), o->data[k].c_str(), gpt_data_kind_name(kind));
            return 1;
        }
        o->data_kind = kind;
    }
    if (!o->init_from && !o->synthetic) {
        if (o->data_kind != GPT_DATA_TEXT && !o->has_vocab) o->d.vocab = 50257; /* GPT-2's tokens */
        if (o->data_kind == GPT_DATA_TEXT && o->d.vocab != 256) {
            fprintf(stderr, "gpt: --vocab is for --synthetic data and token files; text is byte-level (256 ids)\n");
            return 1;
        }
    }
    if (o->d.vocab > 65536 && !o->synthetic) {
        fprintf(stderr, "gpt: vocabulary %d: data tokens are uint16, at most 65536 ids\n", o->d.vocab);
        return 1;
    }
    if (o->tokens > 0 && !o->auto_plan) {
        fprintf(stderr, "gpt: --tokens is --auto's (the tokens a step whose micro-batch and accumulation it chooses)\n");
        return 1;
    }
    if (o->auto_plan) { /* what --auto chooses is not given twice */
        const char *twice = o->has_stage ? "--stage" : o->recompute ? "--recompute" : o->offload_param >= 0 ? "--offload-param"
                            : o->offload_ratio > 0 ? "--offload-ratio"
                            : o->offload_opt >= 0 && o->offload_opt != ZERO_OFFLOAD_CPU ? "--offload-optimizer (only cpu)"
                            : o->find_max ? "--find-max-batch" : o->gas_auto ? "--gas auto"
                            : o->tokens > 0 && o->has_batch ? "--batch (with --tokens)"
                            : o->tokens > 0 && o->has_gas ? "--gas (with --tokens)" : NULL;
        if (twice) {
            fprintf(stderr, "gpt: --auto chooses what %s sets: give one of them\n", twice);
            return 1;
        }
    }
    if (o->eval_logits && !o->eval) {
        fprintf(stderr, "gpt: --eval-logits needs --eval (the batch whose logits it writes)\n");
        return 1;
    }
    return 0;
}

/* ---- data ---- */

/* --data's files into one token stream (text widened to ids 0..255); every
   id checked against the vocabulary */
static int load_data(const options *o, gpt_tokens *data) {
    std::vector<std::string> files = o->data;
    char msg[1024];
    if (files.empty()) { /* our own prose and code */
        const char *pats[] = {"README.md", "docs/*.md", "zero.h", "zero_cuda.cuh", "zero_offload.h",
                              "examples/*.c", "examples/*.cu", "examples/*/*.c", "examples/*/*.cu"};
        for (const char *pat : pats) {
            glob_t g;
            if (glob(pat, 0, NULL, &g) == 0)
                for (size_t k = 0; k < g.gl_pathc; k++) files.push_back(g.gl_pathv[k]);
            globfree(&g);
        }
    }
    for (const std::string &f : files) {
        size_t from = data->n, bad;
        if (gpt_read_tokens(f.c_str(), o->data_kind, data, msg, sizeof msg)) {
            fprintf(stderr, "gpt: %s\nHINT: run from the repository root, or pass --data FILE\n", msg);
            return 1;
        }
        if ((bad = gpt_tokens_check(data->tok + from, data->n - from, o->d.vocab)) < data->n - from) {
            fprintf(stderr, "gpt: %s: token %u at index %zu is outside the vocabulary [0, %d)\n", f.c_str(),
                    (unsigned)data->tok[from + bad], bad, o->d.vocab);
            return 1;
        }
    }
    if (data->n <= (size_t)o->d.seq + 1) {
        fprintf(stderr, "gpt: the data has %zu tokens; --seq %d needs more\n", data->n, o->d.seq);
        return 1;
    }
    return 0;
}

/* --eval's batch: raw uint16 ids, B whole rows of seq + 1 */
static int load_eval(const options *o, gpt_tokens *ev) {
    char msg[1024];
    size_t row = (size_t)o->d.seq + 1, bad;
    if (gpt_read_tokens(o->eval, GPT_DATA_U16, ev, msg, sizeof msg)) {
        fprintf(stderr, "gpt: --eval %s\n", msg);
        return 1;
    }
    if (ev->n == 0 || ev->n % row) {
        fprintf(stderr,
                "gpt: --eval %s: %zu ids are not whole rows of seq + 1 = %zu (the file holds B x (seq + 1) uint16 "
                "ids)\n",
                o->eval, ev->n, row);
        return 1;
    }
    if ((bad = gpt_tokens_check(ev->tok, ev->n, o->d.vocab)) < ev->n) {
        fprintf(stderr, "gpt: --eval %s: token %u at index %zu is outside the vocabulary [0, %d)\n", o->eval,
                (unsigned)ev->tok[bad], bad, o->d.vocab);
        return 1;
    }
    return 0;
}

/* --init-from: the checkpoint's names of the engine's tensors, and the
   checkpoint tensors that are no parameter (gpt_model.h) */
typedef struct hf_names {
    gpt_dims d;
    int prefixed; /* "transformer.wte.weight" (save_pretrained), else "wte.weight" */
} hf_names;
static const char *hf_rename(void *user, int t, const char *name, char *buf, size_t cap, int *transpose) {
    const hf_names *h = (const hf_names *)user;
    (void)name;
    *transpose = 0; /* Conv1D weights are [in, out], as here */
    return gpt_hf_name(&h->d, t, h->prefixed, buf, cap);
}
static int hf_ignore(void *user, const char *name) {
    (void)user;
    return gpt_hf_ignored(name);
}

/* initial weights: gpt_init_value on the CPU pool */
typedef struct init_ctx {
    gpt_dims d;
    uint64_t seed;
    zero_cpu_pool *pool;
} init_ctx;
typedef struct init_job {
    const init_ctx *c;
    int t;
    int64_t off;
    float *out;
} init_job;
static void init_task(void *arg, int64_t b, int64_t e, int thread) {
    const init_job *j = (const init_job *)arg;
    (void)thread;
    for (int64_t i = b; i < e; i++) j->out[i] = (float)gpt_init_value(&j->c->d, j->c->seed, j->t, j->off + i);
}
static void init_fn(void *user, int t, int64_t off, int64_t n, float *out) {
    const init_ctx *c = (const init_ctx *)user;
    init_job j = {c, t, off, out};
    zero_error err;
    if (!c->pool || zero_cpu_pool_run(c->pool, init_task, &j, n, 1 << 16, &err) != ZERO_OK) init_task(&j, 0, n, 0);
}

/* ---- measurements ---- */

static double host_gib(const char *key) { /* VmRSS / VmHWM of this process */
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    double kb = 0;
    if (!f) return 0;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, strlen(key))) kb = atof(line + strlen(key) + 1);
    fclose(f);
    return kb / 1048576.0;
}
static double gpu_used_gib(void) {
    size_t fr = 0, tot = 0;
    if (cudaMemGetInfo(&fr, &tot) != cudaSuccess) return 0;
    return (double)(tot - fr) / 1073741824.0;
}

typedef struct world_ctx {
    zero_cuda *cuda;
    const zero_backend *be; /* the engine's: zero_cuda's, or wrapped by zero_offload_backend */
    zero_backend offload_be;
    cudaStream_t stream;
    cublasHandle_t blas;
    gpt_lt *lt; /* cuBLASLt and its table; NULL with --no-lt */
    int rank, world;
    char gpu[256];
    zero_cpu_pool *pool;
} world_ctx;

/* The per-rank loss sums of steps [from, to) summed over the ranks into host[] */
static zero_result losses_to_host(const world_ctx *w, zero_event *ev, const float *mine, float *sum, float *host,
                                  int from, int to, zero_error *err) {
    const zero_backend *be = w->be;
    size_t n = (size_t)(to - from);
    zero_result r;
    if ((r = be->event_record(be->ctx, ev, ZERO_STREAM_COMPUTE, err)) ||
        (r = be->stream_wait(be->ctx, ZERO_STREAM_COMM, ev, err)) ||
        (r = be->all_reduce(be->ctx, mine + from, sum + from, n, ZERO_DTYPE_FP32, ZERO_OP_SUM, ZERO_STREAM_COMM, err)) ||
        (r = be->copy(be->ctx, host + from, sum + from, n * sizeof(float), ZERO_STREAM_COMM, err)))
        return r;
    return be->sync(be->ctx, ZERO_STREAM_COMM, err);
}

static const char *offload_name(int d) { return d == ZERO_OFFLOAD_CPU ? "cpu" : d == ZERO_OFFLOAD_NVME ? "nvme" : "none"; }

/* One JSON line of --metrics (rank 0). Every floating-point number goes
   through put(): NaN and inf are not JSON (Python's json, jq and the plots'
   readers reject a bare nan), so such a value is written as null and its key
   named in "nonfinite":[...] at the end of the line, which tells a diverged
   loss from a field that is missing. Strings are the program's own names
   (nothing to escape). */
struct metrics_line {
    FILE *f;
    std::string bad; /* "loss","grad_norm": the keys written as null */
    metrics_line(FILE *file, const char *event) : f(file) { fprintf(f, "{\"event\":\"%s\"", event); }
    void put(const char *key, const char *fmt, double v) {
        if (std::isfinite(v)) {
            fprintf(f, fmt, v);
            return;
        }
        fputs("null", f);
        std::string k = std::string("\"") + key + "\"";
        if (bad.find(k) == std::string::npos) bad += (bad.empty() ? "" : ",") + k;
    }
    void num(const char *key, const char *fmt, double v) {
        fprintf(f, ",\"%s\":", key);
        put(key, fmt, v);
    }
    void nums(const char *key, const char *fmt, const double *v, int n) {
        fprintf(f, ",\"%s\":[", key);
        for (int i = 0; i < n; i++) {
            if (i) fputc(',', f);
            put(key, fmt, v[i]);
        }
        fputc(']', f);
    }
    void i64(const char *key, long long v) { fprintf(f, ",\"%s\":%lld", key, v); }
    void i64s(const char *key, const int64_t *v, int n) {
        fprintf(f, ",\"%s\":[", key);
        for (int i = 0; i < n; i++) fprintf(f, "%s%lld", i ? "," : "", (long long)v[i]);
        fputc(']', f);
    }
    void str(const char *key, const char *v) { fprintf(f, ",\"%s\":\"%s\"", key, v); }
    void end() {
        if (!bad.empty()) fprintf(f, ",\"nonfinite\":[%s]", bad.c_str());
        fputs("}\n", f);
    }
};

typedef struct run_state {
    const options *o;
    const world_ctx *w;
    const zero_config *cfg;
    const gpt_tokens *data; /* NULL: synthetic */
    const gpt_tokens *eval; /* NULL: no --eval */
    FILE *jsonl;
    double peak; /* FLOP/s, 0: unknown */
    double flops_tok;
    int64_t params;
    zero_step_info *last; /* the last step's report (its byte counts price the floor) */
    double *micro_min_ms; /* the last step's fastest micro-batch on the compute stream (its compute) */
    double block_ms, rest_ms; /* model_compute's: a block's compute and the rest's, a micro-batch (0: not measured) */
} run_state;

/* y[i] = scale x a hash of (seed, i) in [-1, 1): weights that are neither zeros nor one value (the GEMMs' timing
   with the data of a step) */
template <typename T> __global__ void gk_noise(T *y, float scale, int64_t n, uint64_t seed) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    uint64_t z = seed + (uint64_t)i * 0x9E3779B97F4A7C15ull; /* splitmix64's finaliser */
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    y[i] = ex_to<T>(scale * ((float)(z >> 40) * (2.0f / 16777216.0f) - 1.0f));
}

/* The model's own compute a micro-batch, measured before the engine takes the memory (with offload: the floor's
   compute). A 1-layer model of this run's width, heads, sequence, vocabulary and micro-batch runs on plain device
   buffers through the pieces a step runs, in gpt_wire.h's order (the block's forward again with recompute), its
   parameters resident and filled with noise: 3 rounds to warm up, then 5 timed with events around the block's
   parts and around the whole; medians. A micro-batch of the L-layer model is rest + L x block: what it takes
   when no copy is waited for. Returns 0 and sets *block_ms, *rest_ms; 1 where it could not run (the buffers did
   not fit; err says why). */
struct probe_ev {
    cudaEvent_t e[6];
};
template <typename T>
static int model_compute(const world_ctx *w, const options *o, int B, double *block_ms, double *rest_ms, zero_error *err) {
    gpt_dims d1 = o->d;
    d1.layers = 1;
    const int nt = gpt_n_tensors(&d1), T_ = d1.seq, rounds = 8, warm = 3;
    const int64_t N = (int64_t)B * T_;
    std::vector<int64_t> off((size_t)nt + 1, 0);
    for (int t = 0; t < nt; t++) off[t + 1] = off[t] + (gpt_tensor_numel(&d1, t) + 127) / 128 * 128;
    gpt_acts<T> a;
    T *par = NULL, *grad = NULL;
    float *loss_acc = NULL;
    std::vector<probe_ev> ev(rounds);
    std::vector<double> blk, whole;
    std::vector<int> rows((size_t)B * (T_ + 1));
    int rc = 1;
    memset(&a, 0, sizeof a);
    for (auto &x : ev)
        for (auto &y : x.e) y = NULL;
    gpt_run run = {NULL, {w->blas, o->tf32, w->lt}, w->stream, o->recompute};
    gpt_mb<T> m = {&run, &a, 1.0f / (float)N, 1.0f / (float)N, NULL, NULL, NULL};
    const T *p[GPT_PER_BLOCK], *lnf[2] = {NULL, NULL};
    T *gl[2] = {NULL, NULL};
    if (zero_cuda_check(cudaMalloc((void **)&par, sizeof(T) * (size_t)off[nt]), "cudaMalloc(probe parameters)", __FILE__,
                        __LINE__, err) ||
        zero_cuda_check(cudaMalloc((void **)&grad, sizeof(T) * (size_t)off[nt]), "cudaMalloc(probe gradients)", __FILE__,
                        __LINE__, err) ||
        zero_cuda_check(cudaMalloc((void **)&loss_acc, sizeof(float)), "cudaMalloc(probe loss)", __FILE__, __LINE__, err) ||
        gpt_acts_alloc<T>(&a, &d1, B, o->recompute, !o->no_flash, (size_t)(o->attn_mib * 1048576.0), w->blas, err) != ZERO_OK)
        goto out;
    for (auto &x : ev)
        for (auto &y : x.e)
            if (zero_cuda_check(cudaEventCreate(&y), "cudaEventCreate", __FILE__, __LINE__, err)) goto out;
    gk_noise<T><<<gpt_blocks(off[nt]), GPT_THREADS, 0, w->stream>>>(par, 0.02f, off[nt], o->seed);
    if (zero_cuda_check(cudaMemsetAsync(grad, 0, sizeof(T) * (size_t)off[nt], w->stream), "cudaMemsetAsync", __FILE__,
                        __LINE__, err) ||
        zero_cuda_check(cudaMemsetAsync(loss_acc, 0, sizeof(float), w->stream), "cudaMemsetAsync", __FILE__, __LINE__, err))
        goto out;
    m.loss_acc = loss_acc;
    for (int k = 0; k < GPT_PER_BLOCK; k++) p[k] = par + off[gpt_block_tensor(0, k)];
    for (int k = 0; k < 2; k++) lnf[k] = par + off[gpt_lnf_w(&d1) + k], gl[k] = grad + off[gpt_lnf_w(&d1) + k];
    for (int i = 0; i < rounds; i++) {
        const cudaEvent_t *e = ev[(size_t)i].e;
        T *gwte = grad + off[GPT_WTE], *gwpe = grad + off[GPT_WPE];
        for (int b = 0; b < B; b++) gpt_sample(NULL, 0, &o->d, o->seed, i, b, rows.data() + (size_t)b * (T_ + 1));
        if (gpt_upload<T>(&run, &a, rows.data(), err) != ZERO_OK) goto out;
        cudaEventRecord(e[0], w->stream);
        if (gpt_hook_embed<T>(&m, par + off[GPT_WTE], par + off[GPT_WPE], err) != ZERO_OK) goto out;
        cudaEventRecord(e[1], w->stream);
        if (gpt_block_fwd<T>(&run, &a, 0, 0, 1, p, err) != ZERO_OK) goto out;
        cudaEventRecord(e[2], w->stream);
        if (gpt_hook_lnf_fwd<T>(&m, lnf[0], lnf[1], err) != ZERO_OK ||
            gpt_hook_head<T>(&m, par + off[GPT_WTE], gwte, err) != ZERO_OK ||
            gpt_block_bwd_before<T>(&run, &a, GPT_WIRE_LNF, 1, 0, lnf, err) != ZERO_OK ||
            gpt_block_bwd_write<T>(&run, &a, GPT_WIRE_LNF, 1, 0, lnf, gl, err) != ZERO_OK)
            goto out;
        cudaEventRecord(e[3], w->stream);
        if (o->recompute && gpt_block_fwd<T>(&run, &a, 0, 0, 0, p, err) != ZERO_OK) goto out;
        for (int piece = GPT_WIRE_MLP_PROJ; piece < GPT_WIRE_PIECE_COUNT; piece++) {
            int t[2] = {0, 0}, n = gpt_wire_piece_tensors(&d1, (gpt_wire_piece)piece, 0, t);
            T *g[2] = {grad + off[t[0]], n > 1 ? grad + off[t[1]] : NULL};
            if (gpt_block_bwd_before<T>(&run, &a, (gpt_wire_piece)piece, 0, 0, p, err) != ZERO_OK ||
                gpt_block_bwd_write<T>(&run, &a, (gpt_wire_piece)piece, 0, 0, p, g, err) != ZERO_OK)
                goto out;
        }
        cudaEventRecord(e[4], w->stream);
        if (gpt_hook_embed_bwd<T>(&m, gwte, gwpe, err) != ZERO_OK) goto out;
        cudaEventRecord(e[5], w->stream);
    }
    if (zero_cuda_check(cudaStreamSynchronize(w->stream), "the compute probe", __FILE__, __LINE__, err)) goto out;
    for (int i = warm; i < rounds; i++) {
        float t[5];
        for (int k = 0; k < 5; k++)
            if (zero_cuda_check(cudaEventElapsedTime(&t[k], ev[(size_t)i].e[k], ev[(size_t)i].e[k + 1]),
                                "cudaEventElapsedTime", __FILE__, __LINE__, err))
                goto out;
        blk.push_back((double)t[1] + t[3]);
        whole.push_back((double)t[0] + t[1] + t[2] + t[3] + t[4]);
    }
    std::sort(blk.begin(), blk.end());
    std::sort(whole.begin(), whole.end());
    *block_ms = blk[blk.size() / 2];
    *rest_ms = whole[whole.size() / 2] - *block_ms;
    rc = *block_ms > 0 && *rest_ms > 0 ? 0 : 1;
out:
    for (auto &x : ev)
        for (auto &y : x.e)
            if (y) cudaEventDestroy(y);
    gpt_acts_free<T>(&a);
    cudaFree(par);
    cudaFree(grad);
    cudaFree(loss_acc);
    cublasSetWorkspace(w->blas, NULL, 0); /* (the probe's activations held it) */
    cudaGetLastError();
    return rc;
}

/* With offload: the step's floor (zero_floor_of) from this rank's byte counts
   and the bandwidths it measures now, every rank at once as in the step (PCIe
   of its GPU beside the others' copies; host memory with its CPU Adam's pool
   beside the other ranks' pools: its share; with NVMe, the tile store in the
   config's directory beside the other ranks' stores), beside its median step. Rank 0
   prints "floor:" lines (and the metrics' floor event), rank r "floor rank
   r:" lines. */
/* zero_cpu_memory_bandwidth_ready's barrier: the ranks' passes start together */
static zero_result floor_meet(void *ctx, zero_error *err) {
    zero_engine *e = (zero_engine *)ctx;
    double meet = 0;
    zero_result r = zero_all_reduce_scalars(e, &meet, 1, ZERO_OP_SUM);
    if (r != ZERO_OK && err) *err = *zero_engine_error(e);
    return r;
}

static void print_floor(const run_state *s, zero_engine *e, double med_ms) {
    const world_ctx *w = s->w;
    const zero_step_info *in = s->last;
    const zero_dist_env *env = zero_cuda_env(w->cuda);
    const int local = env && env->local_world > 0 ? env->local_world : 1;
    zero_bandwidths bw;
    zero_floor f;
    zero_error err;
    double host = 0, gb = 1e9;
    const int threads = zero_cpu_pool_threads(w->pool);
    char tag[32];
    if (w->rank == 0) snprintf(tag, sizeof tag, "floor:");
    else snprintf(tag, sizeof tag, "floor rank %d:", w->rank);
    memset(&bw, 0, sizeof bw);
    /* Each measurement runs on every rank together, the ranks meeting (a one-number all-reduce) inside the probe,
       after its buffers are allocated and filled: a host's ranks share its memory and PCIe as their steps do.
       Without a meeting each rank measured mostly alone, and on 2 GPUs a rank's CPU Adam was priced at the whole
       host's bandwidth (175 GB/s each, where the host gives both ~189); with the meeting before the probe (whose
       filling takes longer than its passes) the two ranks still measured 153-184 GB/s each. */
    double meet = 0;
    if (zero_cuda_pcie_bandwidth_ready((size_t)256 << 20, 7, floor_meet, e, &bw, &err) != ZERO_OK ||
        zero_cpu_memory_bandwidth_ready(w->pool, ((int64_t)1 << 27) / local, 7, floor_meet, e, &host, &err) != ZERO_OK) {
        fprintf(stderr, "gpt: rank %d: the floor was not measured: %s\n", w->rank,
                zero_engine_error(e)->code != ZERO_OK ? zero_engine_error(e)->msg : err.msg);
        return;
    }
    bw.host = host;
    /* NVMe: the tile store's own reads and writes in the config's directory (64 MiB tiles, 1 GiB each way
       in all, split between the host's ranks), where the step moved tiles. (The host memory above: 2 GiB of
       arrays in all, split the same way, each rank's share far above the caches.) */
    const zero_optimization_config *z = &s->cfg->zero_optimization;
    const char *nvme_dir = z->offload_optimizer.device == ZERO_OFFLOAD_NVME ? z->offload_optimizer.nvme_path
                           : z->offload_param.device == ZERO_OFFLOAD_NVME  ? z->offload_param.nvme_path
                                                                           : NULL;
    int64_t nvme_rd = 0, nvme_wr = 0;
    for (int k = 0; k < ZERO_XFER_PHASE_COUNT; k++) nvme_rd += in->nvme_bytes_read[k], nvme_wr += in->nvme_bytes_written[k];
    if (nvme_dir && nvme_rd + nvme_wr > 0 && zero_all_reduce_scalars(e, &meet, 1, ZERO_OP_SUM) != ZERO_OK) {
        fprintf(stderr, "gpt: rank %d: the floor's NVMe was not measured: %s\n", w->rank, zero_engine_error(e)->msg);
        return;
    }
    if (nvme_dir && nvme_rd + nvme_wr > 0 &&
        zero_nvme_bandwidth(nvme_dir, (size_t)64 << 20, local < 4 ? 16 / local : 4, &s->cfg->aio, &bw.nvme_read,
                            &bw.nvme_write, &err) != ZERO_OK) {
        fprintf(stderr, "gpt: rank %d: the floor's NVMe was not measured: %s\n", w->rank, err.msg);
        return;
    }
    if (zero_floor_of(e, in, &bw, &f) != ZERO_OK) {
        fprintf(stderr, "gpt: rank %d: the floor: %s\n", w->rank, zero_engine_error(e)->msg);
        return;
    }
    printf("%s bytes per step: forward %.3g GB to the GPU | backward %.3g GB to the GPU, %.3g GB to the host | step "
           "%.3g GB to the GPU, %.3g GB to the host | CPU Adam %.3g GB of host memory",
           tag, in->bytes_to_device[ZERO_XFER_FORWARD] / gb, in->bytes_to_device[ZERO_XFER_BACKWARD] / gb,
           in->bytes_to_host[ZERO_XFER_BACKWARD] / gb, in->bytes_to_device[ZERO_XFER_STEP] / gb,
           in->bytes_to_host[ZERO_XFER_STEP] / gb, in->cpu_adam_bytes / gb);
    if (in->cpu_sum_bytes > 0) printf(" | the CPU's adds of micro-batches %.3g GB of host memory", in->cpu_sum_bytes / gb);
    if (nvme_rd + nvme_wr > 0)
        printf(" | NVMe read forward %.3g, backward %.3g, step %.3g GB, written in the step %.3g GB",
               in->nvme_bytes_read[ZERO_XFER_FORWARD] / gb, in->nvme_bytes_read[ZERO_XFER_BACKWARD] / gb,
               in->nvme_bytes_read[ZERO_XFER_STEP] / gb,
               (in->nvme_bytes_written[ZERO_XFER_FORWARD] + in->nvme_bytes_written[ZERO_XFER_BACKWARD] +
                in->nvme_bytes_written[ZERO_XFER_STEP]) / gb);
    printf("\n%s measured now: PCIe %.1f GB/s to the GPU, %.1f to the host, %.1f both ways | host memory %.1f GB/s "
           "(%d threads%s)",
           tag, bw.h2d / gb, bw.d2h / gb, bw.duplex / gb, host / gb, threads,
           local > 1 ? ", beside this host's other ranks: this rank's CPU optimizer's share" : "");
    if (nvme_rd + nvme_wr > 0)
        printf(" | NVMe %.2f GB/s read, %.2f written (the tile store in %s)", bw.nvme_read / gb, bw.nvme_write / gb, nvme_dir);
    printf("\n");
    /* the GPU's compute, two ways: the model's own kernels with every parameter resident (model_compute: a block
       and the rest measured before the engine took the memory, rest + L x block a micro-batch, times the
       accumulation), which no step beats but by the waits it hides: the floor's; and the last step's fastest
       micro-batch (forward and backward on the compute stream, from its first kernel to the next one's) times
       the accumulation, the compute as it ran, which holds the micro-batch's waits for its copies too: where
       every micro-batch waits (a 12.9e9 GPT with 40% of its parameters fetched each pass: 1,029 ms a micro-batch)
       it is no floor. Without the probe, the second as before. */
    const int gas = (int)s->cfg->gradient_accumulation_steps;
    const double micro = s->micro_min_ms && *s->micro_min_ms > 0 ? *s->micro_min_ms * gas : 0;
    const double L = s->o->d.layers, C = s->o->d.dim, T = s->o->d.seq;
    const double step_flops = (s->flops_tok + (s->o->recompute ? 24.0 * L * C * C + 4.0 * L * C * T : 0)) *
                              (double)s->cfg->train_micro_batch_size_per_gpu * T * gas;
    const double model = s->block_ms > 0 ? (s->rest_ms + L * s->block_ms) * gas : 0;
    const double compute = model > 0 ? model : micro;
    const double floor_ms = compute > f.floor_ms ? compute : f.floor_ms;
    char nvme_text[96] = "";
    if (nvme_rd + nvme_wr > 0)
        snprintf(nvme_text, sizeof nvme_text, ", NVMe forward %.1f + backward %.1f + step %.1f ms", f.nvme_ms[ZERO_XFER_FORWARD],
                 f.nvme_ms[ZERO_XFER_BACKWARD], f.nvme_ms[ZERO_XFER_STEP]);
    char compute_text[320];
    if (model > 0)
        snprintf(compute_text, sizeof compute_text, "compute %.1f ms (the model's kernels, every parameter resident: "
                 "%d x (%.2f + %d blocks x %.2f ms), %.1f TFLOP/s) | the fastest micro-batch x %d %.1f ms (with its waits)",
                 model, gas, s->rest_ms, s->o->d.layers, s->block_ms, step_flops / model * 1e-9, gas, micro);
    else
        snprintf(compute_text, sizeof compute_text, "compute %.1f ms (the fastest micro-batch x %d, its waits included)",
                 micro, gas);
    printf("%s %s schedule: copies forward %.1f + backward %.1f + step %.1f ms, CPU Adam %.1f ms%s -> %.1f ms | "
           "%s | floor %.1f ms (%s) | median step %.1f ms = %.2fx the floor\n",
           tag, f.schedule, f.copy_ms[ZERO_XFER_FORWARD], f.copy_ms[ZERO_XFER_BACKWARD], f.copy_ms[ZERO_XFER_STEP], f.adam_ms,
           nvme_text, f.floor_ms, compute_text, floor_ms,
           compute > f.floor_ms ? "compute" : nvme_rd + nvme_wr > 0 ? "copies, CPU Adam and NVMe" : "copies and CPU Adam", med_ms,
           floor_ms > 0 ? med_ms / floor_ms : 0.0);
    /* host memory's load beside it, not a floor: the probe's rate is what the CPU's threads reach, and the copies'
       DMA may add to it */
    printf("%s host memory's load: %.1f GB a step (the CPU's adds %.1f, CPU Adam %.1f, the copies and NVMe %.1f), "
           "%.1f ms at the %.1f GB/s measured above (%.2fx of the median step)\n",
           tag, f.host_bytes / gb, in->cpu_sum_bytes / gb, in->cpu_adam_bytes / gb,
           (f.host_bytes - (double)in->cpu_sum_bytes - (double)in->cpu_adam_bytes) / gb, f.host_ms, bw.host / gb,
           med_ms > 0 ? f.host_ms / med_ms : 0.0);
    if (s->jsonl) {
        metrics_line m(s->jsonl, "floor");
        m.str("schedule", f.schedule);
        m.num("floor_ms", "%.3f", floor_ms);
        m.num("offload_floor_ms", "%.3f", f.floor_ms);
        m.num("compute_ms", "%.3f", compute);
        m.num("micro_batch_compute_ms", "%.3f", micro);
        m.num("block_ms", "%.3f", s->block_ms);
        m.num("rest_ms", "%.3f", s->rest_ms);
        m.num("model_tflops", "%.3f", model > 0 ? step_flops / model * 1e-9 : 0.0);
        m.num("median_step_ms", "%.3f", med_ms);
        m.nums("copy_ms", "%.3f", f.copy_ms, 3);
        m.num("adam_ms", "%.3f", f.adam_ms);
        m.i64s("bytes_to_device", in->bytes_to_device, 3);
        m.i64s("bytes_to_host", in->bytes_to_host, 3);
        m.i64("cpu_adam_bytes", in->cpu_adam_bytes);
        m.i64("cpu_sum_bytes", in->cpu_sum_bytes);
        m.num("host_bytes", "%.0f", f.host_bytes);
        m.num("host_ms", "%.3f", f.host_ms);
        m.num("h2d_gbps", "%.3f", bw.h2d / gb);
        m.num("d2h_gbps", "%.3f", bw.d2h / gb);
        m.num("duplex_gbps", "%.3f", bw.duplex / gb);
        m.num("host_gbps", "%.3f", bw.host / gb);
        if (nvme_rd + nvme_wr > 0) {
            m.nums("nvme_ms", "%.3f", f.nvme_ms, 3);
            m.i64s("nvme_bytes_read", in->nvme_bytes_read, 3);
            m.i64s("nvme_bytes_written", in->nvme_bytes_written, 3);
            m.num("nvme_read_gbps", "%.3f", bw.nvme_read / gb);
            m.num("nvme_write_gbps", "%.3f", bw.nvme_write / gb);
        }
        m.end();
    }
}

/* steps [first, first + n) of training at micro-batch B (the timed run, or
   a trial of --find-max-batch with report 0). Returns ZERO_OK or the error. */
template <typename T>
static zero_result train(const run_state *s, zero_engine *e, gpt_acts<T> *a, int first, int n, int report,
                         std::vector<double> *step_ms, zero_error *err) {
    const options *o = s->o;
    const world_ctx *w = s->w;
    const int B = a->B, T_ = o->d.seq, gas = (int)s->cfg->gradient_accumulation_steps;
    const int64_t N = (int64_t)B * T_;
    gpt_run run = {e, {w->blas, o->tf32, w->lt}, w->stream, o->recompute}; /* the model calls the engine itself */
    std::vector<int> rows((size_t)B * (T_ + 1));
    std::vector<cudaEvent_t> ev(n + 1), mev(gas + 1); /* mev: the last step's micro-batches' starts, and its end */
    std::vector<float> host(n);
    float *mine = NULL, *sum = NULL;
    zero_event *zev = NULL;
    zero_result r = ZERO_OK;
    int printed = 0, every = o->print_every;
    double window_ms = 0, window_loss = 0;
    int window_n = 0;
    zero_step_info info;
    memset(&info, 0, sizeof info);
    for (auto &x : ev) x = NULL;
    for (auto &x : mev) x = NULL;
    if (cudaMalloc((void **)&mine, sizeof(float) * n) != cudaSuccess ||
        cudaMalloc((void **)&sum, sizeof(float) * n) != cudaSuccess) {
        r = zero_cuda_check(cudaErrorMemoryAllocation, "cudaMalloc(losses)", __FILE__, __LINE__, err);
        goto out;
    }
    cudaMemsetAsync(mine, 0, sizeof(float) * n, w->stream);
    if ((r = w->be->event_create(w->be->ctx, &zev, err))) goto out;
    for (auto &x : ev)
        if ((r = zero_cuda_check(cudaEventCreate(&x), "cudaEventCreate", __FILE__, __LINE__, err))) goto out;
    for (auto &x : mev)
        if ((r = zero_cuda_check(cudaEventCreate(&x), "cudaEventCreate", __FILE__, __LINE__, err))) goto out;
    cudaEventRecord(ev[0], w->stream);
    for (int i = 0; i < n; i++) {
        int step = first + i;
        for (int m = 0; m < gas; m++) {
            if (i == n - 1) cudaEventRecord(mev[m], w->stream);
            for (int b = 0; b < B; b++)
                gpt_sample(s->data ? s->data->tok : NULL, s->data ? s->data->n : 0, &o->d, o->seed, step,
                           ((int64_t)m * w->world + w->rank) * B + b, rows.data() + (size_t)b * (T_ + 1));
            if ((r = gpt_step<T>(&run, a, rows.data(), (float)(zero_loss_scale(e) / (double)N),
                                 (float)(1.0 / ((double)N * gas)), mine + i, err)))
                goto out;
        }
        if (i == n - 1) cudaEventRecord(mev[gas], w->stream);
        if (s->cfg->jsonl_monitor.enabled == 1) {
            /* the engine's metrics file (jsonl_monitor) carries the step's
               loss: the mean over the ranks, brought to the host before
               zero_step (a wait for this step's kernels, only then) */
            if ((r = losses_to_host(w, zev, mine, sum, host.data(), i, i + 1, err))) goto out;
            zero_report_loss(e, host[i] / w->world);
        }
        if ((r = zero_step(e, &info))) {
            *err = *zero_engine_error(e);
            goto out;
        }
        if (s->last) *s->last = info;
        cudaEventRecord(ev[i + 1], w->stream);
        if (!report) continue;
        if (i + 1 != n && (step + 1) % every) continue;
        /* a print: the losses of the steps since the last one, over the ranks */
        if ((r = losses_to_host(w, zev, mine, sum, host.data(), printed, i + 1, err))) goto out;
        cudaEventSynchronize(ev[i + 1]);
        for (; printed <= i; printed++) {
            float ms = 0;
            cudaEventElapsedTime(&ms, ev[printed], ev[printed + 1]);
            if (step_ms && printed >= o->warmup) step_ms->push_back(ms); /* this run's first steps are warm-up */
            window_ms += ms;
            window_loss += host[printed] / w->world;
            window_n++;
        }
        if (w->rank == 0) {
            double tok_s = (double)N * gas * w->world * window_n / (window_ms / 1e3);
            double tflops = tok_s / w->world * s->flops_tok / 1e12, mfu = s->peak > 0 ? tflops * 1e12 / s->peak : -1;
            double gmem = gpu_used_gib(), hmem = host_gib("VmRSS:");
            if (!o->quiet)
                printf("step %5d | loss %.4f | lr %.3e | %8.0f tok/s | %6.1f TFLOP/s/GPU | MFU %5.1f%% | %.0f ms/step | "
                       "GPU %.1f GiB | host %.1f GiB | skipped %lld | scale %g | grad norm %.3f\n",
                       step + 1, window_loss / window_n, info.lr, tok_s, tflops, mfu * 100, window_ms / window_n,
                       gmem, hmem, (long long)info.skipped_steps, info.next_loss_scale, info.grad_norm);
            if (s->jsonl) {
                metrics_line m(s->jsonl, "step");
                m.i64("step", step + 1);
                m.num("loss", "%.6f", window_loss / window_n);
                m.num("lr", "%.6e", info.lr);
                m.num("loss_scale", "%g", info.next_loss_scale);
                m.i64("skipped", (long long)info.skipped_steps);
                m.num("grad_norm", "%.6g", info.grad_norm);
                m.num("step_ms", "%.3f", window_ms / window_n);
                m.num("tokens_per_s", "%.1f", tok_s);
                m.num("tokens_per_s_per_gpu", "%.1f", tok_s / w->world);
                m.num("tflops_per_gpu", "%.2f", tflops);
                m.num("mfu", "%.4f", mfu);
                m.num("gpu_mem_gib", "%.3f", gmem);
                m.num("host_rss_gib", "%.3f", hmem);
                m.end();
            }
        }
        window_ms = window_loss = 0;
        window_n = 0;
    }
    r = zero_cuda_check(cudaStreamSynchronize(w->stream), "cudaStreamSynchronize", __FILE__, __LINE__, err);
    if (r == ZERO_OK && n > 0 && s->micro_min_ms) {
        *s->micro_min_ms = 0;
        for (int m = 0; m < gas; m++) {
            float ms = 0;
            if (cudaEventElapsedTime(&ms, mev[m], mev[m + 1]) == cudaSuccess && ms > 0 &&
                (*s->micro_min_ms == 0 || ms < *s->micro_min_ms))
                *s->micro_min_ms = ms;
        }
    }
out:
    cudaStreamSynchronize(w->stream);
    if (zev) w->be->event_destroy(w->be->ctx, zev);
    for (auto x : ev)
        if (x) cudaEventDestroy(x);
    for (auto x : mev)
        if (x) cudaEventDestroy(x);
    cudaFree(mine);
    cudaFree(sum);
    return r;
}

/* All ranks agree: 1 when every rank's ok is 1 (a sum of failures over the ranks) */
static int all_ok(const world_ctx *w, int ok) {
    float *d = NULL, h = ok ? 0.0f : 1.0f;
    zero_error err;
    if (cudaMalloc((void **)&d, sizeof(float)) != cudaSuccess) return 0;
    cudaMemcpy(d, &h, sizeof(float), cudaMemcpyHostToDevice);
    if (w->be->all_reduce(w->be->ctx, d, d, 1, ZERO_DTYPE_FP32, ZERO_OP_SUM, ZERO_STREAM_COMM, &err) != ZERO_OK ||
        w->be->sync(w->be->ctx, ZERO_STREAM_COMM, &err) != ZERO_OK) {
        cudaFree(d);
        return 0;
    }
    cudaMemcpy(&h, d, sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(d);
    return h == 0.0f;
}

/* --eval-logits: each head chunk's logits, V of every ld, copied out through
   a pinned buffer of at most LOGITS_ROWS rows and appended to the file */
#define LOGITS_ROWS 256
typedef struct logits_out {
    const char *path;
    FILE *f;
    float *host; /* pinned [LOGITS_ROWS, V] */
    cudaStream_t stream;
    int V;
} logits_out;
static zero_result logits_write(void *user, int64_t row0, int rows, const float *dev, int ld, zero_error *err) {
    logits_out *lo = (logits_out *)user;
    (void)row0; /* the chunks come in order */
    for (int r0 = 0; r0 < rows; r0 += LOGITS_ROWS) {
        int n = rows - r0 < LOGITS_ROWS ? rows - r0 : LOGITS_ROWS;
        ZERO_CUDA_TRY(cudaMemcpy2DAsync(lo->host, sizeof(float) * lo->V, dev + (int64_t)r0 * ld, sizeof(float) * ld,
                                        sizeof(float) * lo->V, n, cudaMemcpyDeviceToHost, lo->stream),
                      err);
        ZERO_CUDA_TRY(cudaStreamSynchronize(lo->stream), err);
        if (fwrite(lo->host, sizeof(float) * lo->V, (size_t)n, lo->f) != (size_t)n) {
            memset(err, 0, sizeof *err);
            err->code = ZERO_ERR_IO;
            snprintf(err->msg, sizeof err->msg, "--eval-logits %s: %s", lo->path, strerror(errno));
            return ZERO_ERR_IO;
        }
    }
    return ZERO_OK;
}

/* The mean next-token loss of the --eval batch under the weights as they
   are (gpt_forward: no gradient, no step), printed by rank 0 and written
   to the metrics; its logits into logits_path (rank 0) when given. Every
   rank runs the whole batch (stage 3 gathers with every rank). The batch
   gets buffers of its own (one block slot: a forward keeps nothing), freed
   after. 0, or 1 after printing why. */
template <typename T>
static int run_eval(const run_state *s, zero_engine *e, const char *when, const char *logits_path) {
    const options *o = s->o;
    const world_ctx *w = s->w;
    const int T_ = o->d.seq, V = o->d.vocab, B = (int)(s->eval->n / ((size_t)T_ + 1));
    const size_t attn = (size_t)(o->attn_mib * 1048576.0);
    std::vector<int> rows(s->eval->tok, s->eval->tok + s->eval->n);
    std::vector<float> loss;
    gpt_acts<T> a;
    logits_out lo;
    zero_error err;
    zero_result r = ZERO_OK;
    memset(&a, 0, sizeof a);
    memset(&lo, 0, sizeof lo);
    memset(&err, 0, sizeof err);
    if (gpt_acts_alloc<T>(&a, &o->d, B, 1, !o->no_flash, attn, w->blas, &err) != ZERO_OK) {
        fprintf(stderr, "gpt: rank %d: --eval: %s\nHINT: fewer rows in %s, or a smaller --attn-mib\n", w->rank,
                err.msg, o->eval);
        return 1;
    }
    if (logits_path && w->rank == 0) {
        lo.path = logits_path, lo.stream = w->stream, lo.V = V;
        if (!(lo.f = fopen(logits_path, "wb"))) {
            memset(&err, 0, sizeof err);
            r = err.code = ZERO_ERR_IO;
            snprintf(err.msg, sizeof err.msg, "--eval-logits %s: cannot write: %s", logits_path, strerror(errno));
        } else
            r = zero_cuda_check(cudaMallocHost((void **)&lo.host, sizeof(float) * LOGITS_ROWS * (size_t)V),
                                "cudaMallocHost(logits)", __FILE__, __LINE__, &err);
    }
    gpt_run run = {e, {w->blas, o->tf32, w->lt}, w->stream, 1};
    if (r == ZERO_OK) r = gpt_forward<T>(&run, &a, rows.data(), lo.f ? logits_write : NULL, &lo, &err);
    if (r == ZERO_OK) {
        loss.resize((size_t)a.N);
        r = zero_cuda_check(cudaMemcpyAsync(loss.data(), a.loss, sizeof(float) * (size_t)a.N, cudaMemcpyDeviceToHost,
                                            w->stream),
                            "cudaMemcpyAsync(eval losses)", __FILE__, __LINE__, &err);
    }
    if (r == ZERO_OK)
        r = zero_cuda_check(cudaStreamSynchronize(w->stream), "cudaStreamSynchronize", __FILE__, __LINE__, &err);
    if (lo.f && fclose(lo.f) != 0 && r == ZERO_OK) {
        memset(&err, 0, sizeof err);
        r = err.code = ZERO_ERR_IO;
        snprintf(err.msg, sizeof err.msg, "--eval-logits %s: %s", logits_path, strerror(errno));
    }
    if (lo.host) cudaFreeHost(lo.host);
    gpt_acts_free<T>(&a);
    if (r != ZERO_OK) {
        fprintf(stderr, "gpt: rank %d: --eval: %s\n", w->rank, err.msg);
        return 1;
    }
    double sum = 0;
    for (float x : loss) sum += x; /* in order, in double: the same bits on every stage and world */
    double mean = sum / (double)loss.size();
    if (w->rank == 0) {
        printf("eval loss %.9f (%s training, %d x %d tokens)\n", mean, when, B, T_);
        if (logits_path) printf("eval logits: %s, float32 [%d, %d, %d]\n", logits_path, B, T_, V);
        if (s->jsonl) {
            metrics_line m(s->jsonl, "eval");
            m.str("when", when);
            m.i64("step", (long long)zero_global_steps(e));
            m.num("loss", "%.17g", mean);
            m.i64("batch", B);
            m.i64("seq", T_);
            m.i64("vocab", V);
            m.end();
        }
    }
    return 0;
}

/* --gas auto: a warm-up step and a timed one at the engine's accumulation (2), then the least accumulation G
   whose step, G x the fastest micro-batch (the compute) + what the step adds to it (the timed step less its
   micro-batches' compute), is within 1.25x of the compute: G >= 4 x added / micro-batch, from 2 to 64, the
   largest over the ranks; set with zero_set_train_batch_size. Returns 0 or 1 (said on stderr). */
template <typename T> static int pick_gas(const run_state *s, zero_engine *e, gpt_acts<T> *a, int *step0) {
    const world_ctx *w = s->w;
    zero_config *cfg = (zero_config *)s->cfg; /* (main's own: the loop reads the accumulation from it) */
    const int g0 = (int)cfg->gradient_accumulation_steps;
    zero_error err;
    zero_result r;
    cudaEvent_t ev[2] = {NULL, NULL};
    float step_ms = 0;
    double G = 0;
    memset(&err, 0, sizeof err);
    if ((r = train<T>(s, e, a, *step0, 1, 0, NULL, &err)) == ZERO_OK &&
        (r = zero_cuda_check(cudaEventCreate(&ev[0]), "cudaEventCreate", __FILE__, __LINE__, &err)) == ZERO_OK &&
        (r = zero_cuda_check(cudaEventCreate(&ev[1]), "cudaEventCreate", __FILE__, __LINE__, &err)) == ZERO_OK) {
        cudaEventRecord(ev[0], w->stream);
        r = train<T>(s, e, a, *step0 + 1, 1, 0, NULL, &err);
        cudaEventRecord(ev[1], w->stream);
        cudaEventSynchronize(ev[1]);
        cudaEventElapsedTime(&step_ms, ev[0], ev[1]);
    }
    for (cudaEvent_t x : ev)
        if (x) cudaEventDestroy(x);
    *step0 += 2;
    if (r != ZERO_OK) {
        fprintf(stderr, "gpt: rank %d: --gas auto: %s\n", w->rank, err.msg);
        return 1;
    }
    const double mb = s->micro_min_ms ? *s->micro_min_ms : 0, added = step_ms - g0 * mb;
    if (mb > 0) G = ceil(4.0 * (added > 0 ? added : 0) / mb);
    G = G < 2 ? 2 : G > 64 ? 64 : G;
    if (zero_all_reduce_scalars(e, &G, 1, ZERO_OP_MAX) != ZERO_OK ||
        zero_set_train_batch_size(e, cfg->train_micro_batch_size_per_gpu * (int64_t)G * w->world) != ZERO_OK) {
        fprintf(stderr, "gpt: rank %d: --gas auto: %s\n", w->rank, zero_engine_error(e)->msg);
        return 1;
    }
    cfg->gradient_accumulation_steps = (int64_t)G;
    cfg->train_batch_size = cfg->train_micro_batch_size_per_gpu * (int64_t)G * w->world;
    if (w->rank == 0) {
        printf("gas auto: a step of %d micro-batches took %.1f ms, the fastest micro-batch %.1f ms: the step adds %.1f ms "
               "to its compute -> accumulation %d (the step within 1.25x of its compute)\n",
               g0, step_ms, mb, added, (int)G);
        if (s->jsonl) {
            metrics_line m(s->jsonl, "gas_auto");
            m.num("step_ms", "%.3f", step_ms);
            m.num("micro_batch_ms", "%.3f", mb);
            m.num("added_ms", "%.3f", added);
            m.i64("gas", (long long)G);
            m.end();
        }
    }
    return 0;
}

template <typename T> static int run_rank(const run_state *s, zero_engine *e) {
    const options *o = s->o;
    const world_ctx *w = s->w;
    gpt_acts<T> a;
    zero_error err;
    zero_result r;
    std::vector<double> step_ms;
    size_t attn = (size_t)(o->attn_mib * 1048576.0);
    int B = (int)s->cfg->train_micro_batch_size_per_gpu;
    const int done = (int)zero_global_steps(e); /* 0, or the loaded checkpoint's: the loop goes on from there */
    int step0 = done;                           /* the data's step index (the trials below move it on) */
    memset(&err, 0, sizeof err);
    memset(&a, 0, sizeof a);
    if (s->eval && run_eval<T>(s, e, "before", done >= o->steps ? o->eval_logits : NULL)) return 1;
    if (done >= o->steps) {
        if (w->rank == 0 && o->steps > 0)
            printf("gpt: the engine is at step %d, --steps is %d: nothing to train (--steps is the total, the "
                   "schedule's length)\n",
                   done, o->steps);
        return 0;
    }
    if (o->find_max) { /* double while it fits, then halve the gap; a trial = allocate + 2 steps */
        int lo = 0, hi = 0, b = 1;
        while (!hi || hi - lo > 1) {
            int ok = gpt_acts_alloc<T>(&a, &o->d, b, o->recompute, !o->no_flash, attn, w->blas, &err) == ZERO_OK;
            ok = all_ok(w, ok); /* an OOM on any rank: too big for all */
            if (ok) {
                r = train<T>(s, e, &a, step0, 2, 0, NULL, &err);
                step0 += 2;
                if (r != ZERO_OK) {
                    fprintf(stderr, "gpt: rank %d: micro-batch %d: %s\n", w->rank, b, err.msg);
                    gpt_acts_free<T>(&a);
                    return 1;
                }
            }
            gpt_acts_free<T>(&a);
            if (w->rank == 0 && !o->quiet)
                printf("find-max-batch: micro-batch %d %s\n", b, ok ? "fits" : "does not fit");
            if (ok) lo = b;
            else hi = b;
            b = hi ? (lo + hi) / 2 : b * 2;
            if (lo == 0 && hi == 1) {
                fprintf(stderr, "gpt: rank %d: not even micro-batch 1 fits: %s\n", w->rank, err.msg);
                return 1;
            }
        }
        B = lo;
        if (w->rank == 0) {
            printf("find-max-batch: the largest micro-batch is %d\n", B);
            if (s->jsonl) {
                metrics_line m(s->jsonl, "max_batch");
                m.i64("batch", B);
                m.end();
            }
        }
    }
    if (gpt_acts_alloc<T>(&a, &o->d, B, o->recompute, !o->no_flash, attn, w->blas, &err) != ZERO_OK) {
        zero_memory_stats ms;
        size_t fr = 0, tot = 0;
        double eng = zero_memory_report(e, &ms) == ZERO_OK ? ms.planned_total[ZERO_MEM_DEVICE] / 1073741824.0 : 0;
        cudaMemGetInfo(&fr, &tot);
        /* where the device went: the engine's plan, and what is free of the whole */
        fprintf(stderr, "gpt: rank %d: %s; the engine holds %.2f GiB of the device as planned, %.2f GiB of %.2f "
                "are in use\nHINT: a smaller --batch, --recompute, or a higher stage / offload\n",
                w->rank, err.msg, eng, (double)(tot - fr) / 1073741824.0, (double)tot / 1073741824.0);
        return 1;
    }
    if (o->gas_auto && pick_gas<T>(s, e, &a, &step0) != 0) {
        gpt_acts_free<T>(&a);
        return 1;
    }
    double engine_gib = 0;
    {
        zero_memory_stats ms;
        if (zero_memory_report(e, &ms) == ZERO_OK) engine_gib = ms.planned_total[ZERO_MEM_DEVICE] / 1073741824.0;
    }
    if (w->rank == 0 && !o->quiet) {
        zero_memory_stats ms;
        zero_memory_report(e, &ms);
        printf("memory per GPU: engine %.2f GiB (params, grads, optimizer as planned), activations %.2f GiB "
               "(micro-batch %d x %d%s; attention %s), device in use %.2f GiB\n",
               ms.planned_total[ZERO_MEM_DEVICE] / 1073741824.0, a.bytes / 1073741824.0, B, o->d.seq,
               o->recompute ? ", recompute" : "", a.flash ? "fused" : "through cuBLAS", gpu_used_gib());
    }
    if (done > 0 && w->rank == 0 && !o->quiet) printf("gpt: resuming at step %d of %d\n", done, o->steps);
    r = train<T>(s, e, &a, step0, o->steps - done, 1, &step_ms, &err);
    if (r != ZERO_OK) {
        fprintf(stderr, "gpt: rank %d: %s\n", w->rank, err.msg);
        gpt_acts_free<T>(&a);
        return 1;
    }
    if (w->rank == 0) {
        double med = 0;
        if (!step_ms.empty()) {
            std::sort(step_ms.begin(), step_ms.end());
            med = step_ms[step_ms.size() / 2];
        }
        int gas = (int)s->cfg->gradient_accumulation_steps;
        double tok = med > 0 ? (double)B * o->d.seq * gas / (med / 1e3) : 0, tf = tok * s->flops_tok / 1e12;
        double mfu = s->peak > 0 ? tf * 1e12 / s->peak : -1, gmem = gpu_used_gib();
        printf("summary: %s stage %d, %d GPU%s, micro-batch %d x %d, gas %d: median step %.1f ms over %zu steps | "
               "%.0f tok/s per GPU | %.1f TFLOP/s per GPU | MFU %.1f%% (attention %.1f%% of the FLOPs) | GPU %.2f "
               "GiB | host peak %.2f GiB\n",
               zero_dtype_name(s->cfg->bf16.enabled == 1 ? ZERO_DTYPE_BF16 : s->cfg->fp16.enabled == 1 ? ZERO_DTYPE_FP16
                                                                                                     : ZERO_DTYPE_FP32),
               (int)s->cfg->zero_optimization.stage, w->world, w->world == 1 ? "" : "s", B, o->d.seq, gas, med,
               step_ms.size(), tok, tf, mfu * 100, gpt_attention_flop_share(&o->d) * 100, gmem, host_gib("VmHWM:"));
        if (s->jsonl) {
            metrics_line m(s->jsonl, "end");
            m.i64("batch", B);
            m.num("median_step_ms", "%.3f", med);
            m.i64("timed_steps", (long long)step_ms.size());
            m.num("tokens_per_s_per_gpu", "%.1f", tok);
            m.num("tflops_per_gpu", "%.2f", tf);
            m.num("mfu", "%.4f", mfu);
            m.num("gpu_peak_gib", "%.3f", gmem);
            m.num("engine_gib", "%.3f", engine_gib);
            m.num("activations_gib", "%.3f", a.bytes / 1073741824.0);
            m.num("host_peak_gib", "%.3f", host_gib("VmHWM:"));
            m.num("attention_flop_share", "%.4f", gpt_attention_flop_share(&o->d));
            m.end();
        }
        if (w->world > 1 && s->last) { /* what rank 0's collectives sent in the last step, per kind of group */
            const zero_step_info *in = s->last;
            printf("comm: bytes sent per step by rank 0: world %.3f GB | inside its shard group %.3f GB | across groups "
                   "%.3f GB (mics_shard_size %lld)\n",
                   in->comm_bytes[ZERO_GROUP_WORLD] / 1e9, in->comm_bytes[ZERO_GROUP_SHARD] / 1e9,
                   in->comm_bytes[ZERO_GROUP_REPLICA] / 1e9, (long long)s->cfg->zero_optimization.mics_shard_size);
            if (s->jsonl) {
                metrics_line m(s->jsonl, "comm");
                m.i64("world_bytes", (long long)in->comm_bytes[ZERO_GROUP_WORLD]);
                m.i64("shard_bytes", (long long)in->comm_bytes[ZERO_GROUP_SHARD]);
                m.i64("replica_bytes", (long long)in->comm_bytes[ZERO_GROUP_REPLICA]);
                m.i64("mics_shard_size", (long long)s->cfg->zero_optimization.mics_shard_size);
                m.end();
            }
        }
    }
    gpt_acts_free<T>(&a);
    if (w->pool) {
        /* a CPU Adam left running (the overlapped step, the delayed update) still uses the pool
           that measures the host's bandwidth: finish it first, every rank (a collective) */
        if (zero_flush(e) != ZERO_OK) {
            fprintf(stderr, "gpt: rank %d: zero_flush: %s\n", w->rank, zero_engine_error(e)->msg);
            return 1;
        }
        if (!step_ms.empty() && s->last) print_floor(s, e, step_ms[step_ms.size() / 2]);
    }
    if (s->eval) {
        if (zero_flush(e) != ZERO_OK) { /* delayed_param_update: the last step's weights onto the device */
            fprintf(stderr, "gpt: rank %d: zero_flush: %s\n", w->rank, zero_engine_error(e)->msg);
            return 1;
        }
        if (run_eval<T>(s, e, "after", o->eval_logits)) return 1;
    }
    return 0;
}

static zero_result make_config(const options *o, int world, zero_config *cfg, zero_error *err) {
    zero_optimization_config *z = &cfg->zero_optimization;
    *cfg = zero_config_default();
    cfg->optimizer.lr = 6e-4;
    cfg->optimizer.weight_decay = 0.1;
    cfg->optimizer.beta2 = 0.95;
    cfg->gradient_clipping = 1.0;
    cfg->train_micro_batch_size_per_gpu = 4;
    cfg->steps_per_print = 10;
    if (o->config) {
        zero_result r = zero_config_load(cfg, o->config, err);
        if (r != ZERO_OK) return r;
    } else { /* GPT-2 practice: linear warm-up over the first tenth, then linear decay to 0 */
        cfg->scheduler.type = ZERO_SCHEDULER_WARMUP_DECAY_LR;
        cfg->scheduler.warmup_type = ZERO_WARMUP_LINEAR;
        cfg->scheduler.warmup_min_lr = 0;
        cfg->scheduler.warmup_num_steps = o->steps >= 10 ? o->steps / 10 : 1;
        cfg->scheduler.total_num_steps = o->steps > 0 ? o->steps : 1; /* --steps 0 evaluates only */
    }
    if (cfg->optimizer.lr == ZERO_AUTO) cfg->optimizer.lr = 6e-4;
    if (cfg->optimizer.beta1 == ZERO_AUTO) cfg->optimizer.beta1 = 0.9;
    if (cfg->optimizer.beta2 == ZERO_AUTO) cfg->optimizer.beta2 = 0.95;
    if (cfg->optimizer.eps == ZERO_AUTO) cfg->optimizer.eps = 1e-8;
    if (cfg->optimizer.weight_decay == ZERO_AUTO) cfg->optimizer.weight_decay = 0.1;
    if (cfg->gradient_clipping == ZERO_AUTO) cfg->gradient_clipping = 1.0;
    if (cfg->fp16.enabled == ZERO_AUTO) cfg->fp16.enabled = 0;
    if (cfg->bf16.enabled == ZERO_AUTO) cfg->bf16.enabled = 0;
    if (cfg->scheduler.warmup_num_steps == ZERO_AUTO) cfg->scheduler.warmup_num_steps = o->steps / 10;
    if (cfg->scheduler.total_num_steps == ZERO_AUTO) cfg->scheduler.total_num_steps = o->steps > 0 ? o->steps : 1;
    if (cfg->train_batch_size == ZERO_AUTO) cfg->train_batch_size = ZERO_UNSET;
    if (cfg->gradient_accumulation_steps == ZERO_AUTO) cfg->gradient_accumulation_steps = 1;
    if (cfg->train_micro_batch_size_per_gpu == ZERO_AUTO) cfg->train_micro_batch_size_per_gpu = 4;
    cfg->hidden_size = o->d.dim;
    if (o->has_batch || o->has_gas) cfg->train_batch_size = ZERO_UNSET;
    if (o->has_batch) cfg->train_micro_batch_size_per_gpu = o->batch;
    if (o->has_gas) cfg->gradient_accumulation_steps = o->gas;
    if (o->has_lr) cfg->optimizer.lr = o->lr;
    if (!o->config) cfg->scheduler.warmup_max_lr = cfg->optimizer.lr;
    if (o->has_stage) z->stage = o->stage;
    if (o->has_dtype) {
        cfg->fp16.enabled = o->dtype == ZERO_DTYPE_FP16;
        cfg->bf16.enabled = o->dtype == ZERO_DTYPE_BF16;
    }
    if (o->no_overlap) cfg->overlap_cpu_step = 0;
    if (o->optimizer >= 0) { /* the type's own defaults where this program's Adam ones do not apply */
        cfg->optimizer.type = (zero_optimizer_type)o->optimizer;
        if (o->optimizer == ZERO_OPTIMIZER_ADAGRAD) cfg->optimizer.eps = 1e-10;
        if (o->optimizer == ZERO_OPTIMIZER_SGD) cfg->optimizer.momentum = 0.9;
        if (o->optimizer == ZERO_OPTIMIZER_MUON) { /* DeepSpeed's MuonWithAuxAdam defaults; the AdamW side at --lr */
            cfg->optimizer.muon_lr = 0.02;
            cfg->optimizer.adam_lr = cfg->optimizer.lr;
            cfg->optimizer.momentum = 0.95;
            cfg->optimizer.nesterov = 1;
            cfg->optimizer.eps = 1e-10;
            if (!o->config) { /* a schedule that scales each side's own lr (WarmupDecayLR's max lr would be both sides') */
                cfg->scheduler.type = ZERO_SCHEDULER_WARMUP_COSINE_LR;
                cfg->scheduler.warmup_min_ratio = 0;
                cfg->scheduler.cos_min_ratio = 0.1;
            }
        }
    }
    if (o->offload_opt >= 0) z->offload_optimizer.device = (zero_offload_device)o->offload_opt;
    if (o->offload_param >= 0) z->offload_param.device = (zero_offload_device)o->offload_param;
    if (o->offload_ratio > 0) z->offload_optimizer.ratio = o->offload_ratio;
    if (o->auto_ratio > 0) z->offload_optimizer.ratio = o->auto_ratio;
    if (o->auto_params_host) cfg->ratio_params_device = 0;
    if (o->auto_max_live > 0) { /* the pool keeps the model; with recompute a unit's uses lie up to 3 models apart */
        z->stage3_max_live_parameters = (int64_t)o->auto_max_live;
        z->stage3_max_reuse_distance = 3 * (int64_t)o->auto_max_live;
    }
    if (o->auto_group > 0) z->mics_shard_size = o->auto_group;
    if (o->nvme) {
        snprintf(z->offload_optimizer.nvme_path, sizeof z->offload_optimizer.nvme_path, "%s", o->nvme);
        snprintf(z->offload_param.nvme_path, sizeof z->offload_param.nvme_path, "%s", o->nvme);
    }
    return zero_config_resolve(cfg, world, err);
}

/* An option of the plan in words: "stage 3, optimizer on the CPU (ratio 0.41), parameters on the CPU (the kept
   units' on the GPU), recompute, micro-batch 4 x 32" */
static void describe_option(const zero_time_model *m, int world, char *buf, size_t cap) {
    const int opt_cpu = m->offload_optimizer == ZERO_OFFLOAD_CPU;
    const double ratio = opt_cpu && m->offload_ratio < 1 ? m->offload_ratio : 0;
    char group[32] = "", rt[32] = "";
    if (m->group > 0 && m->group < world) snprintf(group, sizeof group, ", mics_shard_size %d", m->group);
    if (ratio > 0) snprintf(rt, sizeof rt, " (ratio %g)", ratio);
    snprintf(buf, cap, "stage %d%s, optimizer %s%s, parameters %s%s%s, micro-batch %d x %d", m->stage, group,
             opt_cpu ? "on the CPU" : "on the GPU", rt,
             m->offload_param != ZERO_OFFLOAD_CPU ? "on the GPU"
             : ratio <= 0                         ? "on the CPU"
             : m->ratio_params_host               ? "on the CPU (the kept units' too)"
                                                  : "on the CPU (the kept units' on the GPU)",
             m->offload_param == ZERO_OFFLOAD_CPU && m->stage3_max_live_parameters >= m->params ? " (kept in the pool)" : "",
             m->recompute ? ", recompute" : "", m->micro_batch, m->grad_accum);
}

/* --auto: zero_estimate_plan for this model on this machine. Every rank plans with the same inputs: the
   smallest GPU memory and host memory (zero_host_mem_available: the node's MemAvailable) over the ranks, so
   that every rank picks the same option. The step-time model's rates are its defaults (one H100's; an H200's optimizer rate where the
   GPU is one), so the pick is the model's best guess; the step it prints is that guess. 0: o holds the pick */
static int choose_plan(options *o, const world_ctx *w) {
    const zero_dist_env *env = zero_cuda_env(w->cuda);
    const int local = env && env->local_world > 0 ? env->local_world : 1;
    const double GiB = 1073741824.0;
    size_t free_b = 0, total_b = 0;
    float mem[2] = {0, 0}, *d = NULL;
    zero_time_model m;
    zero_time_plan pl;
    zero_error err;
    if (w->world % local) {
        if (w->rank == 0) fprintf(stderr, "gpt: --auto: %d ranks are not whole nodes of %d\n", w->world, local);
        return 1;
    }
    if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) mem[0] = (float)(total_b / GiB);
    mem[1] = (float)(zero_host_mem_available() / GiB); /* the node's (or its cgroup's): its ranks share it */
    if (cudaMalloc((void **)&d, sizeof mem) != cudaSuccess) return 1;
    cudaMemcpy(d, mem, sizeof mem, cudaMemcpyHostToDevice);
    if (w->be->all_reduce(w->be->ctx, d, d, 2, ZERO_DTYPE_FP32, ZERO_OP_MIN, ZERO_STREAM_COMM, &err) != ZERO_OK ||
        w->be->sync(w->be->ctx, ZERO_STREAM_COMM, &err) != ZERO_OK) {
        fprintf(stderr, "gpt: rank %d: --auto: %s\n", w->rank, err.msg);
        cudaFree(d);
        return 1;
    }
    cudaMemcpy(mem, d, sizeof mem, cudaMemcpyDeviceToHost);
    cudaFree(d);
    memset(&m, 0, sizeof m);
    m.params = (double)gpt_n_params(&o->d);
    m.layers = o->d.layers;
    m.hidden = o->d.dim;
    m.vocab = o->d.vocab;
    m.seq = o->d.seq;
    m.micro_batch = o->has_batch ? o->batch : 8;
    m.grad_accum = o->has_gas ? o->gas : 1;
    m.compute_dtype = o->has_dtype ? o->dtype : ZERO_DTYPE_BF16;
    m.gpus_per_node = local;
    m.nodes = w->world / local;
    if (strstr(w->gpu, "H200")) m.hbm_bytes_per_s = 3.917e12; /* (PERF.md 5g's H200 rate) */
    if (o->offload_opt == ZERO_OFFLOAD_CPU) m.offload_optimizer = ZERO_OFFLOAD_CPU;
    { /* the ratio's kept units as the engine will keep them (ZERO_RATIO_UNITS=first: the leading ones), and the
         stream its gradients take to the host (ZERO_COPY_STREAM=0: after the fetches) */
        const char *ru = getenv("ZERO_RATIO_UNITS"), *cs = getenv("ZERO_COPY_STREAM");
        m.ratio_first = ru && !strcmp(ru, "first");
        m.grads_on_comm = cs && !strcmp(cs, "0");
    }
    if (zero_estimate_plan(&m, mem[0] * GiB, mem[1] * GiB, o->tokens, &pl, &err) != ZERO_OK) {
        if (w->rank == 0) fprintf(stderr, "gpt: --auto: %s\n", err.msg);
        return 1;
    }
    if (!pl.found) {
        if (w->rank == 0)
            fprintf(stderr,
                    "gpt: --auto: no ZeRO option fits %.4g parameters on %d GPUs of %.1f GiB with %.1f GiB of host memory "
                    "a node%s\nHINT: zero_estimate --time --plan shows the options; a smaller --batch, or more GPUs\n",
                    m.params, w->world, mem[0], mem[1], o->tokens > 0 ? " (or --tokens is no whole number of sequences a GPU)" : "");
        return 1;
    }
    o->stage = pl.model.stage, o->has_stage = 1;
    o->offload_opt = pl.model.offload_optimizer;
    o->offload_param = pl.model.offload_param;
    o->recompute = pl.model.recompute;
    o->batch = pl.model.micro_batch, o->has_batch = 1;
    o->gas = pl.model.grad_accum, o->has_gas = 1;
    o->auto_ratio = pl.model.offload_optimizer == ZERO_OFFLOAD_CPU && pl.model.offload_ratio < 1 ? pl.model.offload_ratio : 0;
    o->auto_max_live = pl.model.stage3_max_live_parameters;
    o->auto_params_host = o->auto_ratio > 0 && pl.model.offload_param == ZERO_OFFLOAD_CPU && pl.model.ratio_params_host;
    o->auto_group = pl.est.group < w->world ? pl.est.group : 0;
    char what[256];
    describe_option(&pl.model, w->world, what, sizeof what);
    if (w->rank == 0)
        printf("gpt: --auto (zero_estimate_plan for %d GPUs of %.1f GiB, %.1f GiB of host memory a node): %s; predicted "
               "%.1f ms a step, the model's states %.1f GiB + activations %.1f GiB a GPU\n",
               w->world, mem[0], mem[1], what, pl.est.step_s * 1e3, pl.est.gpu_memory_bytes / GiB, pl.activation_bytes / GiB);
    if (pl.tight_found && w->rank == 0) { /* faster, but inside the margin: named, not taken */
        describe_option(&pl.tight, w->world, what, sizeof what);
        printf("gpt: --auto: faster but not taken: %s; predicted %.1f ms a step; its states %.1f GiB + activations %.1f "
               "GiB leave %.2f GiB of the GPU, inside the %.0f GiB the plan keeps for the CUDA context, cuBLAS, NCCL and "
               "the program's other buffers (to run it, give its options by flags)\n",
               what, pl.tight_est.step_s * 1e3, pl.tight_est.gpu_memory_bytes / GiB, pl.tight_activation_bytes / GiB,
               mem[0] - (pl.tight_est.gpu_memory_bytes + pl.tight_activation_bytes) / GiB, ZERO_TIME_PLAN_RESERVE / GiB);
    }
    return 0;
}

int main(int argc, char **argv) {
    options o{};
    world_ctx w;
    zero_config cfg;
    zero_error err;
    zero_engine *e = NULL;
    zero_safetensors *st = NULL;
    hf_names hn;
    gpt_tokens data, evtok;
    std::vector<zero_tensor> ts;
    std::vector<gpt_wire_name> names;
    init_ctx ic;
    run_state s;
    zero_step_info last_info;
    double micro_min_ms = 0;
    int rc = 1, code = -1, parsed;
    void *pmem = NULL; /* --zero-alloc */
    zero_dtype dt;

    setvbuf(stdout, NULL, _IOLBF, 0);
    memset(&w, 0, sizeof w);
    memset(&err, 0, sizeof err);
    memset(&s, 0, sizeof s);
    memset(&last_info, 0, sizeof last_info);
    memset(&data, 0, sizeof data);
    memset(&evtok, 0, sizeof evtok);
    if ((parsed = parse_args(argc, argv, &o)) != 0) {
        if (parsed == 2) usage();
        return parsed == 2 ? 0 : parsed == 3 ? 2 : 1;
    }
    if (zero_cuda_launch_local(&code, &err) != ZERO_OK) {
        fprintf(stderr, "gpt: %s\n", err.msg);
        return 1;
    }
    if (code >= 0) return code; /* the parent of one process per GPU */
    zero_cuda_options copt = zero_cuda_options_default();
    if (zero_cuda_backend_init(&w.cuda, &copt, &err) != ZERO_OK) {
        fprintf(stderr, "gpt: %s\n", err.msg);
        return 1;
    }
    w.be = zero_cuda_backend(w.cuda);
    w.stream = zero_cuda_stream(w.cuda);
    w.rank = zero_cuda_env(w.cuda)->rank;
    w.world = zero_cuda_env(w.cuda)->world;
    {
        cudaDeviceProp prop;
        int dev = 0;
        if (cudaGetDevice(&dev) == cudaSuccess && cudaGetDeviceProperties(&prop, dev) == cudaSuccess)
            snprintf(w.gpu, sizeof w.gpu, "%s", prop.name);
    }
    if (!o.synthetic && load_data(&o, &data)) goto done;
    if (o.eval && load_eval(&o, &evtok)) goto done;
    if (o.auto_plan && choose_plan(&o, &w)) goto done;
    if (make_config(&o, w.world, &cfg, &err) != ZERO_OK) {
        if (w.rank == 0) fprintf(stderr, "gpt: config: %s\n", err.msg);
        goto done;
    }
    if (!o.print_every) o.print_every = cfg.steps_per_print > 0 ? (int)cfg.steps_per_print : 10;
    cfg.steps_per_print = 0; /* the engine's own progress line: ours has the loss and speed too */
    dt = cfg.bf16.enabled == 1 ? ZERO_DTYPE_BF16 : cfg.fp16.enabled == 1 ? ZERO_DTYPE_FP16 : ZERO_DTYPE_FP32;
    if (zero_cpu_pool_create(&w.pool, 0, NULL, &err) != ZERO_OK) w.pool = NULL; /* init runs single-threaded */
    if (cfg.zero_optimization.offload_optimizer.device != ZERO_OFFLOAD_NONE ||
        cfg.zero_optimization.offload_param.device != ZERO_OFFLOAD_NONE) {
        if (!w.pool) {
            fprintf(stderr, "gpt: offload needs the CPU pool: %s\n", err.msg);
            goto done;
        }
        zero_offload_backend(w.be, w.pool, &w.offload_be);
        w.be = &w.offload_be;
    }
    if (cublasCreate(&w.blas) != CUBLAS_STATUS_SUCCESS || cublasSetStream(w.blas, w.stream) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "gpt: rank %d: cuBLAS could not start\n", w.rank);
        goto done;
    }
    if (!o.no_lt && gpt_lt_create(&w.lt, &err) != ZERO_OK) {
        fprintf(stderr, "gpt: rank %d: cuBLASLt: %s\nHINT: --no-lt runs without it\n", w.rank, err.msg);
        goto done;
    }
    /* the model as the engine sees it */
    ic.d = o.d;
    ic.seed = o.seed;
    ic.pool = w.pool;
    names.resize(gpt_n_tensors(&o.d));
    ts.resize(gpt_n_tensors(&o.d));
    gpt_wire_tensors(&o.d, o.grad_any_order ? GPT_WIRE_WTE_ANY_ORDER : 0, names.data(), ts.data(), init_fn, &ic);
    ts[GPT_WTE].flags |= ZERO_TENSOR_ADAM; /* Muon: the embeddings on its AdamW side (DeepSpeed's split looks for */
    ts[GPT_WPE].flags |= ZERO_TENSOR_ADAM; /* "embed" in a name, not HF GPT-2's wte and wpe); other optimizers: no effect */
    if (o.zero_alloc) { /* one allocation, each tensor's place in it 256-byte aligned; rank 0's values (its init) at create */
        size_t bytes = 0, esz = zero_dtype_size(dt);
        for (size_t t = 0; t < ts.size(); t++) bytes += ((size_t)ts[t].numel * esz + 255) / 256 * 256;
        if (zero_alloc(w.be, bytes, &pmem, &err) != ZERO_OK) {
            fprintf(stderr, "gpt: rank %d: zero_alloc of %zu bytes: %s\n", w.rank, bytes, err.msg);
            goto done;
        }
        bytes = 0;
        for (size_t t = 0; t < ts.size(); t++) {
            ts[t].data = (char *)pmem + bytes;
            bytes += ((size_t)ts[t].numel * esz + 255) / 256 * 256;
        }
    }
    s.o = &o;
    s.w = &w;
    s.cfg = &cfg;
    s.data = o.synthetic ? NULL : &data;
    s.eval = o.eval ? &evtok : NULL;
    s.params = gpt_n_params(&o.d);
    s.flops_tok = gpt_flops_per_token(&o.d);
    s.last = &last_info;
    s.micro_min_ms = &micro_min_ms;
    if (cfg.zero_optimization.offload_optimizer.device != ZERO_OFFLOAD_NONE ||
        cfg.zero_optimization.offload_param.device != ZERO_OFFLOAD_NONE) { /* the floor's compute, before the engine */
        const int B = (int)cfg.train_micro_batch_size_per_gpu;
        const int bad = dt == ZERO_DTYPE_BF16   ? model_compute<__nv_bfloat16>(&w, &o, B, &s.block_ms, &s.rest_ms, &err)
                        : dt == ZERO_DTYPE_FP16 ? model_compute<__half>(&w, &o, B, &s.block_ms, &s.rest_ms, &err)
                                                : model_compute<float>(&w, &o, B, &s.block_ms, &s.rest_ms, &err);
        if (bad) {
            s.block_ms = s.rest_ms = 0;
            if (w.rank == 0) printf("gpt: the floor's compute probe did not run (%s): the fastest micro-batch stands for it\n", err.msg);
        }
    }
    s.peak = o.peak_tflops > 0 ? o.peak_tflops * 1e12
             : (strstr(w.gpu, "H100") || strstr(w.gpu, "H200"))
                 ? (dt == ZERO_DTYPE_FP32 ? (o.tf32 ? 494.7e12 : 66.9e12) : 989.4e12)
                 : 0;
    if (w.rank == 0) {
        printf("gpt: %d layers, dim %d, %d heads, seq %d, vocab %d: %.3g parameters (%.3g GFLOP per token, attention "
               "%.1f%%) | %s stage %d, %d GPU%s (%s) | micro-batch %lld x gas %lld | offload optimizer %s, params %s%s "
               "| data: %s\n",
               o.d.layers, o.d.dim, o.d.heads, o.d.seq, o.d.vocab, (double)s.params, s.flops_tok / 1e9,
               gpt_attention_flop_share(&o.d) * 100, zero_dtype_name(dt), (int)cfg.zero_optimization.stage, w.world,
               w.world == 1 ? "" : "s", w.gpu, (long long)cfg.train_micro_batch_size_per_gpu,
               (long long)cfg.gradient_accumulation_steps,
               offload_name(cfg.zero_optimization.offload_optimizer.device),
               offload_name(cfg.zero_optimization.offload_param.device), o.recompute ? " | recompute" : "",
               o.synthetic ? "synthetic" : o.data_kind == GPT_DATA_TEXT ? "text" : "tokens");
        if (o.synthetic) {
        } else if (o.data_kind == GPT_DATA_TEXT)
            printf("data: %zu bytes of text\n", data.n);
        else
            printf("data: %zu tokens (%s)\n", data.n, gpt_data_kind_name(o.data_kind));
        if (o.init_from)
            printf("init: %s (wpe %d rows, the context %d)\n", o.init_from, gpt_positions(&o.d), o.d.seq);
        if (o.metrics && !(s.jsonl = fopen(o.metrics, "w")))
            fprintf(stderr, "gpt: %s: cannot write the metrics (going on without)\n", o.metrics);
        if (s.jsonl) {
            setvbuf(s.jsonl, NULL, _IOLBF, 0);
            metrics_line m(s.jsonl, "start");
            m.str("program", "gpt");
            fprintf(s.jsonl, ",\"model\":{\"layers\":%d,\"dim\":%d,\"heads\":%d,\"seq\":%d,\"vocab\":%d,\"positions\":%d,"
                             "\"params\":%lld}",
                    o.d.layers, o.d.dim, o.d.heads, o.d.seq, o.d.vocab, gpt_positions(&o.d), (long long)s.params);
            m.i64("stage", (int)cfg.zero_optimization.stage);
            m.i64("world", w.world);
            m.i64("batch", (long long)cfg.train_micro_batch_size_per_gpu);
            m.i64("gas", (long long)cfg.gradient_accumulation_steps);
            m.str("dtype", zero_dtype_name(dt));
            m.str("offload_optimizer", offload_name(cfg.zero_optimization.offload_optimizer.device));
            m.str("offload_param", offload_name(cfg.zero_optimization.offload_param.device));
            m.i64("recompute", o.recompute);
            m.str("gpu", w.gpu);
            m.num("peak_tflops", "%.1f", s.peak / 1e12);
            m.num("flops_per_token", "%.6g", s.flops_tok);
            m.end();
        }
    }
    if (o.init_from) { /* every rank opens the checkpoint and reads what it keeps (at create) */
        zero_safetensors_options so;
        memset(&so, 0, sizeof so);
        if (zero_safetensors_open(&st, o.init_from, &err) != ZERO_OK) {
            fprintf(stderr, "gpt: rank %d: --init-from %s: %s\n", w.rank, o.init_from, err.msg);
            goto done;
        }
        hn.d = o.d;
        hn.prefixed = zero_safetensors_find(st, "transformer.wte.weight") >= 0;
        so.rename = hf_rename;
        so.ignore = hf_ignore;
        so.user = &hn;
        if (zero_safetensors_bind(st, ts.data(), (int)ts.size(), &so, &err) != ZERO_OK) {
            fprintf(stderr, "gpt: rank %d: --init-from %s: %s\n", w.rank, o.init_from, err.msg);
            goto done;
        }
    }
    if (zero_engine_create(&e, &cfg, ts.data(), (int)ts.size(), w.be, &err) != ZERO_OK) {
        fprintf(stderr, "gpt: rank %d: zero_engine_create: %s\n", w.rank, err.msg);
        goto done;
    }
    if (st) {
        zero_safetensors_close(st);
        st = NULL;
    }
    if (o.load && zero_load(e, o.load, &err) != ZERO_OK) {
        fprintf(stderr, "gpt: rank %d: zero_load %s: %s\n", w.rank, o.load, err.msg);
        goto done;
    }
    switch (dt) {
    case ZERO_DTYPE_FP16: rc = run_rank<__half>(&s, e); break;
    case ZERO_DTYPE_BF16: rc = run_rank<__nv_bfloat16>(&s, e); break;
    default: rc = run_rank<float>(&s, e); break;
    }
    if (rc == 0 && (o.save || o.export_path) && zero_flush(e) != ZERO_OK) {
        fprintf(stderr, "gpt: rank %d: zero_flush: %s\n", w.rank, zero_engine_error(e)->msg);
        rc = 1;
    }
    if (rc == 0 && o.save) {
        if (zero_save(e, o.save, &err) != ZERO_OK) {
            fprintf(stderr, "gpt: rank %d: zero_save %s: %s\n", w.rank, o.save, err.msg);
            rc = 1;
        } else if (w.rank == 0)
            printf("saved: %s (zero_ckpt inspect %s)\n", o.save, o.save);
    }
    if (rc == 0 && o.export_path) {
        if (zero_export_safetensors(e, o.export_path, ZERO_DTYPE_FP32, &err) != ZERO_OK) {
            fprintf(stderr, "gpt: rank %d: export %s: %s\n", w.rank, o.export_path, err.msg);
            rc = 1;
        } else if (w.rank == 0)
            printf("exported: %s\n", o.export_path);
    }
done:
    if (s.jsonl) fclose(s.jsonl);
    if (st) zero_safetensors_close(st);
    gpt_tokens_free(&data);
    gpt_tokens_free(&evtok);
    zero_engine_destroy(e);
    zero_free(w.be, pmem);
    gpt_lt_destroy(w.lt);
    if (w.blas) cublasDestroy(w.blas);
    if (w.pool) zero_cpu_pool_destroy(w.pool);
    if (w.cuda) zero_cuda_backend_destroy(w.cuda);
    return rc;
}
