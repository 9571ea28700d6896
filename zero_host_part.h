/* zero_host_part.h - 16-bit float helpers and the host backend: a part of zero.h's
   implementation, included inside its ZERO_IMPLEMENTATION block after the error
   helpers (zero__fail, zero__ok), so it has no include guard of its own. */
#define ZERO__HOST_PART_INCLUDED

#include <pthread.h>
#include <time.h>

/* ---- 16-bit floats ---- */

/* The host backend's fifth dtype: exact doubles for the engine's statistics (norms,
   overflow flags, counters) in all_reduce and every other collective. One past the
   public enum so that no public value changes; only the host backend accepts it (the
   CUDA backend maps it to ncclFloat64). zero_dtype_size gives 8, zero_dtype_name
   "fp64". */
#define ZERO__DTYPE_F64 ZERO_DTYPE_COUNT

/* Integer bit work rather than float arithmetic, so the result never depends on the
   FPU's rounding mode or on flush-to-zero settings of the calling thread. */
ZERO__DEF zero_f16 zero_f32_to_f16(float x) {
    uint32_t u, a, sign;
    memcpy(&u, &x, sizeof u);
    sign = (u >> 16) & 0x8000u;
    a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u) /* NaN: quiet, keep the sign and the top of the payload */
        return (zero_f16)(sign | 0x7E00u | ((a >> 13) & 0x3FFu));
    if (a >= 0x477FF000u) /* >= 65520, half-way past 65504, ties to the even 65536: inf */
        return (zero_f16)(sign | 0x7C00u);
    if (a >= 0x38800000u) { /* a binary16 normal: the carry may bump the exponent */
        a += 0x0FFFu + ((a >> 13) & 1u);
        return (zero_f16)(sign | ((a - 0x38000000u) >> 13));
    }
    if (a <= 0x33000000u) /* <= 2^-25: half the smallest subnormal ties to 0 */
        return (zero_f16)sign;
    {
        /* a subnormal result: value * 2^24 = mant * 2^(e - 126), shift in [14, 24] */
        uint32_t e = a >> 23, mant = (a & 0x7FFFFFu) | 0x800000u, shift = 126u - e;
        uint32_t m = mant >> shift, rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (m & 1u))) m++;
        return (zero_f16)(sign | m);
    }
}

ZERO__DEF float zero_f16_to_f32(zero_f16 h) {
    uint32_t sign = ((uint32_t)h & 0x8000u) << 16, e = ((uint32_t)h >> 10) & 0x1Fu;
    uint32_t m = (uint32_t)h & 0x3FFu, u;
    float f;
    if (e == 0x1Fu) {
        u = sign | 0x7F800000u | (m << 13);
    } else if (e != 0) {
        u = sign | ((e + 112u) << 23) | (m << 13);
    } else if (m == 0) {
        u = sign;
    } else { /* subnormal: normalise, every one is a float normal */
        e = 113u;
        while (!(m & 0x400u)) {
            m <<= 1;
            e--;
        }
        u = sign | (e << 23) | ((m & 0x3FFu) << 13);
    }
    memcpy(&f, &u, sizeof f);
    return f;
}

ZERO__DEF zero_bf16 zero_f32_to_bf16(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) /* NaN: the bias below could carry it into inf */
        return (zero_bf16)((u >> 16) | 0x0040u);
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (zero_bf16)(u >> 16);
}

ZERO__DEF float zero_bf16_to_f32(zero_bf16 h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

ZERO__DEF size_t zero_dtype_size(zero_dtype dtype) {
    switch (dtype) {
    case ZERO_DTYPE_DEFAULT:
    case ZERO_DTYPE_FP32: return 4;
    case ZERO_DTYPE_FP16:
    case ZERO_DTYPE_BF16: return 2;
    case ZERO__DTYPE_F64: return 8;
    default: return 0;
    }
}

ZERO__DEF const char *zero_dtype_name(zero_dtype dtype) {
    switch (dtype) {
    case ZERO_DTYPE_DEFAULT: return "default";
    case ZERO_DTYPE_FP32: return "fp32";
    case ZERO_DTYPE_FP16: return "fp16";
    case ZERO_DTYPE_BF16: return "bf16";
    case ZERO__DTYPE_F64: return "fp64";
    default: return "unknown dtype";
    }
}

/* ---- host backend: state ----

   One group per zero_host_run, one rank state per thread. Every field a peer reads is
   written under the group mutex or before a barrier that the reader passed after it,
   so the mutex gives every happens-before edge the collectives need (ThreadSanitizer
   sees the same). */

#define ZERO__HOST_MAX_WORLD 1024
#define ZERO__HOST_ALIGN 64       /* bytes: a cache line, and any vector width */
#define ZERO__HOST_BLOCK 256      /* elements reduced per pass over the ranks */
#define ZERO__HOST_TIMEOUT_DEFAULT 300.0
#define ZERO__HOST_MAGIC 0x7a65726fu  /* "zero": live allocation or event */
#define ZERO__HOST_DEAD 0x64656164u   /* "dead": freed */

enum {
    ZERO__HOST_REDUCE_SCATTER,
    ZERO__HOST_ALL_GATHER,
    ZERO__HOST_ALL_REDUCE,
    ZERO__HOST_BROADCAST
};

/* What a rank asked for, posted where its peers can compare and read it. */
typedef struct zero__host_call {
    int kind;
    size_t count;
    zero_dtype dt;
    zero_op op;
    int root;
    const void *send;
    void *recv;                 /* broadcast: the buffer (send == recv) */
    unsigned long long seq;     /* 1-based number of this rank's collective */
} zero__host_call;

typedef struct zero__host_group zero__host_group;

typedef struct zero__host_rank {
    zero_backend be;            /* what fn gets; be.ctx points back here */
    zero__host_group *g;
    int rank;
    zero__host_call call;       /* posted under g->mu; peers read it between barriers */
    unsigned long long ncoll;
    unsigned long long arrived_gen; /* under g->mu: the barrier this rank last reached */
    int exited;                 /* under g->mu */
    int started;
    zero_result result;         /* fn's return value */
    size_t allocated[ZERO_MEM_KIND_COUNT];
    size_t allocated_total;
    zero_error first, last;     /* the first and last backend errors (code ZERO_OK: none) */
    pthread_t thread;
} zero__host_rank;

struct zero__host_group {
    pthread_mutex_t mu;
    pthread_cond_t cv;          /* default clock: CLOCK_REALTIME, what TIME_UTC reads */
    int world;
    int arrived;                /* ranks inside the current barrier */
    unsigned long long generation; /* barriers completed */
    int n_exited;
    int failed;                 /* sticky: every later collective fails with this */
    zero_msg fail_item;
    char fail_msg[768];
    double timeout_s;
    size_t mem_limit;           /* bytes per rank (ZERO_HOST_MEM_LIMIT); SIZE_MAX: none */
    zero_host_fn fn;
    void *arg;
    zero__host_rank *ranks;
};

/* Host memory comes with this header just below the aligned block, so free knows the
   size and kind without a table. */
typedef struct zero__host_block {
    void *raw;
    size_t bytes;
    int kind;
    unsigned magic;
} zero__host_block;

typedef struct zero__host_event {
    unsigned magic;
} zero__host_event;

static const char *const zero__host_kind_names[ZERO_MEM_KIND_COUNT] = {"device", "pinned",
                                                                       "host"};
static const char *const zero__host_call_names[] = {"reduce_scatter", "all_gather",
                                                    "all_reduce", "broadcast"};

static const char *zero__host_op_name(zero_op op) {
    return op == ZERO_OP_SUM ? "sum" : op == ZERO_OP_MAX ? "max" : op == ZERO_OP_MIN ? "min"
                                                                                       : "?";
}

/* ---- host backend: errors ---- */

/* Every backend error goes through here: it fills err (which may be NULL) and keeps a
   copy in the rank, so zero_host_run can say why a rank's fn failed. */
static zero_result zero__host_fail(zero__host_rank *r, zero_error *err, zero_msg item,
                                   const char *fmt, ...) ZERO__PRINTF(4, 5);
static zero_result zero__host_fail(zero__host_rank *r, zero_error *err, zero_msg item,
                                   const char *fmt, ...) {
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (r) {
        zero__fail(&r->last, item, NULL, 0, 0, "%s", text);
        if (r->first.code == ZERO_OK) r->first = r->last;
    }
    return zero__fail(err, item, NULL, 0, 0, "%s", text);
}

/* The first failure of a group wins; the caller holds g->mu. */
static void zero__host_set_failed(zero__host_group *g, zero_msg item, const char *fmt, ...)
    ZERO__PRINTF(3, 4);
static void zero__host_set_failed(zero__host_group *g, zero_msg item, const char *fmt, ...) {
    va_list ap;
    if (g->failed) return;
    g->failed = 1;
    g->fail_item = item;
    va_start(ap, fmt);
    vsnprintf(g->fail_msg, sizeof g->fail_msg, fmt, ap);
    va_end(ap);
    pthread_cond_broadcast(&g->cv);
}

/* The caller holds g->mu. */
static zero_result zero__host_sticky(zero__host_rank *r, zero_error *err) {
    return zero__host_fail(r, err, r->g->fail_item, "%s", r->g->fail_msg);
}

#define ZERO__HOST_CTX(fname)                                                                 \
    zero__host_rank *r = (zero__host_rank *)ctx;                                              \
    if (!r) return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "host " fname ": ctx is NULL")

