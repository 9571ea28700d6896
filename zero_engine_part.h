/* ---- layout: tensors into units ------------------------------------------

   Walk the tensors in registration order and cut runs of whole tensors of at
   most bucket_elems elements; a change of group, of frozen-ness or (stage 3)
   of persistence closes the run. Inside a unit every tensor starts at a
   multiple of ZERO_ALIGN. A tensor larger than bucket_elems is cut into
   pieces of a multiple of world * ZERO_ALIGN elements: no padding lands
   between the pieces, so the tensor stays contiguous for the user's kernels,
   and all pieces share one span (the buffers that hold a tensor whole, the
   stage-3 pool and the gradient ring, work in spans). Each unit is padded to
   a multiple of world * ZERO_ALIGN and laid out back to back; rank r owns
   chunk r of every unit. */

#include <pthread.h>

#ifndef ZERO__DTYPE_F64
#define ZERO__DTYPE_F64 ZERO_DTYPE_COUNT /* doubles, for the engine's statistics */
#endif

struct zero_layout {
    int world, n_tensors, n_units, n_spans;
    zero_unit *units;
    zero_tensor_place *places;
    int64_t *piece;      /* per tensor: piece size when split, else 0 */
    int64_t *numel;      /* per tensor */
    int *span_first;     /* per span: first unit; span_first[n_spans] = n_units */
    char **names;
    int64_t padded_numel, shard_numel, shard_trainable;
};

static int64_t zero__align_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }
static int64_t zero__max_i64(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t zero__min_i64(int64_t a, int64_t b) { return a < b ? a : b; }

static void zero__layout_free(zero_layout *l) {
    int i;
    if (!l) return;
    if (l->names)
        for (i = 0; i < l->n_tensors; i++) ZERO_FREE(l->names[i]);
    ZERO_FREE(l->names);
    ZERO_FREE(l->units);
    ZERO_FREE(l->places);
    ZERO_FREE(l->piece);
    ZERO_FREE(l->numel);
    ZERO_FREE(l->span_first);
    ZERO_FREE(l);
}

typedef struct zero__named {
    const char *name;
    int index;
} zero__named;

/* qsort has no context argument, and ranks plan layouts concurrently: sort
   (name, index) pairs, not indices into a shared table. */
static int zero__cmp_named(const void *a, const void *b) {
    const zero__named *x = (const zero__named *)a, *y = (const zero__named *)b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->index > y->index) - (x->index < y->index);
}

static zero_result zero__layout_check(const zero_tensor *ts, int n, const zero_layout_args *a,
                                      zero_error *err) {
    int i, d;
    if (!ts || !a) return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "zero_layout_create: tensors or args is NULL");
    if (n <= 0) return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "zero_layout_create: %d tensors (need at least one)", n);
    if (a->world < 1) return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "zero_layout_create: world %d (need >= 1)", a->world);
    if (a->bucket_elems < 0)
        return zero__fail(err, ZERO_MSG_BAD_ARG, "zero_optimization.reduce_bucket_size", 0, 0,
                          "%lld elements (need >= 0; 0: one tensor per unit)", (long long)a->bucket_elems);
    for (i = 0; i < n; i++) {
        const zero_tensor *t = &ts[i];
        if (!t->name || !t->name[0])
            return zero__fail(err, ZERO_MSG_LAYOUT_TENSOR, NULL, 0, 0, "tensor %d has no name", i);
        if (strlen(t->name) > 200)
            return zero__fail(err, ZERO_MSG_LAYOUT_TENSOR, NULL, 0, 0, "tensor %d: name longer than 200 bytes", i);
        if (t->numel < 1 || t->numel > ((int64_t)1 << 50))
            return zero__fail(err, ZERO_MSG_LAYOUT_TENSOR, NULL, 0, 0, "tensor %d '%s': numel %lld (need 1 .. 2^50)", i,
                              t->name, (long long)t->numel);
        if (t->ndim < 0 || t->ndim > ZERO_MAX_DIMS)
            return zero__fail(err, ZERO_MSG_LAYOUT_TENSOR, NULL, 0, 0, "tensor %d '%s': ndim %d (need 0 .. %d)", i, t->name,
                              t->ndim, ZERO_MAX_DIMS);
        if (t->ndim > 0) {
            int64_t prod = 1;
            for (d = 0; d < t->ndim; d++) {
                if (t->shape[d] < 1 || prod > t->numel / t->shape[d] + 1)
                    return zero__fail(err, ZERO_MSG_LAYOUT_TENSOR, NULL, 0, 0,
                                      "tensor %d '%s': shape[%d] = %lld does not fit numel %lld", i, t->name, d,
                                      (long long)t->shape[d], (long long)t->numel);
                prod *= t->shape[d];
            }
            if (prod != t->numel)
                return zero__fail(err, ZERO_MSG_LAYOUT_TENSOR, NULL, 0, 0,
                                  "tensor %d '%s': shape has %lld elements, numel is %lld", i, t->name, (long long)prod,
                                  (long long)t->numel);
        }
        if (t->flags & ~(ZERO_TENSOR_FROZEN | ZERO_TENSOR_NO_DECAY))
            return zero__fail(err, ZERO_MSG_LAYOUT_TENSOR, NULL, 0, 0, "tensor %d '%s': unknown flags 0x%x", i, t->name,
                              (unsigned)t->flags);
        if (!(t->lr_scale >= 0) || t->lr_scale > 1e30f)
            return zero__fail(err, ZERO_MSG_LAYOUT_TENSOR, NULL, 0, 0, "tensor %d '%s': lr_scale %g (need >= 0, 0 = 1)", i,
                              t->name, (double)t->lr_scale);
    }
    return ZERO_OK;
}

ZERO__DEF zero_result zero_layout_create(zero_layout **out, const zero_tensor *ts, int n,
                                         const zero_layout_args *a, zero_error *err) {
    zero_layout *l;
    int i, u;
    int64_t gran, persist_total = 0;
    zero_result r;
    if (!out) return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "zero_layout_create: out is NULL");
    *out = NULL;
    if ((r = zero__layout_check(ts, n, a, err)) != ZERO_OK) return r;

    /* duplicate names, found by sorting */
    {
        zero__named *nm = (zero__named *)ZERO_MALLOC(sizeof(zero__named) * (size_t)n);
        if (!nm) return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "zero_layout_create: %d tensors", n);
        for (i = 0; i < n; i++) nm[i].name = ts[i].name, nm[i].index = i;
        qsort(nm, (size_t)n, sizeof *nm, zero__cmp_named);
        for (i = 1; i < n; i++)
            if (!strcmp(nm[i - 1].name, nm[i].name)) {
                r = zero__fail(err, ZERO_MSG_LAYOUT_DUPLICATE_NAME, NULL, 0, 0, "tensors %d and %d are both named '%s'",
                               nm[i - 1].index, nm[i].index, nm[i].name);
                ZERO_FREE(nm);
                return r;
            }
        ZERO_FREE(nm);
    }

    l = (zero_layout *)ZERO_MALLOC(sizeof *l);
    if (!l) return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "zero_layout_create");
    memset(l, 0, sizeof *l);
    l->world = a->world;
    l->n_tensors = n;
    gran = (int64_t)a->world * ZERO_ALIGN;
    {
        /* upper bound on units: every tensor alone, plus its pieces */
        int64_t cap = 0;
        for (i = 0; i < n; i++) {
            int64_t p = (a->bucket_elems > 0 && ts[i].numel > a->bucket_elems)
                            ? zero__max_i64(gran, a->bucket_elems / gran * gran) : 0;
            cap += p ? (ts[i].numel + p - 1) / p : 1;
        }
        if (cap > INT_MAX / 2) {
            zero__layout_free(l);
            return zero__fail(err, ZERO_MSG_BAD_ARG, "zero_optimization.reduce_bucket_size", 0, 0,
                              "%lld elements cuts the model into %lld units (too many)\nHINT: raise reduce_bucket_size",
                              (long long)a->bucket_elems, (long long)cap);
        }
        l->units = (zero_unit *)ZERO_MALLOC(sizeof(zero_unit) * (size_t)cap);
        l->span_first = (int *)ZERO_MALLOC(sizeof(int) * (size_t)(cap + 1));
    }
    l->places = (zero_tensor_place *)ZERO_MALLOC(sizeof(zero_tensor_place) * (size_t)n);
    l->piece = (int64_t *)ZERO_MALLOC(sizeof(int64_t) * (size_t)n);
    l->numel = (int64_t *)ZERO_MALLOC(sizeof(int64_t) * (size_t)n);
    l->names = (char **)ZERO_MALLOC(sizeof(char *) * (size_t)n);
    if (!l->units || !l->span_first || !l->places || !l->piece || !l->numel || !l->names) {
        zero__layout_free(l);
        return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "zero_layout_create");
    }
    memset(l->names, 0, sizeof(char *) * (size_t)n);
    for (i = 0; i < n; i++) {
        size_t len = strlen(ts[i].name) + 1;
        l->names[i] = (char *)ZERO_MALLOC(len);
        if (!l->names[i]) {
            zero__layout_free(l);
            return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "zero_layout_create");
        }
        memcpy(l->names[i], ts[i].name, len);
    }

    {
        int open = 0;
        l->n_units = 0;
        for (i = 0; i < n; i++) {
            const zero_tensor *t = &ts[i];
            int frozen = (t->flags & ZERO_TENSOR_FROZEN) != 0, persistent = 0;
            zero_tensor_place *pl = &l->places[i];
            zero_unit *x;
            int64_t p = zero__max_i64(gran, a->bucket_elems / gran * gran);
            l->numel[i] = t->numel;
            l->piece[i] = 0;
            /* bucket 0 (DeepSpeed: every tensor reduced alone): one tensor per unit, never split */
            if (a->bucket_elems > 0 && t->numel > a->bucket_elems && t->numel > p) { /* pieces, one span */
                int64_t off;
                l->piece[i] = p;
                pl->first_unit = l->n_units;
                pl->n_units = 0;
                pl->unit_offset = 0;
                l->span_first[l->n_spans] = l->n_units;
                for (off = 0; off < t->numel; off += p) {
                    x = &l->units[l->n_units++];
                    memset(x, 0, sizeof *x);
                    x->numel = zero__min_i64(p, t->numel - off);
                    x->first_tensor = x->last_tensor = i;
                    x->span = l->n_spans;
                    x->group = t->group;
                    x->frozen = frozen;
                    pl->n_units++;
                }
                l->n_spans++;
                open = 0;
                continue;
            }
            if (a->persist_threshold > 0 && t->numel <= a->persist_threshold &&
                (a->model_persist_threshold <= 0 || persist_total + t->numel <= a->model_persist_threshold)) {
                persistent = 1;
                persist_total += t->numel;
            }
            x = open ? &l->units[l->n_units - 1] : NULL;
            if (x && x->group == t->group && x->frozen == frozen && x->persistent == persistent &&
                a->bucket_elems > 0 && zero__align_up(x->numel, ZERO_ALIGN) + t->numel <= a->bucket_elems) {
                pl->first_unit = l->n_units - 1;
                pl->n_units = 1;
                pl->unit_offset = zero__align_up(x->numel, ZERO_ALIGN);
                x->numel = pl->unit_offset + t->numel;
                x->last_tensor = i;
                continue;
            }
            x = &l->units[l->n_units];
            memset(x, 0, sizeof *x);
            x->numel = t->numel;
            x->first_tensor = x->last_tensor = i;
            x->span = l->n_spans;
            x->group = t->group;
            x->frozen = frozen;
            x->persistent = persistent;
            l->span_first[l->n_spans++] = l->n_units;
            pl->first_unit = l->n_units++;
            pl->n_units = 1;
            pl->unit_offset = 0;
            open = 1;
        }
    }
    l->span_first[l->n_spans] = l->n_units;
    {
        int64_t off = 0, sh = 0, sht = 0;
        for (u = 0; u < l->n_units; u++) {
            zero_unit *x = &l->units[u];
            x->padded = zero__align_up(x->numel, gran);
            x->chunk = x->padded / a->world;
            x->offset = off;
            x->shard_offset = sh;
            off += x->padded;
            sh += x->chunk;
            if (!x->frozen) sht += x->chunk;
        }
        l->padded_numel = off;
        l->shard_numel = sh;
        l->shard_trainable = sht;
    }
    for (i = 0; i < n; i++) {
        zero_tensor_place *pl = &l->places[i];
        pl->offset = l->units[pl->first_unit].offset + pl->unit_offset;
    }
    *out = l;
    zero__ok(err);
    return ZERO_OK;
}

