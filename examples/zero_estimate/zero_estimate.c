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

#define GIB 1073741824.0

static const char usage[] =
    "usage: zero_estimate --params N [--gpus G] [options]       memory per ZeRO option\n"
    "       zero_estimate --fit --gpu-mem SIZE [--cpu-mem SIZE] [--nvme SIZE] [--gpus G] [options]\n"
    "                                                           largest model per ZeRO option\n"
    "       zero_estimate --selftest                            check the library and the parsers\n"
    "\n"
    "Model states only (parameters, gradients, fp32 master weights and Adam moments):\n"
    "activations, the CUDA context and workspaces come on top.\n"
    "\n"
    "  --params N          total parameters (shared ones once)\n"
    "  --gpus G            GPUs per node (default 1)\n"
    "  --nodes n           nodes (default 1)\n"
    "  --largest-layer L   parameters of the largest layer (default params / 20)\n"
    "  --dtype T           compute dtype: fp16 (default), bf16 or fp32\n"
    "  --bucket N          zero_optimization.reduce_bucket_size (default 5e8)\n"
    "  --max-live N        stage3_max_live_parameters (default 1e9)\n"
    "  --prefetch N        stage3_prefetch_bucket_size (default 5e7; 0 allowed)\n"
    "  --buffer-factor f   DeepSpeed's additional_buffer_factor (default 1.5)\n"
    "  --no-zero-init      DeepSpeed's stage-3 CPU figure without zero.Init\n"
    "  --breakdown         also print zero's GPU params / grads / optimizer columns\n"
    "  --fit               print the largest parameter count per option instead\n"
    "  --gpu-mem SIZE      memory of one GPU (with --fit; required)\n"
    "  --cpu-mem SIZE      host memory of one node (with --fit; default 0)\n"
    "  --nvme SIZE         NVMe space of one node (with --fit; default none)\n"
    "\n"
    "Counts N accept 1.5e9, 1.5B, 350M, 20K, 1T (K = 1e3, M = 1e6, B or G = 1e9, T = 1e12).\n"
    "Sizes accept 80GB, 80GiB, 1.5TB, 512MB: decimal KB/MB/GB/TB are exactly 1e3/1e6/1e9/1e12\n"
    "bytes, binary KiB/MiB/GiB/TiB exactly 2^10/2^20/2^30/2^40 bytes; no suffix = bytes.\n"
    "Tables print GiB (2^30 bytes). GPU figures are per GPU; CPU and NVMe figures per node.\n"
    "\n"
    "zero: what zero's engine allocates (docs/estimator.md has the formulas).\n"
    "DeepSpeed: estimate_zero2_model_states_mem_needs (stages 1 and 2) and\n"
    "estimate_zero3_model_states_mem_needs (stage 3, with zero_init unless --no-zero-init);\n"
    "stage 0 is 16 bytes per parameter. DeepSpeed has no NVMe estimate: NVMe rows show\n"
    "its CPU-offload figures, marked *.\n";

/* ---- parsers (also checked by --selftest) ---- */

/* Split s into a decimal number and a suffix; 0 on success. The number's
   text is copied into num (at most cap - 1 chars). */
static int split_number(const char *s, char *num, size_t cap, const char **suffix) {
    char *end;
    size_t len;
    if (!s || !((*s >= '0' && *s <= '9') || *s == '.')) return -1; /* no sign, hex, inf, nan */
    errno = 0;
    (void)strtod(s, &end);
    if (end == s || errno == ERANGE) return -1;
    len = (size_t)(end - s);
    if (len + 1 > cap) return -1;
    memcpy(num, s, len);
    num[len] = 0;
    if (strchr(num, 'x') || strchr(num, 'X')) return -1;
    while (*end == ' ') end++;
    *suffix = end;
    return 0;
}

/* num * 10^exp10, rounded once (by strtod), so 1.1GB is exactly 1100000000. */
static int scale_decimal(const char *num, int exp10, double *out) {
    char buf[160];
    const char *e = strpbrk(num, "eE");
    long ex = exp10;
    char *end;
    if (e) {
        errno = 0;
        ex += strtol(e + 1, &end, 10);
        if (*end || errno) return -1;
    }
    snprintf(buf, sizeof buf, "%.*se%ld", (int)(e ? e - num : (long)strlen(num)), num, ex);
    errno = 0;
    *out = strtod(buf, &end);
    if (*end || errno == ERANGE || !isfinite(*out)) return -1;
    return 0;
}

