/* zero_estimate - how much memory the model states take under each ZeRO
   option, by zero's plan and by DeepSpeed's estimator, and the largest model
   that fits a machine. Like DeepSpeed's
   estimate_zero3_model_states_mem_needs_all_cold, for every option at once.

       zero_estimate --params 1.5e9 --gpus 8 [--nodes 1] [--largest-layer 5e7]
       zero_estimate --fit --gpus 8 --gpu-mem 80GB --cpu-mem 1TB [--nvme 2TB]
       zero_estimate --selftest

   Build: cc -std=c11 -O2 -I. -o zero_estimate examples/zero_estimate/zero_estimate.c -lm
   (make run builds and runs it). --help lists every option. */
#define ZERO_IMPLEMENTATION
#include "zero.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The harness's random helpers are unused here (only --selftest's checks). */
#if defined(__GNUC__) || defined(__clang__)
#  pragma GCC diagnostic push
#  pragma GCC diagnostic ignored "-Wunused-function"
#endif
#include "../../tests/zero_test.h"
#if defined(__GNUC__) || defined(__clang__)
#  pragma GCC diagnostic pop
#endif
#include "../tool_args.h"

#define GIB 1073741824.0

static const char usage[] =
    "usage: zero_estimate --params N [--gpus G] [options]       memory per ZeRO option\n"
    "       zero_estimate --fit --gpu-mem SIZE [--cpu-mem SIZE] [--nvme SIZE] [--gpus G] [options]\n"
    "                                                           largest model per ZeRO option\n"
    "       zero_estimate --time [--model P] [--machine M] [options]  step time, 1 to 1024 GPUs\n"
    "       zero_estimate --selftest                            check the library and the parsers\n"
    "       zero_estimate --help | --version                   every option; the zero version\n";

static const char help[] =
    "\n"
    "Model states only (parameters, gradients, fp32 master weights and Adam moments):\n"
    "activations, the CUDA context and workspaces come on top.\n"
    "\n"
    "  --params N          total parameters (shared ones once; 1 to 1e15)\n"
    "  --gpus G            GPUs per node (default 1; 1 to 1024)\n"
    "  --nodes n           nodes (default 1; 1 to 1048576)\n"
    "  --largest-layer L   parameters of the largest layer (default params / 20; at most --params)\n"
    "  --dtype T           compute dtype: fp16 (default: DeepSpeed's estimators, which this\n"
    "                      table mirrors, assume 2-byte parameters), bf16 or fp32\n"
    "  --bucket N          zero_optimization.reduce_bucket_size (default 5e8; 1 to 1e15)\n"
    "  --gas m             gradient_accumulation_steps (default 1: the reduced gradient in the compute\n"
    "                      dtype, stage 2 on one GPU in place; more: fp32 accumulators)\n"
    "  --max-live N        stage3_max_live_parameters (default: derived as the engine does for layer groups,\n"
    "                      the pool 4 x the largest layer, at most 1.05e9 (DeepSpeed's 1e9 + 5e7); 1 to 1e15)\n"
    "  --prefetch N        stage3_prefetch_bucket_size (default 5e7; 0 to 1e15)\n"
    "  --buffer-factor f   DeepSpeed's additional_buffer_factor (default 1.5; 0.001 to 1000)\n"
    "  --shard G           hybrid sharding (mics_shard_size): zero's columns shard within groups of G GPUs\n"
    "                      (dividing --gpus x --nodes; stages 1-3); DeepSpeed's stay flat\n"
    "  --optimizer NAME    zero's columns for this optimizer's state: adam (default; 12 bytes a parameter with\n"
    "                      the fp32 master), lion, adagrad (8), sgd (4, 8 with --momentum), lamb, muon (12);\n"
    "                      DeepSpeed's\n"
    "                      columns assume Adam\n"
    "  --momentum m        SGD's momentum (default 0: no buffer; 0 to 1e6)\n"
    "  --bf16-master       zero's columns with bf16.bf16_master_weights_and_grads (the master in 2 bytes,\n"
    "                      the accumulator too with --gas > 1; needs --dtype bf16)\n"
    "  --bf16-states       and bf16.bf16_optimizer_states (each state array in 2 bytes: Adam 6 a parameter\n"
    "                      with the master); needs --bf16-master. DeepSpeed's columns stay fp32\n"
    "  --no-zero-init      DeepSpeed's stage-3 CPU figure without zero.Init\n"
    "  --breakdown         also print zero's GPU params / grads / optimizer columns\n"
    "  --fit               print the largest parameter count per option instead\n"
    "  --gpu-mem SIZE      memory of one GPU (with --fit; required; 1 byte to 1e15)\n"
    "  --cpu-mem SIZE      host memory of one node (with --fit; default 0; at most 1e18)\n"
    "  --nvme SIZE         NVMe space of one node (with --fit; default none; at most 1e18)\n"
    "\n"
    "Counts N are whole: 1.5e9, 1.5B, 350M, 20K, 1T (K = 1e3, M = 1e6, B or G = 1e9, T = 1e12).\n"
    "Sizes accept 80GB, 80GiB, 1.5TB, 512MB: decimal KB/MB/GB/TB are exactly 1e3/1e6/1e9/1e12\n"
    "bytes, binary KiB/MiB/GiB/TiB exactly 2^10/2^20/2^30/2^40 bytes; no suffix = bytes.\n"
    "Tables print GiB (2^30 bytes). GPU figures are per GPU; CPU and NVMe figures per node.\n"
    "\n"
    "zero: what zero's engine allocates (docs/estimator.md has the formulas).\n"
    "DeepSpeed: estimate_zero2_model_states_mem_needs (stages 1 and 2) and\n"
    "estimate_zero3_model_states_mem_needs (stage 3, with zero_init unless --no-zero-init);\n"
    "stage 0 is 16 bytes per parameter. DeepSpeed has no NVMe estimate: NVMe rows show\n"
    "its CPU-offload figures, marked *.\n"
    "\n"
    "--time: the step-time model (zero_estimate_time; docs/PERF.md, \"A step-time model,\n"
    "calibrated\", has its formulas' sources and its errors against measured runs). One row\n"
    "per stage and GPU count (1, 2, 4, ..., 1024; one node up to --gpus, then whole nodes).\n"
    "  --model P           preset: gpt2-xl (default; examples/gpt's GPT-2 XL: P 1.4776e9, L 48,\n"
    "                      C 1600, V 256, T 1024, micro-batch 8), 7b (P 6.74e9, L 32, C 4096,\n"
    "                      V 32000, T 4096, micro-batch 1), 70b (P 6.9e10, L 80, C 8192,\n"
    "                      V 32000, T 4096, micro-batch 1); the flags below override it\n"
    "  --machine M         preset: h100 (default) or h200, 8 GPUs per node on NVLink and\n"
    "                      400 Gb/s InfiniBand per GPU. h100: 466.4 TFLOP/s achieved at width 1600\n"
    "                      (fitted on one H100, GPT-2 XL; other widths C scale it by C / (C + 880),\n"
    "                      fitted on GPT-2 124M), Adam at 2.79 TB/s, NVLink 225 GB/s bus and 10 us\n"
    "                      per collective, inter-node 40 GB/s bus and 30 us (assumed: 80% of\n"
    "                      400 Gb/s), PCIe 55 GB/s each way, host 150 GB/s per node. h200: the\n"
    "                      same but Adam at 3.917 TB/s (its copy bandwidth scaled as on H100)\n"
    "  --params N          parameters       --layers L   blocks       --hidden C  width\n"
    "                      (without --params, with a shape: examples/gpt's count of that shape)\n"
    "  --vocab V           vocabulary (0 to 1e8)          --seq T      tokens per sequence\n"
    "  --batch B           micro-batch per GPU            --gas m      micro-batches per step\n"
    "  --dtype T           bf16 (default: the runs the rates were measured on), fp16 or fp32\n"
    "                      (bytes on the wire)\n"
    "  --unit N            elements per communication unit (default params / layers: a block)\n"
    "  --gpus g            GPUs per node (default the preset's 8; must divide 1024)\n"
    "  --stage s           one stage, 0 to 3 (default: all four)\n"
    "  --group G           hybrid shard group: shard within G ranks, replicate across the\n"
    "                      rest (default the world; clamped to the GPU count; must divide --gpus\n"
    "                      or be a multiple of it)\n"
    "  --offload D         offload_optimizer: none (default) or cpu (stages 1-3)\n"
    "  --ratio R           offload_optimizer.ratio with --offload cpu, stage 3 rows: the share of\n"
    "                      the optimizer on the CPU, the rest.s units on the GPU (default 1)\n"
    "  --offload-param D   offload_param: none (default) or cpu (stage 3 rows, with --offload cpu)\n"
    "  --ratio-params P    with --ratio and --offload-param cpu, the kept units' parameters: device\n"
    "                      (default, as the engine keeps them) or host (zero_config.ratio_params_device 0:\n"
    "                      fetched every pass, copied back after their Adam; --plan's h)\n"
    "  --max-live N        stage3_max_live_parameters with --offload-param cpu: N >= the parameters\n"
    "                      keeps the model in the gather pool (fetched once a step)\n"
    "  --cpu-mem SIZE      with --plan or --largest: host memory of one node (default the machine's:\n"
    "                      2TiB, a DGX node's, assumed); the offloads may use it less 2GiB per GPU\n"
    "                      and 2GiB more (the processes' own)\n"
    "  --tokens N          with --plan: tokens per optimizer step on all GPUs; the plan also\n"
    "                      searches the micro-batch (1, 2, 4, ...) and the accumulation that give them\n"
    "  --plan              instead of the table: per GPU count the fastest stage, group G,\n"
    "                      offload (at stage 3 with its ratio: 1, 0.99, ..., 0.01) and activation\n"
    "                      recompute whose memory fits --gpu-mem (and --cpu-mem); at stage 3 with\n"
    "                      the optimizer offloaded also the parameters, fetched every pass or kept;\n"
    "                      with --offload cpu only the options that offload the optimizer\n"
    "  --largest           instead of the table: per GPU count and stage, the most blocks of\n"
    "                      examples/gpt's GPT at --hidden, --vocab, --seq, --batch that fit --gpu-mem,\n"
    "                      activations kept and every block recomputed (--offload, --offload-param at\n"
    "                      stage 3, --group and --cpu-mem apply)\n"
    "  --gpu-mem SIZE      with --plan or --largest: memory of one GPU (default the machine's, what\n"
    "                      cudaMemGetInfo gives: 79.18GiB on an H100 80GB, 139.8GiB on an H200)\n"
    "  --serial-gathers    stage-3 gathers not overlapped with compute (the engine before its\n"
    "                      per-span stream order)\n"
    "  --serial-step       stages 1-2 gather after the whole optimizer step (ZERO_STEP_OVERLAP=0)\n"
    "  --contention K      compute time lost per second of a collective beside it (1.3006,\n"
    "                      fitted on 2x H200 at stage 3)\n"
    "  --tflops X          achieved TFLOP/s per GPU (FLOPs 6 (12 L C^2 + V C) + 12 L C T per token)\n"
    "  --tflops-width C    the width --tflops was achieved at (1600); give --hidden's to use it as is\n"
    "  --hbm RATE          bytes/s of the optimizer step at 30 bytes per parameter (2.79TB)\n"
    "  --intra-bw RATE     NCCL bus bandwidth inside a node (225GB)\n"
    "  --intra-lat-us X    microseconds per collective inside a node (10)\n"
    "  --inter-bw RATE     NCCL bus bandwidth of a ring across nodes (40GB)\n"
    "  --inter-lat-us X    microseconds per collective across nodes (30)\n"
    "  --pcie RATE         host-device bytes/s, one direction (55GB)\n"
    "  --host-bw RATE      the CPU Adam's host memory bytes/s per node (150GB)\n"
    "  RATE is a size per second: 225GB, 2.79TB, 40e9.\n"
    "Columns: step ms, tokens/s per GPU, exposed communication ms, GB each GPU sends per step on\n"
    "rings inside a node and across nodes, model-state GiB per GPU (zero's plan), whether model\n"
    "states + activations + 4 GiB fit --gpu-mem (the machine's by default), and what of the row\n"
    "lies outside the range the rates were measured on (an extrapolation; - when none).\n"
    "\n"
    "zero_estimate reads no file. Exit status (every zero_* tool's rule): 0; 1 a --selftest\n"
    "check failed; 2 usage: a bad flag or value, or a combination the library refuses (one\n"
    "line saying what is wrong, then the usage; nothing is printed to stdout).\n";

