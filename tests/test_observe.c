/* test_observe.c - the engine's observability on host ranks: jsonl_monitor
   (one JSON object per step from rank 0, every field checked against
   zero_step_info and zero_memory_report; a bad directory refused naming
   it; appending across engines), the progress line (step/total, loss,
   samples/s, eta), ZERO_DEBUG=1 (every collective logged on every rank, the
   ranks' sequences identical, one reduce-scatter per unit and step at stage
   2), the watchdog (a rank that arrives late makes the waiting rank log
   which unit it waits on; training then goes on; a bad ZERO_WATCHDOG_S is
   refused), ZERO_TIMELINE (one step's streams timed into a Chrome trace per
   rank: every collective, wait and call of that step, the training the same
   bit for bit; a bad step number, a run that ends first, a symbolic link at
   the path), zero_version.

   Run alone: make test T=test_observe */
#define _POSIX_C_SOURCE 200809L /* setenv, mkdtemp, nanosleep, mkfifo, alarm in this test */
#define ZERO_IMPLEMENTATION
#include "zero.h"
#include "zero_test.h"

#include <dirent.h>
#include <pthread.h>
#include <unistd.h>

enum { NT = 5, MAXW = 4, MAXLOG = 4096 };
static const int64_t SIZES[NT] = {40, 300, 7, 120, 33};

/* ---- a logger that keeps everything (ranks and the watchdog call it from their threads) ---- */

typedef struct logline {
    int rank, level;
    zero_msg item;
    char text[1024];
} logline;
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static logline logs[MAXLOG];
static int n_logs;

static void keep_log(void *user, zero_log_level level, zero_msg item, int rank, const char *text) {
    (void)user;
    pthread_mutex_lock(&log_mu);
    if (n_logs < MAXLOG) {
        logs[n_logs].rank = rank;
        logs[n_logs].level = (int)level;
        logs[n_logs].item = item;
        snprintf(logs[n_logs].text, sizeof logs[n_logs].text, "%s", text);
        n_logs++;
    }
    pthread_mutex_unlock(&log_mu);
}
static void clear_logs(void) {
    pthread_mutex_lock(&log_mu);
    n_logs = 0;
    pthread_mutex_unlock(&log_mu);
}

/* ---- one run ---- */

typedef struct job {
    int world, stage, steps;
    int late_rank;       /* >= 0: this rank sleeps late_ms before each step's backward */
    int late_ms;
    const char *monitor; /* jsonl_monitor.output_path, NULL: off */
    const char *job_name; /* jsonl_monitor.job_name, NULL: "obs" */
    const char *files;   /* tensorboard's and csv_monitor's output_path (job names "tb", "csv"), NULL: off */
    int64_t total;       /* scheduler total_num_steps (WarmupDecayLR), 0: no schedule */
    zero_result r[MAXW];
    char msg[MAXW][1100];
    zero_step_info info[16]; /* rank 0's, per step */
    zero_memory_stats ms;    /* rank 0's, at the end */
} job;

/* the initial weights: 0.3 cos(0.7 t + 0.011 i) */
static zt_wave init_wave = {0.3, 0, 0.7, 0.011, 1};

static zero_config make_cfg(const job *J) {
    zero_config c = zero_config_default();
    zero_error err;
    c.train_micro_batch_size_per_gpu = 2;
    c.gradient_accumulation_steps = 1;
    c.zero_optimization.stage = J->stage;
    c.zero_optimization.reduce_bucket_size = 128; /* several units */
    c.steps_per_print = 2;
    c.optimizer.lr = 1e-2;
    if (J->total > 0) {
        c.scheduler.type = ZERO_SCHEDULER_WARMUP_DECAY_LR;
        c.scheduler.warmup_num_steps = 2;
        c.scheduler.total_num_steps = J->total;
    }
    if (J->monitor) {
        c.jsonl_monitor.enabled = 1;
        snprintf(c.jsonl_monitor.output_path, sizeof c.jsonl_monitor.output_path, "%s", J->monitor);
        snprintf(c.jsonl_monitor.job_name, sizeof c.jsonl_monitor.job_name, "%s", J->job_name ? J->job_name : "obs");
    }
    if (J->files) {
        c.tensorboard.enabled = c.csv_monitor.enabled = 1;
        snprintf(c.tensorboard.output_path, sizeof c.tensorboard.output_path, "%s", J->files);
        snprintf(c.csv_monitor.output_path, sizeof c.csv_monitor.output_path, "%s", J->files);
        snprintf(c.tensorboard.job_name, sizeof c.tensorboard.job_name, "tb");
        snprintf(c.csv_monitor.job_name, sizeof c.csv_monitor.job_name, "csv");
    }
    c.log.fn = keep_log;
    c.log.level = ZERO_LOG_INFO;
    if (zero_config_resolve(&c, J->world, &err) != ZERO_OK) fprintf(stderr, "config: %s\n", err.msg);
    return c;
}