static zero_result zero__host_check_stream(zero__host_rank *r, const char *fname,
                                           zero_stream_id s, zero_error *err) {
    if ((unsigned)s >= (unsigned)ZERO_STREAM_COUNT)
        return zero__host_fail(r, err, ZERO_MSG_BAD_ARG, "host %s: stream %d is not a stream id",
                               fname, (int)s);
    return ZERO_OK;
}

/* p may be NULL only when n == 0; buffers must be aligned to their element size (every
   engine buffer is far more aligned than that). */
static zero_result zero__host_check_buf(zero__host_rank *r, const char *fname, const char *what,
                                        const void *p, size_t n, size_t align, zero_error *err) {
    if (!p && n > 0)
        return zero__host_fail(r, err, ZERO_MSG_NULL_ARG, "host %s: %s is NULL (%zu elements)",
                               fname, what, n);
    if (p && align > 1 && (uintptr_t)p % align != 0)
        return zero__host_fail(r, err, ZERO_MSG_BAD_ARG,
                               "host %s: %s (%p) is not aligned to its %zu-byte elements", fname,
                               what, p, align);
    return ZERO_OK;
}

/* The kernels' dtypes; the collectives also take ZERO__DTYPE_F64. */
static zero_result zero__host_check_dtype(zero__host_rank *r, const char *fname, const char *what,
                                          zero_dtype dt, int allow_f64, zero_error *err) {
    if (dt == ZERO_DTYPE_FP32 || dt == ZERO_DTYPE_FP16 || dt == ZERO_DTYPE_BF16 ||
        (allow_f64 && dt == ZERO__DTYPE_F64))
        return ZERO_OK;
    return zero__host_fail(r, err, ZERO_MSG_BAD_ARG,
                           "host %s: %s %d (%s) is not fp32, fp16, bf16%s", fname, what, (int)dt,
                           zero_dtype_name(dt), allow_f64 ? " or fp64" : "");
}

/* ---- host backend: element access ---- */

static float zero__host_get(const void *p, zero_dtype dt, size_t i) {
    switch (dt) {
    case ZERO_DTYPE_FP16: return zero_f16_to_f32(((const zero_f16 *)p)[i]);
    case ZERO_DTYPE_BF16: return zero_bf16_to_f32(((const zero_bf16 *)p)[i]);
    default: return ((const float *)p)[i];
    }
}

static void zero__host_put(void *p, zero_dtype dt, size_t i, float v) {
    switch (dt) {
    case ZERO_DTYPE_FP16: ((zero_f16 *)p)[i] = zero_f32_to_f16(v); break;
    case ZERO_DTYPE_BF16: ((zero_bf16 *)p)[i] = zero_f32_to_bf16(v); break;
    default: ((float *)p)[i] = v; break;
    }
}

/* v rounded to dt, as a float (fp32: v itself) */
static float zero__host_round(zero_dtype dt, float v) {
    switch (dt) {
    case ZERO_DTYPE_FP16: return zero_f16_to_f32(zero_f32_to_f16(v));
    case ZERO_DTYPE_BF16: return zero_bf16_to_f32(zero_f32_to_bf16(v));
    default: return v;
    }
}

/* MAX and MIN propagate NaN (fmaxf would drop it): an inf/nan flag or a norm reduced
   with MAX must never lose a NaN. The CUDA backend has to match. */
static float zero__host_comb_f(zero_op op, float a, float b) {
    if (op == ZERO_OP_SUM) return a + b;
    if (isnan(a)) return a;
    if (isnan(b)) return b;
    return op == ZERO_OP_MAX ? (b > a ? b : a) : (b < a ? b : a);
}

static double zero__host_comb_d(zero_op op, double a, double b) {
    if (op == ZERO_OP_SUM) return a + b;
    if (isnan(a)) return a;
    if (isnan(b)) return b;
    return op == ZERO_OP_MAX ? (b > a ? b : a) : (b < a ? b : a);
}

/* ---- host backend: memory, copies, events ---- */