static const char *const flags[] = {
    "--params", "--gpus", "--nodes", "--largest-layer", "--dtype", "--bucket", "--gas", "--max-live", "--prefetch",
    "--buffer-factor", "--shard", "--no-zero-init", "--bf16-master", "--bf16-states", "--breakdown", "--fit", "--gpu-mem", "--cpu-mem", "--nvme",
    "--selftest", "--time", "--optimizer", "--momentum", "--help", "--version", NULL};
static const char *const time_flags[] = {
    "--time", "--model", "--machine", "--params", "--layers", "--hidden", "--vocab", "--seq", "--batch", "--gas",
    "--dtype", "--unit", "--gpus", "--stage", "--group", "--offload", "--ratio", "--offload-param", "--ratio-params", "--max-live",
    "--cpu-mem", "--tokens", "--plan", "--largest", "--gpu-mem", "--serial-gathers",
    "--serial-step", "--contention",
    "--tflops", "--tflops-width", "--hbm", "--intra-bw", "--intra-lat-us", "--inter-bw", "--inter-lat-us",
    "--pcie", "--host-bw", "--help", "--version", NULL};

/* ---- the numbers: examples/tool_args.h (its count and size parsers are
   checked by --selftest) ---- */

/* 1.56 B, 80.4 M, 12.3 T: three significant digits. */
static void fmt_count(double v, char *buf, size_t cap) {
    static const struct { double scale; const char *unit; } u[] = {
        {1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "K"}, {1, ""},
    };
    size_t i;
    for (i = 0; i < sizeof u / sizeof u[0] - 1 && v < u[i].scale; i++) {
    }
    v /= u[i].scale;
    snprintf(buf, cap, v >= 100 ? "%.0f %s" : v >= 10 ? "%.1f %s" : "%.2f %s", v, u[i].unit);
}

/* 80 GB (74.51 GiB), 1 TB (931.32 GiB): decimal and binary side by side. */
static void fmt_size(double bytes, char *buf, size_t cap) {
    int tb = bytes >= 1e12;
    snprintf(buf, cap, "%.4g %s (%.2f GiB)", bytes / (tb ? 1e12 : 1e9), tb ? "TB" : "GB",
             bytes / GIB);
}

static const char *dtype_name(zero_dtype d) {
    return d == ZERO_DTYPE_FP32 ? "fp32" : d == ZERO_DTYPE_BF16 ? "bf16" : "fp16";
}
static const char *dev_name(zero_offload_device d) {
    return d == ZERO_OFFLOAD_CPU ? "cpu" : d == ZERO_OFFLOAD_NVME ? "nvme" : "none";
}

/* ---- the options: every stage, every offload it allows ---- */

typedef struct option {
    int stage;
    zero_offload_device optim, param;
} option;

static int options(option *o) {
    int n = 0, s, i, j;
    for (s = 0; s <= 3; s++)
        for (i = 0; i < (s ? ZERO_OFFLOAD_COUNT : 1); i++)
            for (j = 0; j < (s == 3 ? ZERO_OFFLOAD_COUNT : 1); j++) {
                o[n].stage = s;
                o[n].optim = (zero_offload_device)i;
                o[n].param = (zero_offload_device)j;
                n++;
            }
    return n;
}

static void option_name(const option *o, char *buf, size_t cap) {
    if (o->stage == 0)
        snprintf(buf, cap, "ZeRO-0 (data parallel)");
    else if (o->stage < 3)
        snprintf(buf, cap, "ZeRO-%d optim=%s", o->stage, dev_name(o->optim));
    else
        snprintf(buf, cap, "ZeRO-3 optim=%-4s param=%s", dev_name(o->optim), dev_name(o->param));
}

typedef struct cli {
    zero_estimate_args a;
    int fit, breakdown, selftest;
    double gpu_mem, cpu_mem, nvme;
} cli;

static void apply(const cli *c, const option *o, zero_estimate_args *a) {
    *a = c->a;
    a->stage = o->stage;
    a->offload_optimizer = o->optim;
    a->offload_param = o->param;
    if (o->stage == 0) a->mics_shard_size = 0; /* stage 0 shards nothing */
}

static void print_settings(const cli *c) {
    char p[32], l[32], b[32], m[32], f[32];
    const zero_estimate_args *a = &c->a;
    fmt_count(a->params, p, sizeof p);
    if (a->largest_layer > 0) fmt_count(a->largest_layer, l, sizeof l);
    fmt_count(a->reduce_bucket_size > 0 ? (double)a->reduce_bucket_size : 5e8, b, sizeof b);
    if (a->stage3_max_live_parameters > 0) fmt_count((double)a->stage3_max_live_parameters, m, sizeof m);
    else snprintf(m, sizeof m, "derived (4 L, at most 1.05 B)");
    if (a->stage3_max_live_parameters <= 0) snprintf(f, sizeof f, "inside that pool");
    else fmt_count(a->stage3_prefetch_bucket_size >= 0 ? (double)a->stage3_prefetch_bucket_size : 5e7, f, sizeof f);
    if (!c->fit) printf("model: %s parameters (%.6g), ", p, a->params);
    else printf("model: ");
    if (a->largest_layer > 0) printf("largest layer %s", l);
    else printf("largest layer = params / 20");
    printf(", %s\n", dtype_name(a->compute_dtype));
    printf("machine: %d node%s x %d GPU%s", a->nodes, a->nodes > 1 ? "s" : "", a->gpus_per_node,
           a->gpus_per_node > 1 ? "s" : "");
    if (a->mics_shard_size > 0)
        printf("; zero shards within groups of %d GPUs (mics_shard_size; DeepSpeed's columns flat)",
               a->mics_shard_size);
    printf("\n");
    printf("zero: reduce_bucket_size %s, stage3_max_live_parameters %s, "
           "stage3_prefetch_bucket_size %s\n", b, m, f);
}