static zero_result rank_fn(const zero_backend *be, void *arg) {
    job *J = (job *)arg;
    zero_config c = make_cfg(J);
    zero_tensor ts[NT];
    zero_engine *e = NULL;
    zero_error err;
    zero_result r;
    int s, t;
    memset(ts, 0, sizeof ts);
    for (t = 0; t < NT; t++) {
        static const char *names[NT] = {"emb", "w1", "b1", "w2", "out"};
        ts[t].name = names[t];
        ts[t].numel = SIZES[t];
        ts[t].init = zt_init_wave;
        ts[t].init_user = &init_wave;
        ts[t].group = t;
    }
    c.log.rank = be->rank;
    if ((r = zero_engine_create(&e, &c, ts, NT, be, &err)) != ZERO_OK) {
        J->r[be->rank] = r;
        snprintf(J->msg[be->rank], sizeof J->msg[be->rank], "%s", err.msg);
        return r;
    }
    for (s = 0; s < J->steps; s++) {
        zero_step_info in;
        if (be->rank == J->late_rank) {
            struct timespec ts2 = {J->late_ms / 1000, (long)(J->late_ms % 1000) * 1000000L};
            nanosleep(&ts2, NULL);
        }
        for (t = NT - 1; t >= 0; t--) {
            float *w, *g;
            int64_t i;
            if (J->stage == 3 && (r = zero_fetch(e, t)) != ZERO_OK) goto out;
            w = (float *)zero_param(e, t), g = (float *)zero_grad(e, t);
            if (!w || !g) {
                r = zero_engine_error(e)->code;
                goto out;
            }
            for (i = 0; i < SIZES[t]; i++) g[i] = w[i] - 0.1f * (float)((s + be->rank + i) % 5);
            if ((r = zero_grad_ready(e, t)) != ZERO_OK) goto out;
            if (J->stage == 3 && (r = zero_release(e, t)) != ZERO_OK) goto out;
        }
        /* rank 0's value is the one written; step 4's diverged (NaN): written as null, the line still JSON */
        zero_report_loss(e, s == 3 && J->monitor ? NAN : 10.0 + s + 0.25 * be->rank);
        if ((r = zero_step(e, &in)) != ZERO_OK) goto out;
        if (be->rank == 0 && s < 16) J->info[s] = in;
    }
    if (be->rank == 0) zero_memory_report(e, &J->ms);
    r = ZERO_OK;
out:
    if (r != ZERO_OK) snprintf(J->msg[be->rank], sizeof J->msg[be->rank], "%s", zero_engine_error(e)->msg);
    J->r[be->rank] = r;
    zero_engine_destroy(e);
    return r;
}

static int run(job *J) {
    zero_error err;
    int k, ok = 1;
    for (k = 0; k < MAXW; k++) J->r[k] = ZERO_OK, J->msg[k][0] = 0;
    zero_host_run(J->world, rank_fn, J, &err);
    for (k = 0; k < J->world; k++)
        if (J->r[k] != ZERO_OK) ok = 0;
    return ok;
}

/* ---- JSON lines read back with the header's own parser ---- */

static double jnum(const zero__json *j, int obj, const char *key) {
    int n = zero__json_get(j, obj, key);
    return n >= 0 && j->nodes[n].type == ZERO__JSON_NUMBER ? j->nodes[n].number : NAN;
}
static int jobj(const zero__json *j, int obj, const char *key) {
    int n = zero__json_get(j, obj, key);
    return n >= 0 && j->nodes[n].type == ZERO__JSON_OBJECT ? n : -1;
}
static int jstr_is(const zero__json *j, int obj, const char *key, const char *want) {
    int n = zero__json_get(j, obj, key);
    return n >= 0 && j->nodes[n].type == ZERO__JSON_STRING && zero__json_string_eq(j, n, want, strlen(want));
}

