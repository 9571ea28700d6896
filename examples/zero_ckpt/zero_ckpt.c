/* zero_ckpt - inspect, verify and convert zero checkpoints (docs/checkpoints.md).

       zero_ckpt inspect DIR                       tensors, step, world size, sizes
       zero_ckpt verify DIR                        every header, block table and block checksum
       zero_ckpt convert DIR --safetensors FILE [--dtype fp32|fp16|bf16]
       zero_ckpt convert DIR --world M OUTDIR      the same state saved on M ranks
       zero_ckpt import SRC --world M --stage S [--dtype fp32|fp16|bf16]
                        [--strip-prefix P] [--exclude GLOB]... OUTDIR
                                                   a safetensors checkpoint (a file, an
                                                   index or a Hugging Face model directory)
                                                   as a zero checkpoint: master weights, zero
                                                   moments, step 0

   DIR is a checkpoint (holding meta.zck) or a directory whose `latest` names
   one. convert builds an engine of the checkpoint's tensors on host ranks
   (threads; the whole state in this machine's memory), zero_load's it and
   writes the result with zero_export_safetensors or zero_save. import builds
   the same engine from the safetensors tensors (names, shapes; all
   trainable), its initial weights bound by name (zero_safetensors_bind),
   and saves it: zero_load then loads it like any other checkpoint, on any
   world size and stage. --dtype is the compute dtype of the run that will
   load it (default: the file's when all its tensors share F32, F16 or
   BF16). --strip-prefix drops a prefix from the names ("transformer." for
   a GPT2LMHeadModel); --exclude leaves out tensors whose checkpoint name
   matches a shell pattern (buffers, a tied head). Exit status:
   0 done, 1 the checkpoint failed a check, 2 usage or I/O.

   inspect and verify read the format through zero.h's own reader functions
   (this program is compiled with the implementation), so they check exactly
   what zero_load checks. */
#define ZERO_IMPLEMENTATION
#include "zero.h"

#include <fnmatch.h>

static int usage(void) {
    fprintf(stderr, "usage: zero_ckpt inspect DIR | verify DIR | convert DIR (--safetensors FILE [--dtype fp32|fp16|bf16] "
                    "| --world M OUTDIR) | import SRC --world M --stage S [--dtype fp32|fp16|bf16] [--strip-prefix P] "
                    "[--exclude GLOB]... OUTDIR\n");
    return 2;
}

static int read_meta(const char *dir, char *tdir, size_t cap, zero__ck_meta *m, uint64_t *id) {
    zero_error err;
    char path[ZERO_PATH_MAX + 64];
    unsigned char *mb;
    size_t mn = 0;
    zero__ok(&err);
    if (zero__ck_resolve(dir, tdir, cap, &err) != ZERO_OK) {
        fprintf(stderr, "zero_ckpt: %s\n", err.msg);
        return err.item == ZERO_MSG_CKPT_CORRUPT ? 1 : 2;
    }
    snprintf(path, sizeof path, "%s/meta.zck", tdir);
    mb = zero__ck_slurp(path, &mn, (size_t)1 << 31, ZERO_MSG_CKPT_NOT_FOUND, &err);
    if (!mb) {
        fprintf(stderr, "zero_ckpt: %s\n", err.msg);
        return 2;
    }
    if (zero__ck_meta_read(mb, mn, path, m, &err) != ZERO_OK) {
        fprintf(stderr, "zero_ckpt: %s\n", err.msg);
        free(mb);
        return 1;
    }
    *id = zero__ck_get64(mb + 44);
    free(mb);
    return 0;
}

/* the saving layout, for its shard size (rebuilt and checked as zero_load does) */
static zero_layout *saving_layout(const zero__ck_meta *m) {
    zero_layout *l = NULL;
    zero_error err;
    if (zero__load_layout(m, "meta.zck", &l, &err) != ZERO_OK) {
        fprintf(stderr, "zero_ckpt: the saving layout does not rebuild: %s\n", err.msg);
        if (l) zero_layout_destroy(l);
        return NULL;
    }
    return l;
}