static int run_table(const cli *c) {
    option opt[32];
    zero_memory_estimate est[32];
    int n = options(opt), i, star = 0;
    for (i = 0; i < n; i++) { /* every row first: an error prints no half table */
        zero_estimate_args a;
        zero_error err;
        apply(c, &opt[i], &a);
        if (zero_estimate_memory(&a, &est[i], &err) != ZERO_OK) {
            fprintf(stderr, "zero_estimate: %s\n", err.msg);
            return 2;
        }
    }
    printf("zero_estimate: memory of the model states per ZeRO option, GiB (2^30 bytes)\n");
    print_settings(c);
    printf("DeepSpeed: estimate_zero{2,3}_model_states_mem_needs, additional_buffer_factor %.3g, "
           "stage 3 %s zero_init, stage 1 = stage 2's formula\n\n",
           c->a.additional_buffer_factor > 0 ? c->a.additional_buffer_factor : 1.5,
           c->a.zero_init ? "with" : "without");
    printf("%-32s %10s %10s %10s", "", "zero", "zero", "zero");
    if (c->breakdown) printf(" %9s %9s %9s", "zero", "zero", "zero");
    printf(" %10s %10s\n", "DeepSpeed", "DeepSpeed");
    printf("%-32s %10s %10s %10s", "option", "per GPU", "CPU/node", "NVMe/node");
    if (c->breakdown) printf(" %9s %9s %9s", "GPU param", "GPU grad", "GPU optim");
    printf(" %10s %10s\n", "per GPU", "CPU/node");
    for (i = 0; i < n; i++) {
        const zero_memory_estimate *m = &est[i];
        char name[64];
        const char *mark = opt[i].optim == ZERO_OFFLOAD_NVME ? "*" : " ";
        if (*mark == '*') star = 1;
        option_name(&opt[i], name, sizeof name);
        printf("%-32s %10.2f %10.2f %10.2f", name, m->gpu_total_bytes / GIB, m->cpu_total_bytes / GIB,
               m->nvme_bytes / GIB);
        if (c->breakdown)
            printf(" %9.2f %9.2f %9.2f", m->gpu_params_bytes / GIB, m->gpu_grads_bytes / GIB,
                   m->gpu_optimizer_bytes / GIB);
        printf(" %9.2f%s %9.2f%s\n", m->ds_gpu_bytes / GIB, mark, m->ds_cpu_bytes / GIB,
               *mark == '*' ? mark : "");
    }
    printf("\noptim = offload_optimizer.device, param = offload_param.device.\n");
    if (star) printf("* DeepSpeed has no NVMe estimate: its CPU-offload figures.\n");
    return 0;
}

static int run_fit(const cli *c) {
    option opt[32];
    double maxp[32];
    zero_memory_estimate est[32], over[32];
    int n = options(opt), i;
    char g[48], cpu[48], nv[48];
    for (i = 0; i < n; i++) { /* every row first: an error prints no half table */
        zero_estimate_args a;
        zero_error err;
        apply(c, &opt[i], &a);
        if (zero_estimate_max_params(&a, c->gpu_mem, c->cpu_mem, c->nvme, &maxp[i], &err) != ZERO_OK) {
            fprintf(stderr, "zero_estimate: %s\n", err.msg);
            return 2;
        }
        if (maxp[i] <= 0) continue;
        a.params = maxp[i];
        if (zero_estimate_memory(&a, &est[i], &err) != ZERO_OK) {
            fprintf(stderr, "zero_estimate: %s\n", err.msg);
            return 2;
        }
        a.params = maxp[i] * (1 + 1e-5);
        if (a.params > 1e15) a.params = 1e15; /* the library's sanity bound */
        (void)zero_estimate_memory(&a, &over[i], NULL);
    }
    printf("zero_estimate --fit: the largest model whose states fit, per ZeRO option "
           "(zero's plan; model states only, leave room for activations)\n");
    print_settings(c);
    fmt_size(c->gpu_mem, g, sizeof g);
    fmt_size(c->cpu_mem, cpu, sizeof cpu);
    if (c->nvme > 0) fmt_size(c->nvme, nv, sizeof nv);
    else snprintf(nv, sizeof nv, "none");
    printf("budget: %s per GPU, host %s per node, NVMe %s per node\n\n", g, cpu, nv);
    printf("%-32s %12s %10s %10s %10s  %s\n", "option", "max params", "GPU GiB", "CPU GiB",
           "NVMe GiB", "limited by");
    for (i = 0; i < n; i++) {
        const zero_memory_estimate *m = &est[i];
        char name[64], p[32];
        option_name(&opt[i], name, sizeof name);
        if (maxp[i] <= 0) {
            const char *why = (opt[i].optim == ZERO_OFFLOAD_NVME || opt[i].param == ZERO_OFFLOAD_NVME) &&
                                      c->nvme <= 0
                                  ? "needs NVMe (--nvme)"
                              : opt[i].optim != ZERO_OFFLOAD_NONE || opt[i].param != ZERO_OFFLOAD_NONE
                                  ? "does not fit (host memory too small?)"
                                  : "does not fit";
            printf("%-32s %12s %10s %10s %10s  %s\n", name, "-", "", "", "", why);
            continue;
        }
        fmt_count(maxp[i], p, sizeof p);
        printf("%-32s %12s %10.2f %10.2f %10.2f  %s\n", name, p, m->gpu_total_bytes / GIB,
               m->cpu_total_bytes / GIB, m->nvme_bytes / GIB,
               over[i].gpu_total_bytes > c->gpu_mem  ? "GPU"
               : over[i].cpu_total_bytes > c->cpu_mem ? "host memory"
               : over[i].nvme_bytes > c->nvme          ? "NVMe"
                                                      : "the 1e15 sanity bound");
    }
    printf("\noptim = offload_optimizer.device, param = offload_param.device.\n");
    return 0;
}

/* ---- --selftest ---- */

static double gib(double bytes) { return bytes / GIB; }

static void outside_measured(const zero_time_model *m, int gpus, int nodes, char *buf, size_t cap);

static int selftest(void) {
    /* DeepSpeed's worked example (reference section 8): P = 1e9, L = 5e7,
       1 node x 8 GPUs, f = 1.5, printed to two decimals. */
    static const struct { int stage; zero_offload_device o, p; const char *cpu, *gpu; } ex[] = {
        {2, ZERO_OFFLOAD_CPU, ZERO_OFFLOAD_NONE, "44.70", "1.86"},
        {2, ZERO_OFFLOAD_NONE, ZERO_OFFLOAD_NONE, "44.70", "3.96"},
        {3, ZERO_OFFLOAD_CPU, ZERO_OFFLOAD_CPU, "25.15", "0.19"},
        {3, ZERO_OFFLOAD_CPU, ZERO_OFFLOAD_NONE, "22.35", "0.42"},
        {3, ZERO_OFFLOAD_NONE, ZERO_OFFLOAD_NONE, "2.24", "2.28"},
    };
    static const struct { const char *s; double want; } sizes[] = {
        {"80GB", 8e10}, {"80GiB", 80.0 * 1073741824.0}, {"1TB", 1e12},
        {"1TiB", 1099511627776.0}, {"512MB", 5.12e8}, {"1.5GiB", 1610612736.0},
        {"1.1GB", 1100000000.0}, {"2.5e1GB", 2.5e10}, {"80 GB", 8e10}, {"80gb", 8e10},
        {"4096", 4096}, {"1KiB", 1024}, {"3MiB", 3145728}, {"0.1TB", 1e11},
    };
    static const char *const bad_sizes[] = {"", "GB", "80XB", "-1GB", "nanGB", "inf", "1e400GB",
                                            "0x10GB", "80G", "80GBs", "1.5.3GB"};
    static const struct { const char *s; long long want; } counts[] = {
        {"1.5e9", 1500000000}, {"1.5B", 1500000000}, {"350M", 350000000}, {"20K", 20000},
        {"1T", 1000000000000}, {"1.5576e9", 1557600000}, {"8.04e7", 80400000}, {"1.5b", 1500000000},
        {"2G", 2000000000}, {"1.1B", 1100000000}, {"1e15", 1000000000000000}, {"0.5K", 500},
    };
    static const char *const bad_counts[] = {"1.5X", "0", "-3", "", "1e", "B", "1.5BB", "nan", "1.5",
                                             "2e15", "0.5", "99999999999999999999999", " 8", "8 ", "0x10"};
    /* whole numbers: exact to the last digit, never wrapped */
    static const struct { const char *s; long long lo, hi, want; int ok; } ints[] = {
        {"8", 1, 1048576, 8, 1},
        {"1048576", 1, 1048576, 1048576, 1},
        {"1048577", 1, 1048576, 0, 0},
        {"99999999999", 1, 1048576, 0, 0}, /* 1215752191 when cut to 32 bits */
        {"0", 1, 1048576, 0, 0},
        {"-1", 0, 3, 0, 0},
        {"8x", 1, 1048576, 0, 0},
        {"", 1, 1048576, 0, 0},
        {"1.5", 0, 100, 0, 0},
        {"5e8", 0, 1000000000, 500000000, 1},
        {"1.5e3", 0, 1000000000, 1500, 1},
        {"9223372036854775807", LLONG_MIN, LLONG_MAX, LLONG_MAX, 1},
        {"9223372036854775808", LLONG_MIN, LLONG_MAX, 0, 0},
        {"-9223372036854775808", LLONG_MIN, LLONG_MAX, LLONG_MIN, 1},
        {"1e19", LLONG_MIN, LLONG_MAX, 0, 0},
    };
    size_t i;
    for (i = 0; i < sizeof ex / sizeof ex[0]; i++) {
        zero_estimate_args a;
        zero_memory_estimate m;
        char cpu[32], gpu[32];
        memset(&a, 0, sizeof a);
        a.params = 1e9;
        a.largest_layer = 5e7;
        a.gpus_per_node = 8;
        a.nodes = 1;
        a.stage = ex[i].stage;
        a.offload_optimizer = ex[i].o;
        a.offload_param = ex[i].p;
        a.zero_init = 1;
        a.additional_buffer_factor = 1.5;
        CHECK(zero_estimate_memory(&a, &m, NULL) == ZERO_OK);
        snprintf(cpu, sizeof cpu, "%.2f", gib(m.ds_cpu_bytes));
        snprintf(gpu, sizeof gpu, "%.2f", gib(m.ds_gpu_bytes));
        CHECKF(strcmp(cpu, ex[i].cpu) == 0, "row %d cpu %s want %s", (int)i, cpu, ex[i].cpu);
        CHECKF(strcmp(gpu, ex[i].gpu) == 0, "row %d gpu %s want %s", (int)i, gpu, ex[i].gpu);
    }
    for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        double v = -1;
        CHECKF(tool_size(NULL, "--gpu-mem", sizes[i].s, 1, 1e18, &v) == 0 && v == sizes[i].want,
               "\"%s\" -> %.17g want %.17g", sizes[i].s, v, sizes[i].want);
    }
    for (i = 0; i < sizeof bad_sizes / sizeof bad_sizes[0]; i++) {
        double v;
        CHECKF(tool_size(NULL, "--gpu-mem", bad_sizes[i], 1, 1e18, &v) != 0, "\"%s\" accepted", bad_sizes[i]);
    }
    for (i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        long long v = -1;
        CHECKF(tool_count(NULL, "--params", counts[i].s, 1, 1000000000000000, &v) == 0 && v == counts[i].want,
               "\"%s\" -> %lld want %lld", counts[i].s, v, counts[i].want);
    }
    for (i = 0; i < sizeof bad_counts / sizeof bad_counts[0]; i++) {
        long long v;
        CHECKF(tool_count(NULL, "--params", bad_counts[i], 1, 1000000000000000, &v) != 0, "\"%s\" accepted",
               bad_counts[i]);
    }
    for (i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        long long v = -7;
        int r = tool_int(NULL, "--world", ints[i].s, ints[i].lo, ints[i].hi, &v);
        CHECKF(ints[i].ok ? r == 0 && v == ints[i].want : r != 0 && v == -7, "\"%s\" -> %d, %lld", ints[i].s, r, v);
    }
    {
        long long v = -1;
        double x = -1;
        CHECK(tool_count(NULL, "--prefetch", "0", 0, 10, &v) == 0 && v == 0);
        CHECK(tool_num(NULL, "--buffer-factor", "1.5", 0.001, 1000, &x) == 0 && x == 1.5);
        CHECK(tool_num(NULL, "--buffer-factor", "0", 0.001, 1000, &x) != 0);
        CHECK(tool_num(NULL, "--buffer-factor", "nan", 0.001, 1000, &x) != 0);
        CHECK(tool_num(NULL, "--buffer-factor", "1e999", 0.001, 1000, &x) != 0);
        CHECK(tool_num(NULL, "--buffer-factor", "1.5x", 0.001, 1000, &x) != 0);
    }
    { /* --time's outside column: GPT-2 XL on one node of 4 is measured ground; 7B's T 4096 is not */
        zero_time_model m;
        char b[32];
        memset(&m, 0, sizeof m);
        m.hidden = 1600, m.seq = 1024;
        outside_measured(&m, 4, 1, b, sizeof b);
        CHECKF(strcmp(b, "-") == 0, "GPT-2 XL, 4 GPUs: '%s'", b);
        outside_measured(&m, 16, 2, b, sizeof b);
        CHECKF(strcmp(b, "GPUs,nodes") == 0, "GPT-2 XL, 16 GPUs: '%s'", b);
        m.hidden = 4096, m.seq = 4096;
        outside_measured(&m, 1, 1, b, sizeof b);
        CHECKF(strcmp(b, "T") == 0, "7B, 1 GPU: '%s'", b);
        m.hidden = 8192;
        outside_measured(&m, 8, 1, b, sizeof b);
        CHECKF(strcmp(b, "C,T,GPUs") == 0, "70B, 8 GPUs: '%s'", b);
    }
    {
        char b[32];
        fmt_count(1.2345e10, b, sizeof b);
        CHECK_STR_CONTAINS(b, "12.3 B");
        fmt_count(8.04e7, b, sizeof b);
        CHECK_STR_CONTAINS(b, "80.4 M");
    }
    return zt_finish();
}