ZERO__DEF void zero_layout_destroy(zero_layout *l) { zero__layout_free(l); }
ZERO__DEF int zero_layout_unit_count(const zero_layout *l) { return l ? l->n_units : 0; }
ZERO__DEF int zero_layout_tensor_count(const zero_layout *l) { return l ? l->n_tensors : 0; }
ZERO__DEF int zero_layout_world(const zero_layout *l) { return l ? l->world : 0; }
ZERO__DEF const zero_unit *zero_layout_unit(const zero_layout *l, int u) {
    return (l && u >= 0 && u < l->n_units) ? &l->units[u] : NULL;
}
ZERO__DEF const zero_tensor_place *zero_layout_tensor(const zero_layout *l, int t) {
    return (l && t >= 0 && t < l->n_tensors) ? &l->places[t] : NULL;
}
ZERO__DEF const char *zero_layout_tensor_name(const zero_layout *l, int t) {
    return (l && t >= 0 && t < l->n_tensors) ? l->names[t] : NULL;
}
ZERO__DEF int zero_layout_find(const zero_layout *l, const char *name) {
    int i;
    if (!l || !name) return -1;
    for (i = 0; i < l->n_tensors; i++)
        if (!strcmp(l->names[i], name)) return i;
    return -1;
}
ZERO__DEF int64_t zero_layout_chunk_real(const zero_layout *l, int u, int rank) {
    const zero_unit *x = zero_layout_unit(l, u);
    if (!x || rank < 0 || rank >= l->world) return 0;
    return zero__max_i64(0, zero__min_i64(x->chunk, x->numel - (int64_t)rank * x->chunk));
}
ZERO__DEF int64_t zero_layout_padded_numel(const zero_layout *l) { return l ? l->padded_numel : 0; }
ZERO__DEF int64_t zero_layout_shard_numel(const zero_layout *l, int trainable_only) {
    return l ? (trainable_only ? l->shard_trainable : l->shard_numel) : 0;
}

/* The unit holding element off of tensor t, and the element's offset inside it. */
static int zero__layout_unit_of(const zero_layout *l, int t, int64_t off, int64_t *in_unit) {
    const zero_tensor_place *pl = &l->places[t];
    if (l->piece[t]) {
        *in_unit = off % l->piece[t];
        return pl->first_unit + (int)(off / l->piece[t]);
    }
    *in_unit = pl->unit_offset + off;
    return pl->first_unit;
}

ZERO__DEF zero_result zero_layout_locate(const zero_layout *l, int t, int64_t off, zero_location *out,
                                         zero_error *err) {
    int64_t in;
    int u;
    if (!l || !out) return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "zero_layout_locate: NULL argument");
    if (t < 0 || t >= l->n_tensors)
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "zero_layout_locate: tensor %d of %d", t, l->n_tensors);
    if (off < 0 || off >= l->numel[t])
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "zero_layout_locate: offset %lld outside tensor '%s' (%lld elements)",
                          (long long)off, l->names[t], (long long)l->numel[t]);
    u = zero__layout_unit_of(l, t, off, &in);
    out->unit = u;
    out->rank = (int)(in / l->units[u].chunk);
    out->shard_offset = l->units[u].shard_offset + in % l->units[u].chunk;
    zero__ok(err);
    return ZERO_OK;
}

/* ---- engine ----------------------------------------------------------------

   One step, per rank (N ranks, G micro-batches, S the loss scale):
     micro-batch m: the user writes compute-dtype gradients of loss * S into
       zero_grad buffers (zeroed by the engine) and marks them ready; when a
       unit's last tensor is ready:
         stage 0-1: (G > 1) accumulate into the full accumulator, zero the
                    buffer; on the last micro-batch divide by N and all-reduce
                    (stage 0) or reduce-scatter in place (stage 1);
         stage 2-3: divide by N, reduce-scatter the unit in its ring slot in
                    place, add the owned chunk into the shard accumulator.
     zero_step: per unit, each rank sums squares (double) of its owned chunk
       and flags inf/nan; one all-reduce of those per-unit pairs gives the
       global norm and the first bad unit; skip on overflow; else Adam on the
       owned chunks with grad_scale = 1 / (G S clip), write the compute-dtype
       copy, all-gather (stage 1-2) or drop gathered units (stage 3).
   Every rank runs the same arithmetic in the same order for a given world
   size, so stages 0-3 agree bitwise when G == 1. */

typedef struct zero__seg {
    int tensor;
    int64_t unit_off;   /* offset inside the unit */
    int64_t tensor_off; /* offset inside the tensor */
    int64_t count;
} zero__seg;

typedef struct zero__span_state {
    int64_t pool_off; /* element offset in the pool; -1: not resident */
    int refs;         /* zero_fetch calls without their zero_release */
    int prefetched;   /* resident, gathered ahead of use */
    int64_t last_use; /* fetch clock, for eviction */
    int slot;         /* gradient ring slot this micro-batch (-1: none) */
    int units_left;   /* units whose reduction has not run this micro-batch */
    int persistent, frozen;
} zero__span_state;

enum { ZERO__TRACE_RECORD, ZERO__TRACE_COMPLETE, ZERO__TRACE_INVALID };

struct zero_engine {
    zero_config cfg;
    zero_backend be;
    zero_layout *L;
    int rank, world, stage, gas;
    zero_dtype dt, adt;  /* compute and accumulation dtypes */
    size_t d, a;
    int n_tensors, n_trainable, n_units, n_spans;
    int *tflags;
    float *tlr;
    /* per unit */
    int64_t *goff;   /* offset in the trainable padded buffers (-1: frozen) */
    int64_t *tshard; /* offset in the trainable shard (-1: frozen) */
    int *pending, *pending0;
    int *seg_first, *seg_count; /* Adam segments of the unit */
    zero_adam_seg *segs;
    int *seg_tensor;
    /* per tensor */
    unsigned char *ready;
    /* per span */
    zero__span_state *spans;
    int64_t *span_off, *span_padded;
    /* buffers */
    void *params, *pool, *grads, *accum;
    float *master, *m, *v;
    double *stats_dev, *stats_host; /* per (unit, tensor) pair: sum of squares, inf/nan flag */
    int *pair_first, n_pairs;       /* pair index of a unit's first tensor */
    zero__seg *segtmp;              /* one unit's segments */
    int64_t pool_elems, persist_elems, slot_elems;
    int n_slots, *slot_span;
    zero_event *ev_compute, *ev_comm, *ev_slot[2]; /* stream order (no-ops on the host) */
    int64_t *ext_off, *ext_len; /* pool extents, sorted by offset */
    int n_ext;
    /* stage-3 trace of one micro-batch's fetches */
    int *trace, trace_len, trace_cap, trace_pos, trace_state, trace_warned;
    int64_t fetch_clock, n_fetches, n_hits, n_gathered; /* counters of the current step */
    /* step state */
    int micro, ready_count, touched;
    zero_loss_scaler scaler;
    int64_t global_steps, skipped_steps, applied_steps, sched_it;
    float beta1_t, beta2_t;
    double last_b1, last_b2;
    /* print period */
    int64_t period_skipped;
    double period_scale_from;
    int period_first_unit, period_first_tensor;
    double t_phase[ZERO_PHASE_COUNT], t_backward_start;
    int broken;
    zero_error err;
    size_t planned[ZERO_MEM_CATEGORY_COUNT][ZERO_MEM_KIND_COUNT];
    size_t allocated[ZERO_MEM_KIND_COUNT];
    struct zero_engine *next_live;
};

/* Live engines, so a call on a destroyed one is an error, not a crash. */
static pthread_mutex_t zero__live_lock = PTHREAD_MUTEX_INITIALIZER;
static zero_engine *zero__live_head;

static int zero__engine_live(const zero_engine *e) {
    zero_engine *p;
    int found = 0;
    if (!e) return 0;
    pthread_mutex_lock(&zero__live_lock);
    for (p = zero__live_head; p; p = p->next_live)
        if (p == e) {
            found = 1;
            break;
        }
    pthread_mutex_unlock(&zero__live_lock);
    return found;
}