static zero_result zero__host_alloc(void *ctx, zero_mem_kind kind, size_t bytes, void **out,
                                    zero_error *err) {
    zero__host_block *h;
    void *raw;
    uintptr_t p;
    size_t extra = sizeof(zero__host_block) + ZERO__HOST_ALIGN - 1;
    ZERO__HOST_CTX("alloc");
    if (!out) return zero__host_fail(r, err, ZERO_MSG_NULL_ARG, "host alloc: out is NULL");
    *out = NULL;
    if ((unsigned)kind >= (unsigned)ZERO_MEM_KIND_COUNT)
        return zero__host_fail(r, err, ZERO_MSG_BAD_ARG, "host alloc: memory kind %d is not one "
                               "of device, pinned, host", (int)kind);
    if (bytes > SIZE_MAX - extra || bytes > r->g->mem_limit - r->allocated_total) {
        return zero__host_fail(r, err, ZERO_MSG_OUT_OF_MEMORY,
                               "host alloc: %zu bytes of %s memory: %s (this rank holds %zu bytes)",
                               bytes, zero__host_kind_names[kind],
                               bytes > SIZE_MAX - extra ? "larger than the address space"
                                                        : "over ZERO_HOST_MEM_LIMIT",
                               r->allocated_total);
    }
    /* bytes == 0 still gets a header and so a unique pointer: callers may treat NULL as
       failure, and free(p) of it stays valid. */
    raw = ZERO_MALLOC(bytes + extra);
    if (!raw)
        return zero__host_fail(r, err, ZERO_MSG_OUT_OF_MEMORY,
                               "host alloc: %zu bytes of %s memory failed (this rank holds %zu "
                               "bytes)", bytes, zero__host_kind_names[kind], r->allocated_total);
    p = ((uintptr_t)raw + sizeof(zero__host_block) + ZERO__HOST_ALIGN - 1) &
        ~(uintptr_t)(ZERO__HOST_ALIGN - 1);
    h = (zero__host_block *)p - 1;
    h->raw = raw;
    h->bytes = bytes;
    h->kind = (int)kind;
    h->magic = ZERO__HOST_MAGIC;
    r->allocated[kind] += bytes;
    r->allocated_total += bytes;
    *out = (void *)p;
    zero__ok(err);
    return ZERO_OK;
}

/* free has no error channel: a pointer that is not a live block of this backend is left
   alone and noted as the rank's last error (zero_host_run reports it if fn fails). */
static void zero__host_free(void *ctx, zero_mem_kind kind, void *p) {
    zero__host_rank *r = (zero__host_rank *)ctx;
    zero__host_block *h;
    if (!p) return;
    h = (zero__host_block *)p - 1;
    if (!r) { /* nowhere to count it: still give the memory back */
        if (h->magic == ZERO__HOST_MAGIC) {
            h->magic = ZERO__HOST_DEAD;
            ZERO_FREE(h->raw);
        }
        return;
    }
    if (h->magic != ZERO__HOST_MAGIC || (unsigned)h->kind >= (unsigned)ZERO_MEM_KIND_COUNT) {
        zero__host_fail(r, NULL, ZERO_MSG_BAD_ARG,
                        "host free: %p is not a live block of this backend (freed twice?)", p);
        return;
    }
    if ((int)kind != h->kind)
        zero__host_fail(r, NULL, ZERO_MSG_BAD_ARG,
                        "host free: %p is %s memory, freed as %s (freed anyway)", p,
                        zero__host_kind_names[h->kind],
                        (unsigned)kind < (unsigned)ZERO_MEM_KIND_COUNT
                            ? zero__host_kind_names[kind] : "an invalid kind");
    r->allocated[h->kind] -= h->bytes;
    r->allocated_total -= h->bytes;
    h->magic = ZERO__HOST_DEAD;
    ZERO_FREE(h->raw);
}

/* Counts the sizes asked for, without alignment or headers. */
ZERO__DEF size_t zero_host_allocated_bytes(const zero_backend *b, zero_mem_kind kind) {
    const zero__host_rank *r;
    if (!b || !b->ctx || b->alloc != zero__host_alloc ||
        (unsigned)kind >= (unsigned)ZERO_MEM_KIND_COUNT)
        return 0;
    r = (const zero__host_rank *)b->ctx;
    return r->allocated[kind];
}

/* Streams are only ordering tags on the host: everything runs at once, in call order. */
static zero_result zero__host_memset0(void *ctx, void *p, size_t bytes, zero_stream_id s,
                                      zero_error *err) {
    zero_result res;
    ZERO__HOST_CTX("memset0");
    if ((res = zero__host_check_stream(r, "memset0", s, err)) != ZERO_OK) return res;
    if ((res = zero__host_check_buf(r, "memset0", "p", p, bytes, 1, err)) != ZERO_OK) return res;
    if (bytes) memset(p, 0, bytes);
    zero__ok(err);
    return ZERO_OK;
}

static zero_result zero__host_copy(void *ctx, void *dst, const void *src, size_t bytes,
                                   zero_stream_id s, zero_error *err) {
    zero_result res;
    ZERO__HOST_CTX("copy");
    if ((res = zero__host_check_stream(r, "copy", s, err)) != ZERO_OK) return res;
    if ((res = zero__host_check_buf(r, "copy", "dst", dst, bytes, 1, err)) != ZERO_OK) return res;
    if ((res = zero__host_check_buf(r, "copy", "src", src, bytes, 1, err)) != ZERO_OK) return res;
    if (bytes && dst != src) memmove(dst, src, bytes); /* overlap costs nothing to allow */
    zero__ok(err);
    return ZERO_OK;
}

static zero_result zero__host_event_create(void *ctx, zero_event **out, zero_error *err) {
    zero__host_event *ev;
    ZERO__HOST_CTX("event_create");
    if (!out) return zero__host_fail(r, err, ZERO_MSG_NULL_ARG, "host event_create: out is NULL");
    *out = NULL;
    ev = (zero__host_event *)ZERO_MALLOC(sizeof *ev);
    if (!ev)
        return zero__host_fail(r, err, ZERO_MSG_OUT_OF_MEMORY,
                               "host event_create: %zu bytes failed", sizeof *ev);
    ev->magic = ZERO__HOST_MAGIC;
    *out = (zero_event *)ev;
    zero__ok(err);
    return ZERO_OK;
}

static void zero__host_event_destroy(void *ctx, zero_event *e) {
    zero__host_event *ev = (zero__host_event *)e;
    (void)ctx;
    if (!ev) return;
    ev->magic = ZERO__HOST_DEAD;
    ZERO_FREE(ev);
}

static zero_result zero__host_check_event(zero__host_rank *r, const char *fname, zero_event *e,
                                          zero_error *err) {
    const zero__host_event *ev = (const zero__host_event *)e;
    if (!ev) return zero__host_fail(r, err, ZERO_MSG_NULL_ARG, "host %s: event is NULL", fname);
    if (ev->magic != ZERO__HOST_MAGIC)
        return zero__host_fail(r, err, ZERO_MSG_BAD_ARG, "host %s: %p is not a live event", fname,
                               (const void *)ev);
    return ZERO_OK;
}

static zero_result zero__host_event_record(void *ctx, zero_event *ev, zero_stream_id s,
                                           zero_error *err) {
    zero_result res;
    ZERO__HOST_CTX("event_record");
    if ((res = zero__host_check_event(r, "event_record", ev, err)) != ZERO_OK) return res;
    if ((res = zero__host_check_stream(r, "event_record", s, err)) != ZERO_OK) return res;
    zero__ok(err);
    return ZERO_OK;
}

