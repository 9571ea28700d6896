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
    "       zero_estimate --selftest                            check the library and the parsers\n"
    "       zero_estimate --help                                every option\n";

static const char help[] =
    "\n"
    "Model states only (parameters, gradients, fp32 master weights and Adam moments):\n"
    "activations, the CUDA context and workspaces come on top.\n"
    "\n"
    "  --params N          total parameters (shared ones once; 1 to 1e15)\n"
    "  --gpus G            GPUs per node (default 1; 1 to 1024)\n"
    "  --nodes n           nodes (default 1; 1 to 1048576)\n"
    "  --largest-layer L   parameters of the largest layer (default params / 20; at most --params)\n"
    "  --dtype T           compute dtype: fp16 (default), bf16 or fp32\n"
    "  --bucket N          zero_optimization.reduce_bucket_size (default 5e8; 1 to 1e15)\n"
    "  --max-live N        stage3_max_live_parameters (default 1e9; 1 to 1e15)\n"
    "  --prefetch N        stage3_prefetch_bucket_size (default 5e7; 0 to 1e15)\n"
    "  --buffer-factor f   DeepSpeed's additional_buffer_factor (default 1.5; 0.001 to 1000)\n"
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
    "Exit status: 0; 1 a --selftest check failed; 2 usage: a bad flag or value (one line\n"
    "saying what is wrong, then the usage; nothing is printed to stdout).\n";

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
}

static void print_settings(const cli *c) {
    char p[32], l[32], b[32], m[32], f[32];
    const zero_estimate_args *a = &c->a;
    fmt_count(a->params, p, sizeof p);
    if (a->largest_layer > 0) fmt_count(a->largest_layer, l, sizeof l);
    fmt_count(a->reduce_bucket_size > 0 ? (double)a->reduce_bucket_size : 5e8, b, sizeof b);
    fmt_count(a->stage3_max_live_parameters > 0 ? (double)a->stage3_max_live_parameters : 1e9, m,
              sizeof m);
    fmt_count(a->stage3_prefetch_bucket_size >= 0 ? (double)a->stage3_prefetch_bucket_size : 5e7,
              f, sizeof f);
    if (!c->fit) printf("model: %s parameters (%.6g), ", p, a->params);
    else printf("model: ");
    if (a->largest_layer > 0) printf("largest layer %s", l);
    else printf("largest layer = params / 20");
    printf(", %s\n", dtype_name(a->compute_dtype));
    printf("machine: %d node%s x %d GPU%s\n", a->nodes, a->nodes > 1 ? "s" : "", a->gpus_per_node,
           a->gpus_per_node > 1 ? "s" : "");
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

int main(int argc, char **argv) {
    cli c;
    int i, have_params = 0, have_gpu_mem = 0;
    long long x;
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
        } else if (!strcmp(f, "--max-live")) {
            bad = tool_count("zero_estimate", f, v, 1, 1000000000000000, &x);
            c.a.stage3_max_live_parameters = (int64_t)x;
        } else if (!strcmp(f, "--prefetch")) {
            bad = tool_count("zero_estimate", f, v, 0, 1000000000000000, &x);
            c.a.stage3_prefetch_bucket_size = (int64_t)x;
        } else if (!strcmp(f, "--buffer-factor")) {
            bad = tool_num("zero_estimate", f, v, 0.001, 1000, &c.a.additional_buffer_factor);
        } else if (!strcmp(f, "--gpu-mem")) {
            bad = tool_size("zero_estimate", f, v, 1, 1e15, &c.gpu_mem);
            have_gpu_mem = 1;
        } else if (!strcmp(f, "--cpu-mem")) {
            bad = tool_size("zero_estimate", f, v, 0, 1e18, &c.cpu_mem);
        } else if (!strcmp(f, "--nvme")) {
            bad = tool_size("zero_estimate", f, v, 0, 1e18, &c.nvme);
        } else {
            bad = tool_fail("zero_estimate", NULL, "unknown argument '%s'", f);
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
    if (c.a.largest_layer > 0 && have_params && c.a.largest_layer > c.a.params)
        return tool_usage_fail("zero_estimate", "--largest-layer", usage, "%.0f is larger than --params (%.0f)",
                               c.a.largest_layer, c.a.params);
    return c.fit ? run_fit(&c) : run_table(&c);
}
