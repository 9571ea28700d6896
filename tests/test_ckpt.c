/* test_ckpt.c - checkpoints on host ranks: exact resume (K steps, save,
   load into a fresh engine, K more = 2K uninterrupted, bitwise), resharding
   N -> M ranks across stages (the state read back equals the state saved),
   offload placements, every corruption case (flipped bit, truncation, a
   missing rank file, another model, a newer version, not a checkpoint: a
   clear error naming the file, the engine unchanged), and a save killed at
   random moments (the previous checkpoint always loads).

   Run alone: make test T=test_ckpt */
#define _POSIX_C_SOURCE 200809L /* mkdtemp, fork, kill, nanosleep, mkfifo, alarm in this test */
#define ZERO_IMPLEMENTATION
#include "zero.h"
#include "zero_offload.h"
#include "zero_test.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

enum { NT = 6, MAXW = 8, TOTAL = 3 + 150 + 40 + 1 + 77 + 260 };
static const int64_t SIZES[NT] = {3, 150, 40, 1, 77, 260};

typedef struct job {
    int stage, dtype, gas, world;
    int shard;                 /* zero_optimization.mics_shard_size (0: flat) */
    int offload, poff;         /* ZERO_OFFLOAD_* */
    int64_t bucket;
    int steps_before, steps_after; /* train, [save | load], train */
    int save, load;            /* save after steps_before; load before steps_after (fresh engine) */
    int other_model;           /* rename a tensor (load must refuse) */
    int n_delta;               /* -1: the last tensor left out; 1: one more ("extra") (load must refuse, naming it) */
    int load_step;             /* the step the loaded checkpoint was saved at (the data continues there) */
    int big;                   /* the last tensor 2^21 elements: a save takes long enough to be killed inside */
    int client;                /* 1: before the save each rank puts its client state (client_put_all) */
    const char *export_path;   /* export safetensors (fp32 and bf16: path and path.bf16) at the end */
    const char *dir, *nvme;
    zero_result r[MAXW], r_load[MAXW];
    zero_msg item[MAXW];
    char msg[MAXW][1100];
    float w[TOTAL], m[TOTAL], v[TOTAL];       /* read back at the end (rank 0) */
    float w0[TOTAL];                          /* read back before the load (rank 0) */
} job;

/* The checkpoints' info lines (CKPT_DONE), every other message dropped */
static pthread_mutex_t done_mu = PTHREAD_MUTEX_INITIALIZER;
static char done_line[8][600];
static int n_done;
static void keep_done(void *user, zero_log_level level, zero_msg item, int rank, const char *text) {
    (void)user, (void)level, (void)rank;
    if (item != ZERO_MSG_CKPT_DONE) return;
    pthread_mutex_lock(&done_mu);
    if (n_done < 8) snprintf(done_line[n_done], sizeof done_line[0], "%s", text);
    n_done++;
    pthread_mutex_unlock(&done_mu);
}

static int64_t tsize(const job *J, int t) { return t >= NT ? 5 : J->big && t == NT - 1 ? (int64_t)1 << 21 : SIZES[t]; }

/* the initial weights: 0.4 sin(0.9 t + 0.013 i) */
static zt_wave init_wave = {0.4, 0, 0.9, 0.013, 0};

/* steps [s0, s1): gradients from the parameters, a step-dependent target */
static zero_result train(zero_engine *e, const job *J, int rank, int s0, int s1) {
    int s, m, t;
    zero_result r;
    for (s = s0; s < s1; s++) {
        for (m = 0; m < J->gas; m++)
            for (t = NT + J->n_delta - 1; t >= 0; t--) {
                void *w, *g;
                int64_t i;
                if ((r = zero_fetch(e, t)) != ZERO_OK) return r;
                w = zero_param(e, t);
                if (!w) return zero_engine_error(e)->code;
                if (t == 3) { /* frozen */
                    if ((r = zero_release(e, t)) != ZERO_OK) return r;
                    continue;
                }
                g = zero_grad(e, t);
                if (!g) return zero_engine_error(e)->code;
                for (i = 0; i < tsize(J, t); i++)
                    zt_store(g, J->dtype, i,
                             (float)zero_loss_scale(e) *
                                 (zt_load(w, J->dtype, i) - 0.05f * (float)((s * 3 + rank * 5 + m + i) % 7)));
                if ((r = zero_grad_ready(e, t)) != ZERO_OK) return r;
                if ((r = zero_release(e, t)) != ZERO_OK) return r;
            }
        if ((r = zero_step(e, NULL)) != ZERO_OK) return r;
    }
    return ZERO_OK;
}

static zero_result read_all(zero_engine *e, float *w, float *m, float *v) {
    int64_t o = 0;
    int t;
    for (t = 0; t < NT; t++) {
        zero_result r = zero_read_state(e, t, ZERO_STATE_MASTER, 0, SIZES[t], w + o);
        if (r == ZERO_OK && t != 3 && m) r = zero_read_state(e, t, ZERO_STATE_EXP_AVG, 0, SIZES[t], m + o);
        if (r == ZERO_OK && t != 3 && v) r = zero_read_state(e, t, ZERO_STATE_EXP_AVG_SQ, 0, SIZES[t], v + o);
        if (r != ZERO_OK) return r;
        if (t == 3 && m) memset(m + o, 0, sizeof(float) * (size_t)SIZES[t]);
        if (t == 3 && v) memset(v + o, 0, sizeof(float) * (size_t)SIZES[t]);
        o += SIZES[t];
    }
    return ZERO_OK;
}

static zero_result make_engine(const zero_backend *b, const job *J, zero_engine **e, zero_error *err) {
    zero_config c = zero_config_default();
    zero_tensor ts[NT + 1];
    char names[NT + 1][16];
    int t;
    memset(ts, 0, sizeof ts);
    for (t = 0; t < NT + 1; t++) {
        snprintf(names[t], sizeof names[t], t < NT ? "layer%d.w" : "extra", t);
        if (J->other_model && t == 2) snprintf(names[t], sizeof names[t], "other");
        ts[t].name = names[t];
        ts[t].numel = tsize(J, t);
        ts[t].ndim = 1;
        ts[t].shape[0] = tsize(J, t);
        ts[t].group = t / 2;
        ts[t].init = zt_init_wave;
        ts[t].init_user = &init_wave;
        if (t == 3) ts[t].flags = ZERO_TENSOR_FROZEN;
        if (t == 4) ts[t].flags = ZERO_TENSOR_NO_DECAY;
    }
    c.train_micro_batch_size_per_gpu = 1;
    c.gradient_accumulation_steps = J->gas;
    c.zero_optimization.stage = J->stage;
    if (J->shard) c.zero_optimization.mics_shard_size = J->shard;
    c.zero_optimization.reduce_bucket_size = J->bucket;
    c.zero_optimization.stage3_param_persistence_threshold = 50;
    c.zero_optimization.offload_optimizer.device = (zero_offload_device)J->offload;
    c.zero_optimization.offload_param.device = (zero_offload_device)J->poff;
    if (J->nvme) {
        snprintf(c.zero_optimization.offload_optimizer.nvme_path, ZERO_PATH_MAX, "%s", J->nvme);
        snprintf(c.zero_optimization.offload_param.nvme_path, ZERO_PATH_MAX, "%s", J->nvme);
    }
    c.optimizer.weight_decay = 0.01;
    c.gradient_clipping = 0.7;
    c.fp16.enabled = J->dtype == ZERO_DTYPE_FP16;
    c.fp16.initial_scale_power = 12; /* some overflow skips early: the scaler state must resume */
    c.bf16.enabled = J->dtype == ZERO_DTYPE_BF16;
    c.scheduler.type = ZERO_SCHEDULER_WARMUP_LR;
    c.scheduler.warmup_num_steps = 5;
    c.log.level = ZERO_LOG_INFO;
    c.log.fn = keep_done;
    if (zero_config_resolve(&c, b->world, err) != ZERO_OK) return err->code;
    return zero_engine_create(e, &c, ts, NT + J->n_delta, b, err);
}

/* A rank's client state: a data loader's position that differs per rank, an RNG state, an epoch put twice
   (the second, of another size, replaces the first). */
typedef struct loader_pos {
    int64_t shard, sample;
} loader_pos;
static loader_pos loader_of(int rank) {
    loader_pos p;
    p.shard = 3 + rank;
    p.sample = 1000 + 17 * rank;
    return p;
}
static uint64_t rng_of(int rank) { return 0x9E3779B97F4A7C15ull ^ (uint64_t)rank; }

static zero_result client_put_all(zero_engine *e, int rank) {
    loader_pos p = loader_of(rank);
    uint64_t rng = rng_of(rank);
    int32_t epoch32 = 1;
    int64_t epoch = 2;
    zero_result r;
    if ((r = zero_client_put(e, "loader", &p, sizeof p)) != ZERO_OK || (r = zero_client_put(e, "rng", &rng, sizeof rng)) != ZERO_OK ||
        (r = zero_client_put(e, "epoch", &epoch32, sizeof epoch32)) != ZERO_OK)
        return r;
    return zero_client_put(e, "epoch", &epoch, sizeof epoch);
}