static int cmd_inspect(const char *dir) {
    char tdir[ZERO_PATH_MAX];
    zero__ck_meta m;
    uint64_t id;
    int rc = read_meta(dir, tdir, sizeof tdir, &m, &id), t;
    int64_t total = 0, trainable = 0;
    zero_layout *l;
    if (rc) return rc;
    l = saving_layout(&m);
    printf("checkpoint %s (save id %llu)\n", tdir, (unsigned long long)id);
    printf("saved on %lld ranks, stage %lld, %s; step %lld (%lld skipped, %lld applied), schedule position %lld, "
           "loss scale %g\n",
           (long long)m.world, (long long)m.stage, zero_dtype_name((zero_dtype)m.dtype), (long long)m.global_steps,
           (long long)m.skipped_steps, (long long)m.applied_steps, (long long)m.sched_it, m.cur_scale);
    for (t = 0; t < m.n_tensors; t++) {
        const zero_tensor *x = &m.tensors[t];
        int k;
        printf("  %-40s %12lld", x->name, (long long)x->numel);
        if (x->ndim) {
            printf("  [");
            for (k = 0; k < x->ndim; k++) printf("%s%lld", k ? ", " : "", (long long)x->shape[k]);
            printf("]");
        }
        printf("%s\n", (x->flags & ZERO_TENSOR_FROZEN) ? "  frozen" : "");
        total += x->numel;
        if (!(x->flags & ZERO_TENSOR_FROZEN)) trainable += x->numel;
    }
    printf("%lld tensors, %lld parameters (%lld trainable)", (long long)m.n_tensors, (long long)total, (long long)trainable);
    if (l) {
        printf("; %d units, %lld elements per rank file array, %.1f MiB per rank file\n", zero_layout_unit_count(l),
               (long long)zero_layout_shard_numel(l, 0), 12.0 * (double)zero_layout_shard_numel(l, 0) / 1048576.0);
        zero_layout_destroy(l);
    } else {
        printf("\n");
    }
    zero__ck_meta_free(&m);
    return l ? 0 : 1;
}

static int cmd_verify(const char *dir) {
    char tdir[ZERO_PATH_MAX];
    zero__ck_meta m;
    uint64_t id;
    int rc = read_meta(dir, tdir, sizeof tdir, &m, &id), r, bad = 0;
    zero_layout *l;
    zero__ck_reader rd;
    float *scratch;
    if (rc) return rc;
    l = saving_layout(&m);
    if (!l) {
        zero__ck_meta_free(&m);
        return 1;
    }
    memset(&rd, 0, sizeof rd);
    snprintf(rd.tdir, sizeof rd.tdir, "%s", tdir);
    rd.old_world = (int)m.world;
    rd.old_shard = zero_layout_shard_numel(l, 0);
    rd.id = id;
    rd.blocks = (rd.old_shard + ZERO_CKPT_BLOCK - 1) / ZERO_CKPT_BLOCK;
    rd.fd = (int *)calloc((size_t)m.world, sizeof(int));
    rd.crc = (uint32_t **)calloc((size_t)m.world, sizeof(uint32_t *));
    for (r = 0; r < 3; r++) {
        rd.blk[r] = (float *)malloc(sizeof(float) * ZERO_CKPT_BLOCK);
        rd.blk_index[r] = -1;
        rd.blk_rank[r] = -1;
    }
    scratch = (float *)malloc(sizeof(float) * ZERO_CKPT_BLOCK);
    if (!rd.fd || !rd.crc || !rd.blk[0] || !rd.blk[1] || !rd.blk[2] || !scratch) {
        fprintf(stderr, "zero_ckpt: out of memory\n");
        return 2;
    }
    for (r = 0; r < m.world; r++) rd.fd[r] = -1;
    printf("%s: meta.zck ok\n", tdir);
    for (r = 0; r < m.world; r++) { /* every block of every array of every rank file */
        zero_error err;
        int what, file_bad = 0;
        int64_t b;
        zero__ok(&err);
        for (what = 0; what < 3 && !file_bad; what++)
            for (b = 0; b < rd.blocks && !file_bad; b++) {
                int64_t n = rd.old_shard - b * ZERO_CKPT_BLOCK < ZERO_CKPT_BLOCK ? rd.old_shard - b * ZERO_CKPT_BLOCK
                                                                                 : ZERO_CKPT_BLOCK;
                if (zero__ck_read(&rd, r, what, b * ZERO_CKPT_BLOCK, n, scratch, &err) !=
                    ZERO_OK) {
                    printf("%s/rank%05d.zck: FAILED: %s\n", tdir, r, err.msg);
                    file_bad = 1;
                }
            }
        if (!file_bad) printf("%s/rank%05d.zck ok (%lld blocks)\n", tdir, r, (long long)(3 * rd.blocks));
        bad += file_bad;
    }
    zero__ck_reader_close(&rd);
    free(scratch);
    zero_layout_destroy(l);
    zero__ck_meta_free(&m);
    printf("%s\n", bad ? "verify: FAILED" : "verify: every checksum matches");
    return bad ? 1 : 0;
}