/* ---- main ---- */

static int usage_error(void) { return tool_usage_error(usage); }

/* ---- --time: the step-time model (zero_estimate_time) ---- */

typedef struct model_preset {
    const char *name, *what;
    double params;
    int layers, hidden, vocab, seq, batch;
} model_preset;

/* GPT-2 XL is examples/gpt's model (PERF.md 5); 7B and 70B take LLaMA-2's
   shapes and parameter counts, their FLOPs by the same GPT formula (close
   for 7B; for 70B's grouped-query attention and SwiGLU an approximation). */
static const model_preset model_presets[] = {
    {"gpt2-xl", "GPT-2 XL of examples/gpt: P 1.4776e9, L 48, C 1600, V 256, T 1024, micro-batch 8",
     1477609600.0, 48, 1600, 256, 1024, 8},
    {"7b", "7B: P 6.74e9, L 32, C 4096, V 32000, T 4096, micro-batch 1", 6.74e9, 32, 4096, 32000,
     4096, 1},
    {"70b", "70B: P 6.9e10, L 80, C 8192, V 32000, T 4096, micro-batch 1", 6.9e10, 80, 8192, 32000,
     4096, 1},
};

typedef struct machine_preset {
    const char *name, *what;
    int gpus_per_node;
    double tflops, hbm, intra_bw, intra_lat, inter_bw, inter_lat, pcie, host;
    double contention; /* compute lost per second of a collective beside it */
    double gpu_mem;    /* bytes of one GPU (--plan, --largest): what cudaMemGetInfo gives as its total */
    double cpu_mem;    /* host memory of a node (--plan): a DGX node's 2 TiB, assumed */
} machine_preset;

/* The rates and where they come from: docs/PERF.md ("A step-time model"). */
static const machine_preset machine_presets[] = {
    {"h100", "8x H100 per node, NVLink, 400 Gb/s InfiniBand per GPU", 8, 466.4, 2.79e12, 225e9,
     10e-6, 40e9, 30e-6, 55e9, 150e9, 1.3006, 79.18 * GIB, 2048 * GIB},
    {"h200", "8x H200 per node, NVLink, 400 Gb/s InfiniBand per GPU", 8, 466.4, 3.917e12, 225e9,
     10e-6, 40e9, 30e-6, 55e9, 150e9, 1.3006, 139.8 * GIB, 2048 * GIB},
};

typedef struct time_cli {
    zero_time_model m;
    int stage;         /* -1: every stage */
    int group;         /* 0: the world */
    int have_model, have_machine;
    int plan;          /* --plan: the fastest option that fits, per GPU count */
    int largest;       /* --largest: the most blocks that fit, per GPU count, stage and recompute */
    double gpu_mem;    /* --gpu-mem (--plan, --largest) */
    double cpu_mem;    /* --cpu-mem (--plan): host memory per node (the machine's by default) */
    double tokens;     /* --tokens (--plan): tokens per optimizer step, all GPUs; 0: --batch and --gas as given */
} time_cli;

/* ---- --plan: per GPU count, the fastest stage, group, offload and recompute that fit ----

   zero_estimate_plan (zero.h) searches; memory per GPU = model states + activations
   (zero_estimate_activations: Korthikanti et al. 2022's 34 C bytes a token a block, or
   with recompute examples/gpt's 4 C (L + 1) + 54 C; the logits 6 V, at most 1 GiB) +
   ZERO_TIME_PLAN_RESERVE; host memory per node + ZERO_TIME_PLAN_HOST_RESERVE. */
#define PLAN_RESERVE ZERO_TIME_PLAN_RESERVE
#define PLAN_SCALING 0.8 /* ZeRO "stops scaling" where compute falls below this share of the step */

/* The plan for N GPUs (g per node, as the machine has): zero_estimate_plan on m at that size. */
static zero_time_plan plan_at(const time_cli *t, int N) {
    zero_time_model r = t->m;
    zero_time_plan b;
    r.gpus_per_node = N < t->m.gpus_per_node ? N : t->m.gpus_per_node;
    r.nodes = N / r.gpus_per_node;
    if (zero_estimate_plan(&r, t->gpu_mem, t->cpu_mem, t->tokens, &b, NULL) != ZERO_OK) b.found = 0;
    return b;
}

/* What of a row lies outside the range the rates were measured on (zero.h,
   ZERO_TIME_MEASURED_*): "-" when nothing does. */
static void outside_measured(const zero_time_model *m, int gpus, int nodes, char *buf, size_t cap) {
    size_t n = 0;
    buf[0] = 0;
#define OUTSIDE(cond, what) \
    if ((cond) && n < cap) n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? "," : "", what)
    OUTSIDE(m->hidden < ZERO_TIME_MEASURED_HIDDEN_MIN || m->hidden > ZERO_TIME_MEASURED_HIDDEN_MAX, "C");
    OUTSIDE(m->seq < ZERO_TIME_MEASURED_SEQ_MIN || m->seq > ZERO_TIME_MEASURED_SEQ_MAX, "T");
    OUTSIDE(gpus > ZERO_TIME_MEASURED_GPUS_MAX, "GPUs");
    OUTSIDE(nodes > ZERO_TIME_MEASURED_NODES_MAX, "nodes");
#undef OUTSIDE
    if (!buf[0]) snprintf(buf, cap, "-");
}

static void print_outside_legend(void) {
    printf("outside: what of the row lies outside the range the model's rates were measured on, so that\n"
           "the row is an extrapolation: C the width outside %d-%d, T the sequence outside %d-%d, GPUs\n"
           "more than %d, nodes more than %d (the inter-node rates are assumed); - : inside it.\n",
           ZERO_TIME_MEASURED_HIDDEN_MIN, ZERO_TIME_MEASURED_HIDDEN_MAX, ZERO_TIME_MEASURED_SEQ_MIN,
           ZERO_TIME_MEASURED_SEQ_MAX, ZERO_TIME_MEASURED_GPUS_MAX, ZERO_TIME_MEASURED_NODES_MAX);
}