static double zero__now_ms(void) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Record an engine error, log it, return its code. */
static zero_result zero__efail(zero_engine *e, zero_msg item, const char *fmt, ...) ZERO__PRINTF(3, 4);
static zero_result zero__efail(zero_engine *e, zero_msg item, const char *fmt, ...) {
    char text[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    zero__fail(&e->err, item, NULL, 0, 0, "%s", text);
    zero__log(&e->cfg.log, ZERO_LOG_ERROR, item, "%s", e->err.msg);
    return e->err.code;
}

/* A backend call failed: its error becomes the engine's; collectives may be
   out of step across ranks now, so the engine refuses further work. */
static zero_result zero__ebackend(zero_engine *e, zero_error *be_err, const char *what) {
    size_t wl = strlen(what), ml = strlen(be_err->msg), cap = sizeof e->err.msg - 1;
    e->err = *be_err;
    /* "what: backend message", cut to fit (memcpy: the parts are measured) */
    if (wl > cap) wl = cap;
    memcpy(e->err.msg, what, wl);
    if (wl + 2 <= cap) {
        memcpy(e->err.msg + wl, ": ", 2);
        wl += 2;
        if (ml > cap - wl) ml = cap - wl;
        memcpy(e->err.msg + wl, be_err->msg, ml);
        wl += ml;
    }
    e->err.msg[wl] = 0;
    e->broken = 1;
    zero__log(&e->cfg.log, ZERO_LOG_ERROR, be_err->item, "%s", e->err.msg);
    return be_err->code ? be_err->code : ZERO_ERR_STATE;
}

/* Run a backend call whose zero_error is be_err_; on failure leave with it. */
#define ZERO__TRY_BE(e, what, expr)                                 \
    do {                                                            \
        zero_error be_err_;                                         \
        zero__ok(&be_err_);                                         \
        if ((expr) != ZERO_OK) return zero__ebackend((e), &be_err_, (what)); \
    } while (0)

/* Entry check of every engine call. */
static zero_result zero__enter(zero_engine *e, const char *fn) {
    if (!zero__engine_live(e)) {
        zero_logger lg;
        memset(&lg, 0, sizeof lg);
        lg.rank = -1;
        lg.level = ZERO_LOG_INFO;
        zero__log(&lg, ZERO_LOG_ERROR, ZERO_MSG_ENGINE_DESTROYED,
                  "%s: engine %p was destroyed or never created", fn, (const void *)e);
        return ZERO_ERR_STATE;
    }
    if (e->broken)
        return zero__efail(e, ZERO_MSG_ENGINE_BROKEN, "%s: the engine stopped after an earlier failure: see the "
                                                      "first error\nHINT: destroy the engine; every rank must", fn);
    return ZERO_OK;
}

static char *zero__bp(const zero_engine *e, void *base, int64_t elems, size_t esize) {
    (void)e;
    return (char *)base + (size_t)elems * esize;
}

/* Tensor pieces inside [lo, hi) of unit u, in unit coordinates. */
static int zero__unit_segments(const zero_layout *l, int u, int64_t lo, int64_t hi, zero__seg *out, int cap) {
    const zero_unit *x = &l->units[u];
    int i, n = 0;
    for (i = x->first_tensor; i <= x->last_tensor; i++) {
        const zero_tensor_place *pl = &l->places[i];
        int64_t t0, t1, tbase; /* tensor elements [t0, t1) in this unit start at unit offset tbase */
        if (l->piece[i]) {
            int k = u - pl->first_unit;
            t0 = (int64_t)k * l->piece[i];
            t1 = t0 + x->numel;
            tbase = 0;
        } else {
            t0 = 0;
            t1 = l->numel[i];
            tbase = pl->unit_offset;
        }
        {
            int64_t a0 = zero__max_i64(lo, tbase), a1 = zero__min_i64(hi, tbase + (t1 - t0));
            if (a1 > a0 && n < cap) {
                out[n].tensor = i;
                out[n].unit_off = a0;
                out[n].tensor_off = t0 + (a0 - tbase);
                out[n].count = a1 - a0;
                n++;
            }
        }
    }
    return n;
}

/* ---- engine: plan and create ---- */

static zero_result zero__ealloc(zero_engine *e, zero_mem_category cat, zero_mem_kind kind, size_t bytes,
                                void **out, const char *what) {
    zero_error be;
    zero__ok(&be);
    *out = NULL;
    e->planned[cat][kind] += bytes;
    if (!bytes) return ZERO_OK;
    if (e->be.alloc(e->be.ctx, kind, bytes, out, &be) != ZERO_OK || !*out) {
        char text[700];
        snprintf(text, sizeof text, "%s (%.1f MiB)", what, (double)bytes / 1048576.0);
        if (!be.msg[0]) zero__fail(&be, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "allocation failed");
        zero__ebackend(e, &be, text);
        e->broken = 0;
        return e->err.code;
    }
    e->allocated[kind] += bytes;
    return ZERO_OK;
}

static void zero__efree(zero_engine *e, zero_mem_kind kind, void *p) {
    if (p) e->be.free(e->be.ctx, kind, p);
}

static void zero__engine_free(zero_engine *e) {
    int k;
    if (!e) return;
    if (e->be.event_destroy) {
        if (e->ev_compute) e->be.event_destroy(e->be.ctx, e->ev_compute);
        if (e->ev_comm) e->be.event_destroy(e->be.ctx, e->ev_comm);
        for (k = 0; k < 2; k++)
            if (e->ev_slot[k]) e->be.event_destroy(e->be.ctx, e->ev_slot[k]);
    }
    zero__efree(e, ZERO_MEM_DEVICE, e->params);
    zero__efree(e, ZERO_MEM_DEVICE, e->pool);
    zero__efree(e, ZERO_MEM_DEVICE, e->grads);
    zero__efree(e, ZERO_MEM_DEVICE, e->accum);
    zero__efree(e, ZERO_MEM_DEVICE, e->master);
    zero__efree(e, ZERO_MEM_DEVICE, e->m);
    zero__efree(e, ZERO_MEM_DEVICE, e->v);
    zero__efree(e, ZERO_MEM_DEVICE, e->stats_dev);
    zero__efree(e, ZERO_MEM_HOST, e->stats_host);
    ZERO_FREE(e->tflags);
    ZERO_FREE(e->tlr);
    ZERO_FREE(e->goff);
    ZERO_FREE(e->tshard);
    ZERO_FREE(e->pending);
    ZERO_FREE(e->pending0);
    ZERO_FREE(e->seg_first);
    ZERO_FREE(e->seg_count);
    ZERO_FREE(e->segs);
    ZERO_FREE(e->seg_tensor);
    ZERO_FREE(e->ready);
    ZERO_FREE(e->spans);
    ZERO_FREE(e->span_off);
    ZERO_FREE(e->span_padded);
    ZERO_FREE(e->slot_span);
    ZERO_FREE(e->ext_off);
    ZERO_FREE(e->ext_len);
    ZERO_FREE(e->trace);
    ZERO_FREE(e->pair_first);
    ZERO_FREE(e->segtmp);
    zero_layout_destroy(e->L);
    ZERO_FREE(e);
}

static int zero__span_of_tensor(const zero_engine *e, int t) {
    return e->L->units[e->L->places[t].first_unit].span;
}

/* Stream `waiter` waits for all work queued so far on stream `from`. */
static zero_result zero__order(zero_engine *e, zero_stream_id from, zero_stream_id waiter, zero_event *ev) {
    zero_error be;
    zero__ok(&be);
    if (!ev) return ZERO_OK;
    if (e->be.event_record(e->be.ctx, ev, from, &be) != ZERO_OK || e->be.stream_wait(e->be.ctx, waiter, ev, &be) != ZERO_OK)
        return zero__ebackend(e, &be, "stream order");
    return ZERO_OK;
}

/* Per-unit pointers into the buffers (see the memory plan in zero_engine_create). */
static float *zero__master_at(const zero_engine *e, int u) {
    const zero_unit *x = &e->L->units[u];
    if (e->dt == ZERO_DTYPE_FP32) { /* the fp32 parameters are the master */
        if (e->stage == 0) return (float *)e->params + x->offset;
        if (e->stage < 3) return (float *)e->params + x->offset + (int64_t)e->rank * x->chunk;
        return (float *)e->params + x->shard_offset;
    }
    return e->master + (e->stage == 0 ? e->goff[u] : e->tshard[u]);
}
static float *zero__mom_at(const zero_engine *e, float *base, int u) {
    return base + (e->stage == 0 ? e->goff[u] : e->tshard[u]);
}
/* compute-dtype parameters that rank owns of unit u: whole unit on stage 0 */
static void *zero__param_own(const zero_engine *e, int u) {
    const zero_unit *x = &e->L->units[u];
    if (e->stage == 0) return zero__bp(e, e->params, x->offset, e->d);
    if (e->stage < 3) return zero__bp(e, e->params, x->offset + (int64_t)e->rank * x->chunk, e->d);
    return zero__bp(e, e->params, x->shard_offset, e->d);
}
/* reduced gradient of unit u: its base (stage 0-1: whole unit) and dtype */
static void *zero__grad_src(const zero_engine *e, int u, zero_dtype *dt) {
    if (e->stage <= 1) {
        if (e->gas > 1) {
            *dt = e->adt;
            return zero__bp(e, e->accum, e->goff[u], e->a);
        }
        *dt = e->dt;
        return zero__bp(e, e->grads, e->goff[u], e->d);
    }
    *dt = e->adt;
    return zero__bp(e, e->accum, e->tshard[u], e->a);
}
/* ... and the rank's own chunk of it */
static void *zero__grad_own(const zero_engine *e, int u, zero_dtype *dt) {
    char *p = (char *)zero__grad_src(e, u, dt);
    if (e->stage <= 1) p += (size_t)((int64_t)e->rank * e->L->units[u].chunk) * zero_dtype_size(*dt);
    return p;
}

/* fp32 values of unit u's elements [lo, hi) from the init callbacks (zeros in gaps). */
static void zero__init_values(const zero_engine *e, const zero_tensor *ts, int u, int64_t lo, int64_t hi,
                              float *out, zero__seg *segs, int cap) {
    int n = zero__unit_segments(e->L, u, lo, hi, segs, cap), k;
    memset(out, 0, sizeof(float) * (size_t)(hi - lo));
    for (k = 0; k < n; k++) {
        const zero_tensor *t = &ts[segs[k].tensor];
        if (t->init)
            t->init(t->init_user, segs[k].tensor, segs[k].tensor_off, segs[k].count, out + (segs[k].unit_off - lo));
    }
}

static void zero__host_cast(void *dst, zero_dtype dt, const float *src, int64_t n) {
    int64_t i;
    if (dt == ZERO_DTYPE_FP16)
        for (i = 0; i < n; i++) ((zero_f16 *)dst)[i] = zero_f32_to_f16(src[i]);
    else if (dt == ZERO_DTYPE_BF16)
        for (i = 0; i < n; i++) ((zero_bf16 *)dst)[i] = zero_f32_to_bf16(src[i]);
    else
        memcpy(dst, src, sizeof(float) * (size_t)n);
}
static void zero__host_uncast(float *dst, zero_dtype dt, const void *src, int64_t n) {
    int64_t i;
    if (dt == ZERO_DTYPE_FP16)
        for (i = 0; i < n; i++) dst[i] = zero_f16_to_f32(((const zero_f16 *)src)[i]);
    else if (dt == ZERO_DTYPE_BF16)
        for (i = 0; i < n; i++) dst[i] = zero_bf16_to_f32(((const zero_bf16 *)src)[i]);
    else
        memcpy(dst, src, sizeof(float) * (size_t)n);
}

static zero_result zero__gather_span(zero_engine *e, int s, int64_t pool_off);

/* Write initial weights: each rank only what it keeps (stage 0: everything). */
static zero_result zero__engine_init_weights(zero_engine *e, const zero_tensor *ts) {
    const zero_layout *l = e->L;
    int64_t maxn = 0;
    int u, cap = 0;
    float *vals;
    void *cast;
    zero__seg *segs;
    zero_result r = ZERO_OK;
    for (u = 0; u < l->n_units; u++) {
        maxn = zero__max_i64(maxn, e->stage == 0 ? l->units[u].padded : l->units[u].chunk);
        cap = (int)zero__max_i64(cap, l->units[u].last_tensor - l->units[u].first_tensor + 1);
    }
    vals = (float *)ZERO_MALLOC(sizeof(float) * (size_t)maxn);
    cast = ZERO_MALLOC(e->d * (size_t)maxn);
    segs = (zero__seg *)ZERO_MALLOC(sizeof(zero__seg) * (size_t)cap);
    if (!vals || !cast || !segs) {
        ZERO_FREE(vals);
        ZERO_FREE(cast);
        ZERO_FREE(segs);
        return zero__efail(e, ZERO_MSG_OUT_OF_MEMORY, "zero_engine_create: %lld elements of init staging",
                           (long long)maxn);
    }
    for (u = 0; u < l->n_units && r == ZERO_OK; u++) {
        const zero_unit *x = &l->units[u];
        int64_t lo = e->stage == 0 ? 0 : (int64_t)e->rank * x->chunk;
        int64_t n = e->stage == 0 ? x->padded : x->chunk;
        int64_t hi = zero__min_i64(lo + n, x->numel);
        zero_error be;
        zero__ok(&be);
        if (hi > lo)
            zero__init_values(e, ts, u, lo, hi, vals, segs, cap);
        if (hi - lo < n) memset(vals + zero__max_i64(0, hi - lo), 0, sizeof(float) * (size_t)(n - zero__max_i64(0, hi - lo)));
        zero__host_cast(cast, e->dt, vals, n);
        if (e->be.copy(e->be.ctx, zero__param_own(e, u), cast, e->d * (size_t)n, ZERO_STREAM_COMM, &be) != ZERO_OK) {
            r = zero__ebackend(e, &be, "zero_engine_create: initial weights");
            break;
        }
        if (!x->frozen && e->dt != ZERO_DTYPE_FP32 &&
            e->be.copy(e->be.ctx, zero__master_at(e, u), vals, sizeof(float) * (size_t)n, ZERO_STREAM_COMM, &be) != ZERO_OK) {
            r = zero__ebackend(e, &be, "zero_engine_create: initial master weights");
            break;
        }
        /* the copies read host staging that the next unit overwrites */
        if (e->be.sync(e->be.ctx, ZERO_STREAM_COMM, &be) != ZERO_OK) {
            r = zero__ebackend(e, &be, "zero_engine_create: sync");
            break;
        }
    }
    ZERO_FREE(vals);
    ZERO_FREE(cast);
    ZERO_FREE(segs);
    if (r != ZERO_OK) return r;
    if (e->stage == 1 || e->stage == 2) {
        for (u = 0; u < l->n_units; u++) {
            const zero_unit *x = &l->units[u];
            ZERO__TRY_BE(e, "zero_engine_create: all_gather of initial weights",
                         e->be.all_gather(e->be.ctx, zero__param_own(e, u), zero__bp(e, e->params, x->offset, e->d),
                                          (size_t)x->chunk, e->dt, ZERO_STREAM_COMM, &be_err_));
        }
    }
    if (e->stage == 3) {
        int s;
        for (s = 0; s < e->n_spans; s++)
            if (e->spans[s].persistent && (r = zero__gather_span(e, s, e->spans[s].pool_off)) != ZERO_OK) return r;
    }
    ZERO__TRY_BE(e, "zero_engine_create: sync", e->be.sync(e->be.ctx, ZERO_STREAM_COMM, &be_err_));
    return ZERO_OK;
}

static zero_result zero__engine_setup(zero_engine *e, const zero_tensor *ts, int n) {
    const zero_layout *l = e->L;
    const zero_zero_config *z = &e->cfg.zero_optimization;
    int u, s, i, nseg = 0, maxcap = 0;
    int64_t goff = 0, tsh = 0, persist = 0, dyn_total = 0, dyn_max = 0, slot = 0;
    int trainable_spans = 0;
    zero_result r;

    e->n_tensors = n;
    e->n_units = l->n_units;
    e->n_spans = l->n_spans;
    e->tflags = (int *)ZERO_MALLOC(sizeof(int) * (size_t)n);
    e->tlr = (float *)ZERO_MALLOC(sizeof(float) * (size_t)n);
    e->ready = (unsigned char *)ZERO_MALLOC((size_t)n);
    e->goff = (int64_t *)ZERO_MALLOC(sizeof(int64_t) * (size_t)l->n_units);
    e->tshard = (int64_t *)ZERO_MALLOC(sizeof(int64_t) * (size_t)l->n_units);
    e->pending = (int *)ZERO_MALLOC(sizeof(int) * (size_t)l->n_units);
    e->pending0 = (int *)ZERO_MALLOC(sizeof(int) * (size_t)l->n_units);
    e->seg_first = (int *)ZERO_MALLOC(sizeof(int) * (size_t)l->n_units);
    e->seg_count = (int *)ZERO_MALLOC(sizeof(int) * (size_t)l->n_units);
    e->spans = (zero__span_state *)ZERO_MALLOC(sizeof(zero__span_state) * (size_t)l->n_spans);
    e->span_off = (int64_t *)ZERO_MALLOC(sizeof(int64_t) * (size_t)l->n_spans);
    e->span_padded = (int64_t *)ZERO_MALLOC(sizeof(int64_t) * (size_t)l->n_spans);
    e->ext_off = (int64_t *)ZERO_MALLOC(sizeof(int64_t) * (size_t)l->n_spans);
    e->ext_len = (int64_t *)ZERO_MALLOC(sizeof(int64_t) * (size_t)l->n_spans);
    e->slot_span = (int *)ZERO_MALLOC(sizeof(int) * 2);
    e->trace_cap = 4 * n + 64;
    e->trace = (int *)ZERO_MALLOC(sizeof(int) * (size_t)e->trace_cap);
    if (!e->tflags || !e->tlr || !e->ready || !e->goff || !e->tshard || !e->pending || !e->pending0 ||
        !e->seg_first || !e->seg_count || !e->spans || !e->span_off || !e->span_padded || !e->ext_off ||
        !e->ext_len || !e->slot_span || !e->trace)
        return zero__efail(e, ZERO_MSG_OUT_OF_MEMORY, "zero_engine_create: engine tables for %d tensors", n);
    memset(e->ready, 0, (size_t)n);
    if (e->be.event_create && e->be.event_record && e->be.stream_wait && e->be.event_destroy) {
        zero_error be;
        zero__ok(&be);
        if (e->be.event_create(e->be.ctx, &e->ev_compute, &be) != ZERO_OK ||
            e->be.event_create(e->be.ctx, &e->ev_comm, &be) != ZERO_OK ||
            e->be.event_create(e->be.ctx, &e->ev_slot[0], &be) != ZERO_OK ||
            e->be.event_create(e->be.ctx, &e->ev_slot[1], &be) != ZERO_OK)
            return zero__ebackend(e, &be, "zero_engine_create: events");
    }
    for (i = 0; i < n; i++) {
        e->tflags[i] = ts[i].flags;
        e->tlr[i] = ts[i].lr_scale > 0 ? ts[i].lr_scale : 1.0f;
        if (!(ts[i].flags & ZERO_TENSOR_FROZEN)) e->n_trainable++;
    }
    e->pair_first = (int *)ZERO_MALLOC(sizeof(int) * (size_t)l->n_units);
    if (!e->pair_first) return zero__efail(e, ZERO_MSG_OUT_OF_MEMORY, "zero_engine_create: engine tables");
    for (u = 0; u < l->n_units; u++) {
        const zero_unit *x = &l->units[u];
        e->pair_first[u] = e->n_pairs;
        e->n_pairs += x->last_tensor - x->first_tensor + 1;
        e->goff[u] = x->frozen ? -1 : goff;
        e->tshard[u] = x->frozen ? -1 : tsh;
        if (!x->frozen) goff += x->padded, tsh += x->chunk;
        e->pending0[u] = e->pending[u] = x->frozen ? 0 : x->last_tensor - x->first_tensor + 1;
        maxcap = (int)zero__max_i64(maxcap, x->last_tensor - x->first_tensor + 1);
    }
    for (s = 0; s < l->n_spans; s++) {
        const zero_unit *f = &l->units[l->span_first[s]], *la = &l->units[l->span_first[s + 1] - 1];
        zero__span_state *ss = &e->spans[s];
        memset(ss, 0, sizeof *ss);
        ss->pool_off = -1;
        ss->slot = -1;
        ss->frozen = f->frozen;
        ss->persistent = f->persistent;
        e->span_off[s] = f->offset;
        e->span_padded[s] = la->offset + la->padded - f->offset;
        if (!f->frozen) {
            trainable_spans++;
            slot = zero__max_i64(slot, e->span_padded[s]);
        }
        if (f->persistent) {
            ss->pool_off = persist;
            persist += e->span_padded[s];
        } else {
            dyn_total += e->span_padded[s];
            dyn_max = zero__max_i64(dyn_max, e->span_padded[s]);
        }
    }

    e->segtmp = (zero__seg *)ZERO_MALLOC(sizeof(zero__seg) * (size_t)maxcap);
    if (!e->segtmp) return zero__efail(e, ZERO_MSG_OUT_OF_MEMORY, "zero_engine_create: segments");

    /* Adam segments: whole units on stage 0, the owned chunk otherwise */
    {
        zero__seg *tmp = (zero__seg *)ZERO_MALLOC(sizeof(zero__seg) * (size_t)maxcap);
        int total = 0;
        if (!tmp) return zero__efail(e, ZERO_MSG_OUT_OF_MEMORY, "zero_engine_create: segments");
        for (u = 0; u < l->n_units; u++) total += l->units[u].frozen ? 0 : l->units[u].last_tensor - l->units[u].first_tensor + 1;
        e->segs = (zero_adam_seg *)ZERO_MALLOC(sizeof(zero_adam_seg) * (size_t)(total ? total : 1));
        e->seg_tensor = (int *)ZERO_MALLOC(sizeof(int) * (size_t)(total ? total : 1));
        if (!e->segs || !e->seg_tensor) {
            ZERO_FREE(tmp);
            return zero__efail(e, ZERO_MSG_OUT_OF_MEMORY, "zero_engine_create: segments");
        }
        for (u = 0; u < l->n_units; u++) {
            const zero_unit *x = &l->units[u];
            int64_t lo = e->stage == 0 ? 0 : (int64_t)e->rank * x->chunk;
            int64_t hi = e->stage == 0 ? x->numel : zero__min_i64(lo + x->chunk, x->numel);
            int k, c = (x->frozen || hi <= lo) ? 0 : zero__unit_segments(l, u, lo, hi, tmp, maxcap);
            e->seg_first[u] = nseg;
            e->seg_count[u] = c;
            for (k = 0; k < c; k++) {
                e->segs[nseg].offset = tmp[k].unit_off - lo;
                e->segs[nseg].count = tmp[k].count;
                e->segs[nseg].lr = 0;
                e->segs[nseg].weight_decay = 0;
                e->seg_tensor[nseg++] = tmp[k].tensor;
            }
        }
        ZERO_FREE(tmp);
    }

    /* The memory plan (bytes per rank; Psi = padded elements, T = trainable,
       S = shard elements, d / a = compute / accumulation dtype bytes):
         PARAMS       stage 0-2: Psi d;   stage 3: S d
         GATHER_POOL  stage 3: (persistent spans + min(rest, max(max_live + prefetch, 2 U))) d,
                      U the largest non-persistent span
         GRADS        stage 0-1: Psi_T d; stage 2-3: min(2, trainable spans) x largest span x d
         GRAD_ACCUM   stage 0-1: Psi_T a when G > 1, else 0; stage 2-3: S_T a, with a = d
                      when G == 1 (nothing to add up: the reduced chunk itself)
         MASTER       0 for fp32 (the parameters are the master); stage 0: 4 Psi_T; else 4 S_T
         OPTIM_STATE  stage 0: 8 Psi_T; else 8 S_T
         SCRATCH      16 bytes per (unit, tensor) pair on the device and on the host (norm and
                      inf/nan statistics) */
    {
        int64_t psi = l->padded_numel, psiT = goff, S = l->shard_numel, ST = tsh;
        int64_t opt = e->stage == 0 ? psiT : ST;
        void *p;
        if ((r = zero__ealloc(e, ZERO_MEM_PARAMS, ZERO_MEM_DEVICE, (size_t)(e->stage == 3 ? S : psi) * e->d, &e->params,
                              "compute-dtype parameters")) != ZERO_OK)
            return r;
        if (e->stage == 3) {
            int64_t want = zero__max_i64(z->stage3_max_live_parameters + zero__max_i64(0, z->stage3_prefetch_bucket_size),
                                         2 * dyn_max);
            e->persist_elems = persist;
            e->pool_elems = zero__min_i64(dyn_total, want);
            if ((r = zero__ealloc(e, ZERO_MEM_GATHER_POOL, ZERO_MEM_DEVICE, (size_t)(persist + e->pool_elems) * e->d,
                                  &e->pool, "stage-3 gather pool")) != ZERO_OK)
                return r;
        }
        if (e->stage <= 1) {
            if ((r = zero__ealloc(e, ZERO_MEM_GRADS, ZERO_MEM_DEVICE, (size_t)psiT * e->d, &e->grads, "gradients")) != ZERO_OK)
                return r;
            if (e->gas > 1 &&
                (r = zero__ealloc(e, ZERO_MEM_GRAD_ACCUM, ZERO_MEM_DEVICE, (size_t)psiT * e->a, &e->accum,
                                  "gradient accumulator")) != ZERO_OK)
                return r;
        } else {
            e->n_slots = trainable_spans < 2 ? trainable_spans : 2;
            e->slot_elems = slot;
            e->slot_span[0] = e->slot_span[1] = -1;
            if ((r = zero__ealloc(e, ZERO_MEM_GRADS, ZERO_MEM_DEVICE, (size_t)(e->n_slots * slot) * e->d, &e->grads,
                                  "gradient ring")) != ZERO_OK)
                return r;
            if ((r = zero__ealloc(e, ZERO_MEM_GRAD_ACCUM, ZERO_MEM_DEVICE, (size_t)ST * e->a, &e->accum,
                                  "owned gradient accumulator")) != ZERO_OK)
                return r;
        }
        if (e->dt != ZERO_DTYPE_FP32) {
            if ((r = zero__ealloc(e, ZERO_MEM_MASTER, ZERO_MEM_DEVICE, (size_t)opt * 4, &p, "fp32 master weights")) != ZERO_OK)
                return r;
            e->master = (float *)p;
        }
        if ((r = zero__ealloc(e, ZERO_MEM_OPTIM_STATE, ZERO_MEM_DEVICE, (size_t)opt * 4, &p, "Adam exp_avg")) != ZERO_OK)
            return r;
        e->m = (float *)p;
        if ((r = zero__ealloc(e, ZERO_MEM_OPTIM_STATE, ZERO_MEM_DEVICE, (size_t)opt * 4, &p, "Adam exp_avg_sq")) != ZERO_OK)
            return r;
        e->v = (float *)p;
        if ((r = zero__ealloc(e, ZERO_MEM_SCRATCH, ZERO_MEM_DEVICE, sizeof(double) * 2 * (size_t)e->n_pairs, &p,
                              "norm statistics")) != ZERO_OK)
            return r;
        e->stats_dev = (double *)p;
        if ((r = zero__ealloc(e, ZERO_MEM_SCRATCH, ZERO_MEM_HOST, sizeof(double) * 2 * (size_t)e->n_pairs, &p,
                              "norm statistics (host)")) != ZERO_OK)
            return r;
        e->stats_host = (double *)p;
        {
            zero_error be;
            zero__ok(&be);
            if ((e->grads && e->be.memset0(e->be.ctx, e->grads, (size_t)(e->stage <= 1 ? psiT : e->n_slots * slot) * e->d,
                                           ZERO_STREAM_COMM, &be) != ZERO_OK) ||
                (e->m && e->be.memset0(e->be.ctx, e->m, (size_t)opt * 4, ZERO_STREAM_COMM, &be) != ZERO_OK) ||
                (e->v && e->be.memset0(e->be.ctx, e->v, (size_t)opt * 4, ZERO_STREAM_COMM, &be) != ZERO_OK) ||
                (e->params && e->be.memset0(e->be.ctx, e->params, (size_t)(e->stage == 3 ? S : psi) * e->d,
                                            ZERO_STREAM_COMM, &be) != ZERO_OK))
                return zero__ebackend(e, &be, "zero_engine_create: zero-fill");
        }
    }
    return zero__engine_init_weights(e, ts);
}

ZERO__DEF zero_result zero_engine_create(zero_engine **out, const zero_config *cfg, const zero_tensor *tensors,
                                         int n_tensors, const zero_backend *be, zero_error *err) {
    zero_engine *e;
    zero_layout_args la;
    zero_result r;
    const zero_zero_config *z;
    if (!out) return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "zero_engine_create: out is NULL");
    *out = NULL;
    if (!cfg || !tensors || !be)
        return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "zero_engine_create: %s is NULL",
                          !cfg ? "cfg" : !tensors ? "tensors" : "backend");
    if (!be->alloc || !be->free || !be->memset0 || !be->copy || !be->sync || !be->reduce_scatter || !be->all_gather ||
        !be->all_reduce || !be->broadcast || !be->scale || !be->convert || !be->sumsq || !be->adam)
        return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0,
                          "zero_engine_create: backend '%s' lacks a function", be->name ? be->name : "?");
    if (be->world < 1 || be->rank < 0 || be->rank >= be->world)
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "zero_engine_create: backend rank %d of world %d", be->rank,
                          be->world);
    if (!cfg->resolved)
        return zero__fail(err, ZERO_MSG_ENGINE_CONFIG, NULL, 0, 0,
                          "the config is not resolved\nHINT: call zero_config_resolve(&cfg, %d, &err) first", be->world);
    if (cfg->world_size != be->world)
        return zero__fail(err, ZERO_MSG_ENGINE_CONFIG, NULL, 0, 0,
                          "the config was resolved for %d ranks, the backend has %d\nHINT: zero_config_resolve(&cfg, %d, &err)",
                          cfg->world_size, be->world, be->world);
    z = &cfg->zero_optimization;
    if (z->stage < 0 || z->stage > 3)
        return zero__fail(err, ZERO_MSG_ENGINE_CONFIG, "zero_optimization.stage", 0, 0, "%d (need 0 .. 3)", z->stage);
    if (z->offload_optimizer.device != ZERO_OFFLOAD_NONE || z->offload_param.device != ZERO_OFFLOAD_NONE)
        return zero__fail(err, ZERO_MSG_ENGINE_CONFIG,
                          z->offload_optimizer.device != ZERO_OFFLOAD_NONE ? "zero_optimization.offload_optimizer.device"
                                                                           : "zero_optimization.offload_param.device",
                          0, 0, "offload is not in the engine yet (it arrives with zero_offload.h's CPU Adam)\nHINT: "
                                "set the device to \"none\"");
    if (cfg->gradient_accumulation_steps < 1 || cfg->gradient_accumulation_steps > 1000000)
        return zero__fail(err, ZERO_MSG_ENGINE_CONFIG, "gradient_accumulation_steps", 0, 0, "%lld (need 1 .. 1e6)",
                          (long long)cfg->gradient_accumulation_steps);
    if (cfg->grad_accum_dtype != ZERO_DTYPE_FP32 && cfg->grad_accum_dtype != ZERO_DTYPE_FP16 &&
        cfg->grad_accum_dtype != ZERO_DTYPE_BF16)
        return zero__fail(err, ZERO_MSG_ENGINE_CONFIG, "data_types.grad_accum_dtype", 0, 0, "not resolved");
    if (cfg->optimizer.amsgrad == 1)
        return zero__fail(err, ZERO_MSG_ENGINE_CONFIG, "optimizer.params.amsgrad", 0, 0, "true is not supported");

    e = (zero_engine *)ZERO_MALLOC(sizeof *e);
    if (!e) return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "zero_engine_create");
    memset(e, 0, sizeof *e);
    e->cfg = *cfg;
    e->be = *be;
    e->rank = be->rank;
    e->world = be->world;
    if (e->cfg.log.rank < 0) e->cfg.log.rank = be->rank;
    e->stage = z->stage;
    e->gas = (int)cfg->gradient_accumulation_steps;
    e->dt = cfg->fp16.enabled == 1 ? ZERO_DTYPE_FP16 : cfg->bf16.enabled == 1 ? ZERO_DTYPE_BF16 : ZERO_DTYPE_FP32;
    /* stages 2-3 with one micro-batch add nothing up: the reduced chunk stays
       in the compute dtype (2 bytes a parameter / N, ZeRO's formula) */
    e->adt = (e->gas == 1 && z->stage >= 2) ? e->dt : cfg->grad_accum_dtype;
    e->d = zero_dtype_size(e->dt);
    e->a = zero_dtype_size(e->adt);
    e->sched_it = cfg->scheduler.last_batch_iteration;
    e->period_first_unit = -1;
    e->last_b1 = e->last_b2 = -1;
    zero_loss_scaler_init(&e->scaler, cfg);
    if (!e->scaler.valid) {
        ZERO_FREE(e);
        return zero__fail(err, ZERO_MSG_LOSS_SCALER_UNRESOLVED, "fp16", 0, 0, "the loss scaler cannot be made from this config");
    }
    memset(&la, 0, sizeof la);
    la.world = be->world;
    la.bucket_elems = z->reduce_bucket_size;
    if (e->stage == 3) {
        la.persist_threshold = z->stage3_param_persistence_threshold;
        la.model_persist_threshold = z->stage3_model_persistence_threshold;
    }
    if ((r = zero_layout_create(&e->L, tensors, n_tensors, &la, err)) != ZERO_OK) {
        ZERO_FREE(e);
        return r;
    }
    if ((r = zero__engine_setup(e, tensors, n_tensors)) != ZERO_OK) {
        if (err) *err = e->err;
        zero__engine_free(e);
        return r;
    }
    e->n_gathered = 0; /* the initial gathers belong to no step */
    memset(e->t_phase, 0, sizeof e->t_phase);
    pthread_mutex_lock(&zero__live_lock);
    e->next_live = zero__live_head;
    zero__live_head = e;
    pthread_mutex_unlock(&zero__live_lock);
    *out = e;
    zero__ok(&e->err);
    zero__ok(err);
    return ZERO_OK;
}