static int suffix_is(const char *s, const char *want) {
    for (; *s && *want; s++, want++)
        if ((*s | 0x20) != (*want | 0x20)) return 0;
    return *s == 0 && *want == 0;
}

/* Bytes: 80GB, 80GiB, 1.5TB, 512MiB, 1e9 (case-insensitive suffix). */
static int parse_size(const char *s, double *out) {
    static const struct { const char *name; int dec; int bin; } sfx[] = {
        {"", 0, -1},   {"B", 0, -1},    {"KB", 3, -1},   {"MB", 6, -1},  {"GB", 9, -1},
        {"TB", 12, -1}, {"KiB", -1, 10}, {"MiB", -1, 20}, {"GiB", -1, 30}, {"TiB", -1, 40},
    };
    char num[128];
    const char *suffix;
    size_t i;
    if (split_number(s, num, sizeof num, &suffix)) return -1;
    for (i = 0; i < sizeof sfx / sizeof sfx[0]; i++) {
        if (!suffix_is(suffix, sfx[i].name)) continue;
        if (sfx[i].dec >= 0) return scale_decimal(num, sfx[i].dec, out);
        if (scale_decimal(num, 0, out)) return -1;
        *out = ldexp(*out, sfx[i].bin); /* exact: a power of two */
        return isfinite(*out) ? 0 : -1;
    }
    return -1;
}

/* Counts: 1.5e9, 1.5B, 350M, 20K, 1T; > 0 (>= 0 when allow_zero). */
static int parse_count(const char *s, int allow_zero, double *out) {
    static const struct { const char *name; int dec; } sfx[] = {
        {"", 0}, {"K", 3}, {"M", 6}, {"B", 9}, {"G", 9}, {"T", 12},
    };
    char num[128];
    const char *suffix;
    size_t i;
    if (split_number(s, num, sizeof num, &suffix)) return -1;
    for (i = 0; i < sizeof sfx / sizeof sfx[0]; i++) {
        if (!suffix_is(suffix, sfx[i].name)) continue;
        if (scale_decimal(num, sfx[i].dec, out)) return -1;
        return (*out > 0 || (allow_zero && *out == 0)) ? 0 : -1;
    }
    return -1;
}

static int parse_int(const char *s, int *out) {
    char *end;
    long v;
    if (!s || !(*s >= '0' && *s <= '9')) return -1;
    errno = 0;
    v = strtol(s, &end, 10);
    if (*end || errno || v < 1 || v > 1000000) return -1;
    *out = (int)v;
    return 0;
}

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
    int n = options(opt), i, star = 0;
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
        zero_estimate_args a;
        zero_memory_estimate m;
        zero_error err;
        char name[64];
        const char *mark = opt[i].optim == ZERO_OFFLOAD_NVME ? "*" : " ";
        apply(c, &opt[i], &a);
        if (zero_estimate_memory(&a, &m, &err) != ZERO_OK) {
            fprintf(stderr, "zero_estimate: %s\n", err.msg);
            return 2;
        }
        if (*mark == '*') star = 1;
        option_name(&opt[i], name, sizeof name);
        printf("%-32s %10.2f %10.2f %10.2f", name, m.gpu_total_bytes / GIB, m.cpu_total_bytes / GIB,
               m.nvme_bytes / GIB);
        if (c->breakdown)
            printf(" %9.2f %9.2f %9.2f", m.gpu_params_bytes / GIB, m.gpu_grads_bytes / GIB,
                   m.gpu_optimizer_bytes / GIB);
        printf(" %9.2f%s %9.2f%s\n", m.ds_gpu_bytes / GIB, mark, m.ds_cpu_bytes / GIB,
               *mark == '*' ? mark : "");
    }
    printf("\noptim = offload_optimizer.device, param = offload_param.device.\n");
    if (star) printf("* DeepSpeed has no NVMe estimate: its CPU-offload figures.\n");
    return 0;
}