/* A plan row's offload column: none, cpu, cpu+param, cpu+param+keep, or with a ratio "cpu+param 0.41" (h: the
   kept units' parameters on the host too) */
static void plan_offload(const zero_time_model *bm, char *offs, size_t cap) {
    const int boff = bm->offload_optimizer == ZERO_OFFLOAD_CPU, bparam = bm->offload_param == ZERO_OFFLOAD_CPU;
    if (boff && bm->offload_ratio < 1)
        snprintf(offs, cap, "cpu%s %g%s", bparam ? "+param" : "", bm->offload_ratio, bparam && bm->ratio_params_host ? "h" : "");
    else
        snprintf(offs, cap, "%s", !boff ? "none" : !bparam ? "cpu"
                                  : bm->stage3_max_live_parameters >= bm->params ? "cpu+param+keep" : "cpu+param");
}

/* Under a plan row: the faster option whose memory fits only inside the reserve (zero_time_plan.tight), named for
   a user who runs that close */
static void print_tight(const time_cli *t, const zero_time_plan *b) {
    const zero_time_model *tm = &b->tight;
    char toffs[24], tmbg[32] = "";
    if (!b->tight_found) return;
    plan_offload(tm, toffs, sizeof toffs);
    if (t->tokens > 0) snprintf(tmbg, sizeof tmbg, ", %d x %d", tm->micro_batch, tm->grad_accum);
    printf("%13s %s inside the %.0f GiB reserve: stage %d, %s%s%s, %.1f ms, leaving %.2f GiB\n", "",
           b->found ? "faster but" : "fits only", PLAN_RESERVE / GIB, tm->stage, toffs, tm->recompute ? ", recompute" : "",
           tmbg, b->tight_est.step_s * 1e3, (t->gpu_mem - b->tight_est.gpu_memory_bytes - b->tight_activation_bytes) / GIB);
}

static int plan_table(const time_cli *t) {
    const zero_time_model *m = &t->m;
    char p[32], out[32], offs[24], mbg[64] = "";
    int k, n_comm = 0;
    double peak = 0, last = 0;
    fmt_count(m->params, p, sizeof p);
    printf("zero_estimate --time --plan: the fastest ZeRO option per GPU count that fits %.0f GB per GPU and %.0f GB\n"
           "of host memory per node\n", t->gpu_mem / 1e9, t->cpu_mem / 1e9);
    if (t->tokens > 0)
        printf("model: %s parameters, L %d, C %d, V %d, T %d; %.0f tokens a step on all GPUs: the micro-batch (1, 2, 4,\n"
               "...) and the micro-batches a step (mb x gas) searched\n", p, m->layers, m->hidden, m->vocab, m->seq,
               t->tokens);
    else
        printf("model: %s parameters, L %d, C %d, V %d, T %d, micro-batch %d, %d micro-batch%s per step\n", p,
               m->layers, m->hidden, m->vocab, m->seq, m->micro_batch, m->grad_accum > 0 ? m->grad_accum : 1,
               m->grad_accum > 1 ? "es" : "");
    printf("machine: %d GPUs per node; %.1f TFLOP/s achieved; NVLink %.0f GB/s bus; inter-node %.0f GB/s bus, %.0f us\n",
           m->gpus_per_node, m->tflops, m->intra_bus_bytes_per_s / 1e9, m->inter_bus_bytes_per_s / 1e9,
           m->inter_latency_s * 1e6);
    printf("searched: stages 1-3, groups G = 1, 2, 4, ... (shard within G, replicate across the rest),\n"
           "optimizer offload %s (at stage 3 also partly: offload_optimizer.ratio 0.99, ..., 0.01,\n"
           "the rest of the optimizer on the GPU; and the parameters offloaded: cpu+param, kept in the\n"
           "gather pool: +keep; with a ratio the kept units' parameters stay on the GPU, or with an h\n"
           "on the host too: zero_config.ratio_params_device 0), activations kept / every block recomputed\n\n",
           m->offload_optimizer == ZERO_OFFLOAD_CPU ? "cpu (--offload cpu)" : "none / cpu");
    printf("%6s %6s %5s %6s %15s %9s %10s %11s %8s %11s %9s %9s  %-17s %s\n", "GPUs", "nodes", "stage", "G",
           "offload", "recompute", "step ms", "tok/s/GPU", "compute", "inter GB", "states", "act GiB", "bound by",
           t->tokens > 0 ? "outside mb x gas" : "outside");
    for (k = 0; k <= 10; k++) {
        int N = 1 << k, g = N < m->gpus_per_node ? N : m->gpus_per_node;
        const zero_time_plan b = plan_at(t, N);
        const zero_time_model *bm = &b.model;
        const zero_time_estimate *bo = &b.est;
        const int boff = bm->offload_optimizer == ZERO_OFFLOAD_CPU;
        double share, comm, off, rec;
        if (!b.found && t->tokens > 0 && fmod(t->tokens / ((double)m->seq * N), 1) != 0) {
            printf("%6d %6d  --tokens %.0f is not a whole number of sequences of %d on each of %d GPUs\n", N, N / g,
                   t->tokens, m->seq, N);
            continue;
        }
        if (!b.found) {
            printf("%6d %6d  does not fit: every option needs more than %.0f GB per GPU or %.0f GB of host memory\n",
                   N, N / g, t->gpu_mem / 1e9, t->cpu_mem / 1e9);
            print_tight(t, &b);
            continue;
        }
        /* the model's own FLOPs (recompute's extra forward not counted) as a share of the step */
        share = (bo->compute_s - bo->recompute_s) / bo->step_s;
        comm = (bo->exposed_comm_s + bo->contention_s) / bo->step_s; /* (what the collectives cost the step) */
        off = (bo->exposed_offload_s + bo->optimizer_s) / bo->step_s;
        rec = bo->recompute_s / bo->step_s;
        if (bo->tokens_per_s_per_gpu > peak) peak = bo->tokens_per_s_per_gpu;
        last = bo->tokens_per_s_per_gpu;
        n_comm += share < PLAN_SCALING && comm >= off && comm >= rec;
        outside_measured(m, N, N / g, out, sizeof out);
        plan_offload(bm, offs, sizeof offs);
        if (t->tokens > 0) snprintf(mbg, sizeof mbg, "%-7s %d x %d", out, bm->micro_batch, bm->grad_accum);
        else snprintf(mbg, sizeof mbg, "%s", out);
        printf("%6d %6d %5d %6d %15s %9s %10.1f %11.0f %7.0f%% %11.3f %9.2f %9.2f  %-17s %s\n", N, N / g, bm->stage,
               bo->group, offs, bm->recompute ? "yes" : "no", bo->step_s * 1e3, bo->tokens_per_s_per_gpu,
               100 * share, bo->bytes_inter / 1e9, bo->gpu_memory_bytes / GIB, b.activation_bytes / GIB,
               share >= PLAN_SCALING ? "compute"
               : comm >= off && comm >= rec ? "communication"
               : rec >= off ? "recompute"
               : boff ? "optimizer offload" : "the optimizer",
               mbg);
        print_tight(t, &b);
    }
    printf("\ncompute: the model's own forward and backward as a share of the step (recompute's extra\n"
           "forward, exposed communication and the collectives' contention, Adam and offload are the rest).\n"
           "states: model states per GPU (zero's plan); act: activations and logits (--plan's formula in\n"
           "zero_estimate.c); %.0f GiB reserved on top. bound by: compute when it is at least %.0f%% of the\n"
           "step, else the largest of communication (exposed, and its contention with the compute), the\n"
           "optimizer (with its offload) and recompute's extra forward.\n",
           PLAN_RESERVE / GIB, 100 * PLAN_SCALING);
    print_outside_legend();
    if (peak > 0)
        printf("At 1024 GPUs: %.0f tokens/s per GPU, %.0f%% of the best per-GPU rate at any count.\n", last,
               100 * last / peak);
    if (n_comm)
        printf("Rows bound by communication: ZeRO moves each parameter between the GPUs every step (over\n"
               "the network past one node); a larger micro-batch, or tensor parallelism inside the node\n"
               "(which zero does not do), takes that traffic off the links.\n");
    return 0;
}

/* ---- --largest: the most blocks of the model's width that fit, per GPU count ----

   The model is examples/gpt's GPT with --hidden, --vocab and --seq: 12 C^2 + 13 C
   parameters a block, V C + T C + 2 C besides; its memory per GPU --plan's (model
   states, activations by its formula, PLAN_RESERVE), against --gpu-mem. */
static double gpt_params(int L, const zero_time_model *m) {
    double C = m->hidden;
    return (double)L * (12.0 * C * C + 13.0 * C) + (double)m->vocab * C + (double)m->seq * C + 2.0 * C;
}

/* Model m with L blocks fits gpu_mem at this stage and recompute (N GPUs, g per node): 1, else 0. */
static int largest_fits(const zero_time_model *m, int L, int N, int s, int rc, int group, double gpu_mem,
                        double cpu_mem) {
    zero_time_model r = *m;
    zero_time_estimate o;
    r.layers = L;
    r.params = gpt_params(L, m);
    r.unit_params = 0; /* (a block each) */
    r.gpus_per_node = N < m->gpus_per_node ? N : m->gpus_per_node;
    r.nodes = N / r.gpus_per_node;
    r.stage = s;
    r.group = group > N ? N : group;
    r.recompute = rc;
    if (s != 3) r.offload_param = ZERO_OFFLOAD_NONE; /* (the parameters' offload is stage 3's) */
    if (zero_estimate_time(&r, &o, NULL) != ZERO_OK) return 0;
    return o.gpu_memory_bytes + zero_estimate_activations(&r) + PLAN_RESERVE <= gpu_mem &&
           o.cpu_memory_bytes + ZERO_TIME_PLAN_HOST_RESERVE(r.gpus_per_node) <= cpu_mem;
}

