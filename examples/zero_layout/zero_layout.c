/* zero_layout - how zero cuts a model's tensors into units, and what each
   ZeRO stage keeps per rank: the two tables of docs/engine.md (sections 2
   and 4), for any list of tensors.

       zero_layout --sizes 5,7,3,300,1 --bucket 64 --world 4 [--names a,b,c,d,e]
                   [--groups 0,0,1,1,2] [--frozen 3] [--stage 3 --persist 10]
                   [--locate d:100,b:6]
           the units of zero_layout_create, each tensor's place, and where
           single elements live (zero_layout_locate)
       zero_layout --memory --mlp 8,250,500 --world 4 --dtype fp16 --bucket 65536
                   [--gas G] [--max-live M --prefetch P --persist T] [--config ds_config.json]
           an engine on N host ranks for each of stages 0-3: rank 0's
           zero_memory_report as a Markdown table, and the bytes per parameter
           next to the ZeRO paper's formulas

   Build: make all (build/zero_layout), or
       cc -std=c11 -O2 -I. -o zero_layout examples/zero_layout/zero_layout.c -lm -lpthread
   --help lists every option. */
#define ZERO_IMPLEMENTATION
#include "zero.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tool_args.h"

static const char usage[] =
    "usage: zero_layout (--sizes N,N,... | --mlp L,IN,OUT) [options]            the unit layout\n"
    "       zero_layout --memory (--sizes N,N,... | --mlp L,IN,OUT) [options]   memory per rank, stages 0-3\n"
    "       zero_layout --help | --version                       every option; the zero version\n";

static const char help[] =
    "\n"
    "The model, one of:\n"
    "  --sizes N,N,...      tensor sizes in elements, in registration (forward) order\n"
    "  --mlp L,IN,OUT       L layers of an IN x OUT weight and an OUT bias (hK.weight, hK.bias;\n"
    "                       group = layer; biases without weight decay)\n"
    "and with it:\n"
    "  --names A,B,...      names of the --sizes tensors (default t0, t1, ...)\n"
    "  --groups G,G,...     group (layer id) of each --sizes tensor (default 0): units never\n"
    "                       cross a change of group\n"
    "  --frozen T,T,...     frozen tensors, by name or index: no gradient, no optimizer state\n"
    "\n"
    "The layout:\n"
    "  --world N            ranks (default 1; 1 to 1048576; with --memory at most 1024, run\n"
    "                       as threads)\n"
    "  --bucket N           zero_optimization.reduce_bucket_size, elements (default 5e8;\n"
    "                       0: one tensor per unit; at most 9e15)\n"
    "  --stage S            0-3 (default 0, or the config's); only stage 3 changes the layout\n"
    "                       (persistent tensors get units of their own); not with --memory\n"
    "  --persist N          stage3_param_persistence_threshold (default 1e5; 0: none); stage 3\n"
    "  --model-persist N    stage3_model_persistence_threshold (default: no cap)\n"
    "  --locate T:OFF,...   where element OFF of tensor T (name or index) lives; repeatable;\n"
    "                       not with --memory\n"
    "\n"
    "--memory creates an engine on --world host ranks (threads of this process, weights\n"
    "zero) for each of stages 0-3 and prints rank 0's zero_memory_report:\n"
    "  --dtype T            compute dtype: fp32 (default: DeepSpeed's when neither fp16 nor\n"
    "                       bf16 is enabled), fp16 or bf16; answers an \"auto\" fp16/bf16\n"
    "  --gas G              gradient_accumulation_steps (default 1, or the config's; at most 1e6)\n"
    "  --max-live N         stage3_max_live_parameters (default 1e9)\n"
    "  --prefetch N         stage3_prefetch_bucket_size (default 5e7)\n"
    "  --no-offload         measure a config that offloads without its offload (--memory runs\n"
    "                       offload to the CPU; offload to NVMe needs this or device \"cpu\")\n"
    "Every rank's buffers are allocated for real: the tool refuses models that would need\n"
    "more than 8 GiB in all (build/zero_estimate plans large models).\n"
    "\n"
    "Both:\n"
    "  --config FILE        start from a DeepSpeed config; the flags above override its values.\n"
    "                       \"auto\" values that do not change memory (lr, betas, eps,\n"
    "                       weight_decay, gradient_clipping, warmup and total steps, the\n"
    "                       micro-batch size) get the HF Trainer's defaults\n"
    "  --hidden H           the model's hidden size, for \"auto\" bucket sizes in the config\n"
    "                       (1 to 1048576)\n"
    "  --mbs N              with --config: the micro-batch per GPU for an \"auto\" or missing\n"
    "                       train_micro_batch_size_per_gpu (1 to 1048576; default 1), as\n"
    "                       zero_config's --mbs\n"
    "  --supply-hf          with --config: the HF Trainer's defaults for the \"auto\" values that\n"
    "                       change memory, as zero_config's --supply-hf: fp16 and bf16 off (fp32)\n"
    "                       unless --dtype says, 1 accumulation step unless --gas says\n"
    "\n"
    "Counts N accept whole numbers such as 65536 or 5e8 (at most 9e15). Defaults are DeepSpeed's.\n"
    "Exit status (every zero_* tool's rule): 0; 1 the config cannot be read or is bad, or the\n"
    "library refused (why, on stderr); 2 usage: a bad flag, value or combination (one line\n"
    "saying which and why, then the usage).\n";

static const char *const flags[] = {
    "--sizes", "--mlp", "--names", "--groups", "--frozen", "--world", "--bucket", "--stage", "--persist",
    "--model-persist", "--locate", "--memory", "--dtype", "--gas", "--max-live", "--prefetch", "--no-offload",
    "--config", "--hidden", "--mbs", "--supply-hf", "--help", "--version", NULL};

#define MAX_WORLD_LAYOUT 1048576
#define MAX_WORLD_MEMORY 1024
#define MEMORY_LIMIT 8589934592.0 /* bytes, all ranks of --memory together */

/* ---- command line ---- */

typedef struct opts {
    const char *sizes, *names, *groups, *frozen, *mlp, *config;
    const char **locate;
    int n_locate;
    int memory, no_offload, supply_hf;
    int mbs;
    int world, has_world;
    int stage, has_stage;
    int gas, has_gas;
    zero_dtype dtype;
    int has_dtype;
    int64_t bucket, persist, model_persist, max_live, prefetch, hidden;
    int has_bucket, has_persist, has_model_persist, has_max_live, has_prefetch, has_hidden;
} opts;