static int run_fit(const cli *c) {
    option opt[32];
    int n = options(opt), i;
    char g[48], cpu[48], nv[48];
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
        zero_estimate_args a;
        zero_memory_estimate m, over;
        zero_error err;
        char name[64], p[32];
        double mp;
        apply(c, &opt[i], &a);
        option_name(&opt[i], name, sizeof name);
        if (zero_estimate_max_params(&a, c->gpu_mem, c->cpu_mem, c->nvme, &mp, &err) != ZERO_OK) {
            fprintf(stderr, "zero_estimate: %s\n", err.msg);
            return 2;
        }
        if (mp <= 0) {
            const char *why = (opt[i].optim == ZERO_OFFLOAD_NVME || opt[i].param == ZERO_OFFLOAD_NVME) &&
                                      c->nvme <= 0
                                  ? "needs NVMe (--nvme)"
                              : opt[i].optim != ZERO_OFFLOAD_NONE || opt[i].param != ZERO_OFFLOAD_NONE
                                  ? "does not fit (host memory too small?)"
                                  : "does not fit";
            printf("%-32s %12s %10s %10s %10s  %s\n", name, "-", "", "", "", why);
            continue;
        }
        a.params = mp;
        if (zero_estimate_memory(&a, &m, &err) != ZERO_OK) {
            fprintf(stderr, "zero_estimate: %s\n", err.msg);
            return 2;
        }
        a.params = mp * (1 + 1e-5);
        if (a.params > 1e15) a.params = 1e15; /* the library's sanity bound */
        (void)zero_estimate_memory(&a, &over, NULL);
        fmt_count(mp, p, sizeof p);
        printf("%-32s %12s %10.2f %10.2f %10.2f  %s\n", name, p, m.gpu_total_bytes / GIB,
               m.cpu_total_bytes / GIB, m.nvme_bytes / GIB,
               over.gpu_total_bytes > c->gpu_mem  ? "GPU"
               : over.cpu_total_bytes > c->cpu_mem ? "host memory"
               : over.nvme_bytes > c->nvme          ? "NVMe"
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
    static const struct { const char *s; double want; } counts[] = {
        {"1.5e9", 1.5e9}, {"1.5B", 1.5e9}, {"350M", 3.5e8}, {"20K", 2e4}, {"1T", 1e12},
        {"1.5576e9", 1.5576e9}, {"8.04e7", 8.04e7}, {"1.5b", 1.5e9}, {"2G", 2e9}, {"1.1B", 1.1e9},
    };
    static const char *const bad_counts[] = {"1.5X", "0", "-3", "", "1e", "B", "1.5BB", "nan"};
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
        CHECKF(parse_size(sizes[i].s, &v) == 0 && v == sizes[i].want, "\"%s\" -> %.17g want %.17g",
               sizes[i].s, v, sizes[i].want);
    }
    for (i = 0; i < sizeof bad_sizes / sizeof bad_sizes[0]; i++) {
        double v;
        CHECKF(parse_size(bad_sizes[i], &v) != 0, "\"%s\" accepted", bad_sizes[i]);
    }
    for (i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        double v = -1;
        CHECKF(parse_count(counts[i].s, 0, &v) == 0 && v == counts[i].want,
               "\"%s\" -> %.17g want %.17g", counts[i].s, v, counts[i].want);
    }
    for (i = 0; i < sizeof bad_counts / sizeof bad_counts[0]; i++) {
        double v;
        CHECKF(parse_count(bad_counts[i], 0, &v) != 0, "\"%s\" accepted", bad_counts[i]);
    }
    {
        double v = -1;
        int k = 0;
        CHECK(parse_count("0", 1, &v) == 0 && v == 0);
        CHECK(parse_int("8", &k) == 0 && k == 8);
        CHECK(parse_int("0", &k) != 0 && parse_int("8x", &k) != 0 && parse_int("-1", &k) != 0);
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

static int bad(const char *flag, const char *what, const char *got) {
    fprintf(stderr, "zero_estimate: %s: expected %s, got '%s'\nTry 'zero_estimate --help'.\n",
            flag, what, got ? got : "(nothing)");
    return 2;
}

int main(int argc, char **argv) {
    cli c;
    int i, have_params = 0, have_gpu_mem = 0;
    memset(&c, 0, sizeof c);
    c.a.gpus_per_node = 1;
    c.a.nodes = 1;
    c.a.zero_init = 1;
    c.a.additional_buffer_factor = 1.5;
    c.a.stage3_prefetch_bucket_size = -1;
    for (i = 1; i < argc; i++) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        double x;
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
            fputs(usage, stdout);
            return 0;
        } else if (!strcmp(f, "--selftest")) {
            c.selftest = 1;
        } else if (!strcmp(f, "--fit")) {
            c.fit = 1;
        } else if (!strcmp(f, "--breakdown")) {
            c.breakdown = 1;
        } else if (!strcmp(f, "--no-zero-init")) {
            c.a.zero_init = 0;
        } else if (!strcmp(f, "--params")) {
            if (parse_count(v, 0, &c.a.params)) return bad(f, "a count such as 1.5e9 or 1.5B", v);
            have_params = 1, i++;
        } else if (!strcmp(f, "--largest-layer")) {
            if (parse_count(v, 0, &c.a.largest_layer)) return bad(f, "a count such as 5e7 or 50M", v);
            i++;
        } else if (!strcmp(f, "--gpus")) {
            if (parse_int(v, &c.a.gpus_per_node)) return bad(f, "an integer >= 1", v);
            i++;
        } else if (!strcmp(f, "--nodes")) {
            if (parse_int(v, &c.a.nodes)) return bad(f, "an integer >= 1", v);
            i++;
        } else if (!strcmp(f, "--dtype")) {
            if (v && !strcmp(v, "fp16")) c.a.compute_dtype = ZERO_DTYPE_FP16;
            else if (v && !strcmp(v, "bf16")) c.a.compute_dtype = ZERO_DTYPE_BF16;
            else if (v && !strcmp(v, "fp32")) c.a.compute_dtype = ZERO_DTYPE_FP32;
            else return bad(f, "fp16, bf16 or fp32", v);
            i++;
        } else if (!strcmp(f, "--bucket") || !strcmp(f, "--max-live") || !strcmp(f, "--prefetch")) {
            int prefetch = !strcmp(f, "--prefetch");
            if (parse_count(v, prefetch, &x) || x > 9e18 || x != floor(x))
                return bad(f, prefetch ? "a whole count >= 0 such as 5e7" : "a whole count such as 5e8", v);
            if (!strcmp(f, "--bucket")) c.a.reduce_bucket_size = (int64_t)x;
            else if (prefetch) c.a.stage3_prefetch_bucket_size = (int64_t)x;
            else c.a.stage3_max_live_parameters = (int64_t)x;
            i++;
        } else if (!strcmp(f, "--buffer-factor")) {
            char *end;
            x = v ? strtod(v, &end) : 0;
            if (!v || end == v || *end || !(x > 0) || !isfinite(x)) return bad(f, "a number > 0", v);
            c.a.additional_buffer_factor = x;
            i++;
        } else if (!strcmp(f, "--gpu-mem") || !strcmp(f, "--cpu-mem") || !strcmp(f, "--nvme")) {
            if (parse_size(v, &x)) return bad(f, "a size such as 80GB, 80GiB or 1.5TB", v);
            if (!strcmp(f, "--gpu-mem")) c.gpu_mem = x, have_gpu_mem = 1;
            else if (!strcmp(f, "--cpu-mem")) c.cpu_mem = x;
            else c.nvme = x;
            i++;
        } else {
            fprintf(stderr, "zero_estimate: unknown argument '%s'\nTry 'zero_estimate --help'.\n", f);
            return 2;
        }
    }
    if (c.selftest) return selftest();
    if (c.fit) {
        if (have_params) {
            fprintf(stderr, "zero_estimate: --fit finds the parameter count; drop --params\n");
            return 2;
        }
        if (!have_gpu_mem || !(c.gpu_mem > 0))
            return bad("--gpu-mem", "a GPU memory size > 0 with --fit", have_gpu_mem ? "0" : NULL);
        return run_fit(&c);
    }
    if (!have_params) return bad("--params", "the model's parameter count", NULL);
    if (c.a.largest_layer > c.a.params) {
        fprintf(stderr, "zero_estimate: --largest-layer (%g) is larger than --params (%g)\n",
                c.a.largest_layer, c.a.params);
        return 2;
    }
    return run_table(&c);
}
