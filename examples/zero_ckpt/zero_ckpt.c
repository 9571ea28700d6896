/* zero_ckpt - inspect, verify and convert zero checkpoints (docs/checkpoints.md).

       zero_ckpt inspect DIR                       tensors, step, world size, sizes, client state keys
       zero_ckpt verify DIR                        every header, block table and block checksum
       zero_ckpt convert DIR --safetensors FILE [--dtype fp32|fp16|bf16] [--force]
       zero_ckpt convert DIR --world M OUTDIR [--force]
                                                   the same state saved on M ranks
       zero_ckpt import SRC [--world M] [--stage S] [--dtype fp32|fp16|bf16]
                        [--strip-prefix P] [--exclude GLOB]... [--keep-buffers] [--force] OUTDIR
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
   world size and stage (it reshards), so --world and --stage (default 1
   and 0) only say how it is stored. --dtype is the compute dtype of the run
   that will load it (default: the file's when all its tensors share F32,
   F16 or BF16). --strip-prefix drops a prefix from the names
   ("transformer" or "transformer." for a GPT2LMHeadModel: the '.' after a
   prefix that lacks one goes too); --exclude leaves out tensors whose
   checkpoint name matches a shell pattern (a tied head). GPT-2's causal
   masks (names ending in .attn.bias or .attn.masked_bias, shaped
   [1, 1, T, T]) are buffers, not parameters: left out, with a line saying
   so, unless --keep-buffers.

   Outputs never land in a checkpoint: FILE and OUTDIR may not be inside a
   directory holding `latest` or meta.zck (the source's included), OUTDIR
   and the source may not contain each other, and an existing FILE or a
   non-empty OUTDIR needs --force. Exit status (every zero_* tool's rule): 0
   done; 1 a source that cannot be read or failed a check, or an error in
   the work (I/O included); 2 usage (one line saying what is wrong, then the
   usage) or a refused output path.

   inspect and verify read the format through zero.h's own reader functions
   (this program is compiled with the implementation), so they check exactly
   what zero_load checks. */
#define ZERO_IMPLEMENTATION
#include "zero.h"

#include <dirent.h>
#include <fnmatch.h>
#include <sys/stat.h>

#include "../tool_args.h"

static const char usage[] =
    "usage: zero_ckpt inspect DIR\n"
    "       zero_ckpt verify DIR\n"
    "       zero_ckpt convert DIR --safetensors FILE [--dtype fp32|fp16|bf16] [--force]\n"
    "       zero_ckpt convert DIR --world M OUTDIR [--force]\n"
    "       zero_ckpt import SRC [--world M] [--stage S] [--dtype fp32|fp16|bf16] [--strip-prefix P]\n"
    "                        [--exclude GLOB]... [--keep-buffers] [--force] OUTDIR\n"
    "       zero_ckpt --help | --version\n";

static const char help[] =
    "\n"
    "DIR is a checkpoint (holding meta.zck) or a directory whose `latest` names one.\n"
    "  inspect             tensors, step, world size, file sizes, client state keys\n"
    "  verify              every header, block table and block checksum, client files\n"
    "  convert             load DIR on host ranks (the whole state in this machine's memory)\n"
    "                      and write it as one safetensors FILE, or save it on M ranks\n"
    "  import              a safetensors checkpoint SRC (a file, an index or a Hugging Face\n"
    "                      model directory) as a zero checkpoint: master weights, zero Adam\n"
    "                      moments, step 0; zero_load loads it on any world size and stage\n"
    "                      (it reshards), so --world and --stage only say how it is stored\n"
    "  --safetensors FILE  convert's output file\n"
    "  --world M           ranks of the saved checkpoint (1 to 1024; host threads here;\n"
    "                      import: default 1)\n"
    "  --stage S           import: the ZeRO stage of the engine it saves (0 to 3; default 0)\n"
    "  --dtype T           convert --safetensors: the file's dtype (default fp32);\n"
    "                      import: the compute dtype of the run that loads it (default:\n"
    "                      the file's, when its tensors share F32, F16 or BF16)\n"
    "  --strip-prefix P    import: drop P from every tensor name (\"transformer\" or\n"
    "                      \"transformer.\": a P without a trailing '.' drops the '.' too)\n"
    "  --exclude GLOB      import: leave out tensors whose name matches the shell pattern\n"
    "                      (repeatable, at most 32)\n"
    "  --keep-buffers      import: keep GPT-2's causal masks (*.attn.bias, *.attn.masked_bias\n"
    "                      shaped [1, 1, T, T]) as trainable tensors; by default they are\n"
    "                      buffers, left out with a line saying so\n"
    "  --force             overwrite an existing FILE, or save into a non-empty OUTDIR\n"
    "\n"
    "Outputs never land in a checkpoint: FILE and OUTDIR may not be inside a directory\n"
    "that holds `latest` or meta.zck (the source's included), and OUTDIR and the source\n"
    "may not contain each other; --force does not lift these.\n"
    "\n"
    "Default dtypes: convert --safetensors writes fp32 (the master weights as they are);\n"
    "import takes the file's.\n"
    "\n"
    "Exit status (every zero_* tool's rule): 0 done; 1 a source that cannot be read or\n"
    "failed a check, or an error in the work (I/O included); 2 usage (one line saying what\n"
    "is wrong, then the usage) or a refused output path.\n";