static int largest_table(const time_cli *t) {
    const zero_time_model *m = &t->m;
    int k, s, rc, s0 = t->stage < 1 ? 1 : t->stage, s1 = t->stage < 1 ? 3 : t->stage;
    printf("zero_estimate --time --largest: the most blocks that fit %.2f GiB per GPU and %.0f GiB of host memory a node\n",
           t->gpu_mem / GIB, t->cpu_mem / GIB);
    printf("model: examples/gpt's GPT at C %d, V %d, T %d, micro-batch %d (12 C^2 + 13 C parameters a block,\n"
           "V C + T C + 2 C besides); offload_optimizer %s, offload_param %s\n",
           m->hidden, m->vocab, m->seq, m->micro_batch, m->offload_optimizer == ZERO_OFFLOAD_CPU ? "cpu" : "none",
           m->offload_param == ZERO_OFFLOAD_CPU ? "cpu (stage 3)" : "none");
    printf("memory per GPU: model states (zero's plan) + activations (--plan's formula) + %.0f GiB reserved\n\n",
           PLAN_RESERVE / GIB);
    printf("%6s", "GPUs");
    for (s = s0; s <= s1; s++) printf("  %-19s %-19s", s == 1 ? "stage 1" : s == 2 ? "stage 2" : "stage 3",
                                      s == 1 ? "stage 1, recompute" : s == 2 ? "stage 2, recompute" : "stage 3, recompute");
    printf("\n");
    for (k = 0; k <= 10; k++) {
        int N = 1 << k;
        if (N > m->gpus_per_node && N % m->gpus_per_node) continue;
        printf("%6d", N);
        for (s = s0; s <= s1; s++)
            for (rc = 0; rc <= 1; rc++) {
                int lo = 0, hi = 1;
                char cell[64], p[32];
                /* the most L that fits: doubling, then bisecting (memory grows with L) */
                while (hi <= 1 << 20 && largest_fits(m, hi, N, s, rc, t->group, t->gpu_mem, t->cpu_mem)) lo = hi, hi *= 2;
                while (hi - lo > 1) {
                    int mid = lo + (hi - lo) / 2;
                    if (largest_fits(m, mid, N, s, rc, t->group, t->gpu_mem, t->cpu_mem)) lo = mid;
                    else hi = mid;
                }
                if (lo == 0) snprintf(cell, sizeof cell, "none");
                else {
                    fmt_count(gpt_params(lo, m), p, sizeof p);
                    snprintf(cell, sizeof cell, "L %d (%s)", lo, p);
                }
                printf("  %-19s", cell);
            }
        printf("\n");
    }
    printf("\nL: the most blocks whose model states, activations and the reserve fit one GPU, and whose\n"
           "offloaded states fit the node's host memory (--cpu-mem) (none: not one block); the parameters in\n"
           "parentheses.\n");
    return 0;
}

static int time_table(const time_cli *t) {
    int s, k, s0 = t->stage < 0 ? 0 : t->stage, s1 = t->stage < 0 ? 3 : t->stage;
    const zero_time_model *m = &t->m;
    zero_time_estimate o;
    zero_error err;
    char p[32], out[32];
    zero_time_model kept = *m;
    double act;
    int fits, n_over = 0;
    char ratio_note[96] = "";
    kept.recompute = 0;
    act = zero_estimate_activations(&kept); /* (the fits column: every block's activations kept) */
    if (m->offload_optimizer == ZERO_OFFLOAD_CPU && m->offload_ratio > 0 && m->offload_ratio < 1)
        snprintf(ratio_note, sizeof ratio_note, "; stage 3 with ratio %g", m->offload_ratio);
    if (m->offload_param == ZERO_OFFLOAD_CPU)
        snprintf(ratio_note + strlen(ratio_note), sizeof ratio_note - strlen(ratio_note), "; stage 3: params cpu%s",
                 m->stage3_max_live_parameters >= m->params ? ", kept" : "");
    /* every row first: an error prints no half table */
    for (s = s0; s <= s1; s++)
        for (k = 0; k <= 10; k++) {
            zero_time_model r = *m;
            int N = 1 << k;
            r.gpus_per_node = N < m->gpus_per_node ? N : m->gpus_per_node;
            r.nodes = N / r.gpus_per_node;
            if (r.nodes * r.gpus_per_node != N) {
                fprintf(stderr, "zero_estimate: --gpus: %d GPUs per node do not divide %d GPUs\n",
                        m->gpus_per_node, N);
                return 2;
            }
            r.stage = s;
            r.group = t->group > N ? N : t->group;
            if (s == 0) r.offload_optimizer = ZERO_OFFLOAD_NONE;
            if (s != 3) r.offload_ratio = 0, r.offload_param = ZERO_OFFLOAD_NONE, r.stage3_max_live_parameters = 0;
            /* (a partial offload and the parameters' are stage 3's) */
            if (zero_estimate_time(&r, &o, &err) != ZERO_OK) {
                fprintf(stderr, "zero_estimate: %d GPUs, stage %d: %s\n", N, s, err.msg);
                return 2;
            }
        }
    fmt_count(m->params, p, sizeof p);
    printf("zero_estimate --time: one optimizer step per ZeRO stage, 1 to 1024 GPUs\n");
    printf("model: %s parameters, L %d, C %d, V %d, T %d, micro-batch %d, %d micro-batch%s per step, "
           "%s\n", p, m->layers, m->hidden, m->vocab, m->seq, m->micro_batch,
           m->grad_accum > 0 ? m->grad_accum : 1, m->grad_accum > 1 ? "es" : "",
           m->compute_dtype == ZERO_DTYPE_FP32 ? "fp32" : m->compute_dtype == ZERO_DTYPE_FP16 ? "fp16" : "bf16");
    printf("machine: %d GPUs per node; %.1f TFLOP/s achieved, Adam at %.4g TB/s (30 B/param); "
           "NVLink %.0f GB/s bus, %.0f us; inter-node %.0f GB/s bus, %.0f us; PCIe %.0f GB/s, "
           "host %.0f GB/s per node\n",
           m->gpus_per_node, m->tflops, m->hbm_bytes_per_s / 1e12, m->intra_bus_bytes_per_s / 1e9,
           m->intra_latency_s * 1e6, m->inter_bus_bytes_per_s / 1e9, m->inter_latency_s * 1e6,
           m->pcie_bytes_per_s / 1e9, m->host_bytes_per_s / 1e9);
    printf("zero: group %s, offload_optimizer %s (stages 1-3%s), stage-3 gathers %s, stages 1-2's after the "
           "step %s; contention %.4g\n\n",
           t->group > 0 ? "as --group (at most the GPU count)" : "the world",
           m->offload_optimizer == ZERO_OFFLOAD_CPU ? "cpu" : "none", ratio_note,
           m->stage3_serial_gathers ? "serial" : "prefetched, overlapped",
           m->step_serial_gathers ? "serial" : "under its Adam", m->comm_contention);
    printf("%6s %6s %5s %6s %10s %12s %11s %11s %11s %9s %5s  %s\n", "GPUs", "nodes", "stage", "G",
           "step ms", "tok/s/GPU", "exposed ms", "intra GB", "inter GB", "mem GiB", "fits", "outside");
    for (s = s0; s <= s1; s++)
        for (k = 0; k <= 10; k++) {
            zero_time_model r = *m;
            int N = 1 << k;
            r.gpus_per_node = N < m->gpus_per_node ? N : m->gpus_per_node;
            r.nodes = N / r.gpus_per_node;
            r.stage = s;
            r.group = t->group > N ? N : t->group;
            if (s == 0) r.offload_optimizer = ZERO_OFFLOAD_NONE;
            if (s != 3) r.offload_ratio = 0, r.offload_param = ZERO_OFFLOAD_NONE, r.stage3_max_live_parameters = 0;
            (void)zero_estimate_time(&r, &o, NULL);
            fits = o.gpu_memory_bytes + act + PLAN_RESERVE <= t->gpu_mem;
            n_over += !fits;
            outside_measured(m, N, r.nodes, out, sizeof out);
            printf("%6d %6d %5d %6d %10.1f %12.0f %11.2f %11.3f %11.3f %9.2f %5s  %s\n", N, r.nodes, s,
                   o.group, o.step_s * 1e3, o.tokens_per_s_per_gpu, o.exposed_comm_s * 1e3,
                   o.bytes_intra / 1e9, o.bytes_inter / 1e9, o.gpu_memory_bytes / GIB, fits ? "yes" : "NO", out);
        }
    printf("\nG: the shard group (stage 0: 1, nothing sharded). intra / inter GB: bytes each GPU sends\n"
           "per step on rings inside a node / across nodes. mem: model states per GPU (zero's plan;\n"
           "activations come on top). Stage 0 rows never offload.\n");
    printf("fits: mem + activations (%.2f GiB: --plan's formula, every block's kept) + %.0f GiB reserved\n"
           "within %.0f GB per GPU (--gpu-mem); NO: priced, but it does not fit (%d row%s; --plan also\n"
           "searches offload and recompute).\n",
           act / GIB, PLAN_RESERVE / GIB, t->gpu_mem / 1e9, n_over, n_over == 1 ? "" : "s");
    print_outside_legend();
    return 0;
}

