/* test_engine_floor.c - what an offloaded step moves and what it costs at best,
   on host ranks.

   The step's copy counters (zero_step_info.bytes_to_device / bytes_to_host,
   per phase) against an independent count: a wrapper around the host
   backend records every allocation with its kind and sorts every copy the
   engine issues into host to device, device to host, or neither, by where
   src and dst point; the program marks its own phase (forward, backward
   from the micro-batch's first zero_grad, the step; zero_engine_create's
   copies go into the first step's report). The two agree exactly on every
   rank and step: stage 3 with offload_param and offload_optimizer
   "cpu" (1 and 2 ranks, gas 1 and 2, fp16 and fp32), offload_param with
   the optimizer on the device, stage 2 and 1 with offload_optimizer,
   delayed_param_update, the early CPU step, and no offload (stages 0 and
   2). Bounds from the model's sizes: the forward's parameter fetches
   (offload_param), the backward's gradient chunks (offload_optimizer), and
   almost nothing without offload. cpu_adam_bytes: the owned trainable
   elements times 24 + gradient + compute dtype sizes, summed over ranks the
   model's; 0 without offload_optimizer, on a step skipped by fp16 overflow
   and on zero_skip_step. zero_floor_of for the three schedules
   (sequential, early, delayed, overlapped) against the formula in double, the duplex
   term won and lost, its errors (NULL arguments, bad bandwidths, negative
   counts), after which the engine trains on. NVMe (offload_param and
   offload_optimizer "nvme" through zero_offload_backend's tile store):
   nvme_bytes_read / _written per phase against the wrapper's count of the
   tile reads and writes, exactly, the optimizer's tiles 12 bytes an owned
   element each way in an applied step, and their term in zero_floor_of
   (beside the copies, beside the Adam) with its bandwidth errors.
   zero_cpu_memory_bandwidth: finite and > 0 with and without a pool; its
   argument errors; _ready: its callback once, before the timed passes, and
   a failing one's result and error returned.

   Run alone: make test T=test_engine_floor */
#define _POSIX_C_SOURCE 200809L /* mkdtemp (the NVMe jobs' directory) */
#ifndef ZERO_TEST_SHARED_IMPL /* (tests/run.sh links tests/zero_impl.c's build instead) */
#define ZERO_IMPLEMENTATION
#endif
#include "zero.h"
#include "zero_offload.h"
#include "zero_test.h"

#include <pthread.h>

enum { NT = 6, TOTAL = 1145, MAXW = 2, STEPS = 4, NPH = ZERO_XFER_PHASE_COUNT };
/* 1145 elements: 2290 bytes in fp16, more than the 1 KB bound of a step
   without offload, so a parameter or gradient copy of the whole model
   could not hide under it */
static const int64_t SIZES[NT] = {1, 37, 600, 7, 300, 200};
enum { FROZEN_T = 1 }; /* the tensor frozen where a job asks for one */
static const char *const PHASE[NPH] = {"forward", "backward", "step"};

/* ---- the counting backend ----

   The backend the rank gets, with alloc, free and copy replaced by
   functions that call the originals. ctx stays the host backend's (every
   other function needs it); the wrappers find their rank's tally by it. */

typedef struct span {
    uintptr_t lo, hi;
    int kind;
} span;

typedef struct tally {
    void *ctx;
    zero_result (*alloc)(void *ctx, zero_mem_kind kind, size_t bytes, void **out, zero_error *err);
    void (*free)(void *ctx, zero_mem_kind kind, void *p);
    zero_result (*copy)(void *ctx, void *dst, const void *src, size_t bytes, zero_stream_id s, zero_error *err);
    zero_result (*tiles_read)(void *store, int64_t tile, void *buf, size_t bytes, void **req, zero_error *err);
    zero_result (*tiles_write)(void *store, int64_t tile, const void *buf, size_t bytes, void **req, zero_error *err);
    span *spans; /* live allocations */
    int n, cap, lost; /* lost: the table could not grow */
    int phase;        /* ZERO_XFER_*: set by the training loop */
    int64_t to_dev[NPH], to_host[NPH];
    int64_t outside;  /* copies with src or dst in no allocation of this backend */
    int64_t nvme_rd[NPH], nvme_wr[NPH]; /* tile data read and written */
} tally;

/* The tile store's calls carry no backend context: the one rank whose
   thread issues them is found by the thread (each rank runs on its own). */
static _Thread_local tally *tile_tally;


static tally *tally_of(void *ctx) { return (tally *)zt_wrap_of(ctx); }

static int kind_at(const tally *t, const void *p) {
    uintptr_t a = (uintptr_t)p;
    int i;
    for (i = 0; i < t->n; i++)
        if (a >= t->spans[i].lo && a < t->spans[i].hi) return t->spans[i].kind;
    return -1;
}

static zero_result w_alloc(void *ctx, zero_mem_kind kind, size_t bytes, void **out, zero_error *err) {
    tally *t = tally_of(ctx);
    zero_result r = t->alloc(ctx, kind, bytes, out, err);
    if (r == ZERO_OK && *out) {
        if (t->n == t->cap) {
            int cap = t->cap ? 2 * t->cap : 64;
            span *s = (span *)realloc(t->spans, sizeof(span) * (size_t)cap);
            if (!s) {
                t->lost = 1;
                return r;
            }
            t->spans = s;
            t->cap = cap;
        }
        t->spans[t->n].lo = (uintptr_t)*out;
        t->spans[t->n].hi = (uintptr_t)*out + bytes;
        t->spans[t->n++].kind = (int)kind;
    }
    return r;
}

static void w_free(void *ctx, zero_mem_kind kind, void *p) {
    tally *t = tally_of(ctx);
    int i;
    for (i = 0; i < t->n; i++)
        if (t->spans[i].lo == (uintptr_t)p) {
            t->spans[i] = t->spans[--t->n];
            break;
        }
    t->free(ctx, kind, p);
}

static zero_result w_copy(void *ctx, void *dst, const void *src, size_t bytes, zero_stream_id s, zero_error *err) {
    tally *t = tally_of(ctx);
    int ks = kind_at(t, src), kd = kind_at(t, dst);
    int hs = ks == ZERO_MEM_PINNED || ks == ZERO_MEM_HOST, hd = kd == ZERO_MEM_PINNED || kd == ZERO_MEM_HOST;
    if (ks < 0 || kd < 0) t->outside++;
    else if (hs && kd == ZERO_MEM_DEVICE) t->to_dev[t->phase] += (int64_t)bytes;
    else if (ks == ZERO_MEM_DEVICE && hd) t->to_host[t->phase] += (int64_t)bytes;
    return t->copy(ctx, dst, src, bytes, s, err);
}

static zero_result w_tiles_read(void *store, int64_t tile, void *buf, size_t bytes, void **req, zero_error *err) {
    zero_result r = tile_tally->tiles_read(store, tile, buf, bytes, req, err);
    if (r == ZERO_OK) tile_tally->nvme_rd[tile_tally->phase] += (int64_t)bytes;
    return r;
}

static zero_result w_tiles_write(void *store, int64_t tile, const void *buf, size_t bytes, void **req, zero_error *err) {
    zero_result r = tile_tally->tiles_write(store, tile, buf, bytes, req, err);
    if (r == ZERO_OK) tile_tally->nvme_wr[tile_tally->phase] += (int64_t)bytes;
    return r;
}