static const char *const commands[] = {"inspect", "verify", "convert", "import", NULL};
static const char *const convert_flags[] = {"--safetensors", "--world", "--dtype", "--force", NULL};
static const char *const import_flags[] = {"--world",   "--stage",        "--dtype", "--strip-prefix",
                                           "--exclude", "--keep-buffers", "--force", NULL};

static int usage_error(void) { return tool_usage_error(usage); }

/* ---- output paths: never into a checkpoint ---- */

#define OUT_PATH 4096 /* the path buffers of the output checks */

/* A directory by identity, so that links and relative spellings compare. */
typedef struct file_id {
    unsigned long long dev, ino;
    int ok;
} file_id;

static file_id id_of(const char *path) {
    struct stat st;
    file_id f;
    memset(&f, 0, sizeof f);
    if (stat(path, &st) == 0) f.dev = (unsigned long long)st.st_dev, f.ino = (unsigned long long)st.st_ino, f.ok = 1;
    return f;
}

static int same_id(file_id a, file_id b) { return a.ok && b.ok && a.dev == b.dev && a.ino == b.ino; }

/* The directory a path names its entry in: "a/b/c" -> "a/b", "c" -> ".". */
static void parent_of(const char *path, char *out, size_t cap) {
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--; /* "a/b/" is "a/b" */
    while (n > 0 && path[n - 1] != '/') n--;
    while (n > 1 && path[n - 1] == '/') n--;
    if (n == 0) snprintf(out, cap, ".");
    else snprintf(out, cap, "%.*s", (int)n, path);
}

static int holds_checkpoint(const char *dir) {
    char p[OUT_PATH + 16];
    struct stat st;
    snprintf(p, sizeof p, "%s/latest", dir);
    if (stat(p, &st) == 0) return 1;
    snprintf(p, sizeof p, "%s/meta.zck", dir);
    return stat(p, &st) == 0;
}

/* Walk from dir up to the root (dir, dir/.., dir/../.., ...). Returns 1 when
   one of them is target (target may be NULL), 2 when one holds a checkpoint
   (with checkpoints), else 0; *at is the path of that directory. */
static int walk_up(const char *dir, const file_id *target, int checkpoints, char *at, size_t cap) {
    char p[OUT_PATH];
    int depth;
    snprintf(p, sizeof p, "%s", dir);
    for (depth = 0; depth < 256; depth++) {
        size_t n = strlen(p);
        file_id here = id_of(p), up;
        if (!here.ok) return 0;
        if (target && same_id(here, *target)) {
            snprintf(at, cap, "%s", p);
            return 1;
        }
        if (checkpoints && holds_checkpoint(p)) {
            snprintf(at, cap, "%s", p);
            return 2;
        }
        if (n + 4 >= sizeof p) return 0;
        snprintf(p + n, sizeof p - n, "/..");
        up = id_of(p);
        if (same_id(up, here)) return 0; /* the root */
    }
    return 0;
}

/* Refuse an output that would land in a checkpoint or clobber a file: 0 to
   go on, else 2 with the reason printed. out is a FILE (is_dir 0) or an
   OUTDIR; src the source (a checkpoint directory, or import's file or
   directory), src2 the checkpoint `latest` names (or NULL). */