ZERO__DEF void zero_engine_destroy(zero_engine *e) {
    zero_engine **pp;
    int found = 0;
    if (!e) return;
    pthread_mutex_lock(&zero__live_lock);
    for (pp = &zero__live_head; *pp; pp = &(*pp)->next_live)
        if (*pp == e) {
            *pp = e->next_live;
            found = 1;
            break;
        }
    pthread_mutex_unlock(&zero__live_lock);
    if (!found) {
        zero_logger lg;
        memset(&lg, 0, sizeof lg);
        lg.rank = -1;
        zero__log(&lg, ZERO_LOG_ERROR, ZERO_MSG_ENGINE_DESTROYED,
                  "zero_engine_destroy: engine %p was already destroyed or never created", (void *)e);
        return;
    }
    zero__engine_free(e);
}

ZERO__DEF const zero_error *zero_engine_error(const zero_engine *e) {
    static const zero_error destroyed = {ZERO_ERR_STATE, ZERO_MSG_ENGINE_DESTROYED, 0, 0, "",
                                         "engine was destroyed or never created"};
    return zero__engine_live(e) ? &e->err : &destroyed;
}

ZERO__DEF const zero_layout *zero_engine_layout(const zero_engine *e) {
    return zero__engine_live(e) ? e->L : NULL;
}