static zero_result zero__host_stream_wait(void *ctx, zero_stream_id s, zero_event *ev,
                                          zero_error *err) {
    zero_result res;
    ZERO__HOST_CTX("stream_wait");
    if ((res = zero__host_check_event(r, "stream_wait", ev, err)) != ZERO_OK) return res;
    if ((res = zero__host_check_stream(r, "stream_wait", s, err)) != ZERO_OK) return res;
    zero__ok(err);
    return ZERO_OK;
}

static zero_result zero__host_sync(void *ctx, zero_stream_id s, zero_error *err) {
    zero_result res;
    ZERO__HOST_CTX("sync");
    if ((res = zero__host_check_stream(r, "sync", s, err)) != ZERO_OK) return res;
    zero__ok(err);
    return ZERO_OK;
}

/* ---- host backend: barrier ---- */

/* An absolute CLOCK_REALTIME deadline: timespec_get(TIME_UTC) is the one clock plain C11
   offers, and it is the clock pthread_cond_timedwait measures by default (clock_gettime
   and pthread_condattr_setclock are hidden under -std=c11). A wall-clock jump during a
   wait moves the deadline with it; the default of 300 s leaves room for that. */
static void zero__host_deadline(double seconds, struct timespec *ts) {
    double whole = floor(seconds);
    long ns;
    ts->tv_sec = 0;
    ts->tv_nsec = 0;
    timespec_get(ts, TIME_UTC);
    ts->tv_sec += (time_t)whole;
    ns = ts->tv_nsec + (long)((seconds - whole) * 1e9);
    if (ns >= 1000000000L) {
        ns -= 1000000000L;
        ts->tv_sec++;
    }
    ts->tv_nsec = ns;
}

static int zero__host_past(const struct timespec *deadline) {
    struct timespec now;
    now.tv_sec = 0;
    now.tv_nsec = 0;
    timespec_get(&now, TIME_UTC);
    return now.tv_sec > deadline->tv_sec ||
           (now.tv_sec == deadline->tv_sec && now.tv_nsec >= deadline->tv_nsec);
}

static void zero__host_describe(const zero__host_call *c, char *buf, size_t cap) {
    int n = snprintf(buf, cap, "%s #%llu (count %zu, %s", zero__host_call_names[c->kind], c->seq,
                     c->count, zero_dtype_name(c->dt));
    size_t used = n > 0 && (size_t)n < cap ? (size_t)n : cap - 1;
    if (c->kind == ZERO__HOST_REDUCE_SCATTER || c->kind == ZERO__HOST_ALL_REDUCE)
        snprintf(buf + used, cap - used, ", %s)", zero__host_op_name(c->op));
    else if (c->kind == ZERO__HOST_BROADCAST)
        snprintf(buf + used, cap - used, ", root %d)", c->root);
    else
        snprintf(buf + used, cap - used, ")");
}

static int zero__host_same_call(const zero__host_call *a, const zero__host_call *b) {
    if (a->kind != b->kind || a->count != b->count || a->dt != b->dt || a->seq != b->seq)
        return 0;
    if ((a->kind == ZERO__HOST_REDUCE_SCATTER || a->kind == ZERO__HOST_ALL_REDUCE) &&
        a->op != b->op)
        return 0;
    return a->kind != ZERO__HOST_BROADCAST || a->root == b->root;
}

/* The last rank into a collective's first barrier compares every posted call with rank
   0's (g->mu held). */
static int zero__host_mismatch(zero__host_group *g) {
    int s;
    for (s = 1; s < g->world; s++) {
        if (!zero__host_same_call(&g->ranks[0].call, &g->ranks[s].call)) {
            char a[160], b[160];
            zero__host_describe(&g->ranks[0].call, a, sizeof a);
            zero__host_describe(&g->ranks[s].call, b, sizeof b);
            zero__host_set_failed(g, ZERO_MSG_HOST_COLLECTIVE_MISMATCH,
                                  "rank 0 called %s while rank %d called %s", a, s, b);
            return 1;
        }
    }
    return 0;
}

/* Ranks that have not reached barrier `gen`, as "1, 3, 5" (g->mu held); returns how many. */
static int zero__host_missing(const zero__host_group *g, unsigned long long gen, char *buf,
                               size_t cap) {
    size_t used = 0;
    int s, listed = 0, missing = 0;
    buf[0] = 0;
    for (s = 0; s < g->world; s++) {
        if (g->ranks[s].arrived_gen == gen) continue;
        missing++;
        if (listed < 16 && used < cap) {
            int n = snprintf(buf + used, cap - used, "%s%d", listed ? ", " : "", s);
            used += n > 0 ? (size_t)n : 0;
            listed++;
        }
    }
    if (missing > listed && used < cap)
        snprintf(buf + used, cap - used, ", ... (%d ranks)", missing);
    return missing;
}

/* Wait (g->mu held) until every rank reaches this barrier, or fail: the group failed
   before or while we wait, a peer left fn, or the deadline passed. check: this is a
   collective's first barrier, where the calls are compared. A rank that fails leaves
   g->arrived counting it, which no longer matters: the group stays failed. */
static zero_result zero__host_barrier(zero__host_rank *r, int check, zero_error *err) {
    zero__host_group *g = r->g;
    unsigned long long gen = g->generation;
    struct timespec deadline;
    if (g->failed) return zero__host_sticky(r, err);
    r->arrived_gen = gen;
    if (++g->arrived == g->world) {
        g->arrived = 0;
        if (check && zero__host_mismatch(g)) return zero__host_sticky(r, err);
        g->generation++;
        pthread_cond_broadcast(&g->cv);
        return ZERO_OK;
    }
    zero__host_deadline(g->timeout_s, &deadline);
    for (;;) {
        char what[160];
        if (g->generation != gen) return ZERO_OK;
        if (g->failed) return zero__host_sticky(r, err);
        if (g->n_exited > 0) {
            int s = 0;
            while (s < g->world && !g->ranks[s].exited) s++;
            zero__host_describe(&r->call, what, sizeof what);
            zero__host_set_failed(g, ZERO_MSG_HOST_PEER_EXITED,
                                  "rank %d left (returned %s) while rank %d waits in %s", s,
                                  s < g->world ? zero_result_string(g->ranks[s].result) : "?",
                                  r->rank, what);
            return zero__host_sticky(r, err);
        }
        if (zero__host_past(&deadline)) {
            char missing[200];
            int n_missing;
            zero__host_describe(&r->call, what, sizeof what);
            n_missing = zero__host_missing(g, gen, missing, sizeof missing);
            zero__host_set_failed(g, ZERO_MSG_HOST_TIMEOUT,
                                  "%s: rank%s %s did not arrive within %g s (rank %d waited)\n"
                                  "HINT: a rank is stuck or skipped a collective; raise "
                                  "ZERO_HOST_TIMEOUT_S if it is only slow",
                                  what, n_missing > 1 ? "s" : "", missing, g->timeout_s, r->rank);
            return zero__host_sticky(r, err);
        }
        pthread_cond_timedwait(&g->cv, &g->mu, &deadline);
    }
}