static zero_result rank_fn(const zero_backend *b0, void *arg) {
    job *J = (job *)arg;
    zero_engine *e = NULL;
    zero_error err;
    zero_backend ob;
    const zero_backend *b = b0;
    int rk = b0->rank;
    zero_result r;
    if (J->offload == ZERO_OFFLOAD_NVME || J->poff == ZERO_OFFLOAD_NVME) {
        zero_offload_backend(b0, NULL, &ob);
        b = &ob;
    }
    J->r_load[rk] = ZERO_OK;
    if ((r = make_engine(b, J, &e, &err)) != ZERO_OK) {
        J->r[rk] = r;
        snprintf(J->msg[rk], sizeof J->msg[rk], "%s", err.msg);
        return ZERO_OK;
    }
    r = train(e, J, rk, 0, J->steps_before);
    if (r == ZERO_OK && J->client) r = client_put_all(e, rk);
    if (r == ZERO_OK && J->save) {
        r = zero_save(e, J->dir, &err);
        if (r != ZERO_OK) snprintf(J->msg[rk], sizeof J->msg[rk], "save: %s", err.msg);
    }
    if (r == ZERO_OK && J->load) {
        float w0[TOTAL];
        if (read_all(e, w0, NULL, NULL) == ZERO_OK && rk == 0) memcpy(J->w0, w0, sizeof w0);
        J->r_load[rk] = zero_load(e, J->dir, &err);
        J->item[rk] = err.item;
        if (J->r_load[rk] != ZERO_OK) snprintf(J->msg[rk], sizeof J->msg[rk], "%s", err.msg);
    }
    /* the steps after continue the step count of the run that was saved */
    if (r == ZERO_OK && J->r_load[rk] == ZERO_OK) {
        int s0 = J->load ? J->load_step : J->steps_before;
        r = train(e, J, rk, s0, s0 + J->steps_after);
    }
    if (r != ZERO_OK && !J->msg[rk][0]) snprintf(J->msg[rk], sizeof J->msg[rk], "%s", zero_engine_error(e)->msg);
    {
        float w[TOTAL], m[TOTAL], v[TOTAL];
        if (r == ZERO_OK && read_all(e, w, m, v) == ZERO_OK && rk == 0) {
            memcpy(J->w, w, sizeof w);
            memcpy(J->m, m, sizeof m);
            memcpy(J->v, v, sizeof v);
        }
    }
    if (r == ZERO_OK && J->export_path) {
        char p2[1200];
        snprintf(p2, sizeof p2, "%s.bf16", J->export_path);
        r = zero_export_safetensors(e, J->export_path, ZERO_DTYPE_FP32, &err);
        if (r == ZERO_OK) r = zero_export_safetensors(e, p2, ZERO_DTYPE_BF16, &err);
        if (r != ZERO_OK) snprintf(J->msg[rk], sizeof J->msg[rk], "export: %s", err.msg);
    }
    J->r[rk] = r;
    zero_engine_destroy(e);
    return ZERO_OK;
}

/* A safetensors file: the header names every tensor with its dtype, shape and
   offsets in order, and the data equals want (fp32 values, rounded to bf16
   when bf16). Returns the number of problems. */
static int check_safetensors(const char *path, int bf16, const float *want) {
    FILE *f = fopen(path, "rb");
    unsigned char len8[8];
    uint64_t hn, off = 0;
    char *h;
    int t, bad = 0;
    int64_t o = 0;
    if (!f) return 1;
    if (fread(len8, 1, 8, f) != 8) {
        fclose(f);
        return 1;
    }
    hn = zero__ck_get64(len8);
    h = (char *)malloc(hn + 1);
    if (!h || hn % 8 || fread(h, 1, hn, f) != hn) {
        free(h);
        fclose(f);
        return 1;
    }
    h[hn] = 0;
    for (t = 0; t < NT; t++) {
        char entry[200];
        size_t es = bf16 ? 2 : 4;
        int64_t i;
        snprintf(entry, sizeof entry, "\"layer%d.w\":{\"dtype\":\"%s\",\"shape\":[%lld],\"data_offsets\":[%llu,%llu]}", t,
                 bf16 ? "BF16" : "F32", (long long)SIZES[t], (unsigned long long)off,
                 (unsigned long long)(off + (uint64_t)SIZES[t] * es));
        if (!strstr(h, entry)) {
            fprintf(stderr, "%s: header lacks %s\n", path, entry);
            bad++;
        }
        for (i = 0; i < SIZES[t]; i++) {
            float v;
            if (bf16) {
                zero_bf16 q;
                if (fread(&q, 2, 1, f) != 1) bad++;
                v = zero_bf16_to_f32(q);
                if (v != zero_bf16_to_f32(zero_f32_to_bf16(want[o + i]))) bad++;
            } else {
                if (fread(&v, 4, 1, f) != 1) bad++;
                if (memcmp(&v, &want[o + i], 4) != 0) bad++;
            }
        }
        off += (uint64_t)SIZES[t] * es;
        o += SIZES[t];
    }
    if (fgetc(f) != EOF) bad++; /* nothing after the data */
    free(h);
    fclose(f);
    return bad;
}

/* the crash test's child: train and save after every step, forever */
static int save_loop_ready = -1; /* a pipe's write end: one byte when the saves begin (the parent times its kill from it) */
static zero_result save_loop(const zero_backend *b, void *arg) {
    job *J = (job *)arg;
    zero_engine *e = NULL;
    zero_error err;
    int s;
    if (make_engine(b, J, &e, &err) != ZERO_OK) return err.code;
    for (s = 0;; s++) {
        if (train(e, J, 0, s, s + 1) != ZERO_OK) break;
        if (s == 0 && save_loop_ready >= 0 && write(save_loop_ready, "s", 1) != 1) break;
        if (zero_save(e, J->dir, &err) != ZERO_OK) break;
    }
    zero_engine_destroy(e);
    return ZERO_ERR_IO;
}

static job *newjob(int stage, int dt, int world);

/* save after each of steps 1 .. J->steps_before (a writer beside another in one directory) */
static zero_result save_each(const zero_backend *b, void *arg) {
    job *J = (job *)arg;
    zero_engine *e = NULL;
    zero_error err;
    int s;
    if ((J->r[b->rank] = make_engine(b, J, &e, &err)) != ZERO_OK) {
        snprintf(J->msg[b->rank], sizeof J->msg[b->rank], "%s", err.msg);
        return ZERO_OK;
    }
    for (s = 0; s < J->steps_before && J->r[b->rank] == ZERO_OK; s++)
        if ((J->r[b->rank] = train(e, J, b->rank, s, s + 1)) != ZERO_OK ||
            (J->r[b->rank] = zero_save(e, J->dir, &err)) != ZERO_OK)
            snprintf(J->msg[b->rank], sizeof J->msg[b->rank], "step %d: %s", s + 1, err.msg);
    zero_engine_destroy(e);
    return ZERO_OK;
}
static void *save_each_thread(void *arg) {
    zero_error err;
    zero_host_run(((job *)arg)->world, save_each, arg, &err);
    return NULL;
}

/* every step* directory of dir loads; returns how many there are (-1: one did not) */
static int load_every_step(const char *dir) {
    char cmd[1300], line[1300];
    FILE *p;
    int n = 0, bad = 0;
    snprintf(cmd, sizeof cmd, "find %s -mindepth 1 -maxdepth 1 -type d -name 'step*' 2>/dev/null", dir);
    if (!(p = popen(cmd, "r"))) return -1;
    while (fgets(line, sizeof line, p)) {
        zero_error err;
        job *b = newjob(1, ZERO_DTYPE_BF16, 1);
        line[strcspn(line, "\n")] = 0;
        b->dir = line;
        b->load = 1;
        CHECK(zero_host_run(1, rank_fn, b, &err) == ZERO_OK);
        if (b->r_load[0] != ZERO_OK) {
            CHECKF(0, "%s does not load: %s", line, b->msg[0]);
            bad = 1;
        }
        n++;
        free(b);
    }
    pclose(p);
    return bad ? -1 : n;
}

static job *newjob(int stage, int dt, int world) {
    job *j = (job *)calloc(1, sizeof(job));
    if (!j) abort();
    j->stage = stage;
    j->dtype = dt;
    j->world = world;
    j->gas = 2;
    j->bucket = 64;
    return j;
}

static int all_ok(const job *j, int world, const char *what) {
    int r, ok = 1;
    for (r = 0; r < world; r++)
        if (j->r[r] != ZERO_OK || j->r_load[r] != ZERO_OK) {
            CHECKF(0, "%s rank %d: %d/%d %s", what, r, (int)j->r[r], (int)j->r_load[r], j->msg[r]);
            ok = 0;
        }
    return ok;
}

/* a byte of a file flipped / the file cut / removed */
static int flip(const char *path, long off) {
    int fd = open(path, O_RDWR);
    unsigned char c = 0;
    int ok;
    if (fd < 0) return 0;
    ok = lseek(fd, off, SEEK_SET) == off && read(fd, &c, 1) == 1;
    c ^= 0x40;
    ok = ok && lseek(fd, off, SEEK_SET) == off && write(fd, &c, 1) == 1;
    close(fd);
    return ok;
}
static int write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(text, 1, strlen(text), f) == strlen(text);
    if (f && fclose(f) != 0) ok = 0;
    return ok;
}

static int copy_file(const char *from, const char *to) {
    char buf[4096];
    int a = open(from, O_RDONLY), b = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ssize_t n;
    int ok = a >= 0 && b >= 0;
    while (ok && (n = read(a, buf, sizeof buf)) > 0) ok = write(b, buf, (size_t)n) == n;
    if (a >= 0) close(a);
    if (b >= 0) close(b);
    return ok;
}

static void rmtree(const char *dir) {
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "rm -rf %s failed\n", dir);
}

/* ---- client state (zero_client_put / zero_client_get) ---- */

enum { C_SAME, C_RANK0, C_NONE, C_BAD };
typedef struct cjob {
    job *J;     /* the model, its config and the checkpoint directory */
    int expect; /* C_SAME: each rank gets what it saved; C_RANK0: rank 0's on every rank; C_NONE: a checkpoint
                   without client state; C_BAD: the load fails and changes nothing */
    int misuse; /* also the misuse of put and get */
    zero_result r_load[MAXW];
    zero_msg item[MAXW];
    char msg[MAXW][1100];
    int pass[MAXW], nfail[MAXW];
    char fail[MAXW][4][720];
} cjob;