static int usage_error(void) { return tool_usage_error(usage); }

static int bad(const char *flag, const char *why, const char *got) {
    fprintf(stderr, "zero_layout: %s: %s, got '%s'\n", flag, why, got ? got : "(nothing)");
    return usage_error();
}

static int bad_item(const char *flag, int item, const char *why, const char *got) {
    fprintf(stderr, "zero_layout: %s: item %d ('%s') %s\n", flag, item + 1, got, why);
    return usage_error();
}

/* A whole number of a list item in [lo, hi] (the caller says what is wrong). */
static int item_count(const char *s, int64_t lo, int64_t hi, int64_t *out) {
    long long v;
    if (tool_int(NULL, NULL, s, lo, hi, &v)) return -1;
    *out = (int64_t)v;
    return 0;
}

static int item_int(const char *s, int lo, int hi, int *out) {
    long long v;
    if (tool_int(NULL, NULL, s, lo, hi, &v)) return -1;
    *out = (int)v;
    return 0;
}

/* Split a comma list into a fresh copy: *items points into *buf. */
static int split_list(const char *s, char **buf, char ***items, int *n) {
    size_t len = strlen(s), i;
    int k = 1, j = 0;
    char *b;
    for (i = 0; i < len; i++) k += s[i] == ',';
    b = (char *)malloc(len + 1);
    *items = (char **)malloc(sizeof(char *) * (size_t)k);
    if (!b || !*items) {
        free(b);
        free(*items);
        *items = NULL;
        return -1;
    }
    memcpy(b, s, len + 1);
    (*items)[j++] = b;
    for (i = 0; i < len; i++)
        if (b[i] == ',') b[i] = 0, (*items)[j++] = b + i + 1;
    *buf = b;
    *n = k;
    return 0;
}

static int out_of_memory(void) {
    fprintf(stderr, "zero_layout: out of memory\n");
    return 1;
}

/* ---- the model ---- */

typedef struct model {
    int n;
    zero_tensor *ts;
    char **names; /* owned */
    int64_t params;
} model;

static void model_free(model *m) {
    int i;
    if (m->names)
        for (i = 0; i < m->n; i++) free(m->names[i]);
    free(m->names);
    free(m->ts);
    memset(m, 0, sizeof *m);
}

static int model_alloc(model *m, int n) {
    m->n = n;
    m->ts = (zero_tensor *)calloc((size_t)n, sizeof *m->ts);
    m->names = (char **)calloc((size_t)n, sizeof *m->names);
    return m->ts && m->names ? 0 : -1;
}

static int set_name(model *m, int i, const char *name) {
    size_t len = strlen(name) + 1;
    m->names[i] = (char *)malloc(len);
    if (!m->names[i]) return -1;
    memcpy(m->names[i], name, len);
    m->ts[i].name = m->names[i];
    return 0;
}

/* Tensor by name, else by index; -1 when neither. */
static int find_tensor(const model *m, const char *s) {
    int i;
    for (i = 0; i < m->n; i++)
        if (!strcmp(m->names[i], s)) return i;
    if (!item_int(s, 0, m->n - 1, &i)) return i;
    return -1;
}

static int build_mlp(model *m, const char *spec) {
    char *buf, **it;
    int n, i, rc = 1;
    int64_t v[3];
    if (split_list(spec, &buf, &it, &n)) return out_of_memory();
    if (n != 3) {
        rc = bad("--mlp", "expected three counts L,IN,OUT (layers, inputs, outputs)", spec);
        goto done;
    }
    for (i = 0; i < 3; i++)
        if (item_count(it[i], 1, i == 0 ? 1000000 : ((int64_t)1 << 40), &v[i])) {
            rc = bad_item("--mlp", i, i == 0 ? "is not a layer count 1 .. 1e6" : "is not a whole count >= 1", it[i]);
            goto done;
        }
    if (v[1] > ((int64_t)1 << 50) / v[2]) {
        rc = bad("--mlp", "an IN x OUT weight of at most 2^50 elements", spec);
        goto done;
    }
    if (model_alloc(m, 2 * (int)v[0])) {
        rc = out_of_memory();
        goto done;
    }
    for (i = 0; i < (int)v[0]; i++) {
        char name[48];
        zero_tensor *w = &m->ts[2 * i], *b = &m->ts[2 * i + 1];
        snprintf(name, sizeof name, "h%d.weight", i);
        if (set_name(m, 2 * i, name)) goto oom;
        snprintf(name, sizeof name, "h%d.bias", i);
        if (set_name(m, 2 * i + 1, name)) goto oom;
        w->numel = v[1] * v[2];
        w->ndim = 2;
        w->shape[0] = v[2];
        w->shape[1] = v[1];
        w->group = i;
        b->numel = v[2];
        b->group = i;
        b->flags = ZERO_TENSOR_NO_DECAY;
    }
    rc = 0;
    goto done;
oom:
    rc = out_of_memory();
done:
    free(buf);
    free(it);
    return rc;
}

static int build_sizes(model *m, const opts *o) {
    char *buf = NULL, **it = NULL, *nbuf = NULL, **nit = NULL, *gbuf = NULL, **git = NULL;
    int n, nn, ng, i, rc = 1;
    if (split_list(o->sizes, &buf, &it, &n)) return out_of_memory();
    if (model_alloc(m, n)) {
        rc = out_of_memory();
        goto done;
    }
    for (i = 0; i < n; i++)
        if (item_count(it[i], 1, (int64_t)1 << 50, &m->ts[i].numel)) {
            rc = bad_item("--sizes", i, "is not a tensor size: a whole count 1 .. 2^50", it[i]);
            goto done;
        }
    if (o->names) {
        if (split_list(o->names, &nbuf, &nit, &nn)) {
            rc = out_of_memory();
            goto done;
        }
        if (nn != n) {
            rc = tool_usage_fail("zero_layout", "--names", usage, "%d names, but --sizes has %d tensors", nn, n);
            goto done;
        }
    }
    if (o->groups) {
        if (split_list(o->groups, &gbuf, &git, &ng)) {
            rc = out_of_memory();
            goto done;
        }
        if (ng != n) {
            rc = tool_usage_fail("zero_layout", "--groups", usage, "%d groups, but --sizes has %d tensors", ng, n);
            goto done;
        }
    }
    for (i = 0; i < n; i++) {
        char name[32];
        const char *nm = nit ? nit[i] : name;
        snprintf(name, sizeof name, "t%d", i);
        if (!*nm) {
            rc = bad_item("--names", i, "is empty", nm);
            goto done;
        }
        if (set_name(m, i, nm)) {
            rc = out_of_memory();
            goto done;
        }
        if (git && item_int(git[i], 0, 2147483647, &m->ts[i].group)) {
            rc = bad_item("--groups", i, "is not a group: a whole number >= 0", git[i]);
            goto done;
        }
    }
    rc = 0;
done:
    free(buf);
    free(it);
    free(nbuf);
    free(nit);
    free(gbuf);
    free(git);
    return rc;
}