static zero_result zero__host_barrier_locked(zero__host_rank *r, int check, zero_error *err) {
    zero_result res;
    pthread_mutex_lock(&r->g->mu);
    res = zero__host_barrier(r, check, err);
    pthread_mutex_unlock(&r->g->mu);
    return res;
}

/* ---- host backend: collectives ---- */

/* dst[i] = x_0[off + i] op x_1[off + i] op ... in rank order over the ranks' send
   buffers; 16-bit sums round to the dtype after every addition, so each partial sum is
   what a 16-bit accumulator would hold. Blocks are read completely before they are
   written, which makes dst == this rank's own send + off safe. */
static void zero__host_reduce(const zero__host_group *g, const zero__host_call *c, size_t off,
                              size_t n, void *dst) {
    size_t esz = zero_dtype_size(c->dt), i0, j, nb;
    int s, round16 = c->op == ZERO_OP_SUM && esz == 2;
    for (i0 = 0; i0 < n; i0 += nb) {
        nb = n - i0 < ZERO__HOST_BLOCK ? n - i0 : ZERO__HOST_BLOCK;
        if (c->dt == ZERO__DTYPE_F64) {
            double acc[ZERO__HOST_BLOCK];
            memcpy(acc, (const double *)g->ranks[0].call.send + off + i0, nb * sizeof(double));
            for (s = 1; s < g->world; s++) {
                const double *x = (const double *)g->ranks[s].call.send + off + i0;
                for (j = 0; j < nb; j++) acc[j] = zero__host_comb_d(c->op, acc[j], x[j]);
            }
            memcpy((double *)dst + i0, acc, nb * sizeof(double));
        } else {
            float acc[ZERO__HOST_BLOCK];
            const char *x0 = (const char *)g->ranks[0].call.send + (off + i0) * esz;
            for (j = 0; j < nb; j++) acc[j] = zero__host_get(x0, c->dt, j);
            for (s = 1; s < g->world; s++) {
                const char *x = (const char *)g->ranks[s].call.send + (off + i0) * esz;
                for (j = 0; j < nb; j++) {
                    float v = zero__host_comb_f(c->op, acc[j], zero__host_get(x, c->dt, j));
                    acc[j] = round16 ? zero__host_round(c->dt, v) : v;
                }
            }
            for (j = 0; j < nb; j++) zero__host_put((char *)dst + i0 * esz, c->dt, j, acc[j]);
        }
    }
}

/* all_reduce's share of rank s: contiguous, sizes differ by at most one */
static void zero__host_share(size_t count, int world, int s, size_t *start, size_t *len) {
    size_t base = count / (size_t)world, rem = count % (size_t)world, us = (size_t)s;
    *start = us * base + (us < rem ? us : rem);
    *len = base + (us < rem ? 1 : 0);
}

/* This rank's data movement between barriers. Each rank writes only its own recv, and
   only where no peer reads in the same phase. */
static void zero__host_move(zero__host_rank *r, const zero__host_call *c, int phase) {
    const zero__host_group *g = r->g;
    size_t esz = zero_dtype_size(c->dt), start, len;
    int s;
    if (!c->count) return; /* the buffers may be NULL then */
    switch (c->kind) {
    case ZERO__HOST_REDUCE_SCATTER: /* chunk r of every send -> own recv */
        zero__host_reduce(g, c, (size_t)r->rank * c->count, c->count, c->recv);
        break;
    case ZERO__HOST_ALL_REDUCE:
        if (phase == 1) { /* reduce own share into own recv (peers read other shares) */
            zero__host_share(c->count, g->world, r->rank, &start, &len);
            zero__host_reduce(g, c, start, len, (char *)c->recv + start * esz);
        } else {          /* fetch every other share from its owner's recv */
            for (s = 0; s < g->world; s++) {
                zero__host_share(c->count, g->world, s, &start, &len);
                if (s != r->rank && len)
                    memcpy((char *)c->recv + start * esz,
                           (const char *)g->ranks[s].call.recv + start * esz, len * esz);
            }
        }
        break;
    case ZERO__HOST_ALL_GATHER:
        for (s = 0; s < g->world; s++) {
            char *dst = (char *)c->recv + (size_t)s * c->count * esz;
            const void *src = g->ranks[s].call.send;
            if (dst != src) memcpy(dst, src, c->count * esz);
        }
        break;
    case ZERO__HOST_BROADCAST:
        if (r->rank != c->root && c->recv != g->ranks[c->root].call.recv)
            memcpy(c->recv, g->ranks[c->root].call.recv, c->count * esz);
        break;
    default: break;
    }
}

/* A rank whose call is malformed never joins; failing the group right away keeps its
   peers from waiting for it (they would otherwise see it leave, or time out). */
static zero_result zero__host_reject(zero__host_rank *r, const zero__host_call *c,
                                     zero_result res) {
    char what[160];
    zero__host_describe(c, what, sizeof what);
    pthread_mutex_lock(&r->g->mu);
    zero__host_set_failed(r->g, ZERO_MSG_HOST_COLLECTIVE_MISMATCH,
                          "rank %d called %s with invalid arguments: %s", r->rank, what,
                          r->last.msg);
    pthread_mutex_unlock(&r->g->mu);
    return res;
}

static zero_result zero__host_check_call(zero__host_rank *r, const zero__host_call *c,
                                         zero_stream_id s, zero_error *err) {
    const char *fname = zero__host_call_names[c->kind];
    int world = r->g->world;
    size_t esz, per_rank_max;
    zero_result res;
    if ((res = zero__host_check_stream(r, fname, s, err)) != ZERO_OK) return res;
    if ((res = zero__host_check_dtype(r, fname, "dtype", c->dt, 1, err)) != ZERO_OK) return res;
    if ((c->kind == ZERO__HOST_REDUCE_SCATTER || c->kind == ZERO__HOST_ALL_REDUCE) &&
        (unsigned)c->op >= (unsigned)ZERO_OP_COUNT)
        return zero__host_fail(r, err, ZERO_MSG_BAD_ARG, "host %s: op %d is not sum, max or min",
                               fname, (int)c->op);
    if (c->kind == ZERO__HOST_BROADCAST && (c->root < 0 || c->root >= world))
        return zero__host_fail(r, err, ZERO_MSG_BAD_ARG, "host broadcast: root %d is outside "
                               "[0, %d)", c->root, world);
    esz = zero_dtype_size(c->dt);
    per_rank_max = SIZE_MAX / esz / (size_t)world;
    if (c->count > per_rank_max)
        return zero__host_fail(r, err, ZERO_MSG_BAD_ARG, "host %s: count %zu overflows the "
                               "byte size of %d ranks' %s buffers", fname, c->count, world,
                               zero_dtype_name(c->dt));
    if (c->kind == ZERO__HOST_BROADCAST)
        return zero__host_check_buf(r, fname, "buf", c->recv, c->count, esz, err);
    if ((res = zero__host_check_buf(r, fname, "send", c->send, c->count, esz, err)) != ZERO_OK)
        return res;
    return zero__host_check_buf(r, fname, "recv", c->recv, c->count, esz, err);
}