/* "fp32" | "fp16" | "bf16" -> the dtype, else ZERO_DTYPE_COUNT */
static zero_dtype dtype_arg(const char *d) {
    return !strcmp(d, "fp32") ? ZERO_DTYPE_FP32 : !strcmp(d, "fp16") ? ZERO_DTYPE_FP16
           : !strcmp(d, "bf16") ? ZERO_DTYPE_BF16 : ZERO_DTYPE_COUNT;
}

/* The config of the engines convert and import build on host ranks */
static zero_config host_cfg(int stage, zero_dtype dt) {
    zero_config cfg = zero_config_default();
    cfg.train_micro_batch_size_per_gpu = 1;
    cfg.zero_optimization.stage = stage;
    cfg.fp16.enabled = dt == ZERO_DTYPE_FP16;
    cfg.bf16.enabled = dt == ZERO_DTYPE_BF16;
    cfg.log.level = ZERO_LOG_WARN;
    return cfg;
}

typedef struct conv {
    const zero__ck_meta *m;
    const char *dir, *out;
    int world, to_st;
    zero_dtype dt;
    zero_result r;
    char msg[1100];
} conv;

static zero_result conv_rank(const zero_backend *b, void *arg) {
    conv *c = (conv *)arg;
    zero_config cfg = host_cfg((int)c->m->stage, (zero_dtype)c->m->dtype);
    zero_engine *e = NULL;
    zero_error err;
    zero_result r;
    cfg.zero_optimization.reduce_bucket_size = c->m->bucket;
    cfg.zero_optimization.stage3_param_persistence_threshold = c->m->persist;
    cfg.zero_optimization.stage3_model_persistence_threshold = c->m->model_persist;
    if ((r = zero_config_resolve(&cfg, b->world, &err)) != ZERO_OK ||
        (r = zero_engine_create(&e, &cfg, c->m->tensors, (int)c->m->n_tensors, b, &err)) != ZERO_OK ||
        (r = zero_load(e, c->dir, &err)) != ZERO_OK ||
        (r = c->to_st ? zero_export_safetensors(e, c->out, c->dt, &err) : zero_save(e, c->out, &err)) != ZERO_OK) {
        if (b->rank == 0) {
            c->r = r;
            snprintf(c->msg, sizeof c->msg, "%s", err.msg);
        }
    }
    zero_engine_destroy(e);
    return r;
}