/* ---- engine: stage-3 pool ----

   The persistent spans sit first, at fixed places; the rest of the pool is
   handed out first-fit from a sorted list of extents (no allocation during
   training). A required fetch that finds no room evicts unreferenced
   resident spans, least recently used first (prefetched ones last); if the
   spans still referenced leave no room, the fetch fails with POOL_FULL. */

/* Where a span of `need` elements goes: each gap offers its bottom and its
   top; the choice that leaves the largest free gap wins, and on a tie a
   large span (at least half the largest) goes to the top of its gap and a
   small one to the bottom. Large spans collect at the top end and small ones
   at the bottom, so a released span leaves a hole its successor fits into
   (first-fit alone strands a large unit between a small one and the end). */
static int64_t zero__pool_find(const zero_engine *e, int64_t need, int *at) {
    int64_t lo = e->persist_elems, end = e->persist_elems + e->pool_elems, best = -1, best_left = -1;
    int64_t big = 0, largest_other = 0, cur = lo;
    int i, side, prefer_top, best_pref = -1;
    for (i = 0; i < e->n_spans; i++)
        if (!e->spans[i].persistent) big = zero__max_i64(big, e->span_padded[i]);
    prefer_top = 2 * need >= big;
    /* the largest gap, and the second largest, decide what is left after a placement */
    for (i = 0; i <= e->n_ext; i++) {
        int64_t next = i < e->n_ext ? e->ext_off[i] : end;
        largest_other = zero__max_i64(largest_other, next - cur);
        if (i < e->n_ext) cur = e->ext_off[i] + e->ext_len[i];
    }
    cur = lo;
    for (i = 0; i <= e->n_ext; i++) {
        int64_t next = i < e->n_ext ? e->ext_off[i] : end, gap = next - cur;
        if (gap >= need) {
            /* largest free gap after placing here: the rest of this gap, or the
               largest other gap (recomputed only when this gap was the largest) */
            int64_t other = 0, c2 = lo;
            int k;
            if (gap == largest_other) {
                for (k = 0; k <= e->n_ext; k++) {
                    int64_t nx = k < e->n_ext ? e->ext_off[k] : end;
                    if (k != i) other = zero__max_i64(other, nx - c2);
                    if (k < e->n_ext) c2 = e->ext_off[k] + e->ext_len[k];
                }
            } else {
                other = largest_other;
            }
            for (side = 0; side < 2; side++) {
                int top = side == 1, pref = top == prefer_top;
                int64_t left = zero__max_i64(other, gap - need);
                if (left > best_left || (left == best_left && pref > best_pref)) {
                    best = top ? next - need : cur;
                    best_left = left;
                    best_pref = pref;
                    *at = i;
                }
            }
        }
        if (i < e->n_ext) cur = e->ext_off[i] + e->ext_len[i];
    }
    return best;
}

static void zero__pool_take(zero_engine *e, int s, int64_t off, int at) {
    int i;
    for (i = e->n_ext; i > at; i--) {
        e->ext_off[i] = e->ext_off[i - 1];
        e->ext_len[i] = e->ext_len[i - 1];
    }
    e->ext_off[at] = off;
    e->ext_len[at] = e->span_padded[s];
    e->n_ext++;
    e->spans[s].pool_off = off;
}

static void zero__pool_drop(zero_engine *e, int s) {
    int i, j;
    zero__span_state *ss = &e->spans[s];
    if (ss->persistent || ss->pool_off < 0) return;
    for (i = 0; i < e->n_ext; i++)
        if (e->ext_off[i] == ss->pool_off) {
            for (j = i; j + 1 < e->n_ext; j++) {
                e->ext_off[j] = e->ext_off[j + 1];
                e->ext_len[j] = e->ext_len[j + 1];
            }
            e->n_ext--;
            break;
        }
    ss->pool_off = -1;
    ss->prefetched = 0;
}

static int64_t zero__pool_resident(const zero_engine *e) {
    int64_t n = 0;
    int i;
    for (i = 0; i < e->n_ext; i++) n += e->ext_len[i];
    return n;
}

static zero_result zero__gather_span(zero_engine *e, int s, int64_t pool_off) {
    const zero_layout *l = e->L;
    int u;
    double t0 = zero__now_ms();
    zero_result r;
    /* the pool region may still be read by kernels of a released span */
    if ((r = zero__order(e, ZERO_STREAM_COMPUTE, ZERO_STREAM_COMM, e->ev_compute)) != ZERO_OK) return r;
    for (u = l->span_first[s]; u < l->span_first[s + 1]; u++) {
        const zero_unit *x = &l->units[u];
        e->n_gathered++;
        ZERO__TRY_BE(e, "stage-3 all_gather",
                     e->be.all_gather(e->be.ctx, zero__bp(e, e->params, x->shard_offset, e->d),
                                      zero__bp(e, e->pool, pool_off + (x->offset - e->span_off[s]), e->d),
                                      (size_t)x->chunk, e->dt, ZERO_STREAM_COMM, &be_err_));
    }
    if ((r = zero__order(e, ZERO_STREAM_COMM, ZERO_STREAM_COMPUTE, e->ev_comm)) != ZERO_OK) return r;
    e->t_phase[ZERO_PHASE_FETCH] += zero__now_ms() - t0;
    return ZERO_OK;
}

static const char *zero__tname(const zero_engine *e, int t) { return e->L->names[t]; }

/* Make span s resident for a required fetch. */
static zero_result zero__pool_fetch(zero_engine *e, int s) {
    int at;
    int64_t off;
    for (;;) {
        int i, victim = -1;
        off = zero__pool_find(e, e->span_padded[s], &at);
        if (off >= 0) break;
        for (i = 0; i < e->n_spans; i++) {
            const zero__span_state *c = &e->spans[i];
            if (c->persistent || c->pool_off < 0 || c->refs > 0) continue;
            if (victim < 0 || c->prefetched < e->spans[victim].prefetched ||
                (c->prefetched == e->spans[victim].prefetched && c->last_use < e->spans[victim].last_use))
                victim = i;
        }
        if (victim < 0) {
            char held[400];
            size_t n = 0;
            int k;
            held[0] = 0;
            for (k = 0; k < e->n_spans && n < sizeof held - 64; k++)
                if (!e->spans[k].persistent && e->spans[k].refs > 0)
                    n += (size_t)snprintf(held + n, sizeof held - n, "%s'%s'", n ? ", " : "",
                                          zero__tname(e, e->L->units[e->L->span_first[k]].first_tensor));
            return zero__efail(e, ZERO_MSG_ENGINE_POOL_FULL,
                               "zero_fetch('%s'): its unit needs %lld elements, the stage-3 pool holds %lld and the "
                               "units of %s are still fetched\nHINT: zero_release tensors after use, or raise "
                               "zero_optimization.stage3_max_live_parameters (pool = max(max_live + prefetch, 2 x "
                               "largest unit))",
                               zero__tname(e, e->L->units[e->L->span_first[s]].first_tensor),
                               (long long)e->span_padded[s], (long long)e->pool_elems, held);
        }
        zero__pool_drop(e, victim);
    }
    zero__pool_take(e, s, off, at);
    return zero__gather_span(e, s, off);
}

static void zero__trace_invalidate(zero_engine *e, const char *why) {
    if (!e->trace_warned) {
        zero__log(&e->cfg.log, ZERO_LOG_INFO, ZERO_MSG_ENGINE_TRACE,
                  "stage 3: %s; prefetch is off until the next micro-batch records the order again", why);
        e->trace_warned = 1;
    }
    e->trace_state = ZERO__TRACE_INVALID;
}