static int check_output(const char *cmd, const char *out, int is_dir, int force, const char *src, const char *src2) {
    char parent[OUT_PATH], at[OUT_PATH];
    file_id s1 = id_of(src), s2 = src2 ? id_of(src2) : s1, o = id_of(out);
    struct stat st, ss;
    int exists = stat(out, &st) == 0;
    if (!*out) return tool_fail(cmd, NULL, "the output path is empty"), 2;
    if (exists && is_dir && !S_ISDIR(st.st_mode))
        return tool_fail(cmd, NULL, "%s exists and is not a directory", out), 2;
    if (exists && !is_dir && S_ISDIR(st.st_mode))
        return tool_fail(cmd, NULL, "%s is a directory; --safetensors names the file to write", out), 2;
    if (same_id(o, s1) || same_id(o, s2))
        return tool_fail(cmd, NULL, "%s is the source itself; write to another path", out), 2;
    if (exists && is_dir) { /* the source inside OUTDIR: a save there could meet the files being read */
        if (stat(src, &ss) == 0 && S_ISDIR(ss.st_mode)) snprintf(parent, sizeof parent, "%s", src);
        else parent_of(src, parent, sizeof parent);
        if (walk_up(parent, &o, 0, at, sizeof at) == 1)
            return tool_fail(cmd, NULL, "the source %s is inside %s; write to a directory outside it", src, out),
                   2;
        snprintf(parent, sizeof parent, "%s/..", out); /* the directory it is in, links followed */
    } else {
        parent_of(out, parent, sizeof parent);
    }
    if (walk_up(parent, &s1, 0, at, sizeof at) == 1 || (src2 && walk_up(parent, &s2, 0, at, sizeof at) == 1))
        return tool_fail(cmd, NULL, "%s is inside the source %s; write outside it", out, src), 2;
    if (walk_up(parent, NULL, 1, at, sizeof at) == 2)
        return tool_fail(cmd, NULL,
                         "%s is inside the checkpoint directory %s (it holds `latest` or meta.zck); write outside it",
                         out, at),
               2;
    if (exists && !force) {
        DIR *d;
        struct dirent *e;
        int empty = 1;
        if (!is_dir) return tool_fail(cmd, NULL, "%s exists (--force overwrites it)", out), 2;
        if (!(d = opendir(out))) return tool_fail(cmd, NULL, "%s: cannot read the directory", out), 2;
        while (empty && (e = readdir(d)) != NULL)
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) empty = 0;
        closedir(d);
        if (!empty) return tool_fail(cmd, NULL, "%s is not empty (--force saves the checkpoint into it)", out), 2;
    }
    return 0;
}