/* The model of --sizes or --mlp: 0, 1 out of memory, 2 a usage error (printed) */
static int build_model(model *m, const opts *o) {
    int i, rc;
    memset(m, 0, sizeof *m);
    if ((rc = o->mlp ? build_mlp(m, o->mlp) : build_sizes(m, o)) != 0) return rc;
    if (o->frozen) {
        char *buf, **it;
        int n;
        if (split_list(o->frozen, &buf, &it, &n)) return out_of_memory();
        for (i = 0; i < n; i++) {
            int t = find_tensor(m, it[i]);
            if (t < 0) {
                rc = tool_usage_fail("zero_layout", "--frozen", usage,
                                     "item %d ('%s') is neither a tensor name nor an index 0 .. %d", i + 1, it[i],
                                     m->n - 1);
                free(buf);
                free(it);
                return rc;
            }
            m->ts[t].flags |= ZERO_TENSOR_FROZEN;
        }
        free(buf);
        free(it);
    }
    for (i = 0; i < m->n; i++) m->params += m->ts[i].numel;
    return 0;
}

/* ---- the config ---- */

/* "auto" values that change neither the layout nor the memory: the HF
   Trainer's defaults, as `zero_config check --supply-hf` fills them. */
static void fill_auto(zero_config *c) {
    if (c->optimizer.lr == ZERO_AUTO) c->optimizer.lr = 5e-5;
    if (c->optimizer.beta1 == ZERO_AUTO) c->optimizer.beta1 = 0.9, c->optimizer.beta2 = 0.999;
    if (c->optimizer.eps == ZERO_AUTO) c->optimizer.eps = 1e-8;
    if (c->optimizer.weight_decay == ZERO_AUTO) c->optimizer.weight_decay = 0;
    if (c->gradient_clipping == ZERO_AUTO) c->gradient_clipping = 1.0;
    if (c->scheduler.warmup_num_steps == ZERO_AUTO) c->scheduler.warmup_num_steps = 100;
    if (c->scheduler.total_num_steps == ZERO_AUTO) c->scheduler.total_num_steps = 1000;
}

/* The config the flags describe, not yet resolved. */
static int base_config(const opts *o, zero_config *c) {
    zero_error err;
    zero_optimization_config *z = &c->zero_optimization;
    *c = zero_config_default();
    c->log.rank = 0;
    if (o->config) {
        if (zero_config_load(c, o->config, &err) != ZERO_OK) {
            fprintf(stderr, "zero_layout: --config: %s\n", err.msg);
            return 1;
        }
        fill_auto(c);
    }
    if (o->has_stage) z->stage = o->stage;
    if (o->has_bucket) z->reduce_bucket_size = o->bucket;
    if (o->has_persist) z->stage3_param_persistence_threshold = o->persist;
    if (o->has_model_persist) z->stage3_model_persistence_threshold = o->model_persist;
    if (o->has_max_live) z->stage3_max_live_parameters = o->max_live;
    if (o->has_prefetch) z->stage3_prefetch_bucket_size = o->prefetch;
    if (o->has_hidden) c->hidden_size = o->hidden;
    if (o->has_dtype) {
        c->fp16.enabled = o->dtype == ZERO_DTYPE_FP16;
        c->bf16.enabled = o->dtype == ZERO_DTYPE_BF16;
    } else if (!o->memory) { /* the dtype does not move a unit boundary */
        if (c->fp16.enabled == ZERO_AUTO) c->fp16.enabled = 0;
        if (c->bf16.enabled == ZERO_AUTO) c->bf16.enabled = 0;
    }
    if (o->has_gas) {
        c->gradient_accumulation_steps = o->gas;
        c->train_batch_size = ZERO_UNSET; /* derived: nothing trains here */
    }
    if (o->supply_hf) { /* zero_config --supply-hf's answers to the "auto" values that change memory */
        if (c->fp16.enabled == ZERO_AUTO) c->fp16.enabled = 0;
        if (c->bf16.enabled == ZERO_AUTO) c->bf16.enabled = 0;
        if (c->gradient_accumulation_steps == ZERO_AUTO) c->gradient_accumulation_steps = 1;
    }
    if (o->mbs && c->train_micro_batch_size_per_gpu <= 0) c->train_micro_batch_size_per_gpu = o->mbs;
    if (c->train_batch_size <= 0 && c->train_micro_batch_size_per_gpu <= 0) c->train_micro_batch_size_per_gpu = 1;
    return 0;
}

static int resolve(zero_config *c, int world, const char *what) {
    zero_error err;
    if (zero_config_resolve(c, world, &err) == ZERO_OK) return 0;
    fprintf(stderr, "zero_layout: %s%s\n", what, err.msg);
    if (err.item == ZERO_MSG_CONFIG_AUTO_UNRESOLVED)
        fprintf(stderr, "zero_layout: --dtype (or --supply-hf: fp32) answers an \"auto\" fp16/bf16, --hidden the "
                        "bucket sizes, --gas (or --supply-hf: 1) the accumulation steps, --mbs the micro-batch\n");
    return 1;
}

/* ---- text helpers ---- */

static int width_ll(long long v) {
    char b[32];
    return snprintf(b, sizeof b, "%lld", v);
}

static int imax(int a, int b) { return a > b ? a : b; }

/* ---- the layout ---- */