/* --offload, --offload-param: none or cpu into *d, or one line on stderr and 1 */
static int none_or_cpu(const char *T, const char *f, const char *v, zero_offload_device *d) {
    if (v && !strcmp(v, "cpu")) *d = ZERO_OFFLOAD_CPU;
    else if (v && !strcmp(v, "none")) *d = ZERO_OFFLOAD_NONE;
    else return v ? tool_fail(T, f, "'%s' is not none or cpu", v) : tool_fail(T, f, "missing value (none or cpu)");
    return 0;
}

static int time_main(int argc, char **argv) {
    time_cli t;
    int i, layers_given = 0, params_given = 0, shape_given = 0, cpu_mem_given = 0;
    long long x;
    const char *T = "zero_estimate";
    const model_preset *mp = &model_presets[0];
    const machine_preset *hp = &machine_presets[0];
    char hint[64];
    memset(&t, 0, sizeof t);
    t.stage = -1;
    /* presets first, so that the other flags override them in any order */
    for (i = 1; i < argc; i++) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        size_t j;
        if (!strcmp(f, "--model")) {
            for (j = 0; j < sizeof model_presets / sizeof model_presets[0]; j++)
                if (v && !strcmp(v, model_presets[j].name)) break;
            if (j == sizeof model_presets / sizeof model_presets[0])
                return tool_usage_fail(T, f, usage, "%s%s%s (gpt2-xl, 7b or 70b)", v ? "'" : "missing value",
                                       v ? v : "", v ? "' is not a preset" : "");
            mp = &model_presets[j];
        } else if (!strcmp(f, "--machine")) {
            for (j = 0; j < sizeof machine_presets / sizeof machine_presets[0]; j++)
                if (v && !strcmp(v, machine_presets[j].name)) break;
            if (j == sizeof machine_presets / sizeof machine_presets[0])
                return tool_usage_fail(T, f, usage, "%s%s%s (h100 or h200)", v ? "'" : "missing value",
                                       v ? v : "", v ? "' is not a preset" : "");
            hp = &machine_presets[j];
        }
    }
    t.m.params = mp->params;
    t.m.layers = mp->layers;
    t.m.hidden = mp->hidden;
    t.m.vocab = mp->vocab;
    t.m.seq = mp->seq;
    t.m.micro_batch = mp->batch;
    t.m.grad_accum = 1;
    t.m.compute_dtype = ZERO_DTYPE_BF16;
    t.m.gpus_per_node = hp->gpus_per_node;
    t.m.nodes = 1;
    t.m.tflops = hp->tflops;
    t.m.hbm_bytes_per_s = hp->hbm;
    t.m.intra_bus_bytes_per_s = hp->intra_bw;
    t.m.intra_latency_s = hp->intra_lat;
    t.m.inter_bus_bytes_per_s = hp->inter_bw;
    t.m.inter_latency_s = hp->inter_lat;
    t.m.pcie_bytes_per_s = hp->pcie;
    t.m.host_bytes_per_s = hp->host;
    t.m.comm_contention = hp->contention;
    t.gpu_mem = hp->gpu_mem;
    t.cpu_mem = hp->cpu_mem;
    for (i = 1; i < argc; i++) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int used = 1, bad = 0;
        double y;
        if (!strcmp(f, "--time")) {
            used = 0;
        } else if (!strcmp(f, "--model") || !strcmp(f, "--machine")) {
            /* read above */
        } else if (!strcmp(f, "--serial-gathers")) {
            t.m.stage3_serial_gathers = 1, used = 0;
        } else if (!strcmp(f, "--serial-step")) {
            t.m.step_serial_gathers = 1, used = 0;
        } else if (!strcmp(f, "--contention")) {
            bad = tool_num(T, f, v, 1e-9, 100, &t.m.comm_contention);
        } else if (!strcmp(f, "--plan")) {
            t.plan = 1, used = 0;
        } else if (!strcmp(f, "--largest")) {
            t.largest = 1, used = 0;
        } else if (!strcmp(f, "--gpu-mem")) {
            bad = tool_size(T, f, v, 1e9, 1e15, &t.gpu_mem);
        } else if (!strcmp(f, "--params")) {
            bad = tool_count(T, f, v, 1, 1000000000000000, &x);
            t.m.params = (double)x;
            params_given = 1;
        } else if (!strcmp(f, "--layers")) {
            bad = tool_int(T, f, v, 1, 100000, &x);
            t.m.layers = (int)x;
            layers_given = shape_given = 1;
        } else if (!strcmp(f, "--hidden")) {
            bad = tool_int(T, f, v, 1, 1000000, &x);
            t.m.hidden = (int)x;
            shape_given = 1;
        } else if (!strcmp(f, "--vocab")) {
            bad = tool_int(T, f, v, 0, 100000000, &x);
            t.m.vocab = (int)x;
            shape_given = 1;
        } else if (!strcmp(f, "--seq")) {
            bad = tool_int(T, f, v, 1, 100000000, &x);
            t.m.seq = (int)x;
        } else if (!strcmp(f, "--batch")) {
            bad = tool_int(T, f, v, 1, 1000000, &x);
            t.m.micro_batch = (int)x;
        } else if (!strcmp(f, "--gas")) {
            bad = tool_int(T, f, v, 1, 1000000, &x);
            t.m.grad_accum = (int)x;
        } else if (!strcmp(f, "--unit")) {
            bad = tool_count(T, f, v, 1, 1000000000000000, &x);
            t.m.unit_params = (double)x;
        } else if (!strcmp(f, "--dtype")) {
            if (v && !strcmp(v, "fp16")) t.m.compute_dtype = ZERO_DTYPE_FP16;
            else if (v && !strcmp(v, "bf16")) t.m.compute_dtype = ZERO_DTYPE_BF16;
            else if (v && !strcmp(v, "fp32")) t.m.compute_dtype = ZERO_DTYPE_FP32;
            else bad = v ? tool_fail(T, f, "'%s' is not fp16, bf16 or fp32", v)
                         : tool_fail(T, f, "missing value (fp16, bf16 or fp32)");
        } else if (!strcmp(f, "--gpus")) {
            bad = tool_int(T, f, v, 1, 1024, &x);
            t.m.gpus_per_node = (int)x;
        } else if (!strcmp(f, "--stage")) {
            bad = tool_int(T, f, v, 0, 3, &x);
            t.stage = (int)x;
        } else if (!strcmp(f, "--group")) {
            bad = tool_int(T, f, v, 1, 1024, &x);
            t.group = (int)x;
        } else if (!strcmp(f, "--offload")) {
            bad = none_or_cpu(T, f, v, &t.m.offload_optimizer);
        } else if (!strcmp(f, "--offload-param")) {
            bad = none_or_cpu(T, f, v, &t.m.offload_param);
        } else if (!strcmp(f, "--max-live")) {
            bad = tool_count(T, f, v, 1, 1000000000000000, &x);
            t.m.stage3_max_live_parameters = (double)x;
        } else if (!strcmp(f, "--tokens")) {
            bad = tool_count(T, f, v, 1, 1000000000000000, &x);
            t.tokens = (double)x;
        } else if (!strcmp(f, "--cpu-mem")) {
            bad = tool_size(T, f, v, 1e6, 1e18, &t.cpu_mem);
            cpu_mem_given = 1;
        } else if (!strcmp(f, "--ratio")) {
            bad = tool_num(T, f, v, 0.001, 1, &t.m.offload_ratio);
        } else if (!strcmp(f, "--ratio-params")) {
            if (!v || (strcmp(v, "device") && strcmp(v, "host")))
                bad = tool_fail(T, f, "'%s': device or host", v ? v : "");
            else
                t.m.ratio_params_host = !strcmp(v, "host");
        } else if (!strcmp(f, "--tflops-width")) {
            bad = tool_int(T, f, v, 1, 1000000, &x);
            t.m.tflops_hidden = (double)x;
        } else if (!strcmp(f, "--tflops")) {
            bad = tool_num(T, f, v, 0.001, 100000, &t.m.tflops);
        } else if (!strcmp(f, "--hbm")) {
            bad = tool_size(T, f, v, 1e6, 1e15, &t.m.hbm_bytes_per_s);
        } else if (!strcmp(f, "--intra-bw")) {
            bad = tool_size(T, f, v, 1e6, 1e15, &t.m.intra_bus_bytes_per_s);
        } else if (!strcmp(f, "--inter-bw")) {
            bad = tool_size(T, f, v, 1e6, 1e15, &t.m.inter_bus_bytes_per_s);
        } else if (!strcmp(f, "--pcie")) {
            bad = tool_size(T, f, v, 1e6, 1e15, &t.m.pcie_bytes_per_s);
        } else if (!strcmp(f, "--host-bw")) {
            bad = tool_size(T, f, v, 1e6, 1e15, &t.m.host_bytes_per_s);
        } else if (!strcmp(f, "--intra-lat-us")) {
            bad = tool_num(T, f, v, 0.001, 1e6, &y);
            t.m.intra_latency_s = y * 1e-6;
        } else if (!strcmp(f, "--inter-lat-us")) {
            bad = tool_num(T, f, v, 0.001, 1e6, &y);
            t.m.inter_latency_s = y * 1e-6;
        } else {
            bad = tool_fail(T, NULL, "unknown argument '%s' (with --time)%s", f,
                            tool_did_you_mean(f, time_flags, hint, sizeof hint));
        }
        if (bad) return usage_error();
        i += used;
    }
    /* A shape of its own without --params: examples/gpt's count of that shape, not the preset's (which
       described another model). --seq alone keeps the preset's count: the sequence only sizes the
       activations (and examples/gpt's position table, which a preset's own count already holds). */
    if (shape_given && !params_given) t.m.params = gpt_params(t.m.layers, &t.m);
    if (t.m.unit_params > t.m.params)
        return tool_usage_fail(T, "--unit", usage, "%.0f is larger than --params (%.0f)", t.m.unit_params,
                               t.m.params);
    if (t.m.offload_ratio > 0 && t.m.offload_ratio < 1 &&
        (t.m.offload_optimizer != ZERO_OFFLOAD_CPU || (t.stage >= 0 && t.stage != 3)))
        return tool_usage_fail(T, "--ratio", usage, "%g (a partial offload) needs --offload cpu and stage 3", t.m.offload_ratio);
    if (t.m.offload_param == ZERO_OFFLOAD_CPU && (t.m.offload_optimizer != ZERO_OFFLOAD_CPU || (t.stage >= 0 && t.stage != 3)) &&
        !(t.largest && t.m.offload_optimizer == ZERO_OFFLOAD_CPU && t.stage < 0))
        return tool_usage_fail(T, "--offload-param", usage, "cpu needs --offload cpu and stage 3");
    if (t.m.ratio_params_host && !(t.m.offload_ratio > 0 && t.m.offload_ratio < 1 && t.m.offload_param == ZERO_OFFLOAD_CPU))
        return tool_usage_fail(T, "--ratio-params", usage, "host places the kept units' parameters of --ratio (below 1) "
                               "with --offload-param cpu: give both");
    if (t.m.stage3_max_live_parameters > 0 && t.m.offload_param != ZERO_OFFLOAD_CPU)
        return tool_usage_fail(T, "--max-live", usage, "prices the pool of --offload-param cpu: give that too");
    if (cpu_mem_given && !t.plan && !t.largest) return tool_usage_fail(T, "--cpu-mem", usage, "is --plan's and --largest's");
    if (t.tokens > 0 && !t.plan) return tool_usage_fail(T, "--tokens", usage, "is --plan's (it searches --batch and --gas)");
    if (t.stage == 0 && t.m.offload_optimizer == ZERO_OFFLOAD_CPU)
        return tool_usage_fail(T, "--offload", usage, "cpu needs stage 1, 2 or 3 (--stage 0 given)");
    if (t.group > 0 && t.group < t.m.gpus_per_node ? t.m.gpus_per_node % t.group != 0
                                                   : t.group > 0 && t.group % t.m.gpus_per_node != 0)
        return tool_usage_fail(T, "--group", usage, "%d must divide --gpus (%d) or be a multiple of it",
                               t.group, t.m.gpus_per_node);
    if (t.plan && (t.stage >= 0 || t.group > 0 || t.m.offload_ratio > 0 || t.m.offload_param != ZERO_OFFLOAD_NONE ||
                   t.m.ratio_params_host))
        return tool_usage_fail(T, "--plan", usage, "searches the stage, --group, --ratio and --offload-param itself: drop them");
    if (t.plan && t.largest) return tool_usage_fail(T, "--largest", usage, "and --plan: give one");
    if (t.largest && (layers_given || params_given))
        return tool_usage_fail(T, "--largest", usage, "searches the blocks: drop %s", layers_given ? "--layers" : "--params");
    if (t.plan) return plan_table(&t);
    if (t.largest) return largest_table(&t);
    return time_table(&t);
}