static int cmd_convert(int argc, char **argv) {
    char tdir[ZERO_PATH_MAX];
    zero__ck_meta m;
    uint64_t id;
    conv c;
    zero_error err;
    int rc, i;
    memset(&c, 0, sizeof c);
    c.dt = ZERO_DTYPE_FP32;
    c.dir = argv[2];
    for (i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "--safetensors") && i + 1 < argc) c.to_st = 1, c.out = argv[++i];
        else if (!strcmp(argv[i], "--dtype") && i + 1 < argc) {
            c.dt = dtype_arg(argv[++i]);
            if (c.dt == ZERO_DTYPE_COUNT) return usage();
        } else if (!strcmp(argv[i], "--world") && i + 2 < argc) {
            c.world = atoi(argv[++i]);
            c.out = argv[++i];
            if (c.world < 1 || c.world > 1024) return usage();
        } else {
            return usage();
        }
    }
    if (!c.out || (c.to_st && c.world)) return usage();
    if ((rc = read_meta(c.dir, tdir, sizeof tdir, &m, &id)) != 0) return rc;
    c.m = &m;
    if (zero_host_run(c.to_st ? 1 : c.world, conv_rank, &c, &err) != ZERO_OK || c.r != ZERO_OK) {
        fprintf(stderr, "zero_ckpt convert: %s\n", c.msg[0] ? c.msg : err.msg);
        zero__ck_meta_free(&m);
        return c.r == ZERO_ERR_CORRUPT || c.r == ZERO_ERR_CONFIG ? 1 : 2;
    }
    printf("%s -> %s%s\n", tdir, c.out, c.to_st ? "" : " (saved on the new world size)");
    zero__ck_meta_free(&m);
    return 0;
}

/* ---- import: safetensors into a zero checkpoint ---- */

#define IMP_MAX_EXCLUDE 32
typedef struct imp {
    zero_safetensors *st;
    zero_tensor *ts;
    int n, world, stage;
    const char *out, *prefix;
    const char *exclude[IMP_MAX_EXCLUDE];
    int n_exclude;
    zero_dtype dt;
    zero_result r;
    char msg[1100];
} imp;

static int imp_excluded(const imp *c, const char *name) {
    int k;
    for (k = 0; k < c->n_exclude; k++)
        if (fnmatch(c->exclude[k], name, 0) == 0) return 1;
    return 0;
}

/* engine name -> checkpoint name: the prefix put back */
static const char *imp_rename(void *user, int tensor, const char *name, char *buf, size_t cap, int *transpose) {
    const imp *c = (const imp *)user;
    (void)tensor;
    (void)transpose;
    if (!c->prefix) return name;
    snprintf(buf, cap, "%s%s", c->prefix, name);
    return buf;
}
static int imp_ignore(void *user, const char *ckpt_name) { return imp_excluded((const imp *)user, ckpt_name); }

static zero_result imp_rank(const zero_backend *b, void *arg) {
    imp *c = (imp *)arg;
    zero_config cfg = host_cfg(c->stage, c->dt);
    zero_engine *e = NULL;
    zero_error err;
    zero_result r;
    if ((r = zero_config_resolve(&cfg, b->world, &err)) != ZERO_OK ||
        (r = zero_engine_create(&e, &cfg, c->ts, c->n, b, &err)) != ZERO_OK || (r = zero_save(e, c->out, &err)) != ZERO_OK) {
        if (b->rank == 0) {
            c->r = r;
            snprintf(c->msg, sizeof c->msg, "%s", err.msg);
        }
    }
    zero_engine_destroy(e);
    return r;
}