/* Gather what the recorded order says comes next, within
   min(max_live - resident, prefetch_bucket_size) elements. */
static zero_result zero__prefetch(zero_engine *e) {
    const zero_zero_config *z = &e->cfg.zero_optimization;
    int64_t budget = zero__min_i64(z->stage3_max_live_parameters - zero__pool_resident(e), z->stage3_prefetch_bucket_size);
    int64_t vol = 0;
    int p;
    zero_result r;
    for (p = e->trace_pos; p < e->trace_len && vol < budget; p++) {
        int s = e->trace[p], at;
        int64_t off;
        if (e->spans[s].pool_off >= 0 || e->spans[s].persistent) continue;
        off = zero__pool_find(e, e->span_padded[s], &at);
        if (off < 0) break; /* prefetch never evicts */
        zero__pool_take(e, s, off, at);
        e->spans[s].prefetched = 1;
        e->spans[s].last_use = e->fetch_clock;
        if ((r = zero__gather_span(e, s, off)) != ZERO_OK) return r;
        vol += e->span_padded[s];
    }
    return ZERO_OK;
}

static zero_result zero__check_tensor(zero_engine *e, int t, const char *fn) {
    if (t < 0 || t >= e->n_tensors)
        return zero__efail(e, ZERO_MSG_ENGINE_UNKNOWN_TENSOR, "%s: tensor %d does not exist (the engine has %d)", fn, t,
                           e->n_tensors);
    return ZERO_OK;
}

ZERO__DEF zero_result zero_fetch(zero_engine *e, int t) {
    zero_result r;
    int s;
    zero__span_state *ss;
    if ((r = zero__enter(e, "zero_fetch")) != ZERO_OK || (r = zero__check_tensor(e, t, "zero_fetch")) != ZERO_OK)
        return r;
    if (e->stage != 3) return ZERO_OK;
    s = zero__span_of_tensor(e, t);
    ss = &e->spans[s];
    e->fetch_clock++;
    if (ss->persistent) {
        ss->refs++;
        return ZERO_OK;
    }
    if (e->trace_state == ZERO__TRACE_RECORD) {
        if (e->trace_len < e->trace_cap)
            e->trace[e->trace_len++] = s;
        else
            zero__trace_invalidate(e, "more fetches in a micro-batch than the trace holds");
    } else if (e->trace_state == ZERO__TRACE_COMPLETE) {
        if (e->trace_pos < e->trace_len && e->trace[e->trace_pos] == s)
            e->trace_pos++;
        else
            zero__trace_invalidate(e, "the fetch order differs from the one recorded");
    }
    e->n_fetches++;
    if (ss->pool_off >= 0) e->n_hits++;
    else if ((r = zero__pool_fetch(e, s)) != ZERO_OK) return r;
    ss->refs++;
    ss->prefetched = 0;
    ss->last_use = e->fetch_clock;
    if (e->trace_state == ZERO__TRACE_COMPLETE && e->cfg.zero_optimization.stage3_prefetch_bucket_size > 0)
        return zero__prefetch(e);
    return ZERO_OK;
}

ZERO__DEF zero_result zero_release(zero_engine *e, int t) {
    zero_result r;
    int s, keep = 0;
    zero__span_state *ss;
    if ((r = zero__enter(e, "zero_release")) != ZERO_OK || (r = zero__check_tensor(e, t, "zero_release")) != ZERO_OK)
        return r;
    if (e->stage != 3) return ZERO_OK;
    s = zero__span_of_tensor(e, t);
    ss = &e->spans[s];
    if (ss->refs <= 0)
        return zero__efail(e, ZERO_MSG_ENGINE_RELEASE, "zero_release('%s'): not fetched (every zero_release needs a zero_fetch)",
                           zero__tname(e, t));
    if (--ss->refs > 0 || ss->persistent) return ZERO_OK;
    if (e->trace_state == ZERO__TRACE_COMPLETE) { /* used again soon? (stage3_max_reuse_distance) */
        int64_t dist = 0;
        int p;
        for (p = e->trace_pos; p < e->trace_len && dist < e->cfg.zero_optimization.stage3_max_reuse_distance; p++) {
            if (e->trace[p] == s) {
                keep = 1;
                break;
            }
            dist += e->span_padded[e->trace[p]];
        }
    }
    if (!keep) zero__pool_drop(e, s);
    return ZERO_OK;
}

ZERO__DEF void *zero_param(zero_engine *e, int t) {
    const zero_tensor_place *pl;
    if (zero__enter(e, "zero_param") != ZERO_OK || zero__check_tensor(e, t, "zero_param") != ZERO_OK) return NULL;
    pl = &e->L->places[t];
    if (e->stage != 3) return zero__bp(e, e->params, pl->offset, e->d);
    {
        int s = zero__span_of_tensor(e, t);
        const zero__span_state *ss = &e->spans[s];
        if (!ss->persistent && (ss->refs <= 0 || ss->pool_off < 0)) {
            zero__efail(e, ZERO_MSG_ENGINE_NOT_FETCHED,
                        "zero_param('%s'): stage 3 keeps only a shard of it; call zero_fetch first (and zero_release "
                        "after use)",
                        zero__tname(e, t));
            return NULL;
        }
        return zero__bp(e, e->pool, ss->pool_off + (pl->offset - e->span_off[s]), e->d);
    }
}

/* ---- engine: gradients ---- */

static zero_result zero__grad_check(zero_engine *e, int t, const char *fn) {
    zero_result r;
    if ((r = zero__enter(e, fn)) != ZERO_OK || (r = zero__check_tensor(e, t, fn)) != ZERO_OK) return r;
    if (e->tflags[t] & ZERO_TENSOR_FROZEN)
        return zero__efail(e, ZERO_MSG_ENGINE_FROZEN, "%s('%s'): the tensor is frozen (ZERO_TENSOR_FROZEN): it has no gradient",
                           fn, zero__tname(e, t));
    if (e->micro >= e->gas)
        return zero__efail(e, ZERO_MSG_ENGINE_STEP_MISSING,
                           "%s('%s'): %d micro-batches (gradient_accumulation_steps) are complete\nHINT: call "
                           "zero_step before the next micro-batch",
                           fn, zero__tname(e, t), e->gas);
    if (e->ready[t])
        return zero__efail(e, ZERO_MSG_ENGINE_GRAD_TWICE,
                           "%s('%s'): its gradient was already marked ready in micro-batch %d of this step", fn,
                           zero__tname(e, t), e->micro + 1);
    if (!e->touched) {
        e->touched = 1;
        e->t_backward_start = zero__now_ms();
    }
    return ZERO_OK;
}

ZERO__DEF void *zero_grad(zero_engine *e, int t) {
    const zero_tensor_place *pl;
    int u;
    if (zero__grad_check(e, t, "zero_grad") != ZERO_OK) return NULL;
    pl = &e->L->places[t];
    u = pl->first_unit;
    if (e->stage <= 1) return zero__bp(e, e->grads, e->goff[u] + (pl->offset - e->L->units[u].offset), e->d);
    {
        int s = zero__span_of_tensor(e, t), k;
        zero__span_state *ss = &e->spans[s];
        if (ss->slot < 0) {
            for (k = 0; k < e->n_slots; k++)
                if (e->slot_span[k] < 0) break;
            if (k == e->n_slots) {
                zero__efail(e, ZERO_MSG_ENGINE_GRAD_RING_FULL,
                            "zero_grad('%s'): both gradient ring slots hold units whose gradients are not all ready "
                            "('%s', '%s')\nHINT: finish (zero_grad_ready) every tensor of a unit before starting "
                            "tensors of a third unit; the backward usually goes in reverse registration order",
                            zero__tname(e, t), zero__tname(e, e->L->units[e->L->span_first[e->slot_span[0]]].first_tensor),
                            zero__tname(e, e->L->units[e->L->span_first[e->slot_span[1]]].first_tensor));
                return NULL;
            }
            {
                zero_error be;
                zero__ok(&be);
                if (e->ev_slot[k] && e->be.stream_wait(e->be.ctx, ZERO_STREAM_COMPUTE, e->ev_slot[k], &be) != ZERO_OK) {
                    zero__ebackend(e, &be, "zero_grad: waiting for a ring slot");
                    return NULL;
                }
                if (e->be.memset0(e->be.ctx, zero__bp(e, e->grads, (int64_t)k * e->slot_elems, e->d),
                                  (size_t)e->span_padded[s] * e->d, ZERO_STREAM_COMPUTE, &be) != ZERO_OK) {
                    zero__ebackend(e, &be, "zero_grad: clearing a ring slot");
                    return NULL;
                }
            }
            e->slot_span[k] = s;
            ss->slot = k;
            ss->units_left = e->L->span_first[s + 1] - e->L->span_first[s];
        }
        return zero__bp(e, e->grads, (int64_t)ss->slot * e->slot_elems + (pl->offset - e->span_off[s]), e->d);
    }
}

/* Unit u's gradients of this micro-batch are complete. */
static zero_result zero__unit_done(zero_engine *e, int u) {
    const zero_unit *x = &e->L->units[u];
    float inv_world = 1.0f / (float)e->world;
    size_t chunk = (size_t)x->chunk;
    double t0 = zero__now_ms();
    zero_result r;
    /* the reduction reads what the backward wrote on the compute stream */
    if ((r = zero__order(e, ZERO_STREAM_COMPUTE, ZERO_STREAM_COMM, e->ev_compute)) != ZERO_OK) return r;
    if (e->stage <= 1) {
        char *g = zero__bp(e, e->grads, e->goff[u], e->d);
        if (e->gas > 1) {
            ZERO__TRY_BE(e, "gradient accumulation",
                         e->be.convert(e->be.ctx, zero__bp(e, e->accum, e->goff[u], e->a), e->adt, g, e->dt,
                                       (size_t)x->padded, e->micro > 0, ZERO_STREAM_COMM, &be_err_));
            ZERO__TRY_BE(e, "gradient clear",
                         e->be.memset0(e->be.ctx, g, (size_t)x->padded * e->d, ZERO_STREAM_COMM, &be_err_));
        }
        if (e->micro == e->gas - 1) {
            zero_dtype sdt;
            char *src = (char *)zero__grad_src(e, u, &sdt);
            size_t es = zero_dtype_size(sdt);
            if (e->world > 1)
                ZERO__TRY_BE(e, "gradient pre-division",
                             e->be.scale(e->be.ctx, src, (size_t)x->padded, sdt, inv_world, ZERO_STREAM_COMM, &be_err_));
            if (e->stage == 0)
                ZERO__TRY_BE(e, "all_reduce of gradients",
                             e->be.all_reduce(e->be.ctx, src, src, (size_t)x->padded, sdt, ZERO_OP_SUM, ZERO_STREAM_COMM,
                                              &be_err_));
            else
                ZERO__TRY_BE(e, "reduce_scatter of gradients",
                             e->be.reduce_scatter(e->be.ctx, src, src + (size_t)e->rank * chunk * es, chunk, sdt,
                                                  ZERO_OP_SUM, ZERO_STREAM_COMM, &be_err_));
        }
    } else {
        int s = x->span;
        zero__span_state *ss = &e->spans[s];
        char *g = zero__bp(e, e->grads, (int64_t)ss->slot * e->slot_elems + (x->offset - e->span_off[s]), e->d);
        char *own = g + (size_t)e->rank * chunk * e->d;
        if (e->world > 1)
            ZERO__TRY_BE(e, "gradient pre-division",
                         e->be.scale(e->be.ctx, g, (size_t)x->padded, e->dt, inv_world, ZERO_STREAM_COMM, &be_err_));
        ZERO__TRY_BE(e, "reduce_scatter of gradients",
                     e->be.reduce_scatter(e->be.ctx, g, own, chunk, e->dt, ZERO_OP_SUM, ZERO_STREAM_COMM, &be_err_));
        ZERO__TRY_BE(e, "gradient accumulation",
                     e->be.convert(e->be.ctx, zero__bp(e, e->accum, e->tshard[u], e->a), e->adt, own, e->dt, chunk,
                                   e->micro > 0, ZERO_STREAM_COMM, &be_err_));
        if (--ss->units_left == 0) {
            /* the slot is free once the comm stream is past this point */
            if (e->ev_slot[ss->slot])
                ZERO__TRY_BE(e, "gradient ring event",
                             e->be.event_record(e->be.ctx, e->ev_slot[ss->slot], ZERO_STREAM_COMM, &be_err_));
            e->slot_span[ss->slot] = -1;
            ss->slot = -1;
        }
    }
    e->t_phase[ZERO_PHASE_REDUCE] += zero__now_ms() - t0;
    return ZERO_OK;
}