/* "a..c", "d", or "d[64,128)" for a piece of a split tensor. */
static void unit_tensors(const zero_layout *l, int u, char *buf, size_t cap) {
    const zero_unit *x = zero_layout_unit(l, u);
    const zero_tensor_place *p = zero_layout_tensor(l, x->first_tensor);
    const char *a = zero_layout_tensor_name(l, x->first_tensor);
    if (x->first_tensor != x->last_tensor)
        snprintf(buf, cap, "%s..%s", a, zero_layout_tensor_name(l, x->last_tensor));
    else if (p->n_units > 1)
        snprintf(buf, cap, "%s[%lld,%lld)", a, (long long)(x->offset - p->offset),
                 (long long)(x->offset - p->offset + x->numel));
    else
        snprintf(buf, cap, "%s", a);
}

/* "8 8 3 0": zero_layout_chunk_real of every rank (world <= 8). */
static int chunk_reals(const zero_layout *l, int u, char *buf, size_t cap) {
    int r, n = 0;
    buf[0] = 0;
    for (r = 0; r < zero_layout_world(l) && (size_t)n < cap; r++)
        n += snprintf(buf + n, cap - (size_t)n, "%s%lld", r ? " " : "", (long long)zero_layout_chunk_real(l, u, r));
    return n;
}

static const char *unit_kind(const zero_unit *x) {
    return x->frozen && x->persistent ? "frozen, persistent" : x->frozen ? "frozen" : x->persistent ? "persistent" : "";
}

typedef struct locate_q {
    int tensor;
    int64_t off;
} locate_q;

/* Parse every --locate item against the layout before printing anything. */
static int parse_locates(const opts *o, const model *m, const zero_layout *l, locate_q **out, int *n_out) {
    int i, j, n = 0, cap = 0, rc = 0;
    locate_q *q = NULL;
    for (i = 0; i < o->n_locate && !rc; i++) {
        char *buf, **it;
        int k;
        if (split_list(o->locate[i], &buf, &it, &k)) {
            rc = out_of_memory();
            break;
        }
        if (n + k > cap) {
            locate_q *nq;
            cap = (n + k) * 2;
            nq = (locate_q *)realloc(q, sizeof *q * (size_t)cap);
            if (!nq) k = 0, rc = out_of_memory();
            else q = nq;
        }
        for (j = 0; j < k && !rc; j++, n++) {
            char *colon = strrchr(it[j], ':');
            zero_location loc;
            zero_error err;
            if (!colon) {
                rc = bad("--locate", "expected TENSOR:OFFSET such as d:100 or 3:100", it[j]);
                break;
            }
            *colon = 0;
            q[n].tensor = find_tensor(m, it[j]);
            if (q[n].tensor < 0) {
                rc = tool_usage_fail("zero_layout", "--locate", usage,
                                     "'%s' is neither a tensor name nor an index 0 .. %d", it[j], m->n - 1);
            } else if (item_count(colon + 1, 0, INT64_MAX, &q[n].off)) {
                *colon = ':';
                rc = bad("--locate", "expected TENSOR:OFFSET with a whole offset >= 0", it[j]);
            } else if (zero_layout_locate(l, q[n].tensor, q[n].off, &loc, &err) != ZERO_OK) {
                rc = tool_usage_fail("zero_layout", "--locate", usage, "%s:%s: %s", it[j], colon + 1, err.msg);
            }
        }
        free(buf);
        free(it);
    }
    if (rc) {
        free(q);
        return rc;
    }
    *out = q;
    *n_out = n;
    return 0;
}