static int read_meta(const char *dir, char *tdir, size_t cap, zero__ck_meta *m, uint64_t *id) {
    zero_error err;
    char path[ZERO_PATH_MAX + 64], tag[256];
    unsigned char *mb;
    size_t mn = 0;
    zero__ok(&err);
    if (zero__ck_find(dir, tdir, cap, tag, &err) != ZERO_OK) {
        fprintf(stderr, "zero_ckpt: %s\n", err.msg);
        return 1;
    }
    snprintf(path, sizeof path, "%s/meta.zck", tdir);
    mb = zero__ck_slurp(path, &mn, (size_t)1 << 31, ZERO_MSG_CKPT_NOT_FOUND, &err);
    if (!mb) {
        fprintf(stderr, "zero_ckpt: %s\n", err.msg);
        return 1;
    }
    if (zero__ck_meta_read(mb, mn, path, m, &err) != ZERO_OK) {
        fprintf(stderr, "zero_ckpt: %s\n", err.msg);
        free(mb);
        return 1;
    }
    if (zero__ck_meta_tag(m, path, dir, tag, &err) != ZERO_OK) { /* latest names it stepN: the step it holds is N */
        fprintf(stderr, "zero_ckpt: %s\n", err.msg);
        zero__ck_meta_free(m);
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

/* The program's client state (zero_client_put): client<R>.zck of every rank that saved one, read and checked as
   zero_load reads it. show: print each file's keys and sizes. Returns the number of files that failed. */
static int client_files(const char *tdir, const zero__ck_meta *m, uint64_t id, int show, int verify) {
    unsigned char mb[64];
    int r, bad = 0;
    memset(mb, 0, sizeof mb);
    zero__ck_put64(mb + 44, id); /* (zero__ck_client_load compares the save id at this offset of meta.zck) */
    if (show) {
        if (m->client_files == 0) printf("client state: none\n");
        else printf("client state of %lld ranks (zero_client_get; on another world size every rank gets rank 0's):\n",
                    (long long)m->client_files);
    }
    for (r = 0; r < m->client_files; r++) {
        zero__client *c = NULL;
        zero_error err;
        int i;
        zero__ok(&err);
        if (zero__ck_client_load(tdir, r, m, mb, &c, &err) != ZERO_OK) {
            printf("%s/client%05d.zck: FAILED: %s\n", tdir, r, err.msg);
            bad++;
            continue;
        }
        if (verify) printf("%s/client%05d.zck ok (%d keys)\n", tdir, r, c ? c->n : 0);
        if (show && (r < 8 || r == m->client_files - 1)) {
            printf("  rank %d:", r);
            for (i = 0; c && i < c->n; i++) printf("%s %s (%zu bytes)", i ? "," : "", c->ent[i].key, c->ent[i].bytes);
            printf("%s\n", c && c->n ? "" : " no keys");
        } else if (show && r == 8) {
            printf("  ...\n");
        }
        zero__client_free(c);
    }
    return bad;
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
    rc = client_files(tdir, &m, id, 1, 0) ? 1 : 0;
    zero__ck_meta_free(&m);
    return l && !rc ? 0 : 1;
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
    bad += client_files(tdir, &m, id, 0, 1);
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

/* --dtype's value: 0, or a usage error printed (2); cmd names the command */
static int dtype_flag(const char *cmd, const char *v, zero_dtype *out) {
    if (!v) return tool_usage_fail(cmd, "--dtype", usage, "missing value (fp32, fp16 or bf16)");
    *out = dtype_arg(v);
    if (*out == ZERO_DTYPE_COUNT) return tool_usage_fail(cmd, "--dtype", usage, "'%s' is not fp32, fp16 or bf16", v);
    return 0;
}

static int cmd_convert(int argc, char **argv) {
    char tdir[ZERO_PATH_MAX];
    zero__ck_meta m;
    uint64_t id;
    conv c;
    zero_error err;
    int rc, i, force = 0, have_dtype = 0;
    long long world = 0;
    memset(&c, 0, sizeof c);
    c.dt = ZERO_DTYPE_FP32;
    c.dir = argv[2];
    if (!c.dir || c.dir[0] == '-')
        return tool_usage_fail("zero_ckpt convert", NULL, usage, "missing DIR (the checkpoint)");
    for (i = 3; i < argc; i++) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(f, "--force")) {
            force = 1;
        } else if (!strcmp(f, "--safetensors")) {
            if (!v) return tool_usage_fail("zero_ckpt convert", "--safetensors", usage, "missing FILE");
            if (c.out)
                return tool_usage_fail("zero_ckpt convert", NULL, usage,
                                       "give one output: --safetensors FILE or --world M OUTDIR");
            c.to_st = 1, c.out = v, i++;
        } else if (!strcmp(f, "--dtype")) {
            if (dtype_flag("zero_ckpt convert", v, &c.dt)) return 2;
            have_dtype = 1, i++;
        } else if (!strcmp(f, "--world")) {
            if (tool_int("zero_ckpt convert", f, v, 1, 1024, &world)) return usage_error();
            if (c.out)
                return tool_usage_fail("zero_ckpt convert", NULL, usage,
                                       "give one output: --safetensors FILE or --world M OUTDIR");
            if (i + 2 >= argc) return tool_usage_fail("zero_ckpt convert", "--world", usage, "missing OUTDIR after M");
            c.world = (int)world, c.out = argv[i + 2], i += 2;
        } else {
            char hint[64];
            return tool_usage_fail("zero_ckpt convert", NULL, usage, "unexpected argument '%s'%s", f,
                                   tool_did_you_mean(f, convert_flags, hint, sizeof hint));
        }
    }
    if (!c.out)
        return tool_usage_fail("zero_ckpt convert", NULL, usage,
                               "missing the output: --safetensors FILE or --world M OUTDIR");
    if (have_dtype && !c.to_st)
        return tool_usage_fail("zero_ckpt convert", "--dtype", usage,
                               "only with --safetensors (a checkpoint keeps fp32 master weights)");
    if ((rc = read_meta(c.dir, tdir, sizeof tdir, &m, &id)) != 0) return rc;
    if ((rc = check_output("zero_ckpt convert", c.out, !c.to_st, force, c.dir, tdir)) != 0) {
        zero__ck_meta_free(&m);
        return rc;
    }
    c.m = &m;
    if (zero_host_run(c.to_st ? 1 : c.world, conv_rank, &c, &err) != ZERO_OK || c.r != ZERO_OK) {
        fprintf(stderr, "zero_ckpt convert: %s\n", c.msg[0] ? c.msg : err.msg);
        zero__ck_meta_free(&m);
        return 1;
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
    char prefix_dot[256]; /* prefix with the '.' it lacked */
    const char *exclude[IMP_MAX_EXCLUDE];
    int n_exclude, keep_buffers;
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

static int ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && strcmp(s + n - m, tail) == 0;
}

/* A buffer, not a parameter: GPT-2's causal mask (HF's GPT2Attention
   registers bias and masked_bias as buffers; older exports carry them),
   by its name and its [1, 1, T, T] shape, nothing looser. */
static int imp_buffer(const imp *c, const zero_safetensors_tensor *t) {
    int mask = t->ndim == 4 && t->shape[0] == 1 && t->shape[1] == 1 && t->shape[2] == t->shape[3];
    if (c->keep_buffers) return 0;
    if (ends_with(t->name, ".attn.bias")) return mask;
    if (ends_with(t->name, ".attn.masked_bias")) return mask || t->ndim == 0; /* HF's is the scalar -1e4 */
    return 0;
}

/* engine name -> checkpoint name: the prefix put back */
static const char *imp_rename(void *user, int tensor, const char *name, char *buf, size_t cap, int *transpose) {
    const imp *c = (const imp *)user;
    (void)tensor;
    (void)transpose;
    if (!c->prefix) return name;
    snprintf(buf, cap, "%s%s", c->prefix_dot, name);
    return buf;
}
/* the file's tensors the run leaves out: the excluded, and those of no elements (no engine tensor is empty) */
static int imp_ignore(void *user, const char *ckpt_name) {
    const imp *c = (const imp *)user;
    int i = zero_safetensors_find(c->st, ckpt_name);
    const zero_safetensors_tensor *t = i >= 0 ? zero_safetensors_get(c->st, i) : NULL;
    return imp_excluded(c, ckpt_name) || (t && (t->numel == 0 || imp_buffer(c, t)));
}

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
    int i, k, rc = 2, force = 0, n_buffers = 0;
    long long x;
    zero_dtype dt_flag;
    char hint[64], first_buffer[256] = "", buffer_shape[64] = "";
    memset(&c, 0, sizeof c);
    c.world = 1; /* zero_load reshards: how it is stored does not bind the run */
    c.stage = 0;
    if (!src || src[0] == '-')
        return tool_usage_fail("zero_ckpt import", NULL, usage, "missing SRC (the safetensors checkpoint)");
    for (i = 3; i < argc; i++) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(f, "--force")) {
            force = 1;
            continue;
        }
        if (!strcmp(f, "--keep-buffers")) {
            c.keep_buffers = 1;
            continue;
        }
        if (!strcmp(f, "--world")) {
            if (tool_int("zero_ckpt import", f, v, 1, 1024, &x)) return usage_error();
            c.world = (int)x;
        } else if (!strcmp(f, "--stage")) {
            if (tool_int("zero_ckpt import", f, v, 0, 3, &x)) return usage_error();
            c.stage = (int)x;
        } else if (!strcmp(f, "--dtype")) {
            if (dtype_flag("zero_ckpt import", v, &dt_flag)) return 2;
            dts = v;
        } else if (!strcmp(f, "--strip-prefix")) {
            if (!v || !*v) return tool_usage_fail("zero_ckpt import", "--strip-prefix", usage, "missing prefix");
            if (strlen(v) + 2 > sizeof c.prefix_dot)
                return tool_usage_fail("zero_ckpt import", "--strip-prefix", usage, "longer than %d characters",
                                       (int)sizeof c.prefix_dot - 2);
            c.prefix = v;
            /* "transformer" means "transformer.": names are dotted paths (a P ending in '.', '/' or '_' is
               taken as it is) */
            snprintf(c.prefix_dot, sizeof c.prefix_dot, "%s%s", v,
                     ends_with(v, ".") || ends_with(v, "/") || ends_with(v, "_") ? "" : ".");
        } else if (!strcmp(f, "--exclude")) {
            if (!v || !*v) return tool_usage_fail("zero_ckpt import", "--exclude", usage, "missing pattern");
            if (c.n_exclude == IMP_MAX_EXCLUDE)
                return tool_usage_fail("zero_ckpt import", "--exclude", usage, "at most %d patterns", IMP_MAX_EXCLUDE);
            c.exclude[c.n_exclude++] = v;
        } else if (f[0] == '-' && f[1]) {
            return tool_usage_fail("zero_ckpt import", NULL, usage, "unknown argument '%s'%s", f,
                                   tool_did_you_mean(f, import_flags, hint, sizeof hint));
        } else if (c.out) {
            return tool_usage_fail("zero_ckpt import", NULL, usage, "one OUTDIR, got '%s' and '%s'", c.out, f);
        } else {
            c.out = f;
            continue;
        }
        i++;
    }
    if (!c.out) return tool_usage_fail("zero_ckpt import", NULL, usage, "missing OUTDIR");
    if ((rc = check_output("zero_ckpt import", c.out, 1, force, src, NULL)) != 0) return rc;
    rc = 2;
    if (zero_safetensors_open(&c.st, src, &err) != ZERO_OK) {
        fprintf(stderr, "zero_ckpt import: %s\n", err.msg);
        return 1;
    }
    c.ts = (zero_tensor *)calloc((size_t)zero_safetensors_count(c.st) + 1, sizeof *c.ts);
    c.dt = ZERO_DTYPE_COUNT;
    for (k = 0; c.ts && k < zero_safetensors_count(c.st); k++) { /* the tensors the run will have, in name order */
        const zero_safetensors_tensor *t = zero_safetensors_get(c.st, k);
        size_t pl = c.prefix ? strlen(c.prefix_dot) : 0;
        zero_dtype d = !strcmp(t->dtype, "F32") ? ZERO_DTYPE_FP32 : !strcmp(t->dtype, "F16") ? ZERO_DTYPE_FP16
                       : !strcmp(t->dtype, "BF16") ? ZERO_DTYPE_BF16 : ZERO_DTYPE_DEFAULT;
        zero_tensor *x = &c.ts[c.n];
        if (imp_excluded(&c, t->name) || t->numel == 0) continue;
        if (imp_buffer(&c, t)) {
            if (!n_buffers++) {
                snprintf(first_buffer, sizeof first_buffer, "%s", t->name);
                if (t->ndim == 4)
                    snprintf(buffer_shape, sizeof buffer_shape, "[1, 1, %lld, %lld]", (long long)t->shape[2],
                             (long long)t->shape[3]);
                else
                    snprintf(buffer_shape, sizeof buffer_shape, "a scalar");
            }
            continue;
        }
        if (pl && strncmp(t->name, c.prefix_dot, pl) != 0) {
            fprintf(stderr, "zero_ckpt import: %s: tensor '%s' lacks the prefix '%s' (--exclude it, or drop "
                            "--strip-prefix)\n", src, t->name, c.prefix_dot);
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
    if (n_buffers)
        fprintf(stderr, "zero_ckpt import: left out %d causal-mask buffer%s (%s%s, %s): GPT-2's attention masks, "
                        "not parameters; --keep-buffers imports them as trainable tensors\n",
                n_buffers, n_buffers == 1 ? "" : "s", first_buffer, n_buffers > 1 ? " ..." : "", buffer_shape);
    if (zero_host_run(c.world, imp_rank, &c, &err) != ZERO_OK || c.r != ZERO_OK) {
        fprintf(stderr, "zero_ckpt import: %s\n", c.msg[0] ? c.msg : err.msg);
        rc = 1;
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
    int i;
    const char *cmd = argc > 1 ? argv[1] : NULL;
    for (i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage, stdout);
            fputs(help, stdout);
            return 0;
        }
    for (i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--version")) return tool_version("zero_ckpt");
    if (!cmd) return tool_usage_fail("zero_ckpt", NULL, usage, "missing command (inspect, verify, convert or import)");
    if (!strcmp(cmd, "inspect") || !strcmp(cmd, "verify")) {
        const char *name = !strcmp(cmd, "inspect") ? "zero_ckpt inspect" : "zero_ckpt verify";
        if (argc < 3) return tool_usage_fail(name, NULL, usage, "missing DIR (the checkpoint)");
        if (argc > 3 || argv[2][0] == '-')
            return tool_usage_fail(name, NULL, usage, "takes one DIR and no flags, got '%s'", argv[argc > 3 ? 3 : 2]);
        return !strcmp(cmd, "inspect") ? cmd_inspect(argv[2]) : cmd_verify(argv[2]);
    }
    if (!strcmp(cmd, "convert")) return cmd_convert(argc, argv);
    if (!strcmp(cmd, "import")) return cmd_import(argc, argv);
    {
        char hint[64];
        return tool_usage_fail("zero_ckpt", NULL, usage, "unknown command '%s'%s", cmd,
                               tool_did_you_mean(cmd, commands, hint, sizeof hint));
    }
}