ZERO__DEF zero_result zero_grad_ready(zero_engine *e, int t) {
    zero_result r;
    const zero_tensor_place *pl;
    int k;
    if ((r = zero__grad_check(e, t, "zero_grad_ready")) != ZERO_OK) return r;
    pl = &e->L->places[t];
    if (e->stage >= 2 && e->spans[zero__span_of_tensor(e, t)].slot < 0) {
        /* never asked for its buffer: its gradient is zero this micro-batch */
        if (!zero_grad(e, t)) return e->err.code;
    }
    e->ready[t] = 1;
    e->ready_count++;
    for (k = 0; k < pl->n_units; k++) {
        int u = pl->first_unit + k;
        if (--e->pending[u] == 0 && (r = zero__unit_done(e, u)) != ZERO_OK) return r;
    }
    if (e->ready_count == e->n_trainable) { /* the micro-batch is complete */
        e->micro++;
        e->ready_count = 0;
        memset(e->ready, 0, (size_t)e->n_tensors);
        memcpy(e->pending, e->pending0, sizeof(int) * (size_t)e->n_units);
        if (e->micro == e->gas) e->t_phase[ZERO_PHASE_BACKWARD] += zero__now_ms() - e->t_backward_start;
        /* the next micro-batch writes buffers this one's reductions still use */
        if ((r = zero__order(e, ZERO_STREAM_COMM, ZERO_STREAM_COMPUTE, e->ev_comm)) != ZERO_OK) return r;
        if (e->stage == 3) {
            if (e->trace_state == ZERO__TRACE_RECORD && e->trace_len > 0)
                e->trace_state = ZERO__TRACE_COMPLETE;
            else if (e->trace_state == ZERO__TRACE_INVALID) {
                e->trace_state = ZERO__TRACE_RECORD;
                e->trace_len = 0;
            }
            e->trace_pos = 0;
        }
    }
    return ZERO_OK;
}

ZERO__DEF double zero_loss_scale(const zero_engine *e) {
    if (!zero__engine_live(e)) return NAN;
    return zero_loss_scaler_scale(&e->scaler);
}

/* ---- engine: the step ---- */

/* bytes of the full gradient buffer (stage 0-1) */
static size_t zero__grads_bytes(const zero_engine *e) {
    int64_t n = 0;
    int u;
    for (u = 0; u < e->n_units; u++)
        if (!e->L->units[u].frozen) n += e->L->units[u].padded;
    return (size_t)n * e->d;
}

/* Hand the step's counters and phase times to info; start the next step's. */
static void zero__step_counters(zero_engine *e, zero_step_info *in) {
    in->fetches = e->n_fetches;
    in->fetch_hits = e->n_hits;
    in->units_gathered = e->n_gathered;
    e->n_fetches = e->n_hits = e->n_gathered = 0;
    memset(e->t_phase, 0, sizeof e->t_phase);
}

static void zero__step_reset(zero_engine *e) {
    e->micro = 0;
    e->ready_count = 0;
    e->touched = 0;
    memset(e->ready, 0, (size_t)e->n_tensors);
    memcpy(e->pending, e->pending0, sizeof(int) * (size_t)e->n_units);
}

static void zero__step_log(zero_engine *e, const zero_step_info *in) {
    const zero_config *c = &e->cfg;
    if (c->wall_clock_breakdown)
        zero__log(&c->log, ZERO_LOG_INFO, ZERO_MSG_ENGINE_TIMERS,
                  "time (ms) | backward: %.2f | reduce: %.2f | fetch: %.2f | norm: %.2f | optimizer: %.2f | gather: %.2f | "
                  "step: %.2f",
                  in->time_ms[ZERO_PHASE_BACKWARD], in->time_ms[ZERO_PHASE_REDUCE], in->time_ms[ZERO_PHASE_FETCH],
                  in->time_ms[ZERO_PHASE_NORM], in->time_ms[ZERO_PHASE_OPTIMIZER], in->time_ms[ZERO_PHASE_GATHER],
                  in->time_ms[ZERO_PHASE_STEP]);
    if (c->steps_per_print > 0 && e->global_steps % c->steps_per_print == 0) {
        double b1, b2;
        zero_betas_at(c, (long)e->sched_it, &b1, &b2);
        zero__log(&c->log, ZERO_LOG_INFO, ZERO_MSG_ENGINE_PROGRESS,
                  "step=%lld, skipped=%lld, lr=[%.6g], mom=[(%g, %g)], grad_norm=%.6g, loss_scale=%g",
                  (long long)e->global_steps, (long long)e->skipped_steps, zero_lr_at(c, (long)e->sched_it), b1, b2,
                  in->grad_norm, in->next_loss_scale);
        if (e->period_skipped > 0) {
            int u = e->period_first_unit;
            zero__log(&c->log, ZERO_LOG_INFO, ZERO_MSG_ENGINE_SKIPPED,
                      "%lld of the last %lld steps skipped for inf/nan gradients (first in unit %d, tensor '%s'); loss "
                      "scale %g -> %g",
                      (long long)e->period_skipped, (long long)c->steps_per_print, u,
                      e->period_first_tensor >= 0 ? zero__tname(e, e->period_first_tensor) : "?", e->period_scale_from,
                      in->next_loss_scale);
        }
        e->period_skipped = 0;
        e->period_first_unit = -1;
    }
}

ZERO__DEF zero_result zero_step(zero_engine *e, zero_step_info *info) {
    const zero_layout *l;
    zero_step_info in;
    zero_result r;
    int u, overflow_unit = -1, overflow_tensor = -1, check, overflow;
    double t0 = zero__now_ms(), t1, sumsq = 0, S, norm, q = 1, lr, b1, b2;
    float grad_scale;
    if ((r = zero__enter(e, "zero_step")) != ZERO_OK) return r;
    l = e->L;
    if (e->micro < e->gas) {
        int t, first = -1;
        for (t = 0; t < e->n_tensors && first < 0; t++)
            if (!(e->tflags[t] & ZERO_TENSOR_FROZEN) && !e->ready[t]) first = t;
        return zero__efail(e, ZERO_MSG_ENGINE_STEP_EARLY,
                           "zero_step after %d of %d micro-batches (gradient_accumulation_steps); in micro-batch %d "
                           "'%s' and %d more tensors have no zero_grad_ready yet",
                           e->micro, e->gas, e->micro + 1, first >= 0 ? zero__tname(e, first) : "?",
                           e->n_trainable - e->ready_count - 1);
    }
    if (e->stage == 3) {
        int s;
        for (s = 0; s < e->n_spans; s++)
            if (!e->spans[s].persistent && e->spans[s].refs > 0)
                return zero__efail(e, ZERO_MSG_ENGINE_STEP_EARLY,
                                   "zero_step while '%s' is still fetched\nHINT: zero_release every zero_fetch before "
                                   "the step",
                                   zero__tname(e, l->units[l->span_first[s]].first_tensor));
    }
    memset(&in, 0, sizeof in);
    memcpy(in.time_ms, e->t_phase, sizeof in.time_ms);

    /* 1. squares and inf/nan flags of the owned chunks per (unit, tensor), summed
       over ranks: the global norm, and exactly where inf/nan appeared */
    ZERO__TRY_BE(e, "zero_step: clear statistics",
                 e->be.memset0(e->be.ctx, e->stats_dev, sizeof(double) * 2 * (size_t)e->n_pairs, ZERO_STREAM_COMM,
                               &be_err_));
    for (u = 0; u < l->n_units; u++) {
        const zero_unit *x = &l->units[u];
        zero_dtype sdt;
        char *g;
        int64_t lo = (int64_t)e->rank * x->chunk, hi = zero__min_i64(lo + x->chunk, x->numel);
        int k, n;
        if (x->frozen || hi <= lo) continue;
        g = (char *)zero__grad_own(e, u, &sdt);
        n = zero__unit_segments(l, u, lo, hi, e->segtmp, x->last_tensor - x->first_tensor + 1);
        for (k = 0; k < n; k++) {
            const zero__seg *sg = &e->segtmp[k];
            double *st = e->stats_dev + 2 * (e->pair_first[u] + (sg->tensor - x->first_tensor));
            ZERO__TRY_BE(e, "zero_step: gradient norm",
                         e->be.sumsq(e->be.ctx, g + (size_t)(sg->unit_off - lo) * zero_dtype_size(sdt),
                                     (size_t)sg->count, sdt, st, ZERO_STREAM_COMM, &be_err_));
        }
    }
    ZERO__TRY_BE(e, "zero_step: all_reduce of the norm",
                 e->be.all_reduce(e->be.ctx, e->stats_dev, e->stats_dev, 2 * (size_t)e->n_pairs,
                                  (zero_dtype)ZERO__DTYPE_F64, ZERO_OP_SUM, ZERO_STREAM_COMM, &be_err_));
    ZERO__TRY_BE(e, "zero_step: statistics to the host",
                 e->be.copy(e->be.ctx, e->stats_host, e->stats_dev, sizeof(double) * 2 * (size_t)e->n_pairs,
                            ZERO_STREAM_COMM, &be_err_));
    ZERO__TRY_BE(e, "zero_step: sync", e->be.sync(e->be.ctx, ZERO_STREAM_COMM, &be_err_));
    for (u = 0; u < l->n_units; u++) {
        int k;
        for (k = 0; k <= l->units[u].last_tensor - l->units[u].first_tensor; k++) {
            const double *st = e->stats_host + 2 * (e->pair_first[u] + k);
            sumsq += st[0];
            if (overflow_unit < 0 && st[1] > 0) {
                overflow_unit = u;
                overflow_tensor = l->units[u].first_tensor + k;
            }
        }
    }
    t1 = zero__now_ms();
    in.time_ms[ZERO_PHASE_NORM] = t1 - t0;

    /* 2. overflow: fp16 always; bf16 with check_grad_overflow on stages 1-2 (DeepSpeed NEW) */
    check = e->dt == ZERO_DTYPE_FP16 ||
            (e->dt == ZERO_DTYPE_BF16 && e->cfg.bf16.check_grad_overflow == 1 && (e->stage == 1 || e->stage == 2));
    overflow = check && overflow_unit >= 0;
    S = zero_loss_scaler_scale(&e->scaler);
    in.loss_scale = S;
    in.overflow_unit = overflow_unit;
    in.overflow_tensor = overflow_tensor;
    if (e->period_skipped == 0 && overflow) e->period_scale_from = S;
    r = zero_loss_scaler_update(&e->scaler, overflow);
    e->global_steps++;
    if (overflow || r != ZERO_OK) {
        e->skipped_steps++;
        if (e->period_skipped++ == 0) {
            e->period_first_unit = overflow_unit;
            e->period_first_tensor = overflow_tensor;
        }
        if (e->stage <= 1 && e->gas == 1)
            ZERO__TRY_BE(e, "zero_step: gradient clear",
                         e->be.memset0(e->be.ctx, e->grads, zero__grads_bytes(e), ZERO_STREAM_COMM, &be_err_));
        if (e->stage == 3) {
            int s;
            for (s = 0; s < e->n_spans; s++) zero__pool_drop(e, s);
        }
        zero__step_reset(e);
        in.applied = 0;
        in.grad_norm = -1;
        in.clip_coef = 1;
        in.lr = zero_lr_at(&e->cfg, (long)e->sched_it);
        in.global_steps = e->global_steps;
        in.skipped_steps = e->skipped_steps;
        in.next_loss_scale = zero_loss_scaler_scale(&e->scaler);
        in.time_ms[ZERO_PHASE_STEP] = zero__now_ms() - t0;
        zero__step_counters(e, &in);
        zero__step_log(e, &in);
        if (info) *info = in;
        if (r != ZERO_OK)
            return zero__efail(e, ZERO_MSG_LOSS_SCALE_AT_MIN,
                               "zero_step: inf/nan gradients (unit %d, tensor '%s') with the loss scale already at "
                               "fp16.min_loss_scale %g (DeepSpeed raises here too)\nHINT: the model diverged, or lower "
                               "min_loss_scale",
                               overflow_unit, overflow_tensor >= 0 ? zero__tname(e, overflow_tensor) : "?",
                               e->scaler.min_scale);
        return ZERO_OK;
    }

    /* 3. unscale, average over micro-batches, clip (DeepSpeed's formula) */
    norm = sqrt(sumsq) / ((double)e->gas * S);
    if (e->cfg.gradient_clipping > 0 && isfinite(norm)) q = (norm + 1e-6) / e->cfg.gradient_clipping;
    if (q < 1) q = 1;
    grad_scale = (float)(1.0 / ((double)e->gas * S * q));
    in.grad_norm = isfinite(norm) ? norm : -1;
    in.clip_coef = 1.0 / q;

    /* 4. Adam on the owned chunks; beta^t kept in float as DeepSpeed's CPU Adam */
    lr = zero_lr_at(&e->cfg, (long)e->sched_it);
    zero_betas_at(&e->cfg, (long)e->sched_it, &b1, &b2);
    in.lr = lr;
    {
        int64_t t = e->applied_steps + 1;
        float bc1 = 1, bc2 = 1;
        if (b1 == e->last_b1 && b2 == e->last_b2 && t > 1) {
            e->beta1_t *= (float)b1;
            e->beta2_t *= (float)b2;
        } else {
            e->beta1_t = powf((float)b1, (float)t);
            e->beta2_t = powf((float)b2, (float)t);
        }
        e->last_b1 = b1;
        e->last_b2 = b2;
        if (e->cfg.optimizer.bias_correction) {
            bc1 = 1.0f - e->beta1_t;
            bc2 = 1.0f / sqrtf(1.0f - e->beta2_t);
        }
        t1 = zero__now_ms();
        for (u = 0; u < l->n_units; u++) {
            zero_adam_args aa;
            int k;
            if (l->units[u].frozen || e->seg_count[u] == 0) continue;
            for (k = e->seg_first[u]; k < e->seg_first[u] + e->seg_count[u]; k++) {
                int ti = e->seg_tensor[k];
                e->segs[k].lr = (float)(lr * e->tlr[ti]);
                e->segs[k].weight_decay =
                    (e->tflags[ti] & ZERO_TENSOR_NO_DECAY) ? 0.0f : (float)e->cfg.optimizer.weight_decay;
            }
            memset(&aa, 0, sizeof aa);
            aa.master = zero__master_at(e, u);
            aa.m = zero__mom_at(e, e->m, u);
            aa.v = zero__mom_at(e, e->v, u);
            aa.grad = zero__grad_own(e, u, &aa.grad_dtype);
            if (e->stage == 0) aa.grad = zero__grad_src(e, u, &aa.grad_dtype);
            aa.param = e->dt == ZERO_DTYPE_FP32 ? NULL : zero__param_own(e, u);
            aa.param_dtype = e->dt;
            aa.segs = e->segs + e->seg_first[u];
            aa.n_segs = e->seg_count[u];
            aa.beta1 = (float)b1;
            aa.beta2 = (float)b2;
            aa.eps = (float)e->cfg.optimizer.eps;
            aa.bc1 = bc1;
            aa.bc2 = bc2;
            aa.grad_scale = grad_scale;
            aa.adamw = e->cfg.optimizer.type == ZERO_OPTIMIZER_ADAMW || e->cfg.optimizer.adam_w_mode == 1;
            ZERO__TRY_BE(e, "zero_step: Adam", e->be.adam(e->be.ctx, &aa, ZERO_STREAM_COMM, &be_err_));
        }
        in.time_ms[ZERO_PHASE_OPTIMIZER] = zero__now_ms() - t1;
    }

    /* 5. every rank's parameters up to date */
    t1 = zero__now_ms();
    if (e->stage == 1 || e->stage == 2) {
        for (u = 0; u < l->n_units; u++) {
            const zero_unit *x = &l->units[u];
            if (x->frozen) continue;
            ZERO__TRY_BE(e, "zero_step: all_gather of parameters",
                         e->be.all_gather(e->be.ctx, zero__param_own(e, u), zero__bp(e, e->params, x->offset, e->d),
                                          (size_t)x->chunk, e->dt, ZERO_STREAM_COMM, &be_err_));
        }
    } else if (e->stage == 3) {
        int s;
        for (s = 0; s < e->n_spans; s++) {
            if (!e->spans[s].persistent) zero__pool_drop(e, s);
            else if (!e->spans[s].frozen && (r = zero__gather_span(e, s, e->spans[s].pool_off)) != ZERO_OK)
                return r;
        }
    }
    if (e->stage <= 1 && e->gas == 1)
        ZERO__TRY_BE(e, "zero_step: gradient clear",
                     e->be.memset0(e->be.ctx, e->grads, zero__grads_bytes(e), ZERO_STREAM_COMM, &be_err_));
    if ((r = zero__order(e, ZERO_STREAM_COMM, ZERO_STREAM_COMPUTE, e->ev_comm)) != ZERO_OK) return r;
    ZERO__TRY_BE(e, "zero_step: sync", e->be.sync(e->be.ctx, ZERO_STREAM_COMM, &be_err_));
    in.time_ms[ZERO_PHASE_GATHER] = zero__now_ms() - t1;

    e->applied_steps++;
    e->sched_it++;
    zero__step_reset(e);
    in.applied = 1;
    in.global_steps = e->global_steps;
    in.skipped_steps = e->skipped_steps;
    in.next_loss_scale = zero_loss_scaler_scale(&e->scaler);
    in.time_ms[ZERO_PHASE_STEP] = zero__now_ms() - t0;
    zero__step_counters(e, &in);
    zero__step_log(e, &in);
    if (info) *info = in;
    return ZERO_OK;
}