static int run_layout(const opts *o, const model *m) {
    zero_config cfg;
    zero_layout_args la;
    zero_layout *l;
    zero_error err;
    locate_q *q = NULL;
    char tn[256];
    int n_q = 0, i, u, nu, world, show_real, show_group = 0, show_kind = 0, split = 0, rc = 1;
    int w_unit, w_tens, w_group, w_span, w_off, w_numel, w_pad, w_chunk, w_shard, w_real, w_name, w_first;
    char real[256], head[48];
    int64_t piece = 0;
    if (base_config(o, &cfg) || resolve(&cfg, o->world, o->config ? "--config: " : "")) return 1;
    if (o->has_persist && cfg.zero_optimization.stage != 3) {
        return tool_usage_fail("zero_layout", "--persist", usage,
                               "persistent tensors exist at stage 3 only, the stage is %d (add --stage 3)",
                               cfg.zero_optimization.stage);
    }
    memset(&la, 0, sizeof la);
    la.world = world = o->world;
    la.bucket_elems = cfg.zero_optimization.reduce_bucket_size;
    if (cfg.zero_optimization.stage == 3) {
        la.persist_threshold = cfg.zero_optimization.stage3_param_persistence_threshold;
        la.model_persist_threshold = cfg.zero_optimization.stage3_model_persistence_threshold;
    }
    if (zero_layout_create(&l, m->ts, m->n, &la, &err) != ZERO_OK) {
        fprintf(stderr, "zero_layout: %s%s\n", err.item == ZERO_MSG_LAYOUT_DUPLICATE_NAME ? "--names: " : "", err.msg);
        return 1;
    }
    if ((rc = parse_locates(o, m, l, &q, &n_q)) != 0) goto done;
    rc = 1;
    nu = zero_layout_unit_count(l);
    show_real = world <= 8;

    /* column widths */
    snprintf(head, sizeof head, "chunk_real(r0..r%d)", world - 1);
    w_unit = 4, w_tens = 7, w_group = 5, w_span = 4, w_off = 6, w_numel = 5, w_pad = 6, w_chunk = 5, w_shard = 12;
    w_real = (int)strlen(head);
    for (u = 0; u < nu; u++) {
        const zero_unit *x = zero_layout_unit(l, u);
        unit_tensors(l, u, tn, sizeof tn);
        if (show_real) w_real = imax(w_real, chunk_reals(l, u, real, sizeof real));
        w_unit = imax(w_unit, width_ll(u));
        w_tens = imax(w_tens, (int)strlen(tn));
        w_group = imax(w_group, width_ll(x->group));
        w_span = imax(w_span, width_ll(x->span));
        w_off = imax(w_off, width_ll((long long)x->offset));
        w_numel = imax(w_numel, width_ll((long long)x->numel));
        w_pad = imax(w_pad, width_ll((long long)x->padded));
        w_chunk = imax(w_chunk, width_ll((long long)x->chunk));
        w_shard = imax(w_shard, width_ll((long long)x->shard_offset));
        if (x->group != zero_layout_unit(l, 0)->group) show_group = 1;
        if (x->frozen || x->persistent) show_kind = 1;
        if (x->first_tensor == x->last_tensor && zero_layout_tensor(l, x->first_tensor)->n_units > 1 && !split)
            split = 1, piece = x->numel;
    }
    if (o->groups) show_group = 1;

    printf("zero_layout: %d tensors, %lld elements -> %d units, %d spans; reduce_bucket_size %lld, world %d",
           m->n, (long long)m->params, nu, zero_layout_unit(l, nu - 1)->span + 1, (long long)la.bucket_elems, world);
    if (cfg.zero_optimization.stage == 3)
        printf(", stage 3 (stage3_param_persistence_threshold %lld)", (long long)la.persist_threshold);
    printf("\nunits padded to a multiple of 8N = %lld elements", (long long)world * ZERO_ALIGN);
    if (split) printf("; split tensors cut into pieces of %lld", (long long)piece);
    printf("\n\n");

    printf("%*s  %-*s  ", w_unit, "unit", w_tens, "tensors");
    if (show_group) printf("%*s  ", w_group, "group");
    printf("%*s  %*s  %*s  %*s  %*s  %*s", w_span, "span", w_off, "offset", w_numel, "numel", w_pad, "padded", w_chunk,
           "chunk", w_shard, "shard_offset");
    if (show_real) printf("  %-*s", show_kind ? w_real : 0, head);
    if (show_kind) printf("  kind");
    printf("\n");
    for (u = 0; u < nu; u++) {
        const zero_unit *x = zero_layout_unit(l, u);
        unit_tensors(l, u, tn, sizeof tn);
        printf("%*d  %-*s  ", w_unit, u, w_tens, tn);
        if (show_group) printf("%*d  ", w_group, x->group);
        printf("%*d  %*lld  %*lld  %*lld  %*lld  %*lld", w_span, x->span, w_off, (long long)x->offset, w_numel,
               (long long)x->numel, w_pad, (long long)x->padded, w_chunk, (long long)x->chunk, w_shard,
               (long long)x->shard_offset);
        if (show_real) {
            chunk_reals(l, u, real, sizeof real);
            printf("  %-*s", show_kind && *unit_kind(x) ? w_real : 0, real);
        }
        if (show_kind && *unit_kind(x)) printf("  %s", unit_kind(x));
        printf("\n");
    }
    if (!show_real) printf("(chunk_real per rank is shown for world <= 8)\n");

    w_name = 6, w_numel = 5, w_off = 6, w_first = 10;
    for (i = 0; i < m->n; i++) {
        const zero_tensor_place *p = zero_layout_tensor(l, i);
        w_name = imax(w_name, (int)strlen(m->names[i]));
        w_numel = imax(w_numel, width_ll((long long)m->ts[i].numel));
        w_off = imax(w_off, width_ll((long long)p->offset));
        w_first = imax(w_first, width_ll(p->first_unit));
    }
    printf("\n%-*s  %*s  ", w_name, "tensor", w_numel, "numel");
    if (show_group) printf("%*s  ", w_group, "group");
    printf("%*s  %*s  %7s  %11s%s\n", w_off, "offset", w_first, "first_unit", "n_units", "unit_offset",
           show_kind ? "  kind" : "");
    for (i = 0; i < m->n; i++) {
        const zero_tensor_place *p = zero_layout_tensor(l, i);
        const zero_unit *x = zero_layout_unit(l, p->first_unit);
        printf("%-*s  %*lld  ", w_name, m->names[i], w_numel, (long long)m->ts[i].numel);
        if (show_group) printf("%*d  ", w_group, m->ts[i].group);
        printf("%*lld  %*d  %7d  %11lld", w_off, (long long)p->offset, w_first, p->first_unit, p->n_units,
               (long long)p->unit_offset);
        if (show_kind && *unit_kind(x)) printf("  %s", unit_kind(x));
        printf("\n");
    }

    printf("\npadded_numel %lld (%lld model elements, %lld of gaps and padding), shard_numel %lld per rank",
           (long long)zero_layout_padded_numel(l), (long long)m->params,
           (long long)(zero_layout_padded_numel(l) - m->params), (long long)zero_layout_shard_numel(l, 0));
    if (zero_layout_shard_numel(l, 1) != zero_layout_shard_numel(l, 0))
        printf(" (%lld trainable)", (long long)zero_layout_shard_numel(l, 1));
    printf("\n");
    for (i = 0; i < n_q; i++) {
        zero_location loc;
        const zero_unit *x;
        int64_t in_unit;
        zero_layout_locate(l, q[i].tensor, q[i].off, &loc, NULL);
        x = zero_layout_unit(l, loc.unit);
        in_unit = zero_layout_tensor(l, q[i].tensor)->offset + q[i].off - x->offset;
        printf("zero_layout_locate(%s, %lld) -> unit %d, rank %d, shard_offset %lld (unit element %lld, "
               "chunk element %lld)\n",
               m->names[q[i].tensor], (long long)q[i].off, loc.unit, loc.rank, (long long)loc.shard_offset,
               (long long)in_unit, (long long)(in_unit - (int64_t)loc.rank * x->chunk));
    }
    rc = 0;
done:
    free(q);
    zero_layout_destroy(l);
    return rc;
}

/* ---- memory per stage ---- */

typedef struct stage_result {
    zero_memory_stats st;
    int64_t shard_trainable; /* S_T */
    int64_t ring_span;       /* the largest trainable span (a gradient ring slot) */
    int64_t max_span;        /* U: the largest non-persistent span */
    int64_t persist_elems;
    int persist_tensors, spans;
} stage_result;

typedef struct mem_job {
    const zero_config *cfg;
    const model *m;
    stage_result res;
    zero_result rank0;
    char msg[1024]; /* rank 0's error */
} mem_job;