static void test_monitor(const char *dir) {
    job J;
    char path[600], line[8192];
    FILE *f;
    int n_start = 0, n_step = 0;
    memset(&J, 0, sizeof J);
    J.world = 2, J.stage = 2, J.steps = 5, J.late_rank = -1, J.monitor = dir;
    CHECK(run(&J));
    snprintf(path, sizeof path, "%s/obs.jsonl", dir);
    f = fopen(path, "r");
    CHECKF(f != NULL, "%s not written", path);
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        zero__json j;
        zero_error err;
        if (zero__json_parse(&j, line, strlen(line), &err) != ZERO_OK) {
            CHECKF(0, "not JSON: %s (%s)", line, err.msg);
            continue;
        }
        if (jstr_is(&j, 0, "event", "start")) {
            n_start++;
            CHECK(jstr_is(&j, 0, "version", zero_version()));
            CHECK(jnum(&j, 0, "world") == 2 && jnum(&j, 0, "stage") == 2);
            {   /* the model's size, summed here from the tensor list, and as the memory report gives it */
                double want = 0;
                int t;
                for (t = 0; t < NT; t++) want += (double)SIZES[t];
                CHECKF(jnum(&j, 0, "params") == want && want > 0, "start line params %g, want %g",
                       jnum(&j, 0, "params"), want);
                CHECKF(jnum(&j, 0, "trainable_params") == (double)J.ms.trainable_params && J.ms.trainable_params > 0,
                       "start line trainable_params %g, memory report %lld", jnum(&j, 0, "trainable_params"),
                       (long long)J.ms.trainable_params);
                CHECK(jnum(&j, 0, "units") == (double)J.ms.units && J.ms.units > 0);
                CHECK(jnum(&j, 0, "shard_world") == 2);
            }
        } else if (jstr_is(&j, 0, "event", "step")) {
            const zero_step_info *in = &J.info[n_step];
            int mem = jobj(&j, 0, "memory_bytes"), tm = jobj(&j, 0, "time_ms"), params;
            CHECK(jnum(&j, 0, "step") == (double)in->global_steps && in->global_steps == n_step + 1);
            if (n_step == 3) {
                int ln = zero__json_get(&j, 0, "loss");
                int nf = zero__json_get(&j, 0, "nonfinite");
                CHECKF(ln >= 0 && j.nodes[ln].type == ZERO__JSON_NULL, "a NaN loss at step 4 not written as null");
                CHECKF(nf >= 0 && j.nodes[nf].type == ZERO__JSON_ARRAY && j.nodes[nf + 1].type == ZERO__JSON_STRING,
                       "a NaN loss at step 4: no \"nonfinite\" array naming it");
            } else {
                CHECKF(zero__json_get(&j, 0, "nonfinite") < 0, "step %d: a \"nonfinite\" field with finite numbers",
                       n_step + 1);
                CHECKF(jnum(&j, 0, "loss") == 10.0 + n_step, "loss %g at step %d (rank 0 reported %g)",
                       jnum(&j, 0, "loss"), n_step, 10.0 + n_step);
            }
            CHECK(zt_near(jnum(&j, 0, "lr"), in->lr, 1e-8) || (in->lr == 0 && jnum(&j, 0, "lr") == 0));
            CHECK(zt_near(jnum(&j, 0, "grad_norm"), in->grad_norm, 1e-8));
            CHECK(jnum(&j, 0, "loss_scale") == in->loss_scale && jnum(&j, 0, "skipped") == (in->applied ? 0 : 1));
            CHECK(jnum(&j, 0, "samples_per_s") > 0);
            CHECK(tm >= 0 && zt_near(jnum(&j, tm, "step"), in->time_ms[ZERO_PHASE_STEP], 1e-5));
            params = mem >= 0 ? jobj(&j, mem, "params") : -1;
            CHECK(params >= 0 && jnum(&j, params, "device") == (double)J.ms.planned[ZERO_MEM_PARAMS][ZERO_MEM_DEVICE]);
            CHECK(mem >= 0 && jobj(&j, mem, "optim_state") >= 0 && jobj(&j, mem, "allocated") >= 0);
            {   /* the step's bytes: flat stage 2 on 2 ranks sends at least half the gradients and half the parameters */
                int cb = jobj(&j, 0, "comm_bytes");
                CHECKF(cb >= 0 && jnum(&j, cb, "world") == (double)in->comm_bytes[ZERO_GROUP_WORLD] &&
                           in->comm_bytes[ZERO_GROUP_WORLD] >= (int64_t)J.ms.planned[ZERO_MEM_PARAMS][ZERO_MEM_DEVICE] &&
                           jnum(&j, cb, "shard") == 0 && jnum(&j, cb, "replica") == 0,
                       "comm_bytes at step %d: world %g (info %lld), shard %g, replica %g; parameters %zu bytes", n_step,
                       cb >= 0 ? jnum(&j, cb, "world") : -1.0, (long long)in->comm_bytes[ZERO_GROUP_WORLD],
                       cb >= 0 ? jnum(&j, cb, "shard") : -1.0, cb >= 0 ? jnum(&j, cb, "replica") : -1.0,
                       J.ms.planned[ZERO_MEM_PARAMS][ZERO_MEM_DEVICE]);
            }
            n_step++;
        }
        zero__json_free(&j);
    }
    fclose(f);
    CHECKF(n_start == 1 && n_step == 5, "%d start and %d step lines (want 1 and 5: rank 0 only)", n_start, n_step);
    /* a second engine appends */
    CHECK(run(&J));
    f = fopen(path, "r");
    n_start = n_step = 0;
    while (f && fgets(line, sizeof line, f)) n_start += strstr(line, "\"event\":\"start\"") != NULL;
    if (f) fclose(f);
    CHECKF(n_start == 2, "%d start lines after a second run (appends)", n_start);
    /* a directory that is not there: refused, named */
    snprintf(path, sizeof path, "%s/missing/dir", dir);
    J.monitor = path;
    CHECK(!run(&J));
    CHECKF(J.r[0] == ZERO_ERR_IO && strstr(J.msg[0], path) && strstr(J.msg[0], "jsonl_monitor"), "rank 0: %s",
           J.msg[0]);
}

/* ---- tensorboard and csv_monitor ---- */