/* *out: base counting into t (registered as rank's) */
static void tally_wrap(tally *t, int rank, const zero_backend *base, zero_backend *out) {
    memset(t, 0, sizeof *t);
    t->ctx = base->ctx;
    t->alloc = base->alloc;
    t->free = base->free;
    t->copy = base->copy;
    *out = *base;
    out->alloc = w_alloc;
    out->free = w_free;
    out->copy = w_copy;
    t->tiles_read = base->tiles_read;
    t->tiles_write = base->tiles_write;
    if (base->tiles_read) out->tiles_read = w_tiles_read;
    if (base->tiles_write) out->tiles_write = w_tiles_write;
    tile_tally = t;
    zt_wrap_set(rank, t->ctx, t);
}

static void tally_done(tally *t, int rank) {
    zt_wrap_set(rank, NULL, NULL);
    free(t->spans);
}

/* ---- zero_floor_of's formula, from zero.h's description, in double ---- */

/* a phase's copies: the larger of each direction alone and both at once
   through the duplex figure (0: the faster direction's), ms */
static double ref_copies(int64_t d, int64_t h, const zero_bandwidths *bw) {
    double dup = bw->duplex > 0 ? bw->duplex : fmax(bw->h2d, bw->d2h), t = 0;
    if (d > 0) t = fmax(t, (double)d / bw->h2d);
    if (h > 0) t = fmax(t, (double)h / bw->d2h);
    if (d > 0 && h > 0) t = fmax(t, (double)(d + h) / dup);
    return 1e3 * t;
}

typedef enum sched { SEQUENTIAL = 1, EARLY, DELAYED, OVERLAPPED } sched;

/* checks out against the formula for the schedule this engine and info give */
static void check_floor(const zero_step_info *in, const zero_bandwidths *bw, const zero_floor *out, sched engine,
                        const char *what) {
    double c[NPH], nv[NPH], adam = in->cpu_adam_bytes > 0 ? 1e3 * (double)in->cpu_adam_bytes / bw->host : 0, want;
    const char *name;
    int k;
    for (k = 0; k < NPH; k++) {
        c[k] = ref_copies(in->bytes_to_device[k], in->bytes_to_host[k], bw);
        CHECKF(zt_near(out->copy_ms[k], c[k], 1e-9), "%s: copy_ms[%s] %.17g, want %.17g", what, PHASE[k],
               out->copy_ms[k], c[k]);
        /* a phase's NVMe: its reads, then its writes */
        nv[k] = 1e3 * ((in->nvme_bytes_read[k] > 0 ? (double)in->nvme_bytes_read[k] / bw->nvme_read : 0) +
                       (in->nvme_bytes_written[k] > 0 ? (double)in->nvme_bytes_written[k] / bw->nvme_write : 0));
        CHECKF(zt_near(out->nvme_ms[k], nv[k], 1e-9), "%s: nvme_ms[%s] %.17g, want %.17g", what, PHASE[k],
               out->nvme_ms[k], nv[k]);
    }
    CHECKF(zt_near(out->adam_ms, adam, 1e-9), "%s: adam_ms %.17g, want %.17g", what, out->adam_ms, adam);
    { /* host memory's load: the CPU's adds, the CPU Adam, every PCIe and NVMe byte once, at bw->host */
        double hb = (double)in->cpu_sum_bytes + (double)in->cpu_adam_bytes;
        for (k = 0; k < NPH; k++)
            hb += (double)in->bytes_to_device[k] + (double)in->bytes_to_host[k] + (double)in->nvme_bytes_read[k] +
                  (double)in->nvme_bytes_written[k];
        CHECKF(zt_near(out->host_bytes, hb, 1e-12) && zt_near(out->host_ms, bw->host > 0 ? 1e3 * hb / bw->host : 0, 1e-9),
               "%s: host memory %.17g bytes, %.17g ms; want %.17g bytes", what, out->host_bytes, out->host_ms, hb);
    }
    /* the forward's and the backward's NVMe beside their copies, the step's beside the Adam */
    c[0] = fmax(c[0], nv[0]);
    c[1] = fmax(c[1], nv[1]);
    adam = fmax(adam, nv[2]);
    if (engine == DELAYED) { /* the Adam beside the whole next step */
        name = "delayed";
        want = fmax(c[0] + c[1] + c[2], adam);
    } else if (engine == OVERLAPPED && in->cpu_units_overlapped > 0) { /* the Adam beside the next forward */
        name = "overlapped";
        want = fmax(c[0], adam) + c[1] + c[2];
    } else if (engine == EARLY && in->cpu_units_early > 0) { /* the Adam beside the backward */
        name = "early";
        want = c[0] + fmax(c[1], adam) + c[2];
    } else { /* the Adam after the backward, beside the step's copies */
        name = "sequential";
        want = c[0] + c[1] + fmax(c[2], adam);
    }
    CHECKF(zt_near(out->floor_ms, want, 1e-9), "%s: floor_ms %.17g, want %.17g (%s)", what, out->floor_ms, want, name);
    CHECKF(out->schedule && !strcmp(out->schedule, name), "%s: schedule %s, want %s", what,
           out->schedule ? out->schedule : "(null)", name);
}

/* ---- a job: one engine configuration on 1 or 2 host ranks ---- */

typedef struct job {
    const char *name;
    int stage, dtype, world, gas;
    int ooff, poff, pin, dpu, pool, frozen; /* ooff, poff: 1 "cpu", 2 "nvme" (in dir) */
    const char *dir;
    int no_overlap; /* cfg.overlap_cpu_step = 0 */
    double clip;
    int64_t bucket;
    int inf_step;  /* >= 0: rank 0 writes an inf gradient in this step */
    int skip_step; /* >= 0: zero_skip_step in this step */
    sched floor;   /* zero_floor_of checks after step 1 (world 1: CHECKs on the rank's thread) */
    /* results */
    zero_result r[MAXW];
    char msg[MAXW][1024];
    int done[MAXW]; /* steps completed */
    zero_step_info info[MAXW][STEPS];
    int64_t dev[MAXW][STEPS][NPH], host[MAXW][STEPS][NPH], outside[MAXW][STEPS];
    int64_t nrd[MAXW][STEPS][NPH], nwr[MAXW][STEPS][NPH]; /* the wrapper's tile bytes (create's go into step 0) */
    int64_t cdev[MAXW][NPH], chost[MAXW][NPH]; /* the wrapper's count in zero_engine_create (step 0 reports it) */
    int64_t cnvme[MAXW];                       /* the tile bytes the wrapper saw in zero_engine_create */
    int64_t own_train[MAXW], own_params[MAXW]; /* owned elements: trainable; non-persistent (all tensors) */
    int lost[MAXW];
    int pairs[MAXW]; /* (unit, tensor) pairs */
} job;

/* rank's owned elements, from the layout's geometry: unit u's chunk
   [offset + rank chunk, + chunk) of the padded buffer, against each
   tensor's [offset, + numel) */
static void owned(const zero_engine *e, const job *J, int rank, int64_t *train, int64_t *params, int *pairs) {
    const zero_layout *l = zero_engine_layout(e);
    int u, t;
    *train = *params = 0;
    *pairs = 0;
    for (u = 0; u < zero_layout_unit_count(l); u++) {
        const zero_unit *x = zero_layout_unit(l, u);
        int64_t lo = x->offset + (int64_t)rank * x->chunk, hi = lo + x->chunk;
        for (t = x->first_tensor; t <= x->last_tensor; t++) {
            const zero_tensor_place *p = zero_layout_tensor(l, t);
            int64_t a = p->offset > lo ? p->offset : lo, b = p->offset + SIZES[t] < hi ? p->offset + SIZES[t] : hi;
            int64_t ov = b > a ? b - a : 0;
            if (!(J->frozen && t == FROZEN_T)) *train += ov;
            if (!x->persistent) *params += ov;
            (*pairs)++;
        }
    }
}