static zero_result zero__host_collective(zero__host_rank *r, zero__host_call *c, zero_stream_id s,
                                         zero_error *err) {
    zero__host_group *g = r->g;
    zero_result res;
    c->seq = ++r->ncoll; /* counted even when rejected: a skipped call shows as a mismatch */
    if ((res = zero__host_check_call(r, c, s, err)) != ZERO_OK) return zero__host_reject(r, c, res);
    pthread_mutex_lock(&g->mu);
    if (!g->failed) r->call = *c;
    res = zero__host_barrier(r, 1, err);
    pthread_mutex_unlock(&g->mu);
    if (res != ZERO_OK) return res;
    zero__host_move(r, c, 1);
    if (c->kind == ZERO__HOST_ALL_REDUCE) {
        if ((res = zero__host_barrier_locked(r, 0, err)) != ZERO_OK) return res;
        zero__host_move(r, c, 2);
    }
    /* nobody returns (and reuses or frees its buffers) while a peer may still read them */
    if ((res = zero__host_barrier_locked(r, 0, err)) != ZERO_OK) return res;
    zero__ok(err);
    return ZERO_OK;
}

static zero_result zero__host_reduce_scatter(void *ctx, const void *send, void *recv, size_t count,
                                             zero_dtype dt, zero_op op, zero_stream_id s,
                                             zero_error *err) {
    zero__host_call c;
    ZERO__HOST_CTX("reduce_scatter");
    memset(&c, 0, sizeof c);
    c.kind = ZERO__HOST_REDUCE_SCATTER;
    c.count = count;
    c.dt = dt;
    c.op = op;
    c.send = send;
    c.recv = recv;
    return zero__host_collective(r, &c, s, err);
}

static zero_result zero__host_all_gather(void *ctx, const void *send, void *recv, size_t count,
                                         zero_dtype dt, zero_stream_id s, zero_error *err) {
    zero__host_call c;
    ZERO__HOST_CTX("all_gather");
    memset(&c, 0, sizeof c);
    c.kind = ZERO__HOST_ALL_GATHER;
    c.count = count;
    c.dt = dt;
    c.send = send;
    c.recv = recv;
    return zero__host_collective(r, &c, s, err);
}

static zero_result zero__host_all_reduce(void *ctx, const void *send, void *recv, size_t count,
                                         zero_dtype dt, zero_op op, zero_stream_id s,
                                         zero_error *err) {
    zero__host_call c;
    ZERO__HOST_CTX("all_reduce");
    memset(&c, 0, sizeof c);
    c.kind = ZERO__HOST_ALL_REDUCE;
    c.count = count;
    c.dt = dt;
    c.op = op;
    c.send = send;
    c.recv = recv;
    return zero__host_collective(r, &c, s, err);
}

static zero_result zero__host_broadcast(void *ctx, void *buf, size_t count, zero_dtype dt,
                                        int root, zero_stream_id s, zero_error *err) {
    zero__host_call c;
    ZERO__HOST_CTX("broadcast");
    memset(&c, 0, sizeof c);
    c.kind = ZERO__HOST_BROADCAST;
    c.count = count;
    c.dt = dt;
    c.root = root;
    c.send = buf;
    c.recv = buf;
    return zero__host_collective(r, &c, s, err);
}

/* ---- host backend: kernels ---- */

static zero_result zero__host_scale(void *ctx, void *x, size_t n, zero_dtype dt, float factor,
                                    zero_stream_id s, zero_error *err) {
    zero_result res;
    size_t i;
    ZERO__HOST_CTX("scale");
    if ((res = zero__host_check_stream(r, "scale", s, err)) != ZERO_OK) return res;
    if ((res = zero__host_check_dtype(r, "scale", "dtype", dt, 0, err)) != ZERO_OK) return res;
    if ((res = zero__host_check_buf(r, "scale", "x", x, n, zero_dtype_size(dt), err)) != ZERO_OK)
        return res;
    for (i = 0; i < n; i++) zero__host_put(x, dt, i, zero__host_get(x, dt, i) * factor);
    zero__ok(err);
    return ZERO_OK;
}

/* dst and src may be the same buffer of the same dtype, not otherwise overlap. */
static zero_result zero__host_convert(void *ctx, void *dst, zero_dtype dst_dt, const void *src,
                                      zero_dtype src_dt, size_t n, int accumulate,
                                      zero_stream_id s, zero_error *err) {
    zero_result res;
    size_t i;
    ZERO__HOST_CTX("convert");
    if ((res = zero__host_check_stream(r, "convert", s, err)) != ZERO_OK) return res;
    if ((res = zero__host_check_dtype(r, "convert", "dst_dt", dst_dt, 0, err)) != ZERO_OK ||
        (res = zero__host_check_dtype(r, "convert", "src_dt", src_dt, 0, err)) != ZERO_OK ||
        (res = zero__host_check_buf(r, "convert", "dst", dst, n, zero_dtype_size(dst_dt), err)) !=
            ZERO_OK ||
        (res = zero__host_check_buf(r, "convert", "src", src, n, zero_dtype_size(src_dt), err)) !=
            ZERO_OK)
        return res;
    if (accumulate) {
        for (i = 0; i < n; i++)
            zero__host_put(dst, dst_dt, i,
                           zero__host_get(dst, dst_dt, i) + zero__host_get(src, src_dt, i));
    } else if (dst_dt == src_dt) {
        if (n && dst != src) memcpy(dst, src, n * zero_dtype_size(dst_dt));
    } else {
        for (i = 0; i < n; i++) zero__host_put(dst, dst_dt, i, zero__host_get(src, src_dt, i));
    }
    zero__ok(err);
    return ZERO_OK;
}

/* The squares are summed into a local double and added to out[0] once, as a GPU kernel
   adds its partial sum. A finite float squared is at most ~1.2e77, so the double sum of
   finite elements can never overflow: it is non-finite exactly when an element is. */
static zero_result zero__host_sumsq(void *ctx, const void *x, size_t n, zero_dtype dt, double *out,
                                    zero_stream_id s, zero_error *err) {
    zero_result res;
    size_t i;
    double sum = 0;
    ZERO__HOST_CTX("sumsq");
    if ((res = zero__host_check_stream(r, "sumsq", s, err)) != ZERO_OK) return res;
    if ((res = zero__host_check_dtype(r, "sumsq", "dtype", dt, 0, err)) != ZERO_OK) return res;
    if ((res = zero__host_check_buf(r, "sumsq", "x", x, n, zero_dtype_size(dt), err)) != ZERO_OK)
        return res;
    if (!out) return zero__host_fail(r, err, ZERO_MSG_NULL_ARG, "host sumsq: out is NULL");
    if ((res = zero__host_check_buf(r, "sumsq", "out", out, 2, sizeof(double), err)) != ZERO_OK)
        return res;
    for (i = 0; i < n; i++) {
        double v = (double)zero__host_get(x, dt, i);
        sum += v * v;
    }
    out[0] += sum;
    if (!isfinite(sum) && !(out[1] >= 1)) out[1] = 1;
    zero__ok(err);
    return ZERO_OK;
}