/* CRC-32C bit by bit (the header's is table-driven) */
static uint32_t crc_bits(const unsigned char *p, size_t n) {
    uint32_t c = 0xffffffffu;
    size_t i;
    int b;
    for (i = 0; i < n; i++)
        for (c ^= p[i], b = 0; b < 8; b++) c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    return c ^ 0xffffffffu;
}
static uint32_t le32(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

/* The record framing and the protobuf bytes against fixtures made from
   the format's description by an independent writer (Python: struct and a
   bitwise CRC-32C): an Event of wall_time 1.5, step 3 and one value "a" =
   2.0, and the first record, file_version "brain.Event:2" at wall_time 2 */
static void test_tf_bytes(void) {
    static const unsigned char want[] = {
        0x17, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xe7, 0xce, 0xf8, 0x1e, 0x09, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0xf8, 0x3f, 0x10, 0x03, 0x2a, 0x0a, 0x0a, 0x08, 0x0a, 0x01, 0x61, 0x15, 0x00, 0x00, 0x00, 0x40, 0xe8,
        0x1c, 0x3a, 0x9d};
    static const unsigned char want0[] = {
        0x1a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x12, 0x9b, 0xd8, 0x2d, 0x09, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x40, 0x10, 0x00, 0x1a, 0x0d, 0x62, 0x72, 0x61, 0x69, 0x6e, 0x2e, 0x45, 0x76, 0x65, 0x6e, 0x74,
        0x3a, 0x32, 0x89, 0x3e, 0x66, 0x6d};
    const char *tag = "a";
    double v = 2.0;
    unsigned char ev[128], got[128];
    FILE *f = tmpfile();
    size_t n;
    CHECK(crc_bits((const unsigned char *)"123456789", 9) == 0xE3069283u); /* CRC-32C's check value */
    if (!f) return;
    CHECK(zero__tf_record(f, ev, zero__tf_event(ev, 2.0, 0, "brain.Event:2", NULL, NULL, 0)) == 0);
    CHECK(zero__tf_record(f, ev, zero__tf_event(ev, 1.5, 3, NULL, &tag, &v, 1)) == 0);
    rewind(f);
    n = fread(got, 1, sizeof got, f);
    CHECKF(n == sizeof want0 + sizeof want && !memcmp(got, want0, sizeof want0) && !memcmp(got + sizeof want0, want, sizeof want),
           "%zu bytes, not the fixtures' %zu", n, sizeof want0 + sizeof want);
    fclose(f);
}

/* An event file's records decoded: each record's CRCs checked; per record
   its step, file_version (or ""), and its values (tags, floats) */
typedef struct tf_rec {
    int64_t step;
    char version[32];
    int n;
    char tag[12][64];
    float val[12];
} tf_rec;
static int tf_read(const char *path, tf_rec *out, int cap) {
    unsigned char buf[1 << 14], *p, *end;
    size_t len;
    int n = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    for (p = buf; p + 12 <= buf + len && n < cap; n++) {
        uint64_t dl = (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
        uint32_t c = crc_bits(p, 8);
        unsigned char *d = p + 12;
        tf_rec *r = &out[n];
        memset(r, 0, sizeof *r);
        if (le32(p + 8) != (((c >> 15) | (c << 17)) + 0xa282ead8u) || d + dl + 4 > buf + len) return -2;
        c = crc_bits(d, (size_t)dl);
        if (le32(d + dl) != (((c >> 15) | (c << 17)) + 0xa282ead8u)) return -3;
        for (end = d + dl; d < end;) { /* the Event's fields */
            int key = *d++;
            uint64_t x = 0;
            int sh = 0;
            if (key == 0x09) d += 8;
            else if (key == 0x10) {
                do x |= (uint64_t)(*d & 0x7f) << sh, sh += 7; while (*d++ & 0x80);
                r->step = (int64_t)x;
            } else if (key == 0x1a) {
                size_t l = *d++;
                memcpy(r->version, d, l < 31 ? l : 31);
                d += l;
            } else if (key == 0x2a) {
                do x |= (uint64_t)(*d & 0x7f) << sh, sh += 7; while (*d++ & 0x80);
                while (x > 0 && r->n < 12) { /* Summary.value: 0x0a len 0x0a taglen tag 0x15 float */
                    size_t vl = d[1], tl = d[3];
                    uint32_t fb = le32(d + 4 + tl + 1);
                    if (d[0] != 0x0a || d[2] != 0x0a || d[4 + tl] != 0x15) return -4;
                    memcpy(r->tag[r->n], d + 4, tl < 63 ? tl : 63);
                    memcpy(&r->val[r->n], &fb, 4);
                    r->n++;
                    d += 2 + vl;
                    x -= 2 + vl;
                }
            } else
                return -5;
        }
        p += 12 + dl + 4;
    }
    return n;
}
static float tf_val(const tf_rec *r, const char *tag) {
    int i;
    for (i = 0; i < r->n; i++)
        if (!strcmp(r->tag[i], tag)) return r->val[i];
    return NAN;
}

static void test_file_monitors(const char *dir) {
    job J;
    char path[700], line[256], victim[700];
    struct dirent *de;
    DIR *d;
    tf_rec rec[8];
    int n = -1, s, rows = 0;
    FILE *f;
    memset(&J, 0, sizeof J);
    J.world = 2, J.stage = 2, J.steps = 5, J.late_rank = -1, J.files = dir;
    CHECK(run(&J));
    snprintf(path, sizeof path, "%s/tb", dir);
    d = opendir(path);
    CHECKF(d != NULL, "tensorboard: %s not made", path);
    while (d && (de = readdir(d)))
        if (!strncmp(de->d_name, "events.out.tfevents.", 20)) {
            snprintf(path, sizeof path, "%s/tb/%s", dir, de->d_name);
            n = tf_read(path, rec, 8);
        }
    if (d) closedir(d);
    CHECKF(n == 6, "the event file: %d records (want the version and 5 steps; < 0: malformed)", n);
    if (n == 6) {
        CHECK(!strcmp(rec[0].version, "brain.Event:2"));
        for (s = 0; s < 5; s++) {
            const tf_rec *r = &rec[s + 1];
            const zero_step_info *in = &J.info[s];
            CHECKF(r->step == in->global_steps * 4, "step %d: event step %lld, samples %lld", s, (long long)r->step,
                   (long long)in->global_steps * 4);
            CHECK(tf_val(r, "Train/Samples/train_loss") == (float)(10.0 + s));
            /* (loss_scale with fp16 alone, as DeepSpeed) */
            CHECK(tf_val(r, "Train/Samples/lr") == (float)in->lr && isnan(tf_val(r, "Train/Samples/loss_scale")));
            CHECK(tf_val(r, "Train/Samples/grad_norm") == (float)in->grad_norm);
            CHECK(tf_val(r, "Train/Samples/skipped_steps") == (float)in->skipped_steps);
            CHECK(tf_val(r, "Train/Samples/device_memory_bytes") > 0);
        }
    }
    snprintf(path, sizeof path, "%s/csv/Train_Samples_lr.csv", dir);
    f = fopen(path, "r");
    CHECKF(f && fgets(line, sizeof line, f) && !strcmp(line, "step,lr\n"), "%s: no \"step,lr\" header", path);
    while (f && fgets(line, sizeof line, f)) {
        long long st;
        double v;
        CHECKF(rows < 5 && sscanf(line, "%lld,%lg", &st, &v) == 2 && st == J.info[rows].global_steps * 4 &&
                   (float)v == (float)J.info[rows].lr,
               "%s row %d: %s", path, rows, line);
        rows++;
    }
    if (f) fclose(f);
    CHECKF(rows == 5, "%s: %d rows", path, rows);
    snprintf(path, sizeof path, "%s/csv/Train_Samples_train_loss.csv", dir);
    f = fopen(path, "r");
    CHECKF(f && fgets(line, sizeof line, f) && !strcmp(line, "step,train_loss\n") && fgets(line, sizeof line, f) &&
               !strcmp(line, "4,10\n"),
           "%s: header and first row", path);
    if (f) fclose(f);
    /* a CSV file that is a symbolic link: not written through; a warning, and training goes on */
    snprintf(victim, sizeof victim, "%s/victim_csv", dir);
    f = fopen(victim, "w");
    CHECK(f && fputs("keep", f) >= 0 && fclose(f) == 0);
    snprintf(path, sizeof path, "%s/csv/Train_Samples_train_loss.csv", dir);
    unlink(path);
    CHECK(symlink(victim, path) == 0);
    clear_logs();
    CHECK(run(&J));
    f = fopen(victim, "r");
    CHECK(f && fgets(line, sizeof line, f) && !strcmp(line, "keep"));
    if (f) fclose(f);
    {
        int i, warned = 0;
        for (i = 0; i < n_logs; i++)
            warned += logs[i].item == ZERO_MSG_ENGINE_METRICS && strstr(logs[i].text, "csv_monitor") && strstr(logs[i].text, "training goes on");
        CHECKF(warned == 1, "%d csv_monitor warnings for a linked file (want one)", warned);
    }
    /* an output_path that is a regular file: create fails, naming it */
    snprintf(path, sizeof path, "%s/victim_csv", dir);
    J.files = path;
    CHECK(!run(&J));
    CHECKF(J.r[0] == ZERO_ERR_IO && strstr(J.msg[0], "tensorboard") && strstr(J.msg[0], path), "rank 0: %s", J.msg[0]);
}

static void test_progress(void) {
    job J;
    int k, found = 0;
    memset(&J, 0, sizeof J);
    J.world = 2, J.stage = 1, J.steps = 4, J.late_rank = -1, J.total = 10;
    clear_logs();
    CHECK(run(&J));
    for (k = 0; k < n_logs; k++) /* every rank logs it at info level; the default sink prints rank 0's */
        if (logs[k].item == ZERO_MSG_ENGINE_PROGRESS && logs[k].rank == 0) {
            found++;
            CHECK_STR_CONTAINS(logs[k].text, found == 1 ? "step=2/10" : "step=4/10");
            CHECK_STR_CONTAINS(logs[k].text, found == 1 ? "loss=11" : "loss=13");
            CHECK_STR_CONTAINS(logs[k].text, "samples/s=");
            CHECK_STR_CONTAINS(logs[k].text, "eta=");
        }
    CHECKF(found == 2, "%d progress lines (steps_per_print 2, 4 steps)", found);
}

/* The units the engine cuts the test's tensors into on 2 ranks (each makes one reduce-scatter a step at stage 2). */
static int unit_count(const job *J) {
    zero_config c = make_cfg(J);
    zero_layout *L;
    zero_layout_args la;
    zero_tensor ts[NT];
    zero_error err;
    int t, units = -1;
    memset(ts, 0, sizeof ts);
    memset(&la, 0, sizeof la);
    for (t = 0; t < NT; t++) ts[t].name = t == 0 ? "a" : t == 1 ? "b" : t == 2 ? "c" : t == 3 ? "d" : "e",
                             ts[t].numel = SIZES[t], ts[t].group = t;
    la.world = 2;
    la.bucket_elems = c.zero_optimization.reduce_bucket_size;
    CHECK(zero_layout_create(&L, ts, NT, &la, &err) == ZERO_OK);
    if (L) units = zero_layout_unit_count(L), zero_layout_destroy(L);
    return units;
}

static void test_debug(void) {
    job J;
    int k, i, n[2] = {0, 0}, rs0 = 0, same = 1;
    static char seq[2][512][160];
    memset(&J, 0, sizeof J);
    J.world = 2, J.stage = 2, J.steps = 3, J.late_rank = -1;
    clear_logs();
    setenv("ZERO_DEBUG", "1", 1);
    CHECK(run(&J));
    unsetenv("ZERO_DEBUG");
    for (k = 0; k < n_logs; k++) {
        int r = logs[k].rank;
        const char *c;
        if (logs[k].item != ZERO_MSG_ENGINE_COLLECTIVE || r < 0 || r > 1) continue;
        CHECK(logs[k].level == ZERO_LOG_DEBUG);
        /* "collective #N: OP of unit U (...) for KIND: ..." : compare what comes after the number */
        c = strchr(logs[k].text, ':');
        if (n[r] < 512 && c) snprintf(seq[r][n[r]], sizeof seq[r][n[r]], "%.150s", c);
        if (r == 0 && strstr(logs[k].text, "reduce-scatter") && strstr(logs[k].text, "gradient reduction")) rs0++;
        CHECK(strstr(logs[k].text, "bytes") && strstr(logs[k].text, "stream"));
        n[r]++;
    }
    for (i = 0; i < n[0] && i < n[1]; i++) same &= strcmp(seq[0][i], seq[1][i]) == 0;
    CHECKF(n[0] > 0 && n[0] == n[1] && same, "ranks logged %d and %d collectives%s", n[0], n[1],
           same ? "" : ", in different order");
    {
        int units = unit_count(&J);
        CHECKF(rs0 == units * J.steps, "%d gradient reduce-scatters logged, want %d units x %d steps", rs0, units,
               J.steps);
    }
}

static void test_watchdog(void) {
    job J;
    int k, found = 0, late_found = 0;
    memset(&J, 0, sizeof J);
    J.world = 2, J.stage = 2, J.steps = 2, J.late_rank = 1, J.late_ms = 1300;
    clear_logs();
    setenv("ZERO_WATCHDOG_S", "0.4", 1);
    CHECK(run(&J)); /* late, not lost: training goes on */
    for (k = 0; k < n_logs; k++)
        if (logs[k].item == ZERO_MSG_ENGINE_WATCHDOG) {
            if (logs[k].rank == 1) late_found++;
            if (logs[k].rank != 0) continue;
            found++;
            CHECK(logs[k].level == ZERO_LOG_WARN);
            CHECK_STR_CONTAINS(logs[k].text, "watchdog: waiting");
            CHECK_STR_CONTAINS(logs[k].text, "of unit ");
            CHECK_STR_CONTAINS(logs[k].text, "step ");
        }
    CHECKF(found >= 2, "rank 0 (waiting 1.3 s per step for rank 1, threshold 0.4 s) logged %d watchdog lines", found);
    CHECKF(late_found == 0, "the late rank logged %d watchdog lines (it never waits)", late_found);
    for (k = 0; k < n_logs; k++)
        if (logs[k].item == ZERO_MSG_ENGINE_WATCHDOG && logs[k].rank == 0) {
            printf("test_observe: rank 0's watchdog said: %s\n", logs[k].text);
            break;
        }
    /* a value that is not a number: a warning naming it, the default (as every ZERO_* variable) */
    setenv("ZERO_WATCHDOG_S", "soon", 1);
    J.late_rank = -1;
    clear_logs();
    CHECK(run(&J));
    found = 0;
    for (k = 0; k < n_logs; k++)
        found += logs[k].item == ZERO_MSG_ENV_INVALID && strstr(logs[k].text, "ZERO_WATCHDOG_S=soon") != NULL;
    CHECKF(found == 2, "%d ENV_INVALID warnings for ZERO_WATCHDOG_S=soon (one per rank)", found);
    setenv("ZERO_WATCHDOG_S", "0", 1); /* off */
    CHECK(run(&J));
    unsetenv("ZERO_WATCHDOG_S");
}


/* ---- ZERO_TIMELINE ---- */

/* The trace of rank `rank` under prefix, read back with the header's own
   parser: the number of events whose name starts with `name` (and, cat
   given, of that category); -1 when the file is missing or not JSON. */
typedef struct tl_file {
    char *text;
    size_t n;
    zero__json j;
    int ok, events;  /* parsed; the traceEvents array's node */
} tl_file;
static int tl_read(tl_file *f, const char *prefix, int rank) {
    char path[700];
    FILE *fp;
    zero_error err;
    long n;
    memset(f, 0, sizeof *f);
    snprintf(path, sizeof path, "%s.rank%d.json", prefix, rank);
    if (!(fp = fopen(path, "rb"))) return 0;
    if (fseek(fp, 0, SEEK_END) == 0 && (n = ftell(fp)) > 0 && fseek(fp, 0, SEEK_SET) == 0 &&
        (f->text = (char *)malloc((size_t)n + 1)) && fread(f->text, 1, (size_t)n, fp) == (size_t)n) {
        f->n = (size_t)n;
        f->ok = zero__json_parse(&f->j, f->text, f->n, &err) == ZERO_OK;
        if (!f->ok) fprintf(stderr, "%s: %s\n", path, err.msg);
    }
    fclose(fp);
    if (f->ok) f->events = zero__json_get(&f->j, 0, "traceEvents");
    return f->ok && f->events >= 0 && f->j.nodes[f->events].type == ZERO__JSON_ARRAY;
}
static void tl_done(tl_file *f) {
    if (f->ok) zero__json_free(&f->j);
    free(f->text);
}
/* events named `name...` of category cat (NULL: any); *bad counts X events with a negative start or length */
static int tl_count(const tl_file *f, const char *name, const char *cat, int *bad) {
    int c, n = 0;
    for (c = f->j.nodes[f->events].first; c >= 0; c = f->j.nodes[c].next) {
        int nm = zero__json_get(&f->j, c, "name"), ts = zero__json_get(&f->j, c, "ts"), du = zero__json_get(&f->j, c, "dur");
        if (nm < 0 || f->j.nodes[nm].type != ZERO__JSON_STRING) continue;
        if (f->j.nodes[nm].end - f->j.nodes[nm].start < strlen(name) ||
            memcmp(f->text + f->j.nodes[nm].start, name, strlen(name)) != 0)
            continue;
        if (cat && !jstr_is(&f->j, c, "cat", cat)) continue;
        if (bad && ts >= 0 && (f->j.nodes[ts].number < 0 || (du >= 0 && f->j.nodes[du].number < 0))) (*bad)++;
        {   /* a group of collectives counts as its members (args.group) */
            int args = zero__json_get(&f->j, c, "args"), g = args >= 0 ? zero__json_get(&f->j, args, "group") : -1;
            n += g >= 0 && f->j.nodes[g].type == ZERO__JSON_NUMBER ? (int)f->j.nodes[g].number : 1;
        }
    }
    return n;
}

static void test_timeline(const char *dir) {
    int stage;
    for (stage = 2; stage <= 3; stage++) {
        job J, K;
        char prefix[600];
        int rank, k, lines = 0, units;
        memset(&J, 0, sizeof J);
        memset(&K, 0, sizeof K);
        J.world = 2, J.stage = stage, J.steps = 4, J.late_rank = -1;
        K = J;
        CHECK(run(&K)); /* without */
        snprintf(prefix, sizeof prefix, "%s/tl%d", dir, stage);
        setenv("ZERO_TIMELINE", prefix, 1);
        setenv("ZERO_TIMELINE_STEP", "2", 1);
        clear_logs();
        CHECK(run(&J));
        unsetenv("ZERO_TIMELINE");
        unsetenv("ZERO_TIMELINE_STEP");
        for (k = 0; k < J.steps; k++)
            CHECKF(J.info[k].grad_norm == K.info[k].grad_norm && J.info[k].loss_scale == K.info[k].loss_scale,
                   "stage %d step %d: grad norm %.17g with the timeline, %.17g without", stage, k, J.info[k].grad_norm,
                   K.info[k].grad_norm);
        units = unit_count(&J);
        for (rank = 0; rank < 2; rank++) {
            tl_file f;
            int bad = 0, other;
            CHECKF(tl_read(&f, prefix, rank), "stage %d rank %d: %s.rank%d.json missing or not a trace", stage, rank,
                   prefix, rank);
            if (!f.ok || f.events < 0) {
                tl_done(&f);
                continue;
            }
            other = jobj(&f.j, 0, "otherData");
            CHECK(other >= 0 && jnum(&f.j, other, "step") == 2 && jnum(&f.j, other, "rank") == rank &&
                  jnum(&f.j, other, "world") == 2 && jnum(&f.j, other, "stage") == stage);
            /* one step of one micro-batch: each tensor's gradient once, one zero_step; at stage 3 each fetched once */
            CHECKF(tl_count(&f, "zero_grad_ready", "call", NULL) == NT && tl_count(&f, "zero_step", "call", NULL) == 1,
                   "stage %d rank %d: %d zero_grad_ready, %d zero_step calls", stage, rank,
                   tl_count(&f, "zero_grad_ready", "call", NULL), tl_count(&f, "zero_step", "call", NULL));
            CHECK(tl_count(&f, "zero_fetch", "call", NULL) == (stage == 3 ? NT : 0));
            /* the step's gradient reduce-scatters, one per unit, each timed (test_debug counts the same) */
            CHECKF(tl_count(&f, "reduce-scatter", "collective", &bad) == units,
                   "stage %d rank %d: %d reduce-scatters timed, %d units", stage, rank,
                   tl_count(&f, "reduce-scatter", "collective", NULL), units);
            CHECK(tl_count(&f, "all-gather", "collective", &bad) >= (stage == 3 ? 1 : units));
            CHECK(tl_count(&f, "waits for ", "wait", &bad) >= 1);
            CHECKF(bad == 0, "stage %d rank %d: %d events with a negative start or length", stage, rank, bad);
            tl_done(&f);
        }
        for (k = 0; k < n_logs; k++)
            if (logs[k].item == ZERO_MSG_ENGINE_TIMELINE) {
                CHECK_STR_CONTAINS(logs[k].text, "step 2, rank");
                CHECK_STR_CONTAINS(logs[k].text, "the communication stream busy");
                CHECK_STR_CONTAINS(logs[k].text, prefix);
                lines++;
            }
        CHECKF(lines == 2, "stage %d: %d timeline lines, want one per rank", stage, lines);
    }
    { /* a step past the run's end: nothing written, said; a bad step number: step 3, said */
        job J;
        char prefix[600], path[700];
        int k, said = 0, warned = 0;
        memset(&J, 0, sizeof J);
        J.world = 2, J.stage = 2, J.steps = 4, J.late_rank = -1;
        snprintf(prefix, sizeof prefix, "%s/late", dir);
        setenv("ZERO_TIMELINE", prefix, 1);
        setenv("ZERO_TIMELINE_STEP", "9", 1);
        clear_logs();
        CHECK(run(&J));
        for (k = 0; k < n_logs; k++) said += logs[k].item == ZERO_MSG_ENGINE_TIMELINE && strstr(logs[k].text, "ended before step 9");
        snprintf(path, sizeof path, "%s.rank0.json", prefix);
        CHECKF(said == 2 && access(path, F_OK) != 0, "%d lines say the run ended first", said);
        setenv("ZERO_TIMELINE_STEP", "second", 1);
        clear_logs();
        CHECK(run(&J));
        for (k = 0; k < n_logs; k++)
            warned += logs[k].item == ZERO_MSG_ENV_INVALID && strstr(logs[k].text, "ZERO_TIMELINE_STEP=second");
        CHECKF(warned >= 1 && access(path, F_OK) == 0, "ZERO_TIMELINE_STEP=second: %d warnings", warned);
        unsetenv("ZERO_TIMELINE_STEP");
        { /* a symbolic link where the trace goes: replaced by the trace, the file it named untouched */
            char victim[700], buf[16] = "";
            FILE *f;
            tl_file tf;
            snprintf(victim, sizeof victim, "%s/victim2", dir);
            f = fopen(victim, "w");
            CHECK(f && fputs("keep", f) >= 0 && fclose(f) == 0);
            unlink(path);
            CHECK(symlink(victim, path) == 0);
            CHECK(run(&J));
            f = fopen(victim, "r");
            CHECK(f && fgets(buf, sizeof buf, f) && !strcmp(buf, "keep"));
            if (f) fclose(f);
            CHECK(tl_read(&tf, prefix, 0));
            tl_done(&tf);
        }
        { /* ZERO_TIMELINE_EVENTS: a count too small for the step writes what fits and says so; a bad one warns */
            tl_file tf;
            int ran_out = 0, bad = 0;
            setenv("ZERO_TIMELINE_EVENTS", "16", 1);
            clear_logs();
            CHECK(run(&J));
            for (k = 0; k < n_logs; k++)
                ran_out += logs[k].item == ZERO_MSG_ENGINE_TIMELINE && strstr(logs[k].text, "events ran out") &&
                           strstr(logs[k].text, "ZERO_TIMELINE_EVENTS raises the count");
            CHECKF(ran_out == 2, "ZERO_TIMELINE_EVENTS=16: %d lines say the events ran out", ran_out);
            CHECK(tl_read(&tf, prefix, 0));
            if (tf.ok) {
                int other = jobj(&tf.j, 0, "otherData"), cpl = other >= 0 ? zero__json_get(&tf.j, other, "complete") : -1;
                CHECK(cpl >= 0 && tf.j.nodes[cpl].type == ZERO__JSON_FALSE);
            }
            tl_done(&tf);
            setenv("ZERO_TIMELINE_EVENTS", "8", 1);
            clear_logs();
            CHECK(run(&J));
            for (k = 0; k < n_logs; k++)
                bad += logs[k].item == ZERO_MSG_ENV_INVALID && strstr(logs[k].text, "ZERO_TIMELINE_EVENTS=8");
            CHECKF(bad >= 1, "ZERO_TIMELINE_EVENTS=8: %d warnings", bad);
            unsetenv("ZERO_TIMELINE_EVENTS");
        }
        unsetenv("ZERO_TIMELINE");
    }
}

int main(void) {
    char dir[] = "/tmp/zero_observe_XXXXXX";
    char buf[64];
    zt_seed("test_observe");
    snprintf(buf, sizeof buf, "%d.%d.%d", ZERO_VERSION_MAJOR, ZERO_VERSION_MINOR, ZERO_VERSION_PATCH);
    CHECK(strcmp(zero_version(), buf) == 0);
    if (!mkdtemp(dir)) {
        CHECKF(0, "mkdtemp");
        return zt_finish();
    }
    test_monitor(dir);
    test_tf_bytes();
    test_file_monitors(dir);
    { /* the metrics file is a FIFO: create fails naming it, instead of waiting for a reader */
        job J;
        char fifo[600];
        memset(&J, 0, sizeof J);
        snprintf(fifo, sizeof fifo, "%s/fifo.jsonl", dir);
        CHECK(mkfifo(fifo, 0644) == 0);
        J.world = 2, J.stage = 1, J.steps = 1, J.late_rank = -1, J.monitor = dir, J.job_name = "fifo";
        alarm(60);
        CHECK(!run(&J));
        alarm(0);
        CHECKF(strstr(J.msg[0], "fifo.jsonl: exists and is not a regular file (a FIFO)") != NULL, "%s", J.msg[0]);
        unlink(fifo);
    }
    { /* the metrics file is a symbolic link (to a file outside): refused, the file it names untouched */
        job J;
        char link[600], victim[600], buf[16] = "";
        FILE *f;
        memset(&J, 0, sizeof J);
        snprintf(link, sizeof link, "%s/link.jsonl", dir);
        snprintf(victim, sizeof victim, "%s/victim", dir);
        f = fopen(victim, "w");
        CHECK(f && fputs("keep", f) >= 0 && fclose(f) == 0);
        CHECK(symlink(victim, link) == 0);
        J.world = 2, J.stage = 1, J.steps = 1, J.late_rank = -1, J.monitor = dir, J.job_name = "link";
        CHECK(!run(&J));
        CHECKF(strstr(J.msg[0], "link.jsonl") && strstr(J.msg[0], "symbolic link"), "%s", J.msg[0]);
        f = fopen(victim, "r");
        CHECK(f && fgets(buf, sizeof buf, f) && !strcmp(buf, "keep"));
        if (f) fclose(f);
        unlink(link);
        unlink(victim);
    }
    test_progress();
    test_debug();
    test_watchdog();
    test_timeline(dir);
    {
        char cmd[700];
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    }
    return zt_finish();
}