/* rank threads record, the main thread checks (the harness counters are not thread safe) */
static void cexpect(cjob *C, int rank, int cond, const char *what, const zero_engine *e) {
    if (cond) {
        C->pass[rank]++;
        return;
    }
    if (C->nfail[rank] < 4)
        snprintf(C->fail[rank][C->nfail[rank]], sizeof C->fail[0][0], "%.200s (last error: %.480s)", what,
                 e ? zero_engine_error(e)->msg : "");
    C->nfail[rank]++;
}

/* the call failed with item, and its message holds each of the strings */
static int cerr(const zero_engine *e, zero_result got, zero_msg item, const char *s1, const char *s2, const char *s3) {
    const zero_error *er = zero_engine_error(e);
    return got != ZERO_OK && er->item == item && er->code == got && (!s1 || strstr(er->msg, s1)) &&
           (!s2 || strstr(er->msg, s2)) && (!s3 || strstr(er->msg, s3));
}

static void client_misuse(cjob *C, int rk, zero_engine *e) {
    char k64[65], k63[64], big = 0;
    uint64_t v = 7, out = 0;
    size_t found = 99;
    int n = zero_client_count(e);
    memset(k64, 'k', 64), k64[64] = 0;
    memset(k63, 'k', 63), k63[63] = 0;
    cexpect(C, rk, cerr(e, zero_client_put(e, k64, &v, sizeof v), ZERO_MSG_CLIENT_KEY, "longer than ZERO_CLIENT_KEY_MAX", NULL, NULL),
         "a 64-byte key: CLIENT_KEY", e);
    cexpect(C, rk, zero_client_put(e, k63, &v, sizeof v) == ZERO_OK && zero_client_count(e) == n + 1, "a 63-byte key is fine", e);
    cexpect(C, rk, cerr(e, zero_client_put(e, "", &v, sizeof v), ZERO_MSG_CLIENT_KEY, "is empty", NULL, NULL), "empty key", e);
    cexpect(C, rk, cerr(e, zero_client_put(e, "a b", &v, sizeof v), ZERO_MSG_CLIENT_KEY, "'a b'", "printable", NULL),
         "a key with a space", e);
    cexpect(C, rk, cerr(e, zero_client_put(e, NULL, &v, sizeof v), ZERO_MSG_NULL_ARG, "key is NULL", NULL, NULL), "NULL key", e);
    cexpect(C, rk, cerr(e, zero_client_put(e, "v", &v, 0), ZERO_MSG_CLIENT_SIZE, "size_bytes is 0", NULL, NULL), "a value of 0 bytes", e);
    cexpect(C, rk, cerr(e, zero_client_put(e, "v", &big, ZERO_CLIENT_MAX_BYTES + 1), ZERO_MSG_CLIENT_SIZE, "ZERO_CLIENT_MAX_BYTES",
                     "HINT:", NULL),
         "a value past ZERO_CLIENT_MAX_BYTES", e);
    cexpect(C, rk, zero_client_count(e) == n + 1 && zero_client_get(e, "v", &out, sizeof out, &found) == ZERO_OK && found == 0,
         "the refused puts changed nothing", e);
    cexpect(C, rk, zero_client_put(e, k63, NULL, 0) == ZERO_OK && zero_client_count(e) == n &&
                    zero_client_get(e, k63, &out, sizeof out, &found) == ZERO_OK && found == 0,
         "data NULL, size 0 removes a key", e);
    cexpect(C, rk, cerr(e, zero_client_get(e, "absent", &out, sizeof out, NULL), ZERO_MSG_CLIENT_MISSING, "'absent'",
                     n ? "its keys: 'loader'" : "it is empty", "HINT:"),
         "a required key that is absent: CLIENT_MISSING, listing the keys there are", e);
    cexpect(C, rk, zero_client_key(e, -1, NULL) == NULL && zero_client_key(e, n, &found) == NULL && found == 0,
         "zero_client_key out of range is NULL", e);
}

static zero_result client_fn(const zero_backend *b, void *arg) {
    cjob *C = (cjob *)arg;
    job *J = C->J;
    int rk = b->rank, want = C->expect == C_SAME ? rk : 0;
    zero_engine *e = NULL;
    zero_error err;
    int64_t stale = 5, got = 0;
    size_t found = 99;
    if (make_engine(b, J, &e, &err) != ZERO_OK) {
        cexpect(C, rk, 0, err.msg, NULL);
        return ZERO_OK;
    }
    cexpect(C, rk, zero_client_put(e, "stale", &stale, sizeof stale) == ZERO_OK, "put before the load", e);
    C->r_load[rk] = zero_load(e, J->dir, &err);
    C->item[rk] = err.item;
    snprintf(C->msg[rk], sizeof C->msg[rk], "%s", err.msg);
    if (C->expect == C_BAD) { /* nothing half-restored: the store, the step as they were */
        cexpect(C, rk, C->r_load[rk] != ZERO_OK, "the load fails", e);
        cexpect(C, rk, zero_client_count(e) == 1 && zero_client_get(e, "stale", &got, sizeof got, NULL) == ZERO_OK && got == 5,
             "after a failed load the store is the one before", e);
        cexpect(C, rk, zero_global_steps(e) == 0, "after a failed load the step is the one before", e);
    } else if (C->r_load[rk] != ZERO_OK) {
        cexpect(C, rk, 0, "the load", e);
    } else if (C->expect == C_NONE) {
        loader_pos p;
        cexpect(C, rk, zero_client_count(e) == 0, "a checkpoint without client state empties the store", e);
        cexpect(C, rk, zero_client_get(e, "loader", &p, sizeof p, &found) == ZERO_OK && found == 0, "absent: ok, 0 bytes", e);
        cexpect(C, rk, cerr(e, zero_client_get(e, "loader", &p, sizeof p, NULL), ZERO_MSG_CLIENT_MISSING, "it is empty", NULL, NULL),
             "absent and required: CLIENT_MISSING", e);
    } else {
        loader_pos p, wp = loader_of(want);
        uint64_t rng = 0;
        int64_t epoch = 0;
        size_t sz = 0;
        cexpect(C, rk, zero_client_get(e, "loader", &p, sizeof p, &found) == ZERO_OK && found == sizeof p &&
                        p.shard == wp.shard && p.sample == wp.sample,
             C->expect == C_SAME ? "loader: this rank's own" : "loader: rank 0's", e);
        cexpect(C, rk, zero_client_get(e, "rng", &rng, sizeof rng, NULL) == ZERO_OK && rng == rng_of(want), "rng", e);
        cexpect(C, rk, zero_client_get(e, "epoch", &epoch, sizeof epoch, NULL) == ZERO_OK && epoch == 2,
             "epoch: the second put, of another size, replaced the first", e);
        cexpect(C, rk, zero_client_count(e) == 3 && !strcmp(zero_client_key(e, 0, &sz), "loader") && sz == sizeof p &&
                        !strcmp(zero_client_key(e, 1, &sz), "rng") && sz == 8 && !strcmp(zero_client_key(e, 2, &sz), "epoch") &&
                        sz == 8,
             "the keys in the order first put, with their sizes", e);
        cexpect(C, rk, zero_client_get(e, "stale", &got, sizeof got, &found) == ZERO_OK && found == 0,
             "a key put before the load is gone (the store is the checkpoint's)", e);
        got = -1;
        cexpect(C, rk, cerr(e, zero_client_get(e, "loader", &got, sizeof got, &found), ZERO_MSG_CLIENT_SIZE, "'loader'",
                         "the value is 16 bytes, the caller asked for 8", NULL) && got == -1 && found == 16,
             "a size mismatch: CLIENT_SIZE naming the key and both sizes, out unchanged", e);
        if (C->misuse) client_misuse(C, rk, e);
    }
    zero_engine_destroy(e);
    return ZERO_OK;
}

static void client_run(cjob *C, int world, const char *what) {
    zero_error err;
    int r, k;
    CHECKF(zero_host_run(world, client_fn, C, &err) == ZERO_OK, "%s: %s", what, err.msg);
    for (r = 0; r < world; r++) {
        zt_pass += C->pass[r];
        for (k = 0; k < C->nfail[r] && k < 4; k++) CHECKF(0, "%s, rank %d: %s", what, r, C->fail[r][k]);
    }
}

static int file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

/* Client state through a save and loads on the same world, on others, a
   hybrid one; a checkpoint without it; a damaged client file. */