/* ---- engine: memory report and state readout ---- */

ZERO__DEF zero_result zero_memory_report(const zero_engine *e, zero_memory_stats *out) {
    int c, k, u;
    if (!out) return ZERO_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    if (!zero__engine_live(e)) return ZERO_ERR_STATE;
    memcpy(out->planned, e->planned, sizeof out->planned);
    memcpy(out->allocated, e->allocated, sizeof out->allocated);
    for (c = 0; c < ZERO_MEM_CATEGORY_COUNT; c++)
        for (k = 0; k < ZERO_MEM_KIND_COUNT; k++) out->planned_total[k] += e->planned[c][k];
    for (u = 0; u < e->n_units; u++) {
        const zero_unit *x = &e->L->units[u];
        out->padded_params += x->padded;
    }
    for (k = 0; k < e->n_tensors; k++) {
        out->params += e->L->numel[k];
        if (!(e->tflags[k] & ZERO_TENSOR_FROZEN)) out->trainable_params += e->L->numel[k];
    }
    out->shard_params = e->L->shard_numel;
    out->units = e->n_units;
    out->world = e->world;
    out->stage = e->stage;
    out->dtype = e->dt;
    out->accum_dtype = e->adt;
    return ZERO_OK;
}

ZERO__DEF size_t zero_memory_stats_format(const zero_memory_stats *r, char *buf, size_t cap) {
    static const char *const names[ZERO_MEM_CATEGORY_COUNT] = {
        "parameters", "gather pool", "gradients", "grad accumulation", "fp32 master", "Adam m + v", "scratch"};
    size_t n = 0;
    int c;
    double total = 0;
#define ZERO__PUT(...)                                                                  \
    do {                                                                                \
        int w_ = snprintf(buf ? buf + (n < cap ? n : cap) : NULL, n < cap ? cap - n : 0, __VA_ARGS__); \
        if (w_ > 0) n += (size_t)w_;                                                    \
    } while (0)
    if (!r) return 0;
    ZERO__PUT("memory per rank: stage %d, %d ranks, %s parameters, %s accumulation, %lld params (%lld trainable), "
              "%d units\n",
              r->stage, r->world, zero_dtype_name(r->dtype), zero_dtype_name(r->accum_dtype), (long long)r->params,
              (long long)r->trainable_params, r->units);
    for (c = 0; c < ZERO_MEM_CATEGORY_COUNT; c++) {
        double b = (double)r->planned[c][ZERO_MEM_DEVICE] + (double)r->planned[c][ZERO_MEM_PINNED] +
                   (double)r->planned[c][ZERO_MEM_HOST];
        total += b;
        ZERO__PUT("  %-18s %12.0f bytes %10.3f MiB\n", names[c], b, b / 1048576.0);
    }
    ZERO__PUT("  %-18s %12.0f bytes %10.3f MiB (allocated %.0f)\n", "total", total, total / 1048576.0,
              (double)r->allocated[ZERO_MEM_DEVICE] + (double)r->allocated[ZERO_MEM_PINNED] +
                  (double)r->allocated[ZERO_MEM_HOST]);
#undef ZERO__PUT
    return n;
}

ZERO__DEF zero_result zero_read_state(zero_engine *e, int t, zero_state_kind what, int64_t offset, int64_t count,
                                      float *out) {
    const zero_layout *l;
    zero_result r;
    int64_t done = 0;
    void *tmp_dev = NULL;
    unsigned char *tmp_host = NULL;
    int64_t maxpad = 0;
    int k;
    if ((r = zero__enter(e, "zero_read_state")) != ZERO_OK || (r = zero__check_tensor(e, t, "zero_read_state")) != ZERO_OK)
        return r;
    l = e->L;
    if ((unsigned)what >= ZERO_STATE_KIND_COUNT || !out || offset < 0 || count < 0 || offset + count > l->numel[t])
        return zero__efail(e, ZERO_MSG_BAD_ARG, "zero_read_state('%s'): range [%lld, %lld) of %lld elements, what %d",
                           zero__tname(e, t), (long long)offset, (long long)(offset + count), (long long)l->numel[t],
                           (int)what);
    if ((e->tflags[t] & ZERO_TENSOR_FROZEN) && what != ZERO_STATE_MASTER)
        return zero__efail(e, ZERO_MSG_ENGINE_FROZEN, "zero_read_state('%s'): a frozen tensor has no Adam state",
                           zero__tname(e, t));
    if (e->touched || e->micro > 0)
        return zero__efail(e, ZERO_MSG_ENGINE_STEP_EARLY, "zero_read_state('%s'): gradients of this step are pending; "
                                                          "read state before the first zero_grad or after zero_step",
                           zero__tname(e, t));
    for (k = 0; k < l->places[t].n_units; k++) maxpad = zero__max_i64(maxpad, l->units[l->places[t].first_unit + k].padded);
    {
        zero_error be;
        zero__ok(&be);
        if (e->be.alloc(e->be.ctx, ZERO_MEM_DEVICE, (size_t)maxpad * 4, &tmp_dev, &be) != ZERO_OK)
            return zero__ebackend(e, &be, "zero_read_state: staging");
    }
    tmp_host = (unsigned char *)ZERO_MALLOC((size_t)maxpad * 4);
    if (!tmp_host) {
        e->be.free(e->be.ctx, ZERO_MEM_DEVICE, tmp_dev);
        return zero__efail(e, ZERO_MSG_OUT_OF_MEMORY, "zero_read_state: staging");
    }
    while (done < count && r == ZERO_OK) {
        int64_t in, n;
        int u = zero__layout_unit_of(l, t, offset + done, &in);
        const zero_unit *x = &l->units[u];
        zero_dtype sdt = ZERO_DTYPE_FP32;
        const void *src;
        zero_error be;
        int local = e->stage == 0;
        zero__ok(&be);
        n = zero__min_i64(count - done, x->numel - in);
        if (l->piece[t] == 0) n = zero__min_i64(n, l->numel[t] - (offset + done));
        if (x->frozen || (what == ZERO_STATE_MASTER && e->dt == ZERO_DTYPE_FP32)) {
            sdt = e->dt;
            src = e->stage == 0 ? zero__bp(e, e->params, x->offset, e->d) : zero__param_own(e, u);
            if (e->stage == 1 || e->stage == 2) local = 1, src = zero__bp(e, e->params, x->offset, e->d);
        } else if (what == ZERO_STATE_MASTER) {
            src = zero__master_at(e, u);
        } else {
            src = zero__mom_at(e, what == ZERO_STATE_EXP_AVG ? e->m : e->v, u);
        }
        if (local) {
            if (e->be.copy(e->be.ctx, tmp_host, zero__bp(e, (void *)(uintptr_t)src, in, zero_dtype_size(sdt)),
                           (size_t)n * zero_dtype_size(sdt), ZERO_STREAM_COMM, &be) != ZERO_OK ||
                e->be.sync(e->be.ctx, ZERO_STREAM_COMM, &be) != ZERO_OK)
                r = zero__ebackend(e, &be, "zero_read_state: copy");
            else
                zero__host_uncast(out + done, sdt, tmp_host, n);
        } else {
            if (e->be.all_gather(e->be.ctx, src, tmp_dev, (size_t)x->chunk, sdt, ZERO_STREAM_COMM, &be) != ZERO_OK ||
                e->be.copy(e->be.ctx, tmp_host, zero__bp(e, tmp_dev, in, zero_dtype_size(sdt)),
                           (size_t)n * zero_dtype_size(sdt), ZERO_STREAM_COMM, &be) != ZERO_OK ||
                e->be.sync(e->be.ctx, ZERO_STREAM_COMM, &be) != ZERO_OK)
                r = zero__ebackend(e, &be, "zero_read_state: all_gather");
            else
                zero__host_uncast(out + done, sdt, tmp_host, n);
        }
        done += n;
    }
    e->be.free(e->be.ctx, ZERO_MEM_DEVICE, tmp_dev);
    ZERO_FREE(tmp_host);
    return r;
}