/* zero_floor_of on engine e (schedule s), whose last zero_step reported *real */
static void floor_checks(zero_engine *e, sched s, const zero_step_info *real, const char *name) {
    zero_bandwidths bw;
    zero_floor out;
    zero_step_info in, full, nodev, nohost, noadam;
    char what[160];
    int k, i;
    /* the step the engine reported, at PCIe 4-like figures, an NVMe drive's */
    memset(&bw, 0, sizeof bw);
    bw.nvme_read = 6e9;
    bw.nvme_write = 4e9;
    bw.h2d = 24e9;
    bw.d2h = 20e9;
    bw.duplex = 30e9;
    bw.host = 40e9;
    CHECK(zero_floor_of(e, real, &bw, &out) == ZERO_OK);
    snprintf(what, sizeof what, "%s: the reported step", name);
    check_floor(real, &bw, &out, s, what);
    if (s == EARLY)
        CHECKF(real->cpu_units_early > 0 && out.schedule && !strcmp(out.schedule, "early"),
               "%s: %lld units early, schedule %s", name, (long long)real->cpu_units_early,
               out.schedule ? out.schedule : "(null)");
    if (s == OVERLAPPED)
        CHECKF(real->cpu_units_overlapped > 0 && out.schedule && !strcmp(out.schedule, "overlapped"),
               "%s: %lld units overlapped, schedule %s", name, (long long)real->cpu_units_overlapped,
               out.schedule ? out.schedule : "(null)");

    /* chosen counts: a forward to the device, a backward to the host, a
       step both ways (1 MB each), 50 MB of CPU Adam */
    memset(&in, 0, sizeof in);
    in.bytes_to_device[ZERO_XFER_FORWARD] = 3000000;
    in.bytes_to_host[ZERO_XFER_BACKWARD] = 2000000;
    in.bytes_to_device[ZERO_XFER_STEP] = 1000000;
    in.bytes_to_host[ZERO_XFER_STEP] = 1000000;
    in.cpu_adam_bytes = 50000000;
    in.cpu_units_early = 3;
    in.cpu_units_overlapped = 3;
    for (i = 0; i < 6; i++) {
        /* 0: duplex 15 GB/s, under the sum of the directions: 2 MB / 15 GB/s beats 1 MB / 10 GB/s.
           1: duplex 30 GB/s: the slower direction alone is the step's time.
           2: duplex 0, h2d 12 and d2h 10 GB/s: the faster, 12, stands for it: 2 MB / 12 GB/s wins.
           3-5: the same with a fast host (the Adam under the copies) */
        double dup[3] = {15e9, 30e9, 0}, want;
        bw.h2d = 12e9;
        bw.d2h = 10e9;
        bw.duplex = dup[i % 3];
        bw.host = i < 3 ? 20e9 : 1e12;
        want = i % 3 == 1 ? 1e3 * 1e6 / 10e9 : 1e3 * 2e6 / (i % 3 == 0 ? 15e9 : 12e9);
        CHECKF(zt_near(ref_copies(1000000, 1000000, &bw), want, 1e-12), "case %d: the duplex term", i);
        CHECK(zero_floor_of(e, &in, &bw, &out) == ZERO_OK);
        snprintf(what, sizeof what, "%s: chosen case %d", name, i);
        check_floor(&in, &bw, &out, s, what);
        CHECKF(i < 3 ? out.adam_ms > out.copy_ms[0] + out.copy_ms[1] + out.copy_ms[2]
                     : out.adam_ms < out.copy_ms[ZERO_XFER_STEP] && out.adam_ms < out.copy_ms[ZERO_XFER_BACKWARD],
               "%s: the Adam %.4g ms against copies %.4g %.4g %.4g ms", what, out.adam_ms, out.copy_ms[0],
               out.copy_ms[1], out.copy_ms[2]);
    }
    /* no unit stepped early (or overlapped): those engines' schedule is the sequential one */
    in.cpu_units_early = 0;
    in.cpu_units_overlapped = 0;
    bw.duplex = 0;
    bw.host = 20e9;
    CHECK(zero_floor_of(e, &in, &bw, &out) == ZERO_OK);
    snprintf(what, sizeof what, "%s: no early or overlapped units", name);
    check_floor(&in, &bw, &out, s, what);
    /* random counts (each 0 a third of the time; NVMe's half the time) and bandwidths */
    for (i = 0; i < 40; i++) {
        memset(&in, 0, sizeof in);
        for (k = 0; k < NPH; k++) {
            in.bytes_to_device[k] = zt_rand_int(0, 2) ? zt_rand_int(1, 2000000000) : 0;
            in.bytes_to_host[k] = zt_rand_int(0, 2) ? zt_rand_int(1, 2000000000) : 0;
            in.nvme_bytes_read[k] = zt_rand_int(0, 1) ? zt_rand_int(1, 20000000000) : 0;
            in.nvme_bytes_written[k] = zt_rand_int(0, 1) ? zt_rand_int(1, 20000000000) : 0;
        }
        bw.nvme_read = zt_rand_range(5e8, 1.4e10);
        bw.nvme_write = zt_rand_range(5e8, 1.2e10);
        in.cpu_adam_bytes = zt_rand_int(0, 3) ? zt_rand_int(1, 20000000000) : 0;
        in.cpu_sum_bytes = zt_rand_int(0, 1) ? zt_rand_int(1, 200000000000) : 0;
        in.cpu_units_early = zt_rand_int(0, 1) * zt_rand_int(1, 9);
        in.cpu_units_overlapped = zt_rand_int(0, 1) * zt_rand_int(1, 9);
        bw.h2d = zt_rand_range(1e9, 6e10);
        bw.d2h = zt_rand_range(1e9, 6e10);
        bw.duplex = zt_rand_int(0, 2) ? zt_rand_range(1e9, 1.2e11) : 0;
        bw.host = zt_rand_range(5e9, 3e11);
        CHECK(zero_floor_of(e, &in, &bw, &out) == ZERO_OK);
        snprintf(what, sizeof what, "%s: random case %d", name, i);
        check_floor(&in, &bw, &out, s, what);
    }

    /* errors: NULL arguments (ZERO_MSG_NULL_ARG: ZERO_ERR_INVALID_ARG) */
    bw.h2d = 12e9;
    bw.d2h = 10e9;
    bw.duplex = 15e9;
    bw.host = 20e9;
    memset(&full, 0, sizeof full);
    for (k = 0; k < NPH; k++) full.bytes_to_device[k] = full.bytes_to_host[k] = 1000 * (k + 1);
    full.cpu_adam_bytes = 100000;
    CHECK(zero_floor_of(e, NULL, &bw, &out) == ZERO_ERR_INVALID_ARG);
    CHECK(zero_engine_error(e)->item == ZERO_MSG_NULL_ARG);
    CHECK_STR_CONTAINS(zero_engine_error(e)->msg, "info");
    CHECK(zero_floor_of(e, &full, NULL, &out) == ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(zero_engine_error(e)->msg, "bw");
    CHECK(zero_floor_of(e, &full, &bw, NULL) == ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(zero_engine_error(e)->msg, "out");
    CHECK(zero_engine_error(e)->item == ZERO_MSG_NULL_ARG);
    /* a bandwidth <= 0 or not finite (ZERO_MSG_BAD_ARG: ZERO_ERR_INVALID_ARG) fails where the step has
       bytes for it, and is not looked at where it has none */
    nodev = nohost = noadam = full;
    for (k = 0; k < NPH; k++) nodev.bytes_to_device[k] = nohost.bytes_to_host[k] = 0;
    noadam.cpu_adam_bytes = 0;
    {
        const double bad[4] = {0, -1e9, NAN, INFINITY};
        for (i = 0; i < 4; i++) {
            zero_bandwidths b2;
            b2 = bw;
            b2.h2d = bad[i];
            CHECKF(zero_floor_of(e, &full, &b2, &out) == ZERO_ERR_INVALID_ARG &&
                       zero_engine_error(e)->item == ZERO_MSG_BAD_ARG,
                   "h2d %g with bytes to the device", bad[i]);
            CHECKF(zero_floor_of(e, &nodev, &b2, &out) == ZERO_OK && isfinite(out.floor_ms) && out.floor_ms > 0,
                   "h2d %g without bytes to the device: %g ms", bad[i], out.floor_ms);
            snprintf(what, sizeof what, "%s: h2d %g unused", name, bad[i]);
            check_floor(&nodev, &b2, &out, s, what);
            b2 = bw;
            b2.d2h = bad[i];
            CHECKF(zero_floor_of(e, &full, &b2, &out) == ZERO_ERR_INVALID_ARG &&
                       zero_engine_error(e)->item == ZERO_MSG_BAD_ARG,
                   "d2h %g with bytes to the host", bad[i]);
            CHECKF(zero_floor_of(e, &nohost, &b2, &out) == ZERO_OK && isfinite(out.floor_ms) && out.floor_ms > 0,
                   "d2h %g without bytes to the host: %g ms", bad[i], out.floor_ms);
            snprintf(what, sizeof what, "%s: d2h %g unused", name, bad[i]);
            check_floor(&nohost, &b2, &out, s, what);
            b2 = bw;
            b2.host = bad[i];
            CHECKF(zero_floor_of(e, &full, &b2, &out) == ZERO_ERR_INVALID_ARG &&
                       zero_engine_error(e)->item == ZERO_MSG_BAD_ARG,
                   "host %g with CPU Adam bytes", bad[i]);
            CHECKF(zero_floor_of(e, &noadam, &b2, &out) == ZERO_OK && isfinite(out.floor_ms) && out.adam_ms == 0,
                   "host %g without CPU Adam bytes: %g ms", bad[i], out.floor_ms);
            snprintf(what, sizeof what, "%s: host %g unused", name, bad[i]);
            check_floor(&noadam, &b2, &out, s, what);
            /* duplex: 0 means max(h2d, d2h); negative or not finite fails where a phase goes both ways */
            if (i > 0) {
                b2 = bw;
                b2.duplex = bad[i];
                CHECKF(zero_floor_of(e, &full, &b2, &out) == ZERO_ERR_INVALID_ARG &&
                           zero_engine_error(e)->item == ZERO_MSG_BAD_ARG,
                       "duplex %g with both directions in a phase", bad[i]);
            }
        }
    }
    /* negative counts: not zero_step's */
    for (k = 0; k < NPH; k++) {
        in = full;
        in.bytes_to_device[k] = -1;
        CHECKF(zero_floor_of(e, &in, &bw, &out) == ZERO_ERR_INVALID_ARG && zero_engine_error(e)->item == ZERO_MSG_BAD_ARG,
               "bytes_to_device[%s] -1", PHASE[k]);
        in = full;
        in.bytes_to_host[k] = -1;
        CHECKF(zero_floor_of(e, &in, &bw, &out) == ZERO_ERR_INVALID_ARG && zero_engine_error(e)->item == ZERO_MSG_BAD_ARG,
               "bytes_to_host[%s] -1", PHASE[k]);
    }
    in = full;
    in.cpu_adam_bytes = -1;
    CHECK(zero_floor_of(e, &in, &bw, &out) == ZERO_ERR_INVALID_ARG);
    in = full;
    in.cpu_sum_bytes = -1;
    CHECK(zero_floor_of(e, &in, &bw, &out) == ZERO_ERR_INVALID_ARG);
    /* NVMe: a bandwidth <= 0 or not finite fails where the step has tile bytes that way, and is not looked at
       where it has none; a negative count fails */
    {
        const double bad[4] = {0, -1e9, NAN, INFINITY};
        zero_step_info rd = full, wr = full;
        memset(rd.nvme_bytes_written, 0, sizeof rd.nvme_bytes_written);
        memset(wr.nvme_bytes_read, 0, sizeof wr.nvme_bytes_read);
        rd.nvme_bytes_read[ZERO_XFER_BACKWARD] = 5000000;
        wr.nvme_bytes_written[ZERO_XFER_STEP] = 7000000;
        bw.nvme_read = 3e9;
        bw.nvme_write = 2e9;
        for (i = 0; i < 4; i++) {
            zero_bandwidths b2 = bw;
            b2.nvme_read = bad[i];
            CHECKF(zero_floor_of(e, &rd, &b2, &out) == ZERO_ERR_INVALID_ARG && zero_engine_error(e)->item == ZERO_MSG_BAD_ARG &&
                       strstr(zero_engine_error(e)->msg, "nvme_read"),
                   "nvme_read %g with tile reads: %s", bad[i], zero_engine_error(e)->msg);
            CHECKF(zero_floor_of(e, &wr, &b2, &out) == ZERO_OK && isfinite(out.floor_ms), "nvme_read %g without reads",
                   bad[i]);
            snprintf(what, sizeof what, "%s: nvme_read %g unused", name, bad[i]);
            check_floor(&wr, &b2, &out, s, what);
            b2 = bw;
            b2.nvme_write = bad[i];
            CHECKF(zero_floor_of(e, &wr, &b2, &out) == ZERO_ERR_INVALID_ARG && zero_engine_error(e)->item == ZERO_MSG_BAD_ARG,
                   "nvme_write %g with tile writes", bad[i]);
            CHECKF(zero_floor_of(e, &rd, &b2, &out) == ZERO_OK && isfinite(out.floor_ms), "nvme_write %g without writes",
                   bad[i]);
        }
        /* the backward's tile reads alone longer than its copies: they set the phase */
        bw.nvme_read = 1e8;
        CHECK(zero_floor_of(e, &rd, &bw, &out) == ZERO_OK);
        CHECKF(out.nvme_ms[ZERO_XFER_BACKWARD] > out.copy_ms[ZERO_XFER_BACKWARD], "%s: NVMe %.4g ms, copies %.4g ms", name,
               out.nvme_ms[ZERO_XFER_BACKWARD], out.copy_ms[ZERO_XFER_BACKWARD]);
        snprintf(what, sizeof what, "%s: slow NVMe reads in the backward", name);
        check_floor(&rd, &bw, &out, s, what);
        for (k = 0; k < NPH; k++) {
            in = full;
            in.nvme_bytes_read[k] = -1;
            CHECKF(zero_floor_of(e, &in, &bw, &out) == ZERO_ERR_INVALID_ARG, "nvme_bytes_read[%s] -1", PHASE[k]);
            in = full;
            in.nvme_bytes_written[k] = -1;
            CHECKF(zero_floor_of(e, &in, &bw, &out) == ZERO_ERR_INVALID_ARG, "nvme_bytes_written[%s] -1", PHASE[k]);
        }
    }
    /* the arguments left the engine as it was: the caller's train() goes on with more steps */
}

static float grad_value(float w, double act, int rank, int m, int s, int64_t i) {
    return 0.5f * w - 0.05f + (float)(1e-3 * act) + 0.01f * (float)((rank + 3 * m + s + i) % 4);
}

static zero_result train(zero_engine *e, job *J, tally *T, int rank) {
    int s, m, t;
    int64_t i;
    zero_result r;
    for (s = 0; s < STEPS; s++) {
        zero_step_info info;
        for (m = 0; m < J->gas; m++) {
            double act = 0; /* what the forward saw, feeding the backward */
            T->phase = ZERO_XFER_FORWARD;
            for (t = 0; t < NT; t++) {
                const void *w;
                if ((r = zero_fetch(e, t)) != ZERO_OK) return r;
                if (!(w = zero_param(e, t))) return zero_engine_error(e)->code;
                for (i = 0; i < SIZES[t]; i++) act += (double)zt_load(w, (zero_dtype)J->dtype, i) / (double)(1 + i);
                if ((r = zero_release(e, t)) != ZERO_OK) return r;
            }
            act /= TOTAL;
            for (t = NT - 1; t >= 0; t--) {
                const void *w;
                void *g;
                if ((r = zero_fetch(e, t)) != ZERO_OK) return r;
                if (!(w = zero_param(e, t))) return zero_engine_error(e)->code;
                if (!(J->frozen && t == FROZEN_T)) {
                    T->phase = ZERO_XFER_BACKWARD; /* from the micro-batch's first zero_grad */
                    if (!(g = zero_grad(e, t))) return zero_engine_error(e)->code;
                    for (i = 0; i < SIZES[t]; i++)
                        zt_store(g, (zero_dtype)J->dtype, i,
                                 (float)zero_loss_scale(e) * grad_value(zt_load(w, (zero_dtype)J->dtype, i), act, rank, m, s, i));
                    if (s == J->inf_step && rank == 0 && m == 0 && t == NT - 1) zt_store(g, (zero_dtype)J->dtype, 3, INFINITY);
                    if ((r = zero_grad_ready(e, t)) != ZERO_OK) return r;
                    if (t == 0) T->phase = ZERO_XFER_FORWARD; /* its last zero_grad_ready */
                }
                if ((r = zero_release(e, t)) != ZERO_OK) return r;
            }
        }
        T->phase = ZERO_XFER_STEP;
        r = s == J->skip_step ? zero_skip_step(e, &info) : zero_step(e, &info);
        T->phase = ZERO_XFER_FORWARD;
        if (r != ZERO_OK) return r;
        J->info[rank][s] = info;
        memcpy(J->dev[rank][s], T->to_dev, sizeof T->to_dev);
        memcpy(J->host[rank][s], T->to_host, sizeof T->to_host);
        memcpy(J->nrd[rank][s], T->nvme_rd, sizeof T->nvme_rd);
        memcpy(J->nwr[rank][s], T->nvme_wr, sizeof T->nvme_wr);
        J->outside[rank][s] = T->outside;
        memset(T->to_dev, 0, sizeof T->to_dev);
        memset(T->to_host, 0, sizeof T->to_host);
        memset(T->nvme_rd, 0, sizeof T->nvme_rd);
        memset(T->nvme_wr, 0, sizeof T->nvme_wr);
        T->outside = 0;
        J->done[rank] = s + 1;
        /* one rank checks: CHECK's counters and the test's generator are not thread-safe */
        if (s == 1 && J->floor && rank == 0) floor_checks(e, J->floor, &info, J->name);
    }
    return J->dpu ? zero_flush(e) : ZERO_OK;
}

static zt_wave init_wave = {0.3, 0.2, 0.7, 0.013, 0};

static zero_result rank_fn(const zero_backend *b, void *arg) {
    job *J = (job *)arg;
    zero_config c = zero_config_default();
    zero_tensor ts[NT];
    char names[NT][8];
    zero_error err;
    zero_engine *e;
    zero_cpu_pool *pool = NULL;
    zero_backend ob, wb;
    static tally tallies[MAXW];
    tally *T = &tallies[b->rank];
    int t, rank = b->rank;
    if (J->pool || J->ooff == 2 || J->poff == 2) { /* zero_offload.h: its CPU Adam (on a pool of 2 threads), its tiles */
        if (J->pool && zero_cpu_pool_create(&pool, 2, NULL, &err) != ZERO_OK) {
            J->r[rank] = err.code;
            snprintf(J->msg[rank], sizeof J->msg[rank], "%s", err.msg);
            return ZERO_OK;
        }
        zero_offload_backend(b, pool, &ob);
        b = &ob;
    }
    tally_wrap(T, rank, b, &wb); /* outermost: it sees the engine's calls only */
    memset(ts, 0, sizeof ts);
    for (t = 0; t < NT; t++) {
        snprintf(names[t], sizeof names[t], "t%d", t);
        ts[t].name = names[t];
        ts[t].numel = SIZES[t];
        ts[t].group = t / 3;
        ts[t].init = zt_init_wave;
        ts[t].init_user = &init_wave;
        if (J->frozen && t == FROZEN_T) ts[t].flags = ZERO_TENSOR_FROZEN;
    }
    c.train_micro_batch_size_per_gpu = 1;
    c.gradient_accumulation_steps = J->gas;
    c.zero_optimization.stage = J->stage;
    c.zero_optimization.reduce_bucket_size = J->bucket;
    c.zero_optimization.stage3_param_persistence_threshold = 0; /* every parameter fetched */
    if (J->ooff) {
        c.zero_optimization.offload_optimizer.device = J->ooff == 2 ? ZERO_OFFLOAD_NVME : ZERO_OFFLOAD_CPU;
        if (J->ooff == 2)
            snprintf(c.zero_optimization.offload_optimizer.nvme_path, sizeof c.zero_optimization.offload_optimizer.nvme_path,
                     "%s", J->dir);
        c.zero_optimization.offload_optimizer.pin_memory = J->pin;
        c.zero_optimization.offload_optimizer.delayed_param_update = J->dpu;
    }
    if (J->poff) {
        c.zero_optimization.offload_param.device = J->poff == 2 ? ZERO_OFFLOAD_NVME : ZERO_OFFLOAD_CPU;
        if (J->poff == 2)
            snprintf(c.zero_optimization.offload_param.nvme_path, sizeof c.zero_optimization.offload_param.nvme_path, "%s",
                     J->dir);
        c.zero_optimization.offload_param.pin_memory = J->pin;
    }
    c.optimizer.weight_decay = 0.01;
    c.overlap_cpu_step = !J->no_overlap;
    c.gradient_clipping = J->clip;
    c.fp16.enabled = J->dtype == ZERO_DTYPE_FP16;
    c.fp16.initial_scale_power = 8;
    c.bf16.enabled = J->dtype == ZERO_DTYPE_BF16;
    c.log.level = J->floor ? ZERO_LOG_ERROR + 1 : ZERO_LOG_WARN; /* zero_floor_of's errors are expected there */
    if (zero_config_resolve(&c, b->world, &err) != ZERO_OK || zero_engine_create(&e, &c, ts, NT, &wb, &err) != ZERO_OK) {
        J->r[rank] = err.code;
        snprintf(J->msg[rank], sizeof J->msg[rank], "%s", err.msg);
        tally_done(T, rank);
        zero_cpu_pool_destroy(pool);
        return ZERO_OK;
    }
    /* creation's copies (the initial weights, from staging of the engine's own) go into the
       first step's report; counted apart, so that the loop's copies are seen alone */
    memcpy(J->cdev[rank], T->to_dev, sizeof T->to_dev);
    memcpy(J->chost[rank], T->to_host, sizeof T->to_host);
    memset(T->to_dev, 0, sizeof T->to_dev);
    memset(T->to_host, 0, sizeof T->to_host);
    J->cnvme[rank] = 0;
    for (t = 0; t < NPH; t++) J->cnvme[rank] += T->nvme_rd[t] + T->nvme_wr[t];
    memset(T->nvme_rd, 0, sizeof T->nvme_rd);
    memset(T->nvme_wr, 0, sizeof T->nvme_wr);
    T->outside = 0;
    owned(e, J, rank, &J->own_train[rank], &J->own_params[rank], &J->pairs[rank]);
    J->r[rank] = train(e, J, T, rank);
    if (J->r[rank] != ZERO_OK) snprintf(J->msg[rank], sizeof J->msg[rank], "%s", zero_engine_error(e)->msg);
    zero_engine_destroy(e);
    J->lost[rank] = T->lost || T->n != 0; /* every allocation freed again, each one seen */
    tally_done(T, rank);
    zero_cpu_pool_destroy(pool);
    return ZERO_OK;
}

/* ---- checks of a finished job (main thread) ---- */

static int64_t total_trainable(const job *J) {
    int64_t n = 0;
    int t;
    for (t = 0; t < NT; t++)
        if (!(J->frozen && t == FROZEN_T)) n += SIZES[t];
    return n;
}

static void check_job(const job *J) {
    int rank, s, k;
    int64_t csize = (int64_t)zero_dtype_size((zero_dtype)J->dtype);
    /* the reduced gradient Adam reads (zero.h, zero__plan_placement: plan.adt is the compute
       dtype at gas 1 on stages 2-3, else grad_accum_dtype, fp32 by default; plan.gdt is adt on
       stages 2-3, and at stage 1 adt for gas > 1, the compute dtype for gas 1): the compute
       dtype with one micro-batch, fp32 with more */
    int64_t gsize = J->gas == 1 ? csize : 4, per = 24 + gsize + csize;
    int64_t own_sum = 0, np_sum = 0;
    for (rank = 0; rank < J->world; rank++) {
        CHECKF(J->r[rank] == ZERO_OK && J->done[rank] == STEPS, "%s rank %d: %s (%d steps)", J->name, rank, J->msg[rank],
               J->done[rank]);
        CHECKF(!J->lost[rank], "%s rank %d: the wrapper's table failed, or allocations outlived the engine", J->name, rank);
        own_sum += J->own_train[rank];
        np_sum += J->own_params[rank];
    }
    /* the ownership computed from the layout covers the model once */
    CHECKF(own_sum == total_trainable(J) && np_sum == TOTAL, "%s: owned %lld trainable, %lld in all", J->name,
           (long long)own_sum, (long long)np_sum);
    for (s = 0; s < STEPS; s++) {
        int64_t adam_sum = 0;
        int applied = J->info[0][s].applied;
        int want_applied = !(s == J->skip_step || (s == J->inf_step && J->dtype == ZERO_DTYPE_FP16));
        for (rank = 0; rank < J->world; rank++) {
            const zero_step_info *in = &J->info[rank][s];
            int64_t all = 0;
            if (s >= J->done[rank]) continue;
            /* the engine's counters and the wrapper's, exactly */
            for (k = 0; k < NPH; k++) {
                int64_t cd = s == 0 ? J->cdev[rank][k] : 0, ch = s == 0 ? J->chost[rank][k] : 0;
                CHECKF(in->bytes_to_device[k] == J->dev[rank][s][k] + cd,
                       "%s rank %d step %d %s: bytes_to_device %lld, the wrapper saw %lld (%lld of them in "
                       "zero_engine_create)", J->name, rank, s, PHASE[k], (long long)in->bytes_to_device[k],
                       (long long)(J->dev[rank][s][k] + cd), (long long)cd);
                CHECKF(in->bytes_to_host[k] == J->host[rank][s][k] + ch,
                       "%s rank %d step %d %s: bytes_to_host %lld, the wrapper saw %lld (%lld of them in "
                       "zero_engine_create)", J->name, rank, s, PHASE[k], (long long)in->bytes_to_host[k],
                       (long long)(J->host[rank][s][k] + ch), (long long)ch);
                all += in->bytes_to_device[k] + in->bytes_to_host[k];
            }
            /* the tile bytes: the wrapper's, exactly, from the second step on (the first may hold create's
               writes of the initial tiles, which the wrapper counted apart) */
            {
                int64_t nr = 0, nw = 0;
                for (k = 0; k < NPH; k++) {
                    int64_t er = in->nvme_bytes_read[k], ew = in->nvme_bytes_written[k];
                    int64_t wr_ = J->nrd[rank][s][k], ww = J->nwr[rank][s][k];
                    CHECKF(s == 0 ? er >= wr_ && ew >= ww && er + ew <= wr_ + ww + J->cnvme[rank] : er == wr_ && ew == ww,
                           "%s rank %d step %d %s: nvme read %lld written %lld, the wrapper saw %lld / %lld (+%lld at create)",
                           J->name, rank, s, PHASE[k], (long long)er, (long long)ew, (long long)wr_, (long long)ww,
                           (long long)J->cnvme[rank]);
                    nr += er;
                    nw += ew;
                }
                if (s > 0 && J->ooff == 2) /* the optimizer's tiles: master, m and v of each owned element, each way */
                    CHECKF(J->nrd[rank][s][ZERO_XFER_STEP] >= 12 * J->own_train[rank] * want_applied &&
                               J->nwr[rank][s][ZERO_XFER_STEP] >= 12 * J->own_train[rank] * want_applied,
                           "%s rank %d step %d: the step's tiles read %lld, written %lld bytes, the owned trainable "
                           "elements %lld", J->name, rank, s, (long long)J->nrd[rank][s][ZERO_XFER_STEP],
                           (long long)J->nwr[rank][s][ZERO_XFER_STEP], (long long)J->own_train[rank]);
                if (s > 0 && J->poff == 2) /* every parameter fetched: the forward reads tiles */
                    CHECKF(in->nvme_bytes_read[ZERO_XFER_FORWARD] > 0, "%s rank %d step %d: no parameter tile read in the forward",
                           J->name, rank, s);
                if (J->ooff != 2 && J->poff != 2)
                    CHECKF(nr == 0 && nw == 0, "%s rank %d step %d: %lld / %lld NVMe bytes without NVMe", J->name, rank, s,
                           (long long)nr, (long long)nw);
            }
            /* the training loop hands the engine no memory of its own to copy */
            CHECKF(J->outside[rank][s] == 0, "%s rank %d step %d: %lld copies outside the backend's memory", J->name,
                   rank, s, (long long)J->outside[rank][s]);
            CHECKF(in->applied == want_applied && in->applied == applied, "%s rank %d step %d: applied %d, want %d",
                   J->name, rank, s, in->applied, want_applied);
            /* the CPU Adam's bytes: the owned trainable elements' master, m, v (4 bytes each, read and
               written: 24), gradient read and parameter written */
            CHECKF(in->cpu_adam_bytes == (J->ooff && want_applied ? J->own_train[rank] * per : 0),
                   "%s rank %d step %d: cpu_adam_bytes %lld, want %lld x %lld", J->name, rank, s,
                   (long long)in->cpu_adam_bytes, (long long)J->own_train[rank], (long long)per);
            adam_sum += in->cpu_adam_bytes;
            if (J->poff) /* every parameter is fetched in the forward: at least this rank's shard comes up */
                CHECKF(in->bytes_to_device[ZERO_XFER_FORWARD] > 0 &&
                           in->bytes_to_device[ZERO_XFER_FORWARD] >= J->own_params[rank] * csize,
                       "%s rank %d step %d: %lld bytes to the device in the forward, the shard is %lld x %lld", J->name,
                       rank, s, (long long)in->bytes_to_device[ZERO_XFER_FORWARD], (long long)J->own_params[rank],
                       (long long)csize);
            if (J->ooff && J->stage == 2) /* each micro-batch's reduced chunk goes down during the backward */
                CHECKF(in->bytes_to_host[ZERO_XFER_BACKWARD] >= J->own_train[rank] * csize * (J->gas == 1 ? 1 : 2),
                       "%s rank %d step %d: %lld bytes to the host in the backward, the trainable shard is %lld x %lld",
                       J->name, rank, s, (long long)in->bytes_to_host[ZERO_XFER_BACKWARD], (long long)J->own_train[rank],
                       (long long)csize);
            /* without offload only the scratch crosses: 16 bytes of norm statistics per (unit, tensor)
               pair to the host (zero_memory_report's SCRATCH; this model has 22 pairs with 64-element
               buckets, 352 bytes) and 8-byte agreement flags: under 1 KB, where the model's parameters
               alone are 2290 bytes in fp16 */
            if (!J->ooff && !J->poff)
                CHECKF(all < 1024, "%s rank %d step %d: %lld bytes crossed without offload (%d unit-tensor pairs)",
                       J->name, rank, s, (long long)all, J->pairs[rank]);
        }
        if (J->r[0] == ZERO_OK && (J->world == 1 || J->r[1] == ZERO_OK))
            CHECKF(adam_sum == (J->ooff && want_applied ? total_trainable(J) * per : 0),
                   "%s step %d: cpu_adam_bytes %lld over the ranks, want %lld x %lld", J->name, s, (long long)adam_sum,
                   (long long)total_trainable(J), (long long)per);
    }
}

static void print_job(const job *J) {
    int k;
    printf("%-34s rank 0 step 1:", J->name);
    for (k = 0; k < NPH; k++)
        printf(" %s %lld/%lld", PHASE[k], (long long)J->info[0][1].bytes_to_device[k],
               (long long)J->info[0][1].bytes_to_host[k]);
    printf(", cpu_adam %lld", (long long)J->info[0][1].cpu_adam_bytes);
    if (J->ooff == 2 || J->poff == 2)
        for (k = 0; k < NPH; k++)
            printf("%s %s %lld/%lld", k ? "" : ", NVMe read/written:", PHASE[k], (long long)J->info[0][1].nvme_bytes_read[k],
                   (long long)J->info[0][1].nvme_bytes_written[k]);
    printf("\n");
}

static void run_job(job *J) {
    zero_error err;
    zero_result r = zero_host_run(J->world, rank_fn, J, &err);
    CHECKF(r == ZERO_OK, "%s: zero_host_run: %s", J->name, err.msg);
    check_job(J);
    print_job(J);
}

static job *new_job(const char *name, int stage, int dtype, int world, int gas) {
    static job jobs[64];
    static int n;
    job *J = &jobs[n++ % 64];
    memset(J, 0, sizeof *J);
    J->name = name;
    J->stage = stage;
    J->dtype = dtype;
    J->world = world;
    J->gas = gas;
    J->pin = 1;
    J->clip = 1.0;
    J->bucket = 500000000;
    J->inf_step = J->skip_step = -1;
    return J;
}

/* zero_cpu_memory_bandwidth_ready's callback in D: counts its calls, waits wait_s, returns result */
typedef struct bw_ready_ctx {
    int calls;
    double wait_s;
    zero_result result;
} bw_ready_ctx;

static zero_result bw_ready(void *ctx, zero_error *err) {
    bw_ready_ctx *c = (bw_ready_ctx *)ctx;
    struct timespec t0, t1;
    c->calls++;
    timespec_get(&t0, TIME_UTC);
    do timespec_get(&t1, TIME_UTC);
    while ((double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9 < c->wait_s);
    if (c->result != ZERO_OK && err) {
        memset(err, 0, sizeof *err);
        err->code = c->result;
        snprintf(err->msg, sizeof err->msg, "bw_ready: the ranks did not meet");
    }
    return c->result;
}

int main(void) {
    static char names[64][48];
    int nn = 0, world, gas, dt;
    job *J;
    zt_seed("test_floor");

    /* A, B: stage 3, offload_param + offload_optimizer "cpu" */
    for (world = 1; world <= 2; world++)
        for (gas = 1; gas <= 2; gas++)
            for (dt = 0; dt < 2; dt++) {
                int dtype = dt ? ZERO_DTYPE_FP32 : ZERO_DTYPE_FP16;
                snprintf(names[nn], sizeof names[nn], "s3 param+optim cpu %s w%d gas%d", zero_dtype_name((zero_dtype)dtype),
                         world, gas);
                J = new_job(names[nn++], 3, dtype, world, gas);
                J->poff = J->ooff = 1;
                J->pin = (world + gas) % 2; /* ordinary host memory too */
                J->frozen = gas == 2;
                J->bucket = dt ? 64 : 500000000;
                if (dtype == ZERO_DTYPE_FP16) J->inf_step = 2; /* skipped: no CPU Adam */
                J->pool = world == 2 && gas == 1;
                run_job(J);
            }
    /* stage 3, offload_param "cpu", Adam on the device */
    J = new_job("s3 param cpu, device Adam bf16 w2", 3, ZERO_DTYPE_BF16, 2, 1);
    J->poff = 1;
    J->frozen = 1;
    J->bucket = 64;
    run_job(J);
    J = new_job("s3 param cpu, device Adam fp16 w1", 3, ZERO_DTYPE_FP16, 1, 2);
    J->poff = 1;
    J->inf_step = 1;
    run_job(J);
    /* stage 2, offload_optimizer "cpu" */
    J = new_job("s2 optim cpu fp16 w2 gas2", 2, ZERO_DTYPE_FP16, 2, 2);
    J->ooff = 1;
    J->inf_step = 3;
    J->skip_step = 1;
    run_job(J);
    J = new_job("s2 optim cpu bf16 w2", 2, ZERO_DTYPE_BF16, 2, 1);
    J->ooff = 1;
    J->pool = 1;
    J->frozen = 1;
    J->bucket = 64;
    run_job(J);
    J = new_job("s2 optim cpu bf16 w1 gas2 host", 2, ZERO_DTYPE_BF16, 1, 2);
    J->ooff = 1;
    J->pin = 0;
    run_job(J);
    /* stage 2, delayed_param_update */
    J = new_job("s2 delayed update fp32 w2", 2, ZERO_DTYPE_FP32, 2, 1);
    J->ooff = J->dpu = 1;
    J->bucket = 64;
    run_job(J);
    J = new_job("s2 delayed update bf16 w1 gas2", 2, ZERO_DTYPE_BF16, 1, 2);
    J->ooff = J->dpu = 1;
    J->frozen = 1;
    run_job(J);
    /* stage 1, offload_optimizer "cpu" */
    J = new_job("s1 optim cpu fp16 w2 gas2", 1, ZERO_DTYPE_FP16, 2, 2);
    J->ooff = 1;
    J->inf_step = 2;
    run_job(J);
    J = new_job("s1 optim cpu fp32 w1", 1, ZERO_DTYPE_FP32, 1, 1);
    J->ooff = 1;
    J->skip_step = 2;
    run_job(J);
    /* no offload: only statistics cross */
    J = new_job("s0 none fp16 w2", 0, ZERO_DTYPE_FP16, 2, 1);
    J->inf_step = 1;
    run_job(J);
    J = new_job("s2 none fp32 w2 gas2", 2, ZERO_DTYPE_FP32, 2, 2);
    J->bucket = 64;
    J->frozen = 1;
    run_job(J);
    J = new_job("s2 none bf16 w1", 2, ZERO_DTYPE_BF16, 1, 1);
    J->skip_step = 3;
    run_job(J);

    /* C: zero_floor_of on each schedule (rank 0 checks it), the engine training on after its errors */
    J = new_job("floor: sequential (s2 cpu, clipping)", 2, ZERO_DTYPE_FP32, 1, 1);
    J->ooff = 1;
    J->floor = SEQUENTIAL;
    run_job(J);
    J = new_job("floor: sequential (s3 param+optim, overlap_cpu_step 0)", 3, ZERO_DTYPE_BF16, 1, 2);
    J->ooff = J->poff = 1;
    J->no_overlap = 1;
    J->floor = SEQUENTIAL;
    run_job(J);
    J = new_job("floor: overlapped (s3 param+optim)", 3, ZERO_DTYPE_BF16, 1, 2);
    J->ooff = J->poff = 1;
    J->floor = OVERLAPPED;
    run_job(J);
    J = new_job("floor: early (s2 cpu fp32, no clipping)", 2, ZERO_DTYPE_FP32, 1, 1);
    J->ooff = 1;
    J->clip = 0;
    J->bucket = 64;
    J->floor = EARLY;
    run_job(J);
    J = new_job("floor: early (s3 cpu bf16, no clipping)", 3, ZERO_DTYPE_BF16, 1, 1);
    J->ooff = 1;
    J->clip = 0;
    J->bucket = 64;
    J->floor = EARLY;
    run_job(J);
    J = new_job("floor: delayed (s2 bf16)", 2, ZERO_DTYPE_BF16, 1, 1);
    J->ooff = J->dpu = 1;
    J->floor = DELAYED;
    run_job(J);

    /* E: NVMe: the tile store of zero_offload_backend in a fresh directory per job */
    {
        static const struct {
            const char *name;
            int stage, dtype, world, gas, ooff, poff, inf_step, floor;
        } nv[] = {
            {"s3 param+optim nvme fp32 w2", 3, ZERO_DTYPE_FP32, 2, 1, 2, 2, -1, SEQUENTIAL},
            {"s3 param nvme, optim cpu fp16 w1 gas2", 3, ZERO_DTYPE_FP16, 1, 2, 1, 2, 2, 0},
            {"s3 param nvme, device Adam bf16 w2", 3, ZERO_DTYPE_BF16, 2, 1, 0, 2, -1, SEQUENTIAL},
            {"s2 optim nvme fp16 w2 gas2", 2, ZERO_DTYPE_FP16, 2, 2, 2, 0, 1, 0},
            {"s3 optim nvme bf16 w1", 3, ZERO_DTYPE_BF16, 1, 1, 2, 0, -1, SEQUENTIAL},
        };
        size_t i;
        for (i = 0; i < sizeof nv / sizeof nv[0]; i++) {
            char dir[] = "/tmp/zero_floor_XXXXXX", cmd[64];
            CHECK(mkdtemp(dir) != NULL);
            J = new_job(nv[i].name, nv[i].stage, nv[i].dtype, nv[i].world, nv[i].gas);
            J->ooff = nv[i].ooff;
            J->poff = nv[i].poff;
            J->inf_step = nv[i].inf_step;
            J->floor = (sched)nv[i].floor;
            J->dir = dir;
            J->bucket = 64;
            run_job(J);
            snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
            if (system(cmd) != 0) fprintf(stderr, "rm -rf %s failed\n", dir);
        }
    }

    /* D: zero_cpu_memory_bandwidth */
    {
        zero_cpu_pool *pool = NULL;
        zero_error err;
        double bps = -1;
        CHECK(zero_cpu_pool_create(&pool, 2, NULL, &err) == ZERO_OK);
        CHECKF(zero_cpu_memory_bandwidth(pool, 1 << 20, 3, &bps, &err) == ZERO_OK && isfinite(bps) && bps > 0,
               "pool of 2: %g bytes/s (%s)", bps, err.msg);
        printf("zero_cpu_memory_bandwidth: %.2f GB/s on 2 threads", bps * 1e-9);
        bps = -1;
        CHECKF(zero_cpu_memory_bandwidth(NULL, 1 << 20, 3, &bps, &err) == ZERO_OK && isfinite(bps) && bps > 0,
               "no pool: %g bytes/s (%s)", bps, err.msg);
        printf(", %.2f GB/s on the calling thread\n", bps * 1e-9);
        CHECK(zero_cpu_memory_bandwidth(pool, 1 << 20, 3, NULL, &err) == ZERO_ERR_INVALID_ARG);
        CHECK(err.item == ZERO_MSG_NULL_ARG);
        CHECK_STR_CONTAINS(err.msg, "zero_cpu_memory_bandwidth");
        {
            const int64_t ns[3] = {63, 1 << 20, 1 << 20};
            const int reps[3] = {3, 0, 1001};
            int i;
            for (i = 0; i < 3; i++) {
                bps = -1;
                CHECKF(zero_cpu_memory_bandwidth(pool, ns[i], reps[i], &bps, &err) == ZERO_ERR_INVALID_ARG &&
                           err.item == ZERO_MSG_BAD_ARG && bps == 0,
                       "n %lld reps %d: %s, %g", (long long)ns[i], reps[i], err.msg, bps);
                CHECK_STR_CONTAINS(err.msg, "zero_cpu_memory_bandwidth");
            }
        }
        {
            /* _ready: called once, with its ctx, before the timed passes (a 100 ms wait inside them would
               take the figure below 1% of the plain call's: 28 MB a pass); a failing one ends the call with
               its result and its error */
            bw_ready_ctx rc = {0, 0.1, ZERO_OK};
            double plain = 0;
            CHECK(zero_cpu_memory_bandwidth(pool, 1 << 20, 3, &plain, &err) == ZERO_OK && plain > 0);
            bps = -1;
            CHECKF(zero_cpu_memory_bandwidth_ready(pool, 1 << 20, 3, bw_ready, &rc, &bps, &err) == ZERO_OK &&
                       rc.calls == 1 && bps > 0.2 * plain,
                   "ready: %d calls, %g bytes/s against %g (%s)", rc.calls, bps, plain, err.msg);
            CHECK(zero_cpu_memory_bandwidth_ready(NULL, 1 << 20, 3, NULL, NULL, &bps, &err) == ZERO_OK && bps > 0);
            rc.calls = 0, rc.wait_s = 0, rc.result = ZERO_ERR_NCCL;
            bps = -1;
            CHECK(zero_cpu_memory_bandwidth_ready(pool, 1 << 20, 3, bw_ready, &rc, &bps, &err) == ZERO_ERR_NCCL);
            CHECK(rc.calls == 1 && bps == 0);
            CHECK_STR_CONTAINS(err.msg, "the ranks did not meet");
            CHECK(zero_cpu_memory_bandwidth_ready(pool, 1 << 20, 3, bw_ready, &rc, NULL, &err) == ZERO_ERR_INVALID_ARG &&
                  rc.calls == 1);
        }
        zero_cpu_pool_destroy(pool);
    }
    return zt_finish();
}