static void test_client(const char *base) {
    char dir[1100], path[1400], f[1500];
    zero_error err;
    static const int worlds[3] = {2, 3, 1};
    int i, k;
    job *a = newjob(2, ZERO_DTYPE_FP32, 2);
    snprintf(dir, sizeof dir, "%s/client", base);
    a->dir = dir;
    a->steps_before = 2, a->save = 1, a->client = 1;
    n_done = 0;
    CHECK(zero_host_run(2, rank_fn, a, &err) == ZERO_OK);
    all_ok(a, 2, "client save");
    CHECKF(n_done == 1 && strstr(done_line[0], "3 client keys"), "the save's line counts the client keys: %s", done_line[0]);
    for (k = 0; k < 2; k++) {
        snprintf(path, sizeof path, "%s/step2/client%05d.zck", dir, k);
        CHECKF(file_exists(path), "%s written", path);
    }
    { /* version 2: a build before client state refuses it instead of dropping the state */
        unsigned char h[64] = {0};
        FILE *fp;
        snprintf(path, sizeof path, "%s/step2/meta.zck", dir);
        fp = fopen(path, "rb");
        CHECK(fp && fread(h, 1, 64, fp) == 64);
        if (fp) fclose(fp);
        CHECK(zero__ck_get32(h + 8) == 2);
    }
    for (i = 0; i < 3; i++) { /* the same world: each rank its own; another: rank 0's on every rank */
        cjob *C = (cjob *)calloc(1, sizeof *C);
        job *b = newjob(1, ZERO_DTYPE_FP32, worlds[i]);
        char what[100];
        b->dir = dir;
        C->J = b;
        C->expect = worlds[i] == 2 ? C_SAME : C_RANK0;
        C->misuse = i == 0;
        snprintf(what, sizeof what, "client state saved on 2 ranks, loaded on %d", worlds[i]);
        n_done = 0;
        client_run(C, worlds[i], what);
        CHECKF(n_done == 1 && strstr(done_line[0], "3 client keys") &&
                   (worlds[i] == 2) == !strstr(done_line[0], "rank 0's on every rank (the world size changed)"),
               "%s: the load's line: %s", what, done_line[0]);
        free(b);
        free(C);
    }
    { /* hybrid sharding: 2 groups of 2 write 2 rank files, but every rank its client file */
        job *h = newjob(2, ZERO_DTYPE_FP32, 4), *b = newjob(2, ZERO_DTYPE_FP32, 4);
        cjob *C = (cjob *)calloc(1, sizeof *C);
        char hd[1200];
        snprintf(hd, sizeof hd, "%s/client_hybrid", base);
        h->shard = 2;
        h->dir = b->dir = hd;
        h->steps_before = 2, h->save = 1, h->client = 1;
        CHECK(zero_host_run(4, rank_fn, h, &err) == ZERO_OK);
        all_ok(h, 4, "hybrid client save");
        snprintf(f, sizeof f, "%s/step2/client00003.zck", hd);
        CHECKF(file_exists(f), "%s written", f);
        C->J = b;
        C->expect = C_SAME;
        client_run(C, 4, "client state saved by 2 groups of 2, loaded on 4 flat ranks");
        free(h);
        free(b);
        free(C);
    }
    { /* a checkpoint without client state: version 1 as before, no client files; the store is emptied */
        job *o = newjob(2, ZERO_DTYPE_FP32, 2), *b = newjob(2, ZERO_DTYPE_FP32, 2);
        cjob *C = (cjob *)calloc(1, sizeof *C);
        char od[1200];
        unsigned char h[64] = {0};
        FILE *fp;
        snprintf(od, sizeof od, "%s/client_none", base);
        o->dir = b->dir = od;
        o->steps_before = 2, o->save = 1;
        n_done = 0;
        CHECK(zero_host_run(2, rank_fn, o, &err) == ZERO_OK);
        all_ok(o, 2, "save without client state");
        CHECKF(n_done == 1 && strstr(done_line[0], "0 client keys"), "the save's line: %s", done_line[0]);
        snprintf(f, sizeof f, "%s/step2/meta.zck", od);
        fp = fopen(f, "rb");
        CHECK(fp && fread(h, 1, 64, fp) == 64);
        if (fp) fclose(fp);
        CHECKF(zero__ck_get32(h + 8) == 1, "without client state meta.zck stays version 1 (%u)", zero__ck_get32(h + 8));
        snprintf(f, sizeof f, "%s/step2/client00000.zck", od);
        CHECK(!file_exists(f));
        C->J = b;
        C->expect = C_NONE;
        client_run(C, 2, "a checkpoint without client state");
        free(o);
        free(b);
        free(C);
    }
    /* a damaged client file: CKPT_CORRUPT naming it and why, on a copy of the checkpoint each */
    for (i = 0; i < 7; i++) {
        static const char *const files[5] = {"meta.zck", "rank00000.zck", "rank00001.zck", "client00000.zck", "client00001.zck"};
        cjob *C = (cjob *)calloc(1, sizeof *C);
        job *b = newjob(2, ZERO_DTYPE_FP32, 2);
        char bd[1200], what[200];
        const char *want = "", *want2 = NULL;
        snprintf(bd, sizeof bd, "%s/client_bad%d", base, i);
        snprintf(path, sizeof path, "%s/step2", bd);
        CHECK(mkdir(bd, 0755) == 0 && mkdir(path, 0755) == 0);
        for (k = 0; k < 5; k++) {
            char from[1500];
            snprintf(from, sizeof from, "%s/step2/%s", dir, files[k]);
            snprintf(f, sizeof f, "%s/%s", path, files[k]);
            CHECK(copy_file(from, f));
        }
        snprintf(f, sizeof f, "%s/latest", bd);
        CHECK(write_file(f, "step2"));
        snprintf(f, sizeof f, "%s/client00001.zck", path);
        switch (i) {
        case 0: CHECK(flip(f, 64 + 9)); want = "client00001.zck: body checksum mismatch"; break;
        case 1: CHECK(flip(f, 20)); want = "client00001.zck: header checksum mismatch"; break;
        case 2:
            snprintf(f, sizeof f, "%s/client00000.zck", path);
            CHECK(truncate(f, 100) == 0);
            want = "client00000.zck: truncated or extended";
            break;
        case 3: CHECK(unlink(f) == 0); want = "client00001.zck"; want2 = "meta.zck says 2 ranks saved client state"; break;
        case 4: /* a key of 200 bytes, the checksum recomputed: the parser says why */
        case 5: /* ... the rank in the header forged */
        {
            unsigned char buf[4096];
            FILE *fp = fopen(f, "r+b");
            size_t n = fp ? fread(buf, 1, sizeof buf, fp) : 0;
            CHECK(n > 64 && n < sizeof buf);
            if (i == 4) {
                zero__ck_put64(buf + 64, 200);
                zero__ck_put32(buf + 24, zero__crc32c(0, buf + 64, n - 64));
                want = "client00001.zck: client state ends early (key 0 of 3";
            } else {
                zero__ck_put32(buf + 28, 0);
                want = "client00001.zck: the header was altered (it says rank 0 of 2";
            }
            zero__ck_put32(buf + 60, zero__crc32c(0, buf, 60));
            CHECK(fp && fseek(fp, 0, SEEK_SET) == 0 && fwrite(buf, 1, n, fp) == n);
            if (fp) fclose(fp);
            break;
        }
        case 6: /* rank 1's client file of another save */
        {
            char od[1200], from[1500];
            job *o = newjob(2, ZERO_DTYPE_FP32, 2);
            snprintf(od, sizeof od, "%s/client_other", base);
            o->dir = od;
            o->steps_before = 2, o->save = 1, o->client = 1;
            CHECK(zero_host_run(2, rank_fn, o, &err) == ZERO_OK);
            free(o);
            snprintf(from, sizeof from, "%s/step2/client00001.zck", od);
            CHECK(copy_file(from, f));
            want = "client00001.zck: this client file was copied in from another checkpoint";
            break;
        }
        }
        b->dir = bd;
        C->J = b;
        C->expect = C_BAD;
        snprintf(what, sizeof what, "damaged client file %d", i);
        client_run(C, 2, what);
        CHECKF((strstr(C->msg[0], want) && (!want2 || strstr(C->msg[0], want2))) ||
                   (strstr(C->msg[1], want) && (!want2 || strstr(C->msg[1], want2))),
               "%s: '%s' / '%s' lack '%s'", what, C->msg[0], C->msg[1], want);
        CHECKF(C->item[0] == ZERO_MSG_CKPT_CORRUPT || C->item[1] == ZERO_MSG_CKPT_CORRUPT, "%s: items %s %s", what,
               zero_msg_name(C->item[0]), zero_msg_name(C->item[1]));
        free(b);
        free(C);
    }
    free(a);
    printf("client state: round trips on 2 ranks, into 3 and 1, hybrid into flat, none, 7 damaged files refused\n");
}