/* DeepSpeed's CPU Adam (csrc/includes/cpu_adam_impl.h, Step_1) operation by operation,
   in fp32, so that the host backend, the CPU offload and the CUDA kernel can agree. */
static zero_result zero__host_adam(void *ctx, const zero_adam_args *a, zero_stream_id s,
                                   zero_error *err) {
    zero_result res;
    int k, store;
    int64_t end = 0;
    ZERO__HOST_CTX("adam");
    if ((res = zero__host_check_stream(r, "adam", s, err)) != ZERO_OK) return res;
    if (!a) return zero__host_fail(r, err, ZERO_MSG_NULL_ARG, "host adam: args is NULL");
    if (a->n_segs < 0 || (a->n_segs > 0 && !a->segs))
        return zero__host_fail(r, err, a->n_segs < 0 ? ZERO_MSG_BAD_ARG : ZERO_MSG_NULL_ARG,
                               "host adam: %d segments at %p", a->n_segs, (const void *)a->segs);
    for (k = 0; k < a->n_segs; k++) {
        const zero_adam_seg *sg = &a->segs[k];
        if (sg->offset < 0 || sg->count < 0 || sg->offset > INT64_MAX - sg->count)
            return zero__host_fail(r, err, ZERO_MSG_BAD_ARG,
                                   "host adam: segment %d has offset %lld, count %lld", k,
                                   (long long)sg->offset, (long long)sg->count);
        if (sg->count > 0 && sg->offset + sg->count > end) end = sg->offset + sg->count;
    }
    if ((uint64_t)end > (uint64_t)(SIZE_MAX / sizeof(float)))
        return zero__host_fail(r, err, ZERO_MSG_BAD_ARG, "host adam: segments reach element "
                               "%lld, past the address space", (long long)end);
    if ((res = zero__host_check_dtype(r, "adam", "grad_dtype", a->grad_dtype, 0, err)) != ZERO_OK)
        return res;
    if (a->param &&
        (res = zero__host_check_dtype(r, "adam", "param_dtype", a->param_dtype, 0, err)) != ZERO_OK)
        return res;
    if ((res = zero__host_check_buf(r, "adam", "master", a->master, (size_t)end, 4, err)) !=
            ZERO_OK ||
        (res = zero__host_check_buf(r, "adam", "m", a->m, (size_t)end, 4, err)) != ZERO_OK ||
        (res = zero__host_check_buf(r, "adam", "v", a->v, (size_t)end, 4, err)) != ZERO_OK ||
        (res = zero__host_check_buf(r, "adam", "grad", a->grad, (size_t)end,
                                    zero_dtype_size(a->grad_dtype), err)) != ZERO_OK)
        return res;
    if (a->param && (res = zero__host_check_buf(r, "adam", "param", a->param, (size_t)end,
                                                zero_dtype_size(a->param_dtype), err)) != ZERO_OK)
        return res;
    store = a->param && !(a->param_dtype == ZERO_DTYPE_FP32 && a->param == (void *)a->master);
    for (k = 0; k < a->n_segs; k++) {
        const zero_adam_seg *sg = &a->segs[k];
        float b1 = a->beta1, b2 = a->beta2, omb1 = 1.0f - b1, omb2 = 1.0f - b2;
        float wd = sg->weight_decay, step = -sg->lr / a->bc1, decay = -sg->lr * wd;
        size_t i, e = (size_t)(sg->offset + sg->count);
        for (i = (size_t)sg->offset; i < e; i++) {
            float p = a->master[i], m = a->m[i], v = a->v[i], d;
            float g = zero__host_get(a->grad, a->grad_dtype, i) * a->grad_scale;
            if (!a->adamw && wd != 0.0f) g = p * wd + g;
            m = m * b1;
            m = g * omb1 + m;
            v = v * b2;
            v = (g * g) * omb2 + v;
            d = sqrtf(v) * a->bc2 + a->eps;
            if (a->adamw && wd != 0.0f) p = decay * p + p;
            p = (m / d) * step + p;
            a->master[i] = p;
            a->m[i] = m;
            a->v[i] = v;
            if (store) zero__host_put(a->param, a->param_dtype, i, p);
        }
    }
    zero__ok(err);
    return ZERO_OK;
}

/* ---- host backend: ranks ---- */

/* Seconds as "300" or "0.5": parsed by hand because strtod follows the C locale a
   program may have changed (a comma locale would turn "0.5" into 0). */
static int zero__host_parse_seconds(const char *v, double *out) {
    double t = 0, scale = 1;
    int digits = 0;
    for (; *v >= '0' && *v <= '9'; v++, digits++) t = t * 10 + (*v - '0');
    if (*v == '.')
        for (v++; *v >= '0' && *v <= '9'; v++, digits++) t += (*v - '0') * (scale *= 0.1);
    if (*v || !digits || !(t > 0)) return 0;
    *out = t < 1e9 ? t : 1e9; /* ~30 years: keeps tv_sec far from overflow */
    return 1;
}

static int zero__host_parse_bytes(const char *v, size_t *out) {
    size_t b = 0;
    if (!*v) return 0;
    for (; *v; v++) {
        if (*v < '0' || *v > '9' || b > (SIZE_MAX - 9) / 10) return 0;
        b = b * 10 + (size_t)(*v - '0');
    }
    *out = b;
    return 1;
}

/* Read on every zero_host_run, so a program (or a test) can change them in between.
   A bad value is ignored with one warning per variable and process. */
static void zero__host_env(zero__host_group *g) {
    static int warned_timeout, warned_limit;
    const char *v = getenv("ZERO_HOST_TIMEOUT_S");
    char text[256];
    g->timeout_s = ZERO__HOST_TIMEOUT_DEFAULT;
    if (v && *v && !zero__host_parse_seconds(v, &g->timeout_s) && !warned_timeout) {
        warned_timeout = 1;
        snprintf(text, sizeof text, "ZERO_HOST_TIMEOUT_S=\"%.64s\" is not a positive number of "
                 "seconds; using %g", v, ZERO__HOST_TIMEOUT_DEFAULT);
        zero_log_default(NULL, ZERO_LOG_WARN, ZERO_MSG_ENV_INVALID, 0, text);
    }
    v = getenv("ZERO_HOST_MEM_LIMIT");
    g->mem_limit = SIZE_MAX;
    if (v && *v && !zero__host_parse_bytes(v, &g->mem_limit) && !warned_limit) {
        warned_limit = 1;
        snprintf(text, sizeof text, "ZERO_HOST_MEM_LIMIT=\"%.64s\" is not a byte count; no limit",
                 v);
        zero_log_default(NULL, ZERO_LOG_WARN, ZERO_MSG_ENV_INVALID, 0, text);
    }
}

static void zero__host_exit(zero__host_rank *r, zero_result res) {
    zero__host_group *g = r->g;
    pthread_mutex_lock(&g->mu);
    r->result = res;
    r->exited = 1;
    g->n_exited++;
    pthread_cond_broadcast(&g->cv); /* waiters must see that this rank will never arrive */
    pthread_mutex_unlock(&g->mu);
}