static void summarize(const zero_layout *l, const model *m, stage_result *s) {
    int u, nu = zero_layout_unit_count(l), i;
    int64_t span = 0;
    s->shard_trainable = zero_layout_shard_numel(l, 1);
    for (u = 0; u < nu; u++) {
        const zero_unit *x = zero_layout_unit(l, u);
        const zero_unit *next = u + 1 < nu ? zero_layout_unit(l, u + 1) : NULL;
        span += x->padded;
        if (next && next->span == x->span) continue;
        if (!x->frozen && span > s->ring_span) s->ring_span = span;
        if (!x->persistent && span > s->max_span) s->max_span = span;
        s->spans++;
        span = 0;
    }
    for (i = 0; i < m->n; i++) {
        const zero_unit *x = zero_layout_unit(l, zero_layout_tensor(l, i)->first_unit);
        if (x->persistent) s->persist_tensors++, s->persist_elems += m->ts[i].numel;
    }
}

static zero_result mem_rank(const zero_backend *be, void *arg) {
    mem_job *j = (mem_job *)arg;
    zero_engine *e;
    zero_error err;
    zero_result r = zero_engine_create(&e, j->cfg, j->m->ts, j->m->n, be, &err);
    if (r != ZERO_OK) {
        if (be->rank == 0) j->rank0 = r, snprintf(j->msg, sizeof j->msg, "%s", err.msg);
        return r;
    }
    if (be->rank == 0) {
        r = zero_memory_report(e, &j->res.st);
        summarize(zero_engine_layout(e), j->m, &j->res);
        if (r != ZERO_OK) j->rank0 = r, snprintf(j->msg, sizeof j->msg, "zero_memory_report failed");
    }
    zero_engine_destroy(e);
    return r;
}

static size_t cat_bytes(const zero_memory_stats *s, int c) {
    return s->planned[c][ZERO_MEM_DEVICE] + s->planned[c][ZERO_MEM_PINNED] + s->planned[c][ZERO_MEM_HOST];
}
static size_t planned_bytes(const zero_memory_stats *s) {
    return s->planned_total[ZERO_MEM_DEVICE] + s->planned_total[ZERO_MEM_PINNED] + s->planned_total[ZERO_MEM_HOST];
}
static size_t allocated_bytes(const zero_memory_stats *s) {
    return s->allocated[ZERO_MEM_DEVICE] + s->allocated[ZERO_MEM_PINNED] + s->allocated[ZERO_MEM_HOST];
}

/* The ZeRO paper's bytes (Rajbhandari et al. 2020, figure 1): d bytes of
   weights and of gradients per parameter, K of optimizer state (fp32 master
   + Adam m and v: 12; fp32 training: 8, the weights are the master). Frozen
   parameters count their weights only. */
static double paper_bytes(int stage, double P, double PT, double d, double K, double N) {
    switch (stage) {
    case 0: return P * d + PT * (d + K);
    case 1: return P * d + PT * d + PT * K / N;
    case 2: return P * d + PT * (d + K) / N;
    default: return (P * d + PT * (d + K)) / N;
    }
}

static void paper_formula(int stage, int d, int K, char *buf, size_t cap) {
    switch (stage) {
    case 0: snprintf(buf, cap, "%d + %d + %d", d, d, K); break;
    case 1: snprintf(buf, cap, "%d + %d/N", 2 * d, K); break;
    case 2: snprintf(buf, cap, "%d + %d/N", d, d + K); break;
    default: snprintf(buf, cap, "%d/N", 2 * d + K); break;
    }
}