static int cmd_import(int argc, char **argv) {
    imp c;
    zero_error err;
    zero_safetensors_options opt;
    const char *src = argv[2], *dts = NULL;
    int i, k, rc = 2;
    memset(&c, 0, sizeof c);
    c.stage = -1;
    for (i = 3; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        long x = 0;
        if (v) x = strtol(v, &end, 10);
        if (!strcmp(argv[i], "--world") && v && !*end && x >= 1 && x <= 1024) c.world = (int)x, i++;
        else if (!strcmp(argv[i], "--stage") && v && !*end && x >= 0 && x <= 3) c.stage = (int)x, i++;
        else if (!strcmp(argv[i], "--dtype") && v) dts = v, i++;
        else if (!strcmp(argv[i], "--strip-prefix") && v) c.prefix = v, i++;
        else if (!strcmp(argv[i], "--exclude") && v && c.n_exclude < IMP_MAX_EXCLUDE) c.exclude[c.n_exclude++] = v, i++;
        else if (i == argc - 1 && argv[i][0] != '-') c.out = argv[i];
        else {
            fprintf(stderr, "zero_ckpt import: %s%s%s: not a valid option here (--world 1..1024, --stage 0..3)\n", argv[i],
                    v ? " " : "", v ? v : "");
            return usage();
        }
    }
    if (!c.out || !c.world || c.stage < 0) {
        fprintf(stderr, "zero_ckpt import: needs --world M, --stage S and OUTDIR\n");
        return usage();
    }
    if (zero_safetensors_open(&c.st, src, &err) != ZERO_OK) {
        fprintf(stderr, "zero_ckpt import: %s\n", err.msg);
        return err.code == ZERO_ERR_CORRUPT ? 1 : 2;
    }
    c.ts = (zero_tensor *)calloc((size_t)zero_safetensors_count(c.st) + 1, sizeof *c.ts);
    c.dt = ZERO_DTYPE_COUNT;
    for (k = 0; c.ts && k < zero_safetensors_count(c.st); k++) { /* the tensors the run will have, in name order */
        const zero_safetensors_tensor *t = zero_safetensors_get(c.st, k);
        size_t pl = c.prefix ? strlen(c.prefix) : 0;
        zero_dtype d = !strcmp(t->dtype, "F32") ? ZERO_DTYPE_FP32 : !strcmp(t->dtype, "F16") ? ZERO_DTYPE_FP16
                       : !strcmp(t->dtype, "BF16") ? ZERO_DTYPE_BF16 : ZERO_DTYPE_DEFAULT;
        zero_tensor *x = &c.ts[c.n];
        if (imp_excluded(&c, t->name) || t->numel == 0) continue;
        if (pl && strncmp(t->name, c.prefix, pl) != 0) {
            fprintf(stderr, "zero_ckpt import: %s: tensor '%s' lacks the prefix '%s' (--exclude it, or drop "
                            "--strip-prefix)\n", src, t->name, c.prefix);
            goto out;
        }
        x->name = t->name + pl;
        x->numel = t->numel;
        x->ndim = t->ndim;
        memcpy(x->shape, t->shape, sizeof x->shape);
        c.n++;
        c.dt = c.dt == ZERO_DTYPE_COUNT ? d : c.dt == d ? d : ZERO_DTYPE_DEFAULT;
    }
    if (!c.ts || c.n == 0) {
        fprintf(stderr, "zero_ckpt import: %s: %s\n", src, c.ts ? "no tensors left to import" : "out of memory");
        goto out;
    }
    if (dts) c.dt = dtype_arg(dts);
    if (c.dt == ZERO_DTYPE_COUNT || c.dt == ZERO_DTYPE_DEFAULT) {
        fprintf(stderr, "zero_ckpt import: %s: say the run's compute dtype with --dtype fp32, fp16 or bf16%s\n", src,
                dts ? "" : " (the file's tensors do not share one)");
        goto out;
    }
    memset(&opt, 0, sizeof opt);
    opt.rename = imp_rename;
    opt.ignore = imp_ignore;
    opt.user = &c;
    if (zero_safetensors_bind(c.st, c.ts, c.n, &opt, &err) != ZERO_OK) {
        fprintf(stderr, "zero_ckpt import: %s\n", err.msg);
        rc = 1;
        goto out;
    }
    if (zero_host_run(c.world, imp_rank, &c, &err) != ZERO_OK || c.r != ZERO_OK) {
        fprintf(stderr, "zero_ckpt import: %s\n", c.msg[0] ? c.msg : err.msg);
        rc = c.r == ZERO_ERR_CORRUPT ? 1 : 2;
        goto out;
    }
    printf("%s -> %s: %d tensors, saved on %d ranks, stage %d, %s; step 0\n", src, c.out, c.n, c.world, c.stage,
           zero_dtype_name(c.dt));
    rc = 0;
out:
    free(c.ts);
    zero_safetensors_close(c.st);
    return rc;
}

int main(int argc, char **argv) {
    if (argc >= 3 && !strcmp(argv[1], "inspect") && argc == 3) return cmd_inspect(argv[2]);
    if (argc >= 3 && !strcmp(argv[1], "verify") && argc == 3) return cmd_verify(argv[2]);
    if (argc >= 4 && !strcmp(argv[1], "convert")) return cmd_convert(argc, argv);
    if (argc >= 4 && !strcmp(argv[1], "import")) return cmd_import(argc, argv);
    return usage();
}