static void *zero__host_thread(void *p) {
    zero__host_rank *r = (zero__host_rank *)p;
    zero__host_exit(r, r->g->fn(&r->be, r->g->arg));
    return NULL;
}

/* The backend error fn most likely passed on: the last one with fn's result code, else
   the first (a rank often fails, then meets the failed group on its way out); NULL
   when fn failed on its own. */
static const zero_error *zero__host_cause(const zero__host_rank *r) {
    if (r->last.code != ZERO_OK && r->last.code == r->result) return &r->last;
    if (r->first.code != ZERO_OK && r->first.code == r->result) return &r->first;
    return NULL;
}

static const char *zero__host_reason(const zero__host_rank *r, char *buf, size_t cap) {
    const zero_error *e = zero__host_cause(r);
    if (e) return e->msg;
    snprintf(buf, cap, "fn returned %s", zero_result_string(r->result));
    return buf;
}

/* Failed only because the group did (a peer's mismatch, exit or lateness). */
static int zero__host_consequence(const zero__host_rank *r) {
    const zero_error *e = zero__host_cause(r);
    return e && (e->item == ZERO_MSG_HOST_PEER_EXITED ||
                 e->item == ZERO_MSG_HOST_COLLECTIVE_MISMATCH || e->item == ZERO_MSG_HOST_TIMEOUT);
}

static zero_result zero__host_report(const zero__host_group *g, zero_error *err) {
    const zero__host_rank *first = NULL, *cause = NULL;
    char b1[64], b2[64];
    zero_msg item;
    int s;
    for (s = 0; s < g->world; s++) {
        const zero__host_rank *r = &g->ranks[s];
        if (r->result == ZERO_OK) continue;
        if (!first) first = r;
        if (!cause && !zero__host_consequence(r)) cause = r;
    }
    if (!first) {
        zero__ok(err);
        return ZERO_OK;
    }
    /* The lowest failing rank is the answer; a rank that failed on its own account while
       that one only saw the group fail is named too, as the likely first cause. */
    item = zero__host_cause(first) ? zero__host_cause(first)->item : ZERO_MSG_NONE;
    if (cause && cause != first && zero__host_consequence(first))
        zero__fail(err, item, NULL, 0, 0, "rank %d: %s\nrank %d: %s", first->rank,
                   zero__host_reason(first, b1, sizeof b1), cause->rank,
                   zero__host_reason(cause, b2, sizeof b2));
    else
        zero__fail(err, item, NULL, 0, 0, "rank %d: %s", first->rank,
                   zero__host_reason(first, b1, sizeof b1));
    if (err) err->code = first->result; /* "fn returned X" has no item of its own */
    return first->result;
}

ZERO__DEF zero_result zero_host_run(int world, zero_host_fn fn, void *arg, zero_error *err) {
    zero__host_group *g;
    zero_result res;
    int i;
    if (!fn) return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "zero_host_run: fn is NULL");
    if (world < 1 || world > ZERO__HOST_MAX_WORLD)
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0,
                          "zero_host_run: world %d is outside [1, %d]", world,
                          ZERO__HOST_MAX_WORLD);
    g = (zero__host_group *)ZERO_MALLOC(sizeof *g);
    if (!g) return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "zero_host_run: %zu bytes "
                              "of group state failed", sizeof *g);
    memset(g, 0, sizeof *g);
    g->ranks = (zero__host_rank *)ZERO_MALLOC((size_t)world * sizeof *g->ranks);
    if (!g->ranks) {
        ZERO_FREE(g);
        return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "zero_host_run: %zu bytes of "
                          "rank state failed", (size_t)world * sizeof *g->ranks);
    }
    memset(g->ranks, 0, (size_t)world * sizeof *g->ranks);
    if (pthread_mutex_init(&g->mu, NULL) != 0) {
        ZERO_FREE(g->ranks);
        ZERO_FREE(g);
        return zero__fail(err, ZERO_MSG_HOST_THREAD, NULL, 0, 0,
                          "zero_host_run: mutex init failed");
    }
    if (pthread_cond_init(&g->cv, NULL) != 0) {
        pthread_mutex_destroy(&g->mu);
        ZERO_FREE(g->ranks);
        ZERO_FREE(g);
        return zero__fail(err, ZERO_MSG_HOST_THREAD, NULL, 0, 0,
                          "zero_host_run: condition variable init failed");
    }
    g->world = world;
    g->fn = fn;
    g->arg = arg;
    zero__host_env(g);
    for (i = 0; i < world; i++) {
        zero__host_rank *r = &g->ranks[i];
        zero_backend *b = &r->be;
        r->g = g;
        r->rank = i;
        r->arrived_gen = ~0ull;
        zero__ok(&r->first);
        zero__ok(&r->last);
        b->ctx = r;
        b->rank = i;
        b->world = world;
        b->name = "host";
        b->alloc = zero__host_alloc;
        b->free = zero__host_free;
        b->memset0 = zero__host_memset0;
        b->copy = zero__host_copy;
        b->event_create = zero__host_event_create;
        b->event_destroy = zero__host_event_destroy;
        b->event_record = zero__host_event_record;
        b->stream_wait = zero__host_stream_wait;
        b->sync = zero__host_sync;
        b->reduce_scatter = zero__host_reduce_scatter;
        b->all_gather = zero__host_all_gather;
        b->all_reduce = zero__host_all_reduce;
        b->broadcast = zero__host_broadcast;
        b->scale = zero__host_scale;
        b->convert = zero__host_convert;
        b->sumsq = zero__host_sumsq;
        b->adam = zero__host_adam;
    }
    if (world == 1) {
        zero__host_exit(&g->ranks[0], fn(&g->ranks[0].be, arg));
    } else {
        for (i = 0; i < world; i++) {
            int rc = pthread_create(&g->ranks[i].thread, NULL, zero__host_thread, &g->ranks[i]);
            if (rc != 0) {
                /* the ranks that run see the group failed and the rest as gone */
                int j;
                pthread_mutex_lock(&g->mu);
                zero__host_set_failed(g, ZERO_MSG_HOST_THREAD,
                                      "could not start the thread of rank %d of %d: %s", i, world,
                                      strerror(rc));
                for (j = i; j < world; j++) {
                    g->ranks[j].exited = 1;
                    g->ranks[j].result = zero__msg_results[ZERO_MSG_HOST_THREAD];
                    zero__fail(&g->ranks[j].first, ZERO_MSG_HOST_THREAD, NULL, 0, 0, "%s",
                               g->fail_msg);
                    g->ranks[j].last = g->ranks[j].first;
                }
                g->n_exited += world - i;
                pthread_mutex_unlock(&g->mu);
                break;
            }
            g->ranks[i].started = 1;
        }
        for (i = 0; i < world; i++)
            if (g->ranks[i].started) pthread_join(g->ranks[i].thread, NULL);
    }
    res = zero__host_report(g, err);
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
    ZERO_FREE(g->ranks);
    ZERO_FREE(g);
    return res;
}