static int run_memory(const opts *o, const model *m) {
    static const char *const cat[ZERO_MEM_CATEGORY_COUNT] = {
        "parameters", "gather pool", "gradients", "grad accumulation", "fp32 master", "Adam m + v", "scratch"};
    stage_result res[4];
    zero_config base, cfg[4];
    int s, c, mismatch = 0, d, K, N = o->world;
    double P = (double)m->params, PT = 0;
    int i;
    if (P * 20.0 * N > MEMORY_LIMIT) {
        fprintf(stderr, "zero_layout: --memory: %lld parameters on %d ranks need about %.1f GiB in this process "
                        "(stage 0), more than the tool's 8 GiB\n"
                        "HINT: fewer ranks or a smaller model; build/zero_estimate plans large models without "
                        "allocating\n", (long long)m->params, N, P * 20.0 * N / 1073741824.0);
        return 1;
    }
    for (i = 0; i < m->n; i++)
        if (!(m->ts[i].flags & ZERO_TENSOR_FROZEN)) PT += (double)m->ts[i].numel;
    if (base_config(o, &base)) return 1;
    for (i = 0; i < 2; i++) {
        zero_offload_config *off = i ? &base.zero_optimization.offload_param : &base.zero_optimization.offload_optimizer;
        if (off->device == ZERO_OFFLOAD_NONE) continue;
        /* offload to the CPU runs here; NVMe would write the model's state to files */
        if (!o->no_offload && off->device == ZERO_OFFLOAD_NVME) {
            fprintf(stderr, "zero_layout: --config: zero_optimization.%s.device is \"nvme\": --memory creates no "
                            "files\nHINT: --no-offload measures the config without offload, device \"cpu\" keeps the "
                            "same bytes on the device; build/zero_estimate plans NVMe\n",
                    i ? "offload_param" : "offload_optimizer");
            return 1;
        }
        if (o->no_offload) off->device = ZERO_OFFLOAD_NONE;
    }
    for (s = 0; s < 4; s++) {
        mem_job job;
        zero_error err;
        char what[64];
        cfg[s] = base;
        cfg[s].zero_optimization.stage = s;
        if (s == 0) /* DeepSpeed offloads only with ZeRO (stages 1-3), parameters only on stage 3 */
            cfg[s].zero_optimization.offload_optimizer.device = ZERO_OFFLOAD_NONE;
        if (s < 3) cfg[s].zero_optimization.offload_param.device = ZERO_OFFLOAD_NONE;
        snprintf(what, sizeof what, "stage %d: %s", s, o->config ? "--config: " : "");
        if (resolve(&cfg[s], N, what)) return 1;
        cfg[s].log.level = ZERO_LOG_LEVEL_COUNT; /* the error is printed once below, not by every rank */
        memset(&job, 0, sizeof job);
        job.cfg = &cfg[s];
        job.m = m;
        if (zero_host_run(N, mem_rank, &job, &err) != ZERO_OK) {
            fprintf(stderr, "zero_layout: stage %d: %s\n", s, job.rank0 != ZERO_OK ? job.msg : err.msg);
            return 1;
        }
        res[s] = job.res;
    }

    d = (int)zero_dtype_size(res[0].st.dtype);
    K = d == 4 ? 8 : 12;
    printf("zero_layout --memory: rank 0's zero_memory_report (device + pinned + host bytes), world %d\n", N);
    if (o->no_offload) printf("offload: none (--no-offload), whatever the config says\n");
    printf("model: %d tensors, %lld parameters (%lld trainable); %s, GAS %lld\n", m->n,
           (long long)res[0].st.params, (long long)res[0].st.trainable_params, zero_dtype_name(res[0].st.dtype),
           (long long)cfg[0].gradient_accumulation_steps);
    printf("gradient accumulation: %s", zero_dtype_name(res[0].st.accum_dtype));
    if (res[2].st.accum_dtype != res[0].st.accum_dtype)
        printf(" (stages 2-3: %s, the reduced chunk itself)", zero_dtype_name(res[2].st.accum_dtype));
    printf("\nlayout: reduce_bucket_size %lld -> %d units in %d spans (the largest %lld elements),\n"
           "        %lld padded elements, %lld per rank's shard\n",
           (long long)cfg[0].zero_optimization.reduce_bucket_size, res[0].st.units, res[0].spans,
           (long long)res[0].max_span, (long long)res[0].st.padded_params, (long long)res[0].st.shard_params);
    printf("stage 3: stage3_param_persistence_threshold %lld -> %d tensors (%lld elements) persistent, %d units;\n"
           "         U = %lld (the largest non-persistent span), stage3_max_live_parameters %lld,\n"
           "         stage3_prefetch_bucket_size %lld\n\n",
           (long long)cfg[3].zero_optimization.stage3_param_persistence_threshold, res[3].persist_tensors,
           (long long)res[3].persist_elems, res[3].st.units, (long long)res[3].max_span,
           (long long)cfg[3].zero_optimization.stage3_max_live_parameters,
           (long long)cfg[3].zero_optimization.stage3_prefetch_bucket_size);

    printf("| category | stage 0 | stage 1 | stage 2 | stage 3 |\n|---|---:|---:|---:|---:|\n");
    for (c = 0; c < ZERO_MEM_CATEGORY_COUNT; c++) {
        printf("| %s |", cat[c]);
        for (s = 0; s < 4; s++) printf(" %zu |", cat_bytes(&res[s].st, c));
        printf("\n");
    }
    printf("| **total** |");
    for (s = 0; s < 4; s++) printf(" %zu |", planned_bytes(&res[s].st));
    printf("\n| of which on the device |");
    for (s = 0; s < 4; s++) printf(" %zu |", res[s].st.planned_total[ZERO_MEM_DEVICE]);
    printf("\n\nallocated (host backend):");
    for (s = 0; s < 4; s++) {
        printf("%s %zu", s ? "," : "", allocated_bytes(&res[s].st));
        if (allocated_bytes(&res[s].st) != planned_bytes(&res[s].st)) mismatch = 1;
    }
    if (!mismatch) printf(" bytes: the plan exactly, every stage\n");
    else printf(" bytes: DIFFERS from the plan (a bug in zero: please report it)\n");

    printf("\nbytes per parameter: zero's total / %lld parameters, and the ZeRO paper's (Rajbhandari et al.\n"
           "2020) with d = %d bytes of %s weights and as many of gradients, K = %d of optimizer state\n"
           "(%s), N = %d\n\n",
           (long long)res[0].st.params, d, zero_dtype_name(res[0].st.dtype), K,
           K == 12 ? "fp32 master, Adam m and v" : "Adam m and v; the fp32 weights are the master", N);
    printf("| stage | zero | paper | paper's formula | gradient ring | gather pool | accumulator | scratch | padding |\n"
           "|---|---:|---:|---|---:|---:|---:|---:|---:|\n");
    for (s = 0; s < 4; s++) {
        const zero_memory_stats *st = &res[s].st;
        double paper = paper_bytes(s, P, PT, d, K, N), total = (double)planned_bytes(st);
        double ring = s >= 2 ? (double)cat_bytes(st, ZERO_MEM_GRADS) : 0;
        double pool = (double)cat_bytes(st, ZERO_MEM_GATHER_POOL);
        double acc = (double)cat_bytes(st, ZERO_MEM_GRAD_ACCUM) - (s >= 2 ? (double)res[s].shard_trainable * d : 0);
        double scratch = (double)cat_bytes(st, ZERO_MEM_SCRATCH);
        char f[48];
        paper_formula(s, d, K, f, sizeof f);
        printf("| %d | %.3f | %.3f | %s | %.0f | %.0f | %.0f | %.0f | %.0f |\n", s, total / P, paper / P, f, ring, pool,
               acc, scratch, total - paper - ring - pool - acc - scratch);
    }
    printf("\nzero - paper = the five columns on the right, bytes per rank:\n"
           "  gradient ring  stages 2-3 reduce each unit in one of 2 slots of the largest trainable span\n"
           "                 (%lld elements), besides the paper's d/N shard; stage 3 keeps the persistent\n"
           "                 spans' gradients in buffers of their own beside it (one group of reductions)\n"
           "  gather pool    stage 3's gathered spans: the persistent ones + min(rest, max(max_live +\n"
           "                 prefetch, 2 U)) elements\n"
           "  accumulator    gradient accumulation beyond the paper's d bytes: stages 0-1 with GAS > 1 a\n"
           "                 full accumulator, stages 2-3 the accumulation dtype's extra bytes on the shard\n"
           "  scratch        norm and inf/nan statistics: 16 bytes per (unit, tensor) pair, on the device\n"
           "                 and on the host, and 512 bytes on each for zero_all_reduce_scalars\n"
           "  padding        units padded to a multiple of 8N = %d elements, and the gaps that start every\n"
           "                 tensor at a multiple of 8\n",
           (long long)res[2].ring_span, 8 * N);
    if (PT < P) printf("Frozen parameters count their weights only in the paper's column.\n");
    return mismatch;
}

/* ---- main ---- */