int main(int argc, char **argv) {
    char base[] = "/tmp/zero_test_ckpt_XXXXXX";
    char dir[1100];
    zero_error err;
    int stage, dt, world, n_exact = 0, n_reshard = 0, quick = getenv("ZERO_TEST_QUICK") != NULL;
    if (argc == 3 && !strcmp(argv[1], "--make")) { /* a checkpoint for the zero_ckpt tool's checks in make test */
        job *a = newjob(2, ZERO_DTYPE_BF16, 2);
        a->dir = argv[2];
        a->steps_before = 2, a->save = 1, a->client = 1; /* with client state: inspect lists it, verify checks it */
        int ok;
        zero_host_run(2, rank_fn, a, &err);
        ok = a->r[0] == ZERO_OK && a->r[1] == ZERO_OK;
        free(a);
        return ok ? 0 : 1;
    }
    zt_seed("test_ckpt");
    CHECK(mkdtemp(base) != NULL);
    /* 0. CRC-32C: the check value of "123456789" (0xE3069283) by every way, and the fast ways (slicing-by-8, the
       SSE4.2 instruction where this CPU has it: the dispatcher's choice) equal to the one-table definition on
       random bytes of every length 0-300 at every alignment, and in pieces (a running CRC) */
    {
        static unsigned char buf[(1 << 20) + 16];
        int len, off, bad = 0, n = 0;
        const char *nine = "123456789";
        for (len = 0; len < (int)sizeof buf; len++) buf[len] = (unsigned char)zt_rand_int(0, 255);
        CHECK(zero__crc32c_ref(0, nine, 9) == 0xE3069283u && zero__crc32c_sw(0, nine, 9) == 0xE3069283u &&
              zero__crc32c(0, nine, 9) == 0xE3069283u);
        for (len = 0; len <= 300; len++)
            for (off = 0; off < 8; off++, n++) {
                uint32_t seed = (uint32_t)zt_rand_u64(), want = zero__crc32c_ref(seed, buf + off, (size_t)len);
                size_t cut = (size_t)zt_rand_int(0, len);
                if (zero__crc32c_sw(seed, buf + off, (size_t)len) != want || zero__crc32c(seed, buf + off, (size_t)len) != want ||
                    zero__crc32c(zero__crc32c(seed, buf + off, cut), buf + off + cut, (size_t)len - cut) != want ||
                    zero__crc32c_sw(zero__crc32c_sw(seed, buf + off, cut), buf + off + cut, (size_t)len - cut) != want)
                    bad++;
            }
        CHECKF(bad == 0, "CRC-32C: %d of %d random cases differ from the definition", bad, n);
        CHECK(zero__crc32c(0, buf + 3, sizeof buf - 16) == zero__crc32c_ref(0, buf + 3, sizeof buf - 16) &&
              zero__crc32c_sw(0, buf + 3, sizeof buf - 16) == zero__crc32c_ref(0, buf + 3, sizeof buf - 16));
        printf("CRC-32C: the check value, and %d random cases plus 1 MiB equal to the definition (this CPU: %s)\n", n,
               zero__crc32c_hw_ok ? "SSE4.2 instruction" : "slicing-by-8");
    }
    /* 1. exact resume: K steps, save, K more vs load into a fresh engine, K more */
    for (stage = 0; stage <= 3; stage++)
        for (dt = ZERO_DTYPE_FP32; dt <= ZERO_DTYPE_BF16; dt++)
            for (world = 1; world <= 3; world += 2) {
                job *a = newjob(stage, dt, world), *b = newjob(stage, dt, world);
                snprintf(dir, sizeof dir, "%s/exact_%d_%d_%d", base, stage, dt, world);
                a->dir = b->dir = dir;
                a->steps_before = 4, a->steps_after = 4, a->save = 1; /* uninterrupted (the save changes nothing) */
                b->steps_before = 0, b->steps_after = 4, b->load = 1, b->load_step = 4; /* a fresh engine resumes */
                n_done = 0;
                CHECK(zero_host_run(world, rank_fn, a, &err) == ZERO_OK);
                /* one line each, rank 0's: what, where, how long */
                CHECKF(n_done == 1 && strstr(done_line[0], "zero_save: step 4 saved in ") && strstr(done_line[0], dir) &&
                           strstr(done_line[0], " s)"),
                       "%d checkpoint lines after a save: %s", n_done, n_done ? done_line[0] : "");
                n_done = 0;
                CHECK(zero_host_run(world, rank_fn, b, &err) == ZERO_OK);
                CHECKF(n_done == 1 && strstr(done_line[0], "zero_load: step 4 loaded from ") && strstr(done_line[0], dir),
                       "%d checkpoint lines after a load: %s", n_done, n_done ? done_line[0] : "");
                if (all_ok(a, world, "exact save") && all_ok(b, world, "exact load")) {
                    int same = !memcmp(a->w, b->w, sizeof a->w) && !memcmp(a->m, b->m, sizeof a->m) &&
                               !memcmp(a->v, b->v, sizeof a->v);
                    CHECKF(same, "stage %d %s world %d: resumed run differs from the uninterrupted one", stage,
                           zero_dtype_name((zero_dtype)dt), world);
                    n_exact += same;
                }
                free(a);
                free(b);
            }
    printf("exact resume: %d runs bitwise equal to the uninterrupted run\n", n_exact);
    /* 2. reshard: saved on N ranks (stage s), loaded on M (stage s2): the state equals */
    {
        static const int W[] = {1, 2, 3, 4, 8};
        int i, k;
        for (i = 0; i < 5; i++)
            for (k = 0; k < 5; k++) {
                if (quick && (i + k) % 2) continue; /* sanitizer runs: half the pairs */
                for (stage = 0; stage <= 3; stage++) {
                    int s2 = (stage + i + k) % 4;
                    job *a = newjob(stage, ZERO_DTYPE_BF16, W[i]), *b = newjob(s2, ZERO_DTYPE_BF16, W[k]);
                    if ((i + k + stage) % 3 == 0) a->bucket = b->bucket = 500000000;
                    snprintf(dir, sizeof dir, "%s/reshard_%d_%d_%d", base, W[i], W[k], stage);
                    a->dir = b->dir = dir;
                    a->steps_before = 3, a->save = 1;
                    b->steps_before = 0, b->load = 1; /* no steps after: the state as loaded */
                    CHECK(zero_host_run(W[i], rank_fn, a, &err) == ZERO_OK);
                    CHECK(zero_host_run(W[k], rank_fn, b, &err) == ZERO_OK);
                    if (all_ok(a, W[i], "reshard save") && all_ok(b, W[k], "reshard load")) {
                        int same = !memcmp(a->w, b->w, sizeof a->w) && !memcmp(a->m, b->m, sizeof a->m) &&
                                   !memcmp(a->v, b->v, sizeof a->v);
                        CHECKF(same, "saved on %d ranks (stage %d), loaded on %d (stage %d): the state differs", W[i],
                               stage, W[k], s2);
                        n_reshard += same;
                    }
                    free(a);
                    free(b);
                }
            }
    }
    printf("reshard: %d N -> M loads equal to the saved state\n", n_reshard);
    /* 3. offload placements: save with one, load with another, resume exactly */
    {
        char nv[1200];
        int oo, op, n = 0;
        snprintf(nv, sizeof nv, "%s/nvme", base);
        CHECK(mkdir(nv, 0755) == 0);
        for (oo = 0; oo <= 2; oo++)
            for (op = 0; op <= 2; op++) {
                job *a = newjob(3, ZERO_DTYPE_FP16, 2), *b = newjob(3, ZERO_DTYPE_FP16, 2);
                snprintf(dir, sizeof dir, "%s/offload_%d_%d", base, oo, op);
                a->dir = b->dir = dir;
                a->nvme = b->nvme = nv;
                a->offload = oo, a->poff = op;
                b->offload = (oo + 1) % 3, b->poff = (op + 2) % 3; /* another placement loads it */
                a->steps_before = 3, a->steps_after = 3, a->save = 1;
                b->steps_before = 0, b->steps_after = 3, b->load = 1, b->load_step = 3;
                setenv("ZERO_NO_SIMD", "1", 1);
                CHECK(zero_host_run(2, rank_fn, a, &err) == ZERO_OK);
                CHECK(zero_host_run(2, rank_fn, b, &err) == ZERO_OK);
                unsetenv("ZERO_NO_SIMD");
                if (all_ok(a, 2, "offload save") && all_ok(b, 2, "offload load")) {
                    int same = !memcmp(a->w, b->w, sizeof a->w) && !memcmp(a->m, b->m, sizeof a->m);
                    CHECKF(same, "saved with offload %d/%d, loaded with %d/%d: the resumed run differs", oo, op,
                           b->offload, b->poff);
                    n += same;
                }
                free(a);
                free(b);
            }
        printf("offload placements: %d save/load pairs resume bitwise\n", n);
        rmtree(nv);
    }
    /* 3b. hybrid sharding (mics_shard_size): the first group writes a flat
       checkpoint of the group's size, which any world loads; a hybrid run
       loads any checkpoint; a hybrid run resumes exactly */
    {
        static const struct { int world, shard, world2, shard2; } P[] = {
            {4, 2, 4, 0}, {4, 2, 2, 0}, {8, 4, 8, 0}, {8, 2, 3, 0}, /* hybrid -> flat */
            {4, 0, 8, 4}, {2, 0, 8, 2}, {3, 0, 6, 3}, {4, 0, 4, 1}, /* flat -> hybrid */
            {8, 2, 8, 4}, {4, 1, 8, 2},                             /* hybrid -> hybrid, other groups */
        };
        int i, n = 0, nx = 0;
        for (i = 0; i < (int)(sizeof P / sizeof P[0]); i++)
            for (stage = 1; stage <= 3; stage++) {
                job *a = newjob(stage, ZERO_DTYPE_BF16, P[i].world), *b = newjob(stage, ZERO_DTYPE_BF16, P[i].world2);
                char f[1300];
                int k, files = 0, want = P[i].shard ? P[i].shard : P[i].world;
                if (quick && (i + stage) % 2) { free(a); free(b); continue; }
                a->shard = P[i].shard;
                b->shard = P[i].shard2;
                snprintf(dir, sizeof dir, "%s/hybrid_%d_%d", base, i, stage);
                a->dir = b->dir = dir;
                a->steps_before = 3, a->save = 1;
                b->steps_before = 0, b->load = 1;
                CHECK(zero_host_run(P[i].world, rank_fn, a, &err) == ZERO_OK);
                CHECK(zero_host_run(P[i].world2, rank_fn, b, &err) == ZERO_OK);
                if (all_ok(a, P[i].world, "hybrid save") && all_ok(b, P[i].world2, "hybrid load")) {
                    int same = !memcmp(a->w, b->w, sizeof a->w) && !memcmp(a->m, b->m, sizeof a->m) &&
                               !memcmp(a->v, b->v, sizeof a->v);
                    CHECKF(same, "stage %d: saved on %d ranks (mics_shard_size %d), loaded on %d (%d): the state differs",
                           stage, P[i].world, P[i].shard, P[i].world2, P[i].shard2);
                    n += same;
                }
                for (k = 0; k < 16; k++) { /* one rank file per rank of the group that wrote */
                    FILE *fp;
                    snprintf(f, sizeof f, "%s/step3/rank%05d.zck", dir, k);
                    if ((fp = fopen(f, "rb")) != NULL) files++, fclose(fp);
                }
                CHECKF(files == want, "stage %d: saved on %d ranks (mics_shard_size %d): %d rank files, want %d", stage,
                       P[i].world, P[i].shard, files, want);
                free(a);
                free(b);
            }
        for (stage = 1; stage <= 3; stage++) { /* exact resume, hybrid on both sides */
            job *a = newjob(stage, ZERO_DTYPE_FP32, 8), *b = newjob(stage, ZERO_DTYPE_FP32, 8);
            a->shard = b->shard = 4;
            snprintf(dir, sizeof dir, "%s/hybrid_exact_%d", base, stage);
            a->dir = b->dir = dir;
            a->steps_before = 3, a->steps_after = 3, a->save = 1;
            b->steps_before = 0, b->steps_after = 3, b->load = 1, b->load_step = 3;
            CHECK(zero_host_run(8, rank_fn, a, &err) == ZERO_OK);
            CHECK(zero_host_run(8, rank_fn, b, &err) == ZERO_OK);
            if (all_ok(a, 8, "hybrid exact save") && all_ok(b, 8, "hybrid exact load")) {
                int same = !memcmp(a->w, b->w, sizeof a->w) && !memcmp(a->m, b->m, sizeof a->m) &&
                           !memcmp(a->v, b->v, sizeof a->v);
                CHECKF(same, "stage %d, 2 groups of 4: the resumed run differs from the uninterrupted one", stage);
                nx += same;
            }
            free(a);
            free(b);
        }
        { /* optimizer state in NVMe files under hybrid sharding: every rank its own files */
            char nv[1200];
            job *a = newjob(2, ZERO_DTYPE_FP16, 4), *b = newjob(2, ZERO_DTYPE_FP16, 4);
            snprintf(nv, sizeof nv, "%s/nvme_hybrid", base);
            CHECK(mkdir(nv, 0755) == 0);
            a->shard = b->shard = 2;
            a->nvme = b->nvme = nv;
            a->offload = b->offload = ZERO_OFFLOAD_NVME;
            snprintf(dir, sizeof dir, "%s/hybrid_nvme", base);
            a->dir = b->dir = dir;
            a->steps_before = 3, a->steps_after = 3, a->save = 1;
            b->steps_before = 0, b->steps_after = 3, b->load = 1, b->load_step = 3;
            setenv("ZERO_NO_SIMD", "1", 1);
            CHECK(zero_host_run(4, rank_fn, a, &err) == ZERO_OK);
            CHECK(zero_host_run(4, rank_fn, b, &err) == ZERO_OK);
            unsetenv("ZERO_NO_SIMD");
            if (all_ok(a, 4, "hybrid nvme save") && all_ok(b, 4, "hybrid nvme load")) {
                int same = !memcmp(a->w, b->w, sizeof a->w) && !memcmp(a->m, b->m, sizeof a->m);
                CHECKF(same, "NVMe offload, 2 groups of 2: the resumed run differs");
                nx += same;
            }
            rmtree(nv);
            free(a);
            free(b);
        }
        printf("hybrid: %d checkpoints load across flat and hybrid runs, %d hybrid runs resume bitwise\n", n, nx);
    }
    /* 4. bad input: a clear error naming the file, the engine unchanged, on every rank */
    {
        char src[1100], path[1500], tag[1300];
        job *a = newjob(2, ZERO_DTYPE_FP32, 2);
        int c, r;
        snprintf(src, sizeof src, "%s/good", base);
        a->dir = src;
        a->steps_before = 2, a->save = 1;
        CHECK(zero_host_run(2, rank_fn, a, &err) == ZERO_OK);
        all_ok(a, 2, "good save");
        free(a);
        for (c = 0; c < 21; c++) {
            job *b = newjob(2, c == 20 ? ZERO_DTYPE_BF16 : ZERO_DTYPE_FP32, 2);
            const char *want = "";
            zero_msg item = ZERO_MSG_CKPT_CORRUPT;
            snprintf(dir, sizeof dir, "%s/bad%d", base, c);
            snprintf(tag, sizeof tag, "%s/step2", dir);
            CHECK(mkdir(dir, 0755) == 0 && mkdir(tag, 0755) == 0);
            for (r = 0; r < 3; r++) { /* copy the good checkpoint */
                char f[1400], t2[1400];
                snprintf(f, sizeof f, "%s/step2/%s", src, r == 0 ? "meta.zck" : r == 1 ? "rank00000.zck" : "rank00001.zck");
                snprintf(t2, sizeof t2, "%s/%s", tag, r == 0 ? "meta.zck" : r == 1 ? "rank00000.zck" : "rank00001.zck");
                CHECK(copy_file(f, t2));
            }
            snprintf(path, sizeof path, "%s/latest", src);
            {
                char t2[1300];
                snprintf(t2, sizeof t2, "%s/latest", dir);
                CHECK(copy_file(path, t2));
            }
            switch (c) {
            case 0: snprintf(path, sizeof path, "%s/rank00001.zck", tag); CHECK(flip(path, 64 + 4 * 20)); want = "rank00001.zck"; break;
            case 1: snprintf(path, sizeof path, "%s/rank00000.zck", tag); CHECK(truncate(path, 200) == 0); want = "rank00000.zck"; break;
            case 2: snprintf(path, sizeof path, "%s/rank00001.zck", tag); CHECK(unlink(path) == 0); want = "rank00001.zck"; break;
            case 3: snprintf(path, sizeof path, "%s/meta.zck", tag); CHECK(flip(path, 100)); want = "meta.zck"; break;
            case 4: /* a newer format: the version after this build's with a valid header checksum */
            {
                unsigned char h[64];
                int fd;
                snprintf(path, sizeof path, "%s/meta.zck", tag);
                fd = open(path, O_RDWR);
                CHECK(fd >= 0 && read(fd, h, 64) == 64);
                zero__ck_put32(h + 8, ZERO__CK_VERSION + 1);
                zero__ck_put32(h + 60, zero__crc32c(0, h, 60));
                CHECK(lseek(fd, 0, SEEK_SET) == 0 && write(fd, h, 64) == 64);
                close(fd);
                item = ZERO_MSG_CKPT_VERSION;
                want = "newer";
                break;
            }
            case 5: b->other_model = 1; item = ZERO_MSG_CKPT_MISMATCH; want = "'other'"; break;
            case 18: b->n_delta = -1; item = ZERO_MSG_CKPT_MISMATCH; want = "the checkpoint's tensor 'layer5.w' is not in the engine"; break;
            case 19: b->n_delta = 1; item = ZERO_MSG_CKPT_MISMATCH; want = "the engine's tensor 'extra' is not in the checkpoint"; break;
            case 20: /* saved in fp32, loaded by a bf16 run: the ways to the run's dtype */
                item = ZERO_MSG_CKPT_MISMATCH;
                want = "saved in fp32, the engine runs bf16\nHINT: run in fp32; or, for weights imported with zero_ckpt import, "
                       "import them again with --dtype bf16";
                break;
            case 6: snprintf(path, sizeof path, "%s/latest", dir); CHECK(unlink(path) == 0); item = ZERO_MSG_CKPT_NOT_FOUND; want = "not a checkpoint"; break;
            case 7: snprintf(path, sizeof path, "%s/rank00000.zck", tag); CHECK(flip(path, 10)); want = "rank00000.zck"; break;
            case 8: /* rank 1's file of another save of the same model and step */
            {
                char other[1400];
                job *o = newjob(2, ZERO_DTYPE_FP32, 2);
                snprintf(other, sizeof other, "%s/other_save", base);
                o->dir = other;
                o->steps_before = 2, o->save = 1;
                CHECK(zero_host_run(2, rank_fn, o, &err) == ZERO_OK);
                free(o);
                snprintf(path, sizeof path, "%s/step2/rank00001.zck", other);
                {
                    char t2[1500];
                    snprintf(t2, sizeof t2, "%s/rank00001.zck", tag);
                    CHECK(copy_file(path, t2));
                }
                want = "this rank file was copied in from another checkpoint";
                break;
            }
            case 9: /* latest names a checkpoint that is not there: the error names latest and what it held */
                snprintf(path, sizeof path, "%s/latest", dir);
                CHECK(write_file(path, "step9"));
                item = ZERO_MSG_CKPT_NOT_FOUND;
                want = "latest names \"step9\", but";
                break;
            case 10: /* latest garbled */
                snprintf(path, sizeof path, "%s/latest", dir);
                CHECK(write_file(path, "st\001ep/../x"));
                want = "latest holds \"st\\x01ep/../x\"";
                break;
            /* not regular files: opening a FIFO would block forever (alarm() below turns a hang into a failure) */
            case 11: case 12: case 13: {
                static const char *const fifo[3] = {"latest", "meta.zck", "rank00001.zck"};
                static const char *const msg[3] = {"latest: not a regular file (a FIFO", "meta.zck: not a regular file (a FIFO",
                                                   "rank00001.zck: not a regular file (a FIFO"};
                snprintf(path, sizeof path, "%s/%s", c == 11 ? dir : tag, fifo[c - 11]);
                CHECK(unlink(path) == 0 && mkfifo(path, 0644) == 0);
                item = ZERO_MSG_FILE_READ;
                want = msg[c - 11];
                break;
            }
            case 14: /* meta.zck of another save of the same model and step: meta.zck is blamed, not a rank file */
            case 16: /* ... of a later step: the step it holds disagrees with the name latest gives it */
            {
                char other[1400], t2[1500];
                job *o = newjob(2, ZERO_DTYPE_FP32, 2);
                snprintf(other, sizeof other, "%s/other_meta%d", base, c);
                o->dir = other;
                o->steps_before = c == 14 ? 2 : 3, o->save = 1;
                CHECK(zero_host_run(2, rank_fn, o, &err) == ZERO_OK);
                free(o);
                snprintf(path, sizeof path, "%s/step%d/meta.zck", other, c == 14 ? 2 : 3);
                snprintf(t2, sizeof t2, "%s/meta.zck", tag);
                CHECK(copy_file(path, t2));
                want = c == 14 ? "meta.zck belongs to another save" : "holds step 3, but";
                break;
            }
            case 15: /* the header's world field forged, its checksum recomputed */
            case 17: /* ... its rank field */
            {
                unsigned char h[64];
                int fd;
                snprintf(path, sizeof path, "%s/meta.zck", tag);
                fd = open(path, O_RDWR);
                CHECK(fd >= 0 && read(fd, h, 64) == 64);
                zero__ck_put32(h + (c == 15 ? 32 : 28), c == 15 ? 3 : 1);
                zero__ck_put32(h + 60, zero__crc32c(0, h, 60));
                CHECK(lseek(fd, 0, SEEK_SET) == 0 && write(fd, h, 64) == 64);
                close(fd);
                want = "the header was altered";
                break;
            }
            }
            b->dir = dir;
            b->steps_before = 1, b->load = 1, b->steps_after = 0;
            alarm(60);
            CHECK(zero_host_run(2, rank_fn, b, &err) == ZERO_OK);
            alarm(0);
            for (r = 0; r < 2; r++) {
                CHECKF(b->r_load[r] != ZERO_OK, "bad case %d rank %d: loaded", c, r);
            }
            /* the rank that met the problem names it; the other says the engine is unchanged */
            CHECKF(strstr(b->msg[0], want) || strstr(b->msg[1], want), "bad case %d: '%s' / '%s' lack '%s'", c, b->msg[0],
                   b->msg[1], want);
            CHECKF(b->item[0] == item || b->item[1] == item, "bad case %d: items %d %d", c, (int)b->item[0], (int)b->item[1]);
            CHECK_STR_CONTAINS(b->msg[0], "unchanged");
            /* unchanged: the state read back equals the state before the load */
            CHECKF(!memcmp(b->w0, b->w, sizeof b->w) || b->r[0] != ZERO_OK, "bad case %d: the engine changed", c);
            free(b);
        }
    }
    /* 4b. latest written by hand with echo (a trailing newline) loads; a save whose latest.tmp is a FIFO fails
          with an error naming it instead of blocking, and the checkpoint before it still loads */
    {
        char d[1100], path[1300], t2[1300];
        job *b = newjob(2, ZERO_DTYPE_FP32, 2), *a;
        snprintf(d, sizeof d, "%s/good", base);
        snprintf(path, sizeof path, "%s/latest", d);
        CHECK(write_file(path, "step2\n"));
        b->dir = d;
        b->steps_before = 1, b->load = 1, b->steps_after = 0;
        CHECK(zero_host_run(2, rank_fn, b, &err) == ZERO_OK);
        CHECKF(b->r_load[0] == ZERO_OK && b->r_load[1] == ZERO_OK, "latest with a newline: %s / %s", b->msg[0], b->msg[1]);
        free(b);
        snprintf(t2, sizeof t2, "%s/latest.tmp", d);
        CHECK(mkfifo(t2, 0644) == 0);
        a = newjob(2, ZERO_DTYPE_FP32, 2);
        a->dir = d;
        a->steps_before = 3, a->save = 1;
        alarm(60);
        CHECK(zero_host_run(2, rank_fn, a, &err) == ZERO_OK);
        alarm(0);
        { /* temporary names are fresh and created exclusively: a FIFO at the old fixed name is never opened */
            struct stat st;
            CHECKF(a->r[0] == ZERO_OK && a->r[1] == ZERO_OK, "save with a FIFO at latest.tmp: %s", a->msg[0]);
            CHECK(stat(t2, &st) == 0 && S_ISFIFO(st.st_mode));
        }
        free(a);
        unlink(t2);
        b = newjob(2, ZERO_DTYPE_FP32, 2);
        b->dir = d;
        b->steps_before = 1, b->load = 1, b->steps_after = 0;
        CHECK(zero_host_run(2, rank_fn, b, &err) == ZERO_OK);
        CHECKF(b->r_load[0] == ZERO_OK && b->r_load[1] == ZERO_OK, "after the save beside a FIFO: %s", b->msg[0]);
        free(b);
    }
    /* 5. safetensors export: rank 0 writes, every rank reads along */
    {
        char ex[1200], exb[1300];
        int w2;
        for (w2 = 1; w2 <= 3; w2 += 2)
            for (stage = 0; stage <= 3; stage += 3) {
                job *a = newjob(stage, ZERO_DTYPE_BF16, w2);
                snprintf(ex, sizeof ex, "%s/model_%d_%d.safetensors", base, w2, stage);
                snprintf(exb, sizeof exb, "%s.bf16", ex);
                a->steps_before = 2;
                a->export_path = ex;
                CHECK(zero_host_run(w2, rank_fn, a, &err) == ZERO_OK);
                if (all_ok(a, w2, "export")) {
                    CHECKF(check_safetensors(ex, 0, a->w) == 0, "%s: fp32 export differs", ex);
                    CHECKF(check_safetensors(exb, 1, a->w) == 0, "%s: bf16 export differs", exb);
                }
                free(a);
            }
        printf("safetensors export: fp32 and bf16 files match the engine's weights\n");
    }
    /* 5b. links planted at the temporary names and in place of the targets: nothing outside the checkpoint
       changes, the previous checkpoint stays bitwise, the new one loads */
    {
        char d[1100], out[1100], victim[1200], p[3000], q[1400], keep[1300];
        const char *const tmps[] = {"latest.tmp", "step2/meta.zck.tmp", "step2/rank00000.zck.tmp"};
        job *a = newjob(2, ZERO_DTYPE_BF16, 2);
        size_t i;
        snprintf(d, sizeof d, "%s/links", base);
        snprintf(out, sizeof out, "%s/outside", base);
        snprintf(victim, sizeof victim, "%s/victim", out);
        snprintf(keep, sizeof keep, "%s/step2.copy", base);
        CHECK(mkdir(out, 0755) == 0 && write_file(victim, "keep\n"));
        a->dir = d;
        a->steps_before = 2, a->save = 1;
        CHECK(zero_host_run(2, rank_fn, a, &err) == ZERO_OK);
        all_ok(a, 2, "links: the first save");
        free(a);
        snprintf(p, sizeof p, "cp -a %s/step2 %s", d, keep);
        CHECK(system(p) == 0);
        for (i = 0; i < sizeof tmps / sizeof tmps[0]; i++) { /* the old fixed temporary names */
            snprintf(p, sizeof p, "%s/%s", d, tmps[i]);
            CHECK(symlink(victim, p) == 0);
        }
        snprintf(q, sizeof q, "%s/step3", d);
        CHECK(symlink(out, q) == 0); /* the next save's directory name, a link to a directory outside */
        snprintf(p, sizeof p, "%s/latest", d); /* the target itself a link to a file outside */
        CHECK(unlink(p) == 0 && symlink(victim, p) == 0);
        a = newjob(2, ZERO_DTYPE_BF16, 2);
        a->dir = d;
        a->steps_before = 3, a->save = 1;
        snprintf(q, sizeof q, "%s/model.safetensors", d); /* an export target that is a link outside */
        CHECK(symlink(victim, q) == 0);
        a->export_path = q;
        CHECK(zero_host_run(2, rank_fn, a, &err) == ZERO_OK);
        all_ok(a, 2, "links: the save among links");
        free(a);
        {
            char buf[64] = "";
            FILE *f = fopen(victim, "rb");
            size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
            struct stat st;
            if (f) fclose(f);
            buf[n] = 0;
            CHECKF(!strcmp(buf, "keep\n"), "the file outside the checkpoint changed: '%s'", buf);
            snprintf(p, sizeof p, "ls -A %s | grep -qv '^victim$'", out);
            CHECKF(system(p) != 0, "files appeared in the directory outside the checkpoint");
            snprintf(p, sizeof p, "diff -r -x '*.tmp' %s %s/step2 >/dev/null", keep, d);
            CHECKF(system(p) == 0, "the previous checkpoint (step2) changed");
            snprintf(p, sizeof p, "%s/latest", d);
            CHECK(lstat(p, &st) == 0 && S_ISREG(st.st_mode));
            snprintf(p, sizeof p, "%s/step3.1/meta.zck", d);
            CHECKF(stat(p, &st) == 0, "the new checkpoint is not step3.1 (step3 is a link)");
            CHECK(lstat(q, &st) == 0 && S_ISREG(st.st_mode));
        }
        CHECKF(load_every_step(d) == 2, "links: step2 and step3.1 load");
        a = newjob(2, ZERO_DTYPE_BF16, 2); /* latest names the new one */
        a->dir = d;
        a->load = 1, a->load_step = 3;
        CHECK(zero_host_run(2, rank_fn, a, &err) == ZERO_OK);
        all_ok(a, 2, "links: load latest");
        free(a);
        printf("links at the temporary names, at latest, at step3 and at the export: nothing outside written, step2 "
               "unchanged, the new checkpoint in step3.1 loads\n");
    }
    /* 5c. two writers in one directory: two processes, and two engines in one process, saving at the same
       steps at the same time: every checkpoint loads, none shares a directory or a temporary file */
    {
        int w, n;
        snprintf(dir, sizeof dir, "%s/two_procs", base);
        for (w = 0; w < 2; w++) {
            pid_t pid = fork();
            if (pid == 0) {
                job *a = newjob(1, ZERO_DTYPE_BF16, 1);
                a->dir = dir;
                a->steps_before = 4;
                zero_host_run(1, save_each, a, &err);
                _exit(a->r[0] == ZERO_OK ? 0 : 1);
            }
        }
        for (w = 0; w < 2; w++) {
            int status = 0;
            CHECK(wait(&status) > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
        }
        n = load_every_step(dir);
        CHECKF(n == 8, "two processes, 4 saves each: %d checkpoints load, want 8", n);
        {
            job *j[2];
            pthread_t th[2];
            snprintf(dir, sizeof dir, "%s/two_engines", base);
            for (w = 0; w < 2; w++) {
                j[w] = newjob(2, ZERO_DTYPE_BF16, 2);
                j[w]->dir = dir;
                j[w]->steps_before = 3;
                CHECK(pthread_create(&th[w], NULL, save_each_thread, j[w]) == 0);
            }
            for (w = 0; w < 2; w++) {
                pthread_join(th[w], NULL);
                all_ok(j[w], 2, "two engines in one process");
                free(j[w]);
            }
            n = load_every_step(dir);
            CHECKF(n == 6, "two engines, 3 saves each: %d checkpoints load, want 6", n);
        }
        { /* one writer killed (-9) while the other saves beside it: every finished checkpoint, of either, loads;
             the killed one leaves at most directories without meta.zck and temporary files, never a step that
             claims to be whole; a job restarted into the same directory saves beside the leftovers */
            int fds[2], status = 0, torn_dirs = 0, trial;
            for (trial = 0; trial < (quick ? 2 : 5); trial++) {
                pid_t killed, other;
                char cmd[4000], c;
                struct timespec ts;
                FILE *p;
                snprintf(dir, sizeof dir, "%s/two_procs_kill%d", base, trial);
                CHECK(pipe(fds) == 0);
                killed = fork();
                if (killed == 0) {
                    job *a = newjob(1, ZERO_DTYPE_BF16, 1);
                    close(fds[0]);
                    save_loop_ready = fds[1];
                    a->dir = dir;
                    zero_host_run(1, save_loop, a, &err);
                    _exit(0);
                }
                close(fds[1]);
                if (read(fds[0], &c, 1) != 1) c = 0;
                close(fds[0]);
                other = fork();
                if (other == 0) {
                    job *a = newjob(1, ZERO_DTYPE_BF16, 1);
                    a->dir = dir;
                    a->steps_before = 4;
                    zero_host_run(1, save_each, a, &err);
                    _exit(a->r[0] == ZERO_OK ? 0 : 1);
                }
                ts.tv_sec = 0;
                ts.tv_nsec = (long)(zt_rand01() * 50e6);
                nanosleep(&ts, NULL);
                kill(killed, SIGKILL);
                CHECK(waitpid(killed, &status, 0) == killed);
                CHECK(waitpid(other, &status, 0) == other);
                CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the writer beside a killed one failed (%d)",
                       status);
                /* a restarted job, beside what the killed one left */
                {
                    job *a = newjob(1, ZERO_DTYPE_BF16, 1);
                    a->dir = dir;
                    a->steps_before = 2;
                    zero_host_run(1, save_each, a, &err);
                    CHECKF(a->r[0] == ZERO_OK, "a restarted writer beside a killed one: %s", a->msg[0]);
                    free(a);
                }
                snprintf(cmd, sizeof cmd,
                         "n=0; for d in %s/step*; do [ -e \"$d/meta.zck\" ] || { n=$((n+1)); rm -rf \"$d\"; }; done; "
                         "rm -f %s/*/*.tmp %s/*.tmp; echo $n", dir, dir, dir);
                if ((p = popen(cmd, "r"))) {
                    int t = 0;
                    if (fscanf(p, "%d", &t) == 1) torn_dirs += t;
                    pclose(p);
                }
                n = load_every_step(dir);
                CHECKF(n >= 6, "beside a killed writer: %d checkpoints load, want the other's 4 and the restart's 2 "
                               "at least", n);
                { /* latest names a whole checkpoint */
                    job *b = newjob(1, ZERO_DTYPE_BF16, 1);
                    b->dir = dir;
                    b->load = 1;
                    CHECK(zero_host_run(1, rank_fn, b, &err) == ZERO_OK);
                    CHECKF(b->r_load[0] == ZERO_OK, "latest beside a killed writer: %s", b->msg[0]);
                    free(b);
                }
            }
            printf("a writer killed (-9) beside another, %d trials: every finished checkpoint loads, latest loads "
                   "(%d directories without meta.zck left by the killed one)\n", trial, torn_dirs);
        }
        printf("two writers in one directory (two processes, two engines of one process): every checkpoint loads\n");
    }
    /* 5d. a write that fails (a file-size limit: EFBIG) names the file it was writing, for a save and an export */
    {
        pid_t pid;
        snprintf(dir, sizeof dir, "%s/fsize", base);
        pid = fork();
        if (pid == 0) {
            struct rlimit rl;
            char xp[1200];
            job *a = newjob(1, ZERO_DTYPE_FP32, 1), *b = newjob(1, ZERO_DTYPE_FP32, 1);
            int ok;
            signal(SIGXFSZ, SIG_IGN);
            rl.rlim_cur = rl.rlim_max = 2048;
            if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(3);
            a->dir = dir;
            a->steps_before = 1, a->save = 1;
            zero_host_run(1, rank_fn, a, &err);
            snprintf(xp, sizeof xp, "%s.safetensors", dir);
            b->export_path = xp;
            zero_host_run(1, rank_fn, b, &err);
            ok = a->r[0] != ZERO_OK && strstr(a->msg[0], "/rank00000.zck (written as ") &&
                 strstr(a->msg[0], "File too large") && b->r[0] != ZERO_OK &&
                 strstr(b->msg[0], "fsize.safetensors (written as ") && strstr(b->msg[0], "File too large");
            if (!ok) fprintf(stderr, "save: %s\nexport: %s\n", a->msg[0], b->msg[0]);
            _exit(ok ? 0 : 1);
        } else {
            int status = 0;
            CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
            CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "a failed write does not name its file (status %d)",
                   status);
        }
    }
    /* 6. a save killed at random moments: the latest checkpoint always loads */
    {
        int trial, loaded = 0, newer = 0, torn = 0, trials = quick ? 10 : 30;
        snprintf(dir, sizeof dir, "%s/crash", base);
        {
            job *a = newjob(1, ZERO_DTYPE_BF16, 1);
            a->dir = dir;
            a->big = 1;
            a->bucket = 500000000;
            a->steps_before = 1, a->save = 1;
            CHECK(zero_host_run(1, rank_fn, a, &err) == ZERO_OK);
            all_ok(a, 1, "crash base");
            free(a);
        }
        for (trial = 0; trial < trials; trial++) {
            int fds[2];
            pid_t pid;
            CHECK(pipe(fds) == 0);
            pid = fork();
            if (pid == 0) { /* world 1 runs on this thread: fork is safe; save after every step until killed */
                close(fds[0]);
                save_loop_ready = fds[1];
                job *a = newjob(1, ZERO_DTYPE_BF16, 1);
                a->dir = dir;
                a->big = 1;
                a->bucket = 500000000;
                zero_host_run(1, save_loop, a, &err);
                _exit(0);
            } else if (pid > 0) {
                struct timespec ts;
                int status;
                char c;
                close(fds[1]);
                /* from the first save on (the engine's creation, however slow the machine, is behind it):
                   0-300 ms, a few saves and steps */
                if (read(fds[0], &c, 1) != 1) c = 0;
                close(fds[0]);
                ts.tv_sec = 0;
                ts.tv_nsec = (long)(zt_rand01() * 300e6);
                nanosleep(&ts, NULL);
                kill(pid, SIGKILL);
                waitpid(pid, &status, 0);
                {
                    job *b = newjob(1, ZERO_DTYPE_BF16, 1);
                    b->dir = dir;
                    b->big = 1;
                    b->bucket = 500000000;
                    b->load = 1;
                    CHECK(zero_host_run(1, rank_fn, b, &err) == ZERO_OK);
                    if (b->r_load[0] == ZERO_OK) loaded++;
                    else CHECKF(0, "crash trial %d: %s", trial, b->msg[0]);
                    free(b);
                }
                {
                    char lt[1300], buf[64] = "";
                    int fd;
                    snprintf(lt, sizeof lt, "%s/latest", dir);
                    fd = open(lt, O_RDONLY);
                    if (fd >= 0) {
                        if (read(fd, buf, sizeof buf - 1) < 0) buf[0] = 0;
                        close(fd);
                    }
                    if (strcmp(buf, "step1") != 0) newer++;
                }
                { /* a kill inside a save leaves a temporary file, or a directory without meta.zck */
                    char cmd[6000];
                    /* (then removed, so the next trial counts only its own) */
                    snprintf(cmd, sizeof cmd,
                             "found=1; for f in %s/*/*.tmp %s/*.tmp; do [ -e \"$f\" ] && found=0; done; "
                             "for d in %s/step*; do [ -e \"$d/meta.zck\" ] || { found=0; rm -rf \"$d\"; }; done; "
                             "rm -f %s/*/*.tmp %s/*.tmp; exit $found", dir, dir, dir, dir, dir);
                    if (system(cmd) == 0) torn++;
                }
            }
        }
        CHECKF(loaded == trials, "%d of %d loads after a killed save", loaded, trials);
        CHECKF(torn > 0 || quick, "no kill landed inside a save in %d trials", trials);
        printf("killed saves: %d trials (%d killed inside a save), the latest checkpoint loaded every time (%d "
               "moved latest past step1)\n", trials, torn, newer);
    }
    test_client(base);
    rmtree(base);
    return zt_finish();
}