int main(int argc, char **argv) {
    cli c;
    int i, have_params = 0, have_gpu_mem = 0;
    long long x;
    char hint[64];
    memset(&c, 0, sizeof c);
    c.a.gpus_per_node = 1;
    c.a.nodes = 1;
    c.a.zero_init = 1;
    c.a.additional_buffer_factor = 1.5;
    c.a.stage3_prefetch_bucket_size = -1;
    for (i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage, stdout);
            fputs(help, stdout);
            return 0;
        }
    for (i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--version")) return tool_version("zero_estimate");
    for (i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--time")) return time_main(argc, argv);
    /* every flag is checked before anything is printed */
    for (i = 1; i < argc; i++) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int used = 1, bad = 0;
        if (!strcmp(f, "--selftest")) {
            c.selftest = 1, used = 0;
        } else if (!strcmp(f, "--fit")) {
            c.fit = 1, used = 0;
        } else if (!strcmp(f, "--breakdown")) {
            c.breakdown = 1, used = 0;
        } else if (!strcmp(f, "--no-zero-init")) {
            c.a.zero_init = 0, used = 0;
        } else if (!strcmp(f, "--bf16-master")) {
            c.a.bf16_master = 1, used = 0;
        } else if (!strcmp(f, "--bf16-states")) {
            c.a.bf16_states = 1, used = 0;
        } else if (!strcmp(f, "--params")) {
            bad = tool_count("zero_estimate", f, v, 1, 1000000000000000, &x);
            c.a.params = (double)x, have_params = 1;
        } else if (!strcmp(f, "--largest-layer")) {
            bad = tool_count("zero_estimate", f, v, 1, 1000000000000000, &x);
            c.a.largest_layer = (double)x;
        } else if (!strcmp(f, "--gpus")) {
            bad = tool_int("zero_estimate", f, v, 1, 1024, &x);
            c.a.gpus_per_node = (int)x;
        } else if (!strcmp(f, "--nodes")) {
            bad = tool_int("zero_estimate", f, v, 1, 1048576, &x);
            c.a.nodes = (int)x;
        } else if (!strcmp(f, "--dtype")) {
            if (v && !strcmp(v, "fp16")) c.a.compute_dtype = ZERO_DTYPE_FP16;
            else if (v && !strcmp(v, "bf16")) c.a.compute_dtype = ZERO_DTYPE_BF16;
            else if (v && !strcmp(v, "fp32")) c.a.compute_dtype = ZERO_DTYPE_FP32;
            else bad = v ? tool_fail("zero_estimate", f, "'%s' is not fp16, bf16 or fp32", v)
                         : tool_fail("zero_estimate", f, "missing value (fp16, bf16 or fp32)");
        } else if (!strcmp(f, "--bucket")) {
            bad = tool_count("zero_estimate", f, v, 1, 1000000000000000, &x);
            c.a.reduce_bucket_size = (int64_t)x;
        } else if (!strcmp(f, "--gas")) {
            bad = tool_int("zero_estimate", f, v, 1, 1000000, &x);
            c.a.gradient_accumulation_steps = (int)x;
        } else if (!strcmp(f, "--max-live")) {
            bad = tool_count("zero_estimate", f, v, 1, 1000000000000000, &x);
            c.a.stage3_max_live_parameters = (int64_t)x;
        } else if (!strcmp(f, "--prefetch")) {
            bad = tool_count("zero_estimate", f, v, 0, 1000000000000000, &x);
            c.a.stage3_prefetch_bucket_size = (int64_t)x;
        } else if (!strcmp(f, "--shard")) {
            bad = tool_int("zero_estimate", f, v, 1, 1073741824, &x);
            c.a.mics_shard_size = (int)x;
        } else if (!strcmp(f, "--buffer-factor")) {
            bad = tool_num("zero_estimate", f, v, 0.001, 1000, &c.a.additional_buffer_factor);
        } else if (!strcmp(f, "--gpu-mem")) {
            bad = tool_size("zero_estimate", f, v, 1, 1e15, &c.gpu_mem);
            have_gpu_mem = 1;
        } else if (!strcmp(f, "--cpu-mem")) {
            bad = tool_size("zero_estimate", f, v, 0, 1e18, &c.cpu_mem);
        } else if (!strcmp(f, "--nvme")) {
            bad = tool_size("zero_estimate", f, v, 0, 1e18, &c.nvme);
        } else if (!strcmp(f, "--optimizer")) {
            static const char *const names[] = {"adam", "adamw", "lion", "adagrad", "sgd", "lamb", "muon"};
            int k, found = -1;
            for (k = 0; v && k < 7; k++)
                if (!strcmp(v, names[k])) found = k;
            if (found < 0)
                bad = tool_fail("zero_estimate", f, "%s%s%s (adam, adamw, lion, adagrad, sgd, lamb or muon)", v ? "'" : "missing value",
                                v ? v : "", v ? "' is not one" : "");
            else
                c.a.optimizer = (zero_optimizer_type)found;
        } else if (!strcmp(f, "--momentum")) {
            bad = tool_num("zero_estimate", f, v, 0, 1e6, &c.a.momentum);
        } else {
            bad = tool_fail("zero_estimate", NULL, "unknown argument '%s'%s", f,
                            tool_did_you_mean(f, flags, hint, sizeof hint));
        }
        if (bad) return usage_error();
        i += used;
    }
    if (c.selftest) return selftest();
    if (c.fit) {
        if (have_params)
            return tool_usage_fail("zero_estimate", "--fit", usage, "finds the parameter count; drop --params");
        if (!have_gpu_mem)
            return tool_usage_fail("zero_estimate", "--fit", usage, "needs --gpu-mem SIZE (the memory of one GPU)");
    } else if (!have_params) {
        return tool_usage_fail("zero_estimate", NULL, usage, "missing --params N (or --fit, or --selftest)");
    }
    if (c.a.mics_shard_size > 0 && (double)c.a.gpus_per_node * c.a.nodes / c.a.mics_shard_size !=
                                        floor((double)c.a.gpus_per_node * c.a.nodes / c.a.mics_shard_size))
        return tool_usage_fail("zero_estimate", "--shard", usage, "%d does not divide the %d GPUs (--gpus x --nodes)",
                               c.a.mics_shard_size, c.a.gpus_per_node * c.a.nodes);
    if (c.a.largest_layer > 0 && have_params && c.a.largest_layer > c.a.params)
        return tool_usage_fail("zero_estimate", "--largest-layer", usage, "%.0f is larger than --params (%.0f)",
                               c.a.largest_layer, c.a.params);
    return c.fit ? run_fit(&c) : run_table(&c);
}