int main(int argc, char **argv) {
    opts o;
    model m;
    int i, rc;
    memset(&o, 0, sizeof o);
    o.world = 1;
    for (i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage, stdout);
            fputs(help, stdout);
            return 0;
        }
    for (i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--version")) return tool_version("zero_layout");
    o.locate = (const char **)calloc((size_t)argc, sizeof(char *));
    if (!o.locate) return out_of_memory();
    for (i = 1; i < argc; i++) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long long x = 0;
        int used = 1, bad_flag = 0;
        if (!strcmp(f, "--memory")) {
            o.memory = 1, used = 0;
        } else if (!strcmp(f, "--supply-hf")) {
            o.supply_hf = 1, used = 0;
        } else if (!strcmp(f, "--mbs")) {
            bad_flag = tool_int("zero_layout", f, v, 1, 1048576, &x);
            o.mbs = (int)x;
        } else if (!strcmp(f, "--no-offload")) {
            o.no_offload = 1, used = 0;
        } else if (!strcmp(f, "--sizes") || !strcmp(f, "--names") || !strcmp(f, "--groups") ||
                   !strcmp(f, "--frozen") || !strcmp(f, "--mlp") || !strcmp(f, "--config") ||
                   !strcmp(f, "--locate")) {
            const char **dst = !strcmp(f, "--sizes") ? &o.sizes : !strcmp(f, "--names") ? &o.names
                             : !strcmp(f, "--groups") ? &o.groups : !strcmp(f, "--frozen") ? &o.frozen
                             : !strcmp(f, "--mlp") ? &o.mlp : !strcmp(f, "--config") ? &o.config : NULL;
            if (!v || !*v || (v[0] == '-' && v[1] == '-'))
                bad_flag =
                    tool_fail("zero_layout", f, "missing value%s%s%s", v ? " (got '" : "", v ? v : "", v ? "')" : "");
            else if (dst && *dst)
                bad_flag = tool_fail("zero_layout", f, "given twice");
            else if (dst)
                *dst = v;
            else
                o.locate[o.n_locate++] = v;
        } else if (!strcmp(f, "--world")) {
            bad_flag = tool_int("zero_layout", f, v, 1, MAX_WORLD_LAYOUT, &x);
            o.world = (int)x, o.has_world = 1;
        } else if (!strcmp(f, "--stage")) {
            bad_flag = tool_int("zero_layout", f, v, 0, 3, &x);
            o.stage = (int)x, o.has_stage = 1;
        } else if (!strcmp(f, "--gas")) {
            bad_flag = tool_int("zero_layout", f, v, 1, 1000000, &x);
            o.gas = (int)x, o.has_gas = 1;
        } else if (!strcmp(f, "--dtype")) {
            if (v && !strcmp(v, "fp32")) o.dtype = ZERO_DTYPE_FP32;
            else if (v && !strcmp(v, "fp16")) o.dtype = ZERO_DTYPE_FP16;
            else if (v && !strcmp(v, "bf16")) o.dtype = ZERO_DTYPE_BF16;
            else bad_flag = v ? tool_fail("zero_layout", f, "'%s' is not fp32, fp16 or bf16", v)
                              : tool_fail("zero_layout", f, "missing value (fp32, fp16 or bf16)");
            o.has_dtype = 1;
        } else if (!strcmp(f, "--hidden")) {
            bad_flag = tool_int("zero_layout", f, v, 1, 1048576, &x);
            o.hidden = x, o.has_hidden = 1;
        } else if (!strcmp(f, "--bucket") || !strcmp(f, "--persist") || !strcmp(f, "--model-persist") ||
                   !strcmp(f, "--max-live") || !strcmp(f, "--prefetch")) {
            bad_flag = tool_int("zero_layout", f, v, 0, 9000000000000000LL, &x);
            if (!strcmp(f, "--bucket")) o.bucket = x, o.has_bucket = 1;
            else if (!strcmp(f, "--persist")) o.persist = x, o.has_persist = 1;
            else if (!strcmp(f, "--model-persist")) o.model_persist = x, o.has_model_persist = 1;
            else if (!strcmp(f, "--max-live")) o.max_live = x, o.has_max_live = 1;
            else o.prefetch = x, o.has_prefetch = 1;
        } else {
            char hint[64];
            bad_flag = tool_fail("zero_layout", NULL, "unknown argument '%s'%s", f,
                                 tool_did_you_mean(f, flags, hint, sizeof hint));
        }
        if (bad_flag) {
            rc = usage_error();
            goto out;
        }
        i += used;
    }
    /* the combinations, before anything is built */
    if (!o.memory) {
        const char *only = o.has_dtype ? "--dtype" : o.has_gas ? "--gas" : o.has_max_live ? "--max-live"
                         : o.has_prefetch ? "--prefetch" : o.no_offload ? "--no-offload" : NULL;
        if (only) rc = tool_fail("zero_layout", only, "only with --memory (it does not change the layout)");
        else rc = 0;
    } else if (o.world > MAX_WORLD_MEMORY) {
        rc = tool_fail("zero_layout", "--world", "%d ranks; --memory runs each rank as a thread, at most %d", o.world,
                       MAX_WORLD_MEMORY);
    } else if (o.has_stage) {
        rc = tool_fail("zero_layout", "--stage", "--memory runs every stage (0-3); drop --stage");
    } else if (o.n_locate) {
        rc = tool_fail("zero_layout", "--locate", "only without --memory");
    } else {
        rc = 0;
    }
    if (!rc && !o.config && (o.supply_hf || o.mbs))
        rc = tool_fail("zero_layout", o.supply_hf ? "--supply-hf" : "--mbs",
                       "only with --config (it answers the config's \"auto\" values)");
    if (!rc && !o.sizes == !o.mlp)
        rc = tool_fail("zero_layout", NULL, "give the model with --sizes N,N,... or with --mlp L,IN,OUT (%s)",
                       o.sizes ? "not both" : "neither was given");
    if (!rc && o.mlp && (o.names || o.groups))
        rc = tool_fail("zero_layout", o.names ? "--names" : "--groups",
                       "only with --sizes (--mlp names its tensors hK.weight, hK.bias and groups them by layer)");
    if (rc) {
        rc = usage_error();
        goto out;
    }
    if ((rc = build_model(&m, &o)) != 0) {
        model_free(&m);
        goto out;
    }
    rc = o.memory ? run_memory(&o, &m) : run_layout(&o, &m);
    model_free(&m);
out:
    free(o.locate);
    return rc;
}
