#define _POSIX_C_SOURCE 200809L /* setenv */
/* test_engine_streams.c - the engine's stream order (stage 3's fetches,
   stages 1-2's overlapped step, the copies to the host), on host ranks,
   against a model of the streams.

   The host backend runs every call at once, so a missing stream_wait costs
   nothing there; this test sees it anyway. A wrapper around the host
   backend keeps a model of the COMPUTE and COMM streams: each call queued
   on a stream takes that stream's next sequence number; event_record
   stores the stream and the number of its last call; stream_wait(s, ev)
   raises what s knows of the event's stream to that number (a 2 x 2 matrix,
   known[s][other]); a sync by the rank's thread is a host wait, after which
   every stream knows the synced one up to its last call. COMM calls that
   write device memory (copies, collectives, kernels) are recorded by byte
   range. The program's kernels are calls too: after zero_fetch(t) and
   zero_param(t), the test queues a memset0 of a scratch buffer on the
   compute stream through the wrapped table and records that this call reads
   t's parameters. Two rules are checked, each pair counted:
     R1: at a program read, every recorded COMM write overlapping it is known
         to the compute stream (the gather is done before the kernel runs);
     R2: at a COMM write into device memory, every program read overlapping
         it is known to the COMM stream (a later gather into a pool region
         does not overwrite what released kernels still read).
   Driven at stage 3 with a pool of a few units (no persistent tensors,
   prefetch, eviction within a micro-batch, spans kept for reuse or dropped
   at release), fp32 and bf16, 1 and 2 ranks, gas 1 and 2, with and without
   offload_param + offload_optimizer "cpu" (and its ratio 0.5: the first
   units' Adam on the device); and with persistent tensors
   (DeepSpeed's default thresholds: every tensor but the split ones; a
   threshold of 50 and a small pool). A forward fetches, reads and
   releases each tensor in turn; a backward does so in reverse, its
   gradient computed from the values read. Every configuration must make R1
   and R2 checks, gather into pool memory that kernels read before (at a
   zero_fetch), read prefetched gathers, and read persistent tensors where
   there are any; no check may fail. A third rule covers the CPU's reads of
   host memory the COMM stream wrote (with gradient accumulation and the
   optimizer offloaded, the engine's thread adds each micro-batch's chunk
   after its copy to the host):
     R3: at a cpu_convert reading [src, src + n), or a cpu_adam reading its
         segments' gradients, every COMM copy into that host memory is
         known to the host: an event recorded after it was waited for
         (event_sync), or the stream was synced.
   The offloaded runs must make R3 checks; none may fail. (The count of checks that held only
   through a host sync is printed: the events alone should carry the
   order.) The values a step's fetches return are the same at every fetch
   of the step and change with each applied step, and the offloaded runs
   end with the weights of the runs without offload, bitwise. A fourth rule
   covers the compute stream's own writes that a collective reads:
     R4: at a COMM reduce-scatter or all-gather, every compute-stream write
         into its send buffer is known to the COMM stream (the step's Adam
         on the compute stream, stages 1-2 on two ranks, before the
         all-gather of its chunk; a gradient slot cleared on the compute
         stream before its reduce-scatter); and the Adam on the compute
         stream reads its gradients as a program kernel does (R1 after
         their reductions, R2 before the next ones).
   Stages 1 and 2 on two ranks (fp32 gas 1, bf16 gas 2) must make R4 checks,
   none may fail, and end with the weights of ZERO_STEP_OVERLAP=0 (Adam and
   the gathers on the COMM stream). Their forward fetches every tensor, so
   the step leaves its all-gathers to run beside the next forward
   (zero_step_info.gathers_deferred > 0), each unit's waited for at its first
   fetch: R1 holds for those reads; the weights equal ZERO_GATHER_DEFER=0's;
   and a program that reads tensor 0 through a pointer kept from create,
   never fetching it, gets no deferral and R1 holds for that read too (with
   the per-unit wait dropped, or the fetch rule ignored, R1 fails); nor does
   a program that fetches every tensor and also reads tensor 0 through that
   pointer before each forward, after zero_flush (with zero_flush not
   waiting, R1 fails). The third stream, COPY, carries the
   offloaded runs' chunks to the host (R3 covers its copies as COMM's); an
   event passes on what its stream had waited for (waits are transitive).
   Two rules cover the side streams' reads of device memory:
     R5: at a compute-stream write (the program's backward writing a
         gradient, a slot cleared), every COMM or COPY read of that memory
         (a collective's send buffer, a convert's source, a copy's source)
         is known to the compute stream: a gradient slot is written again
         only after its reduce-scatter and its copy to the host;
     R6: at a COPY read, every COMM and compute write there is known to the
         copy stream (the chunk's reduce-scatter, or with one rank the
         backward that wrote it in place).
   Stage 2 with the optimizer offloaded (1 and 2 ranks, gas 1 and 2, with
   clipping, and without: the early CPU step, whose thread waits for each
   chunk's event) runs the same rules, and ends with the weights of its run
   with ZERO_COPY_STREAM=0, bitwise.
   Every configuration must make R5 checks; the offloaded runs must make R3
   and R5 checks on COPY and R6 checks (with gas 2 the chunks the CPU adds,
   with gas 1 the reduced chunks the CPU's Adam reads; none with
   ZERO_COPY_STREAM=0, which keeps those copies on COMM); none may fail.
   With one rank and one micro-batch the compute stream takes each chunk's
   statistics behind the backward (sumsq and sumsq_segs read the chunk: R5
   counts them, and their results are statistics writes into device memory
   on the compute stream; an engine may take them on the copy stream):
     R7: at a COMM read of device memory (the step's norm reads the
         statistics), every statistics write there on the compute or copy
         stream, and every other COPY write, is known to the COMM stream;
     R8: at a statistics write on the compute or copy stream, every COMM
         write there (the last step's clear of the sums) is known to that
         stream.
   Those offloaded runs must make R7 and R8 checks, the other offloaded runs
   none; none may fail. There nothing on the COMM stream reads a gradient, so
   zero_grad_ready must not make COMM wait for the compute stream (its
   fetches wait only for their pool regions' readers), unless a ratio
   keeps units on the device; every other run must make it wait.

   Run alone: make test T=test_engine_streams */
#ifndef ZERO_TEST_SHARED_IMPL /* (tests/run.sh links tests/zero_impl.c's build instead) */
#define ZERO_IMPLEMENTATION
#endif
#include "zero.h"
#include "zero_test.h"

#include <pthread.h>

enum { NT = 10, MAXW = 2, STEPS = 4, NS = ZERO_STREAM_COUNT, COMP = ZERO_STREAM_COMPUTE, COMM = ZERO_STREAM_COMM,
       COPY = ZERO_STREAM_COPY };
static const int64_t SIZES[NT] = {1, 37, 300, 7, 129, 200, 50, 90, 11, 160};
enum { TOTAL = 1 + 37 + 300 + 7 + 129 + 200 + 50 + 90 + 11 + 160 };

/* ---- the stream model ---- */

/* a recorded access: bytes [lo, hi), the stream's sequence number, the
   program's step and call it was queued in, that call's name, whether that
   call was a zero_fetch, and (reads) whether the tensor is persistent */
typedef struct acc {
    uintptr_t lo, hi;
    int64_t seq, call;
    int step, fetch, persistent, stream;
    char what[48];
} acc;

typedef struct alloc_rec {
    uintptr_t lo, hi;
    int kind;
} alloc_rec;

typedef struct model {
    void *ctx;         /* the host backend's (every call is found by it) */
    zero_backend base; /* the host backend's table */
    pthread_t owner;   /* the rank's thread: its syncs are host waits */
    pthread_mutex_t mu;
    alloc_rec *allocs;
    int n_alloc, cap_alloc;
    int n_win_alloc;       /* win_alloc calls (ZERO_COLL_WINDOWS) */
    int n_group;           /* coll_group_begin calls */
    acc *writes; /* COMM writes into device memory, not yet judged by a read */
    int n_w, cap_w;
    acc *reads; /* the program's reads on the compute stream, not yet judged by a write */
    int n_r, cap_r;
    acc *hwrites; /* COMM and COPY writes into host memory, not yet judged by a CPU read */
    int n_h, cap_h;
    acc *cwrites; /* compute-stream writes into device memory, not yet judged by a COMM collective's read */
    int n_cw, cap_cw;
    int64_t r4, r4_bad; /* R4 pairs checked, failed */
    acc *sreads; /* COMM and COPY reads of device memory, not yet judged by a compute write */
    int n_sr, cap_sr;
    int64_t r5, r5_bad, r5_copy; /* R5 pairs checked, failed, of them on COPY reads */
    int64_t r6, r6_bad;          /* R6 pairs checked, failed */
    acc *pwrites; /* COPY writes into device memory and the compute stream's statistics writes (one rank's gradient
                     statistics), not yet judged by a COMM read */
    int n_pw, cap_pw;
    int64_t r7, r7_bad; /* R7 pairs checked, failed */
    int64_t r8, r8_bad; /* R8 pairs checked, failed */
    int64_t ready_waits; /* the comm stream's waits for the compute stream queued by zero_grad_ready */
    int64_t host_known[NS]; /* the host has waited for each stream's calls up to this number */
    int64_t r3, r3_bad;     /* R3 pairs checked, failed */
    int64_t r3_copy;        /* ... of them on copies on the COPY stream */
    int64_t n[NS];            /* calls queued per stream */
    int64_t known[NS][NS];    /* known[s][o]: later calls on s follow o's calls up to this number */
    int64_t known_ev[NS][NS]; /* the same through events alone (host syncs left out) */
    /* counts */
    int64_t r1, r2;           /* pairs checked */
    int64_t r1_bad, r2_bad;   /* ... that failed */
    int64_t by_sync;          /* ... that held only through a host sync */
    int64_t r1_ahead;         /* R1 pairs whose write the zero_fetch of another tensor queued (a prefetch) */
    int64_t r2_fetch;         /* R2 pairs whose write a zero_fetch queued (a pool region reused) */
    int64_t r1_pers, r2_pers; /* pairs on reads of persistent tensors */
    int lost;                 /* a table could not grow */
    int printed;              /* violations printed (the first few) */
    /* where the program is */
    int step, fetch; /* fetch: the call is a zero_fetch */
    int64_t call;
    char what[48];
} model;

typedef struct mevent { /* the wrapper's event: the host event and its last record */
    zero_event *inner;
    int stream;
    int64_t seq;
    int64_t kn[NS], kn_ev[NS]; /* what its stream knew of each other stream then (a wait passes it on) */
} mevent;


static model *model_of(void *ctx) { return (model *)zt_wrap_of(ctx); }

/* p (capacity *cap elements of elem bytes) with room for element n: p, a
   larger block, or NULL when it cannot grow (p stays valid) */
static void *room(void *p, int *cap, int n, size_t elem) {
    void *q;
    int c;
    if (n < *cap) return p;
    c = *cap ? 2 * *cap : 64;
    q = realloc(p, elem * (size_t)c);
    if (q) *cap = c;
    return q;
}

static const alloc_rec *alloc_at(const model *m, uintptr_t a) {
    int i;
    for (i = 0; i < m->n_alloc; i++)
        if (a >= m->allocs[i].lo && a < m->allocs[i].hi) return &m->allocs[i];
    return NULL;
}

/* "[+lo, +hi) of the N-byte allocation": where a range lies, for messages */
static void where(const model *m, uintptr_t lo, uintptr_t hi, char *out, size_t cap) {
    const alloc_rec *a = alloc_at(m, lo);
    if (a)
        snprintf(out, cap, "[+%llu, +%llu) of a %llu-byte device allocation", (unsigned long long)(lo - a->lo),
                 (unsigned long long)(hi - a->lo), (unsigned long long)(a->hi - a->lo));
    else
        snprintf(out, cap, "[%p, +%llu)", (void *)lo, (unsigned long long)(hi - lo));
}

static void remove_at(acc *v, int *n, int i) { v[i] = v[--*n]; }

/* append a, dropping the entries it covers: a later access to any of them
   overlaps a too, and a's number is the larger */
static void add_acc(model *m, acc **v, int *n, int *cap, const acc *a) {
    acc *nv;
    int i;
    for (i = 0; i < *n;)
        if ((*v)[i].lo >= a->lo && (*v)[i].hi <= a->hi) remove_at(*v, n, i);
        else i++;
    if (!(nv = (acc *)room(*v, cap, *n, sizeof(acc)))) {
        m->lost = 1;
        return;
    }
    *v = nv;
    nv[(*n)++] = *a;
}

static void fill_acc(const model *m, acc *a, uintptr_t lo, uintptr_t hi, int64_t seq) {
    a->lo = lo;
    a->hi = hi;
    a->seq = seq;
    a->call = m->call;
    a->step = m->step;
    a->fetch = m->fetch;
    a->persistent = 0;
    a->stream = -1;
    snprintf(a->what, sizeof a->what, "%s", m->what);
}

/* One of the first violations of an ordering rule, printed: the access now
   (`now`, [lo, hi), queued as call seq of its stream in the program's
   current call) against an earlier one (`then`, its range, call and where
   the program was), which the stream now was known only up to `known`. */
static void say_pair(model *m, const char *rule, const char *now, uintptr_t lo, uintptr_t hi, int64_t seq, const char *then,
                     const acc *a, int64_t known) {
    char x[96], y[96];
    if (m->printed++ >= 3) return;
    where(m, lo, hi, x, sizeof x);
    where(m, a->lo, a->hi, y, sizeof y);
    fprintf(stderr,
            "  %s violated: %s %s, call %lld, queued in step %d %s; %s %s, call %lld, queued in step %d %s; the first's "
            "stream waited for the second's calls up to %lld only\n",
            rule, now, x, (long long)seq, m->step, m->what, then, y, (long long)a->seq, a->step, a->what, (long long)known);
}

/* Rule `rule` at an access of [lo, hi) on stream `on` (its call seq), judging each earlier access in v[0..*n)
   that overlaps it (removed once judged): known to stream `on` (the access on v's stream done first). `then`
   names the earlier access by its stream ("a COMM %s"). Counts the pairs in *pairs, those on COPY in *copy
   (when not NULL), the failures in *bad. (m->mu held.) */
static void judge(model *m, acc *v, int *n, int on, uintptr_t lo, uintptr_t hi, int64_t seq, const char *rule,
                  const char *now, const char *then, int64_t *pairs, int64_t *copy, int64_t *bad) {
    int i;
    for (i = 0; i < *n;) {
        const acc *r = &v[i];
        if (r->lo < hi && lo < r->hi) {
            ++*pairs;
            if (copy) *copy += r->stream == COPY;
            if (m->known[on][r->stream] < r->seq) {
                char what[48];
                ++*bad;
                snprintf(what, sizeof what, "a %s %s", r->stream == COPY ? "COPY" : r->stream == COMP ? "compute" : "COMM", then);
                say_pair(m, rule, now, lo, hi, seq, what, r, m->known[on][r->stream]);
            }
            remove_at(v, n, i);
        } else {
            i++;
        }
    }
}

/* R5: a compute-stream write of [lo, hi) (queued as compute call seq): every
   COMM or COPY read of that device memory is known to the compute stream (a
   gradient slot's reduce-scatter and its copy to the host are done before
   the backward writes the slot again). (m->mu held.) */
static void on_comp_write(model *m, uintptr_t lo, uintptr_t hi, int64_t seq) {
    judge(m, m->sreads, &m->n_sr, COMP, lo, hi, seq, "R5", "compute write", "read of", &m->r5, &m->r5_copy, &m->r5_bad);
}

/* The last call queued on stream s (COMM or COPY) reads [p, p + bytes): kept
   for R5 where that is device memory. (m->mu held.) */
static void on_side_read(model *m, zero_stream_id s, const void *p, size_t bytes) {
    uintptr_t lo = (uintptr_t)p, hi = lo + bytes;
    const alloc_rec *a;
    acc r;
    if ((int)s == COMP || (unsigned)s >= (unsigned)NS || !p || !bytes || !(a = alloc_at(m, lo)) || a->kind != ZERO_MEM_DEVICE)
        return;
    if ((int)s == COMM) /* R7: what it reads of the copy stream's writes and the statistics is written */
        judge(m, m->pwrites, &m->n_pw, COMM, lo, hi, m->n[COMM], "R7", "a COMM read of", "write", &m->r7, NULL, &m->r7_bad);
    if ((int)s == COPY) { /* R6: what it copies is written: the comm stream's and the compute stream's writes known */
        int k, i;
        for (k = 0; k < 2; k++) {
            const acc *v = k ? m->cwrites : m->writes;
            int n = k ? m->n_cw : m->n_w, o = k ? COMP : COMM;
            for (i = 0; i < n; i++)
                if (v[i].lo < hi && lo < v[i].hi) {
                    m->r6++;
                    if (m->known[COPY][o] < v[i].seq) {
                        m->r6_bad++;
                        if (m->printed++ < 3)
                            fprintf(stderr, "  R6 violated: a COPY read of %p, queued in step %d %s; a %s write there, its "
                                            "call %lld, queued in step %d %s; the copy stream waited for that stream's calls "
                                            "up to %lld only\n",
                                    p, m->step, m->what, k ? "compute" : "COMM", (long long)v[i].seq, v[i].step, v[i].what,
                                    (long long)m->known[COPY][o]);
                    }
                }
        }
    }
    fill_acc(m, &r, lo, hi, m->n[s]);
    r.stream = (int)s;
    add_acc(m, &m->sreads, &m->n_sr, &m->cap_sr, &r);
}

/* A call queued on stream s; with dst, one that writes [dst, dst + bytes).
   (Called with m->mu held.) */
static void on_op(model *m, zero_stream_id s, const void *dst, size_t bytes) {
    int64_t seq;
    uintptr_t lo = (uintptr_t)dst, hi = lo + bytes;
    const alloc_rec *a;
    int i;
    if ((unsigned)s >= (unsigned)NS) return; /* the host backend refuses it */
    seq = ++m->n[s];
    if ((int)s != COMP && dst && bytes && (a = alloc_at(m, lo)) && a->kind != ZERO_MEM_DEVICE) {
        acc w; /* into host memory: for R3 */
        fill_acc(m, &w, lo, hi, seq);
        w.stream = (int)s;
        add_acc(m, &m->hwrites, &m->n_h, &m->cap_h, &w);
        return;
    }
    if ((int)s == COPY && dst && bytes && (a = alloc_at(m, lo)) && a->kind == ZERO_MEM_DEVICE) {
        acc w; /* for R7 */
        fill_acc(m, &w, lo, hi, seq);
        w.stream = COPY;
        add_acc(m, &m->pwrites, &m->n_pw, &m->cap_pw, &w);
        return;
    }
    if ((int)s == COMP && dst && bytes && (a = alloc_at(m, lo)) && a->kind == ZERO_MEM_DEVICE) {
        acc w; /* for R4 */
        on_comp_write(m, lo, hi, seq);
        fill_acc(m, &w, lo, hi, seq);
        w.stream = COMP;
        add_acc(m, &m->cwrites, &m->n_cw, &m->cap_cw, &w);
        return;
    }
    if ((int)s != COMM || !dst || !bytes || !(a = alloc_at(m, lo)) || a->kind != ZERO_MEM_DEVICE) return;
    /* R2: the program's reads of this memory are done before the write */
    for (i = 0; i < m->n_r;) {
        const acc *r = &m->reads[i];
        if (r->lo < hi && lo < r->hi) {
            int ok = m->known[COMM][COMP] >= r->seq, ok_ev = m->known_ev[COMM][COMP] >= r->seq;
            m->r2++;
            m->by_sync += ok && !ok_ev;
            m->r2_fetch += m->fetch;
            m->r2_pers += r->persistent;
            if (!ok) {
                m->r2_bad++;
                say_pair(m, "R2", "COMM write", lo, hi, seq, "a compute read of", r, m->known[COMM][COMP]);
            }
            remove_at(m->reads, &m->n_r, i);
        } else {
            i++;
        }
    }
    {
        acc w;
        fill_acc(m, &w, lo, hi, seq);
        w.stream = COMM;
        add_acc(m, &m->writes, &m->n_w, &m->cap_w, &w);
    }
}

/* The program's kernel was queued as the last compute call and reads
   [p, p + bytes) of a tensor (persistent or not); fetch_call: the call
   (zero_fetch) that made the tensor readable. */
static void on_read(model *m, const void *p, size_t bytes, int persistent, int64_t fetch_call) {
    uintptr_t lo = (uintptr_t)p, hi = lo + bytes;
    int64_t seq = m->n[COMP];
    int i;
    acc r;
    for (i = 0; i < m->n_w;) {
        const acc *w = &m->writes[i];
        if (w->lo < hi && lo < w->hi) {
            int ok = m->known[COMP][COMM] >= w->seq, ok_ev = m->known_ev[COMP][COMM] >= w->seq;
            m->r1++;
            m->by_sync += ok && !ok_ev;
            m->r1_ahead += w->fetch && w->call < fetch_call;
            m->r1_pers += persistent;
            if (!ok) {
                m->r1_bad++;
                say_pair(m, "R1", "compute read", lo, hi, seq, "a COMM write of", w, m->known[COMP][COMM]);
            }
            remove_at(m->writes, &m->n_w, i);
        } else {
            i++;
        }
    }
    fill_acc(m, &r, lo, hi, seq);
    r.persistent = persistent;
    add_acc(m, &m->reads, &m->n_r, &m->cap_r, &r);
}

/* R4: a COMM collective about to read [p, p + bytes) (its send buffer): the
   compute stream's writes there (the step's Adam on the compute stream, a
   cleared gradient slot) are known to the comm stream. (m->mu held.) */
static void on_comm_read(model *m, const void *p, size_t bytes) {
    uintptr_t lo = (uintptr_t)p, hi = lo + bytes;
    int i;
    for (i = 0; i < m->n_cw;) {
        const acc *w = &m->cwrites[i];
        if (w->lo < hi && lo < w->hi) {
            m->r4++;
            if (m->known[COMM][COMP] < w->seq) {
                m->r4_bad++;
                if (m->printed++ < 3) {
                    char wr[96], rd[96];
                    where(m, w->lo, w->hi, wr, sizeof wr);
                    where(m, lo, hi, rd, sizeof rd);
                    fprintf(stderr,
                            "  R4 violated: a COMM collective reads %s, queued in step %d %s; a compute write of %s, "
                            "compute call %lld, queued in step %d %s; the comm stream waited for compute calls up to "
                            "%lld only\n",
                            rd, m->step, m->what, wr, (long long)w->seq, w->step, w->what, (long long)m->known[COMM][COMP]);
                }
            }
            remove_at(m->cwrites, &m->n_cw, i);
        } else {
            i++;
        }
    }
}

/* ---- the wrapped table: each call updates the model, then runs the host's ---- */

#define MODEL_OP(stream, dst, bytes)         \
    model *m = model_of(ctx);                \
    pthread_mutex_lock(&m->mu);              \
    on_op(m, (stream), (dst), (bytes));      \
    pthread_mutex_unlock(&m->mu)

/* An allocation the model tracks: alloc's, or win_alloc's (device memory) */
static void track_alloc(model *m, zero_mem_kind kind, size_t bytes, void *p) {
    if (p && bytes) {
        alloc_rec *na;
        pthread_mutex_lock(&m->mu);
        if ((na = (alloc_rec *)room(m->allocs, &m->cap_alloc, m->n_alloc, sizeof(alloc_rec))) != NULL) {
            m->allocs = na;
            m->allocs[m->n_alloc].lo = (uintptr_t)p;
            m->allocs[m->n_alloc].hi = (uintptr_t)p + bytes;
            m->allocs[m->n_alloc++].kind = (int)kind;
        } else {
            m->lost = 1;
        }
        pthread_mutex_unlock(&m->mu);
    }
}

static zero_result w_alloc(void *ctx, zero_mem_kind kind, size_t bytes, void **out, zero_error *err) {
    model *m = model_of(ctx);
    zero_result r = m->base.alloc(ctx, kind, bytes, out, err);
    if (r == ZERO_OK) track_alloc(m, kind, bytes, *out);
    return r;
}

static zero_result w_win_alloc(void *ctx, size_t bytes, void **out, zero_error *err) {
    model *m = model_of(ctx);
    zero_result r = m->base.win_alloc(ctx, bytes, out, err);
    if (r == ZERO_OK) track_alloc(m, ZERO_MEM_DEVICE, bytes, *out);
    m->n_win_alloc++;
    return r;
}

static zero_result w_coll_group_begin(void *ctx, zero_error *err) {
    model_of(ctx)->n_group++;
    return model_of(ctx)->base.coll_group_begin(ctx, err);
}

/* The model forgets an allocation's reads and writes */
static void untrack_alloc(model *m, void *p) {
    int i;
    pthread_mutex_lock(&m->mu);
    for (i = 0; i < m->n_alloc; i++)
        if (m->allocs[i].lo == (uintptr_t)p) {
            uintptr_t lo = m->allocs[i].lo, hi = m->allocs[i].hi;
            int k;
            for (k = 0; k < m->n_w;)
                if (m->writes[k].lo < hi && lo < m->writes[k].hi) remove_at(m->writes, &m->n_w, k);
                else k++;
            for (k = 0; k < m->n_r;)
                if (m->reads[k].lo < hi && lo < m->reads[k].hi) remove_at(m->reads, &m->n_r, k);
                else k++;
            for (k = 0; k < m->n_cw;)
                if (m->cwrites[k].lo < hi && lo < m->cwrites[k].hi) remove_at(m->cwrites, &m->n_cw, k);
                else k++;
            for (k = 0; k < m->n_sr;)
                if (m->sreads[k].lo < hi && lo < m->sreads[k].hi) remove_at(m->sreads, &m->n_sr, k);
                else k++;
            m->allocs[i] = m->allocs[--m->n_alloc];
            break;
        }
    pthread_mutex_unlock(&m->mu);
}

static void w_free(void *ctx, zero_mem_kind kind, void *p) {
    model *m = model_of(ctx);
    untrack_alloc(m, p);
    m->base.free(ctx, kind, p);
}

static void w_win_free(void *ctx, void *p) {
    model *m = model_of(ctx);
    untrack_alloc(m, p);
    m->base.win_free(ctx, p);
}

static zero_result w_memset0(void *ctx, void *p, size_t bytes, zero_stream_id s, zero_error *err) {
    MODEL_OP(s, p, bytes);
    return m->base.memset0(ctx, p, bytes, s, err);
}

static zero_result w_copy(void *ctx, void *dst, const void *src, size_t bytes, zero_stream_id s, zero_error *err) {
    model *m = model_of(ctx);
    pthread_mutex_lock(&m->mu);
    on_op(m, s, dst, bytes);
    on_side_read(m, s, src, bytes);
    pthread_mutex_unlock(&m->mu);
    return m->base.copy(ctx, dst, src, bytes, s, err);
}

static zero_result w_event_create(void *ctx, zero_event **out, zero_error *err) {
    model *m = model_of(ctx);
    mevent *ev;
    zero_result r;
    if (!out) return m->base.event_create(ctx, out, err);
    *out = NULL;
    ev = (mevent *)calloc(1, sizeof *ev);
    if (!ev) {
        memset(err, 0, sizeof *err);
        err->code = ZERO_ERR_OUT_OF_MEMORY;
        err->item = ZERO_MSG_OUT_OF_MEMORY;
        snprintf(err->msg, sizeof err->msg, "test event_create: out of memory");
        return err->code;
    }
    if ((r = m->base.event_create(ctx, &ev->inner, err)) != ZERO_OK) {
        free(ev);
        return r;
    }
    ev->stream = -1;
    *out = (zero_event *)ev;
    return ZERO_OK;
}

static void w_event_destroy(void *ctx, zero_event *e) {
    model *m = model_of(ctx);
    mevent *ev = (mevent *)e;
    if (!ev) return;
    m->base.event_destroy(ctx, ev->inner);
    free(ev);
}

static zero_result w_event_record(void *ctx, zero_event *e, zero_stream_id s, zero_error *err) {
    model *m = model_of(ctx);
    mevent *ev = (mevent *)e;
    zero_result r = m->base.event_record(ctx, ev ? ev->inner : NULL, s, err);
    if (r == ZERO_OK) {
        int o;
        pthread_mutex_lock(&m->mu);
        ev->stream = (int)s;
        ev->seq = m->n[s];
        for (o = 0; o < NS; o++) ev->kn[o] = m->known[s][o], ev->kn_ev[o] = m->known_ev[s][o];
        pthread_mutex_unlock(&m->mu);
    }
    return r;
}

static zero_result w_stream_wait(void *ctx, zero_stream_id s, zero_event *e, zero_error *err) {
    model *m = model_of(ctx);
    mevent *ev = (mevent *)e;
    zero_result r = m->base.stream_wait(ctx, s, ev ? ev->inner : NULL, err);
    if (r == ZERO_OK) {
        pthread_mutex_lock(&m->mu);
        if (ev->stream >= 0 && ev->stream != (int)s) { /* (never recorded, or on s itself: no new order) */
            int o;
            m->ready_waits += (int)s == COMM && ev->stream == COMP && !strncmp(m->what, "zero_grad_ready", 15);
            if (m->known[s][ev->stream] < ev->seq) m->known[s][ev->stream] = ev->seq;
            if (m->known_ev[s][ev->stream] < ev->seq) m->known_ev[s][ev->stream] = ev->seq;
            for (o = 0; o < NS; o++) /* what the event's stream had waited for, s now has too */
                if (o != (int)s && o != ev->stream) {
                    if (m->known[s][o] < ev->kn[o]) m->known[s][o] = ev->kn[o];
                    if (m->known_ev[s][o] < ev->kn_ev[o]) m->known_ev[s][o] = ev->kn_ev[o];
                }
        }
        pthread_mutex_unlock(&m->mu);
    }
    return r;
}

/* the engine's own thread waits for an event before its CPU Adam: that
   orders host work, not what the rank's thread queues later */
static zero_result w_event_sync(void *ctx, zero_event *e, zero_error *err) {
    model *m = model_of(ctx);
    mevent *ev = (mevent *)e;
    zero_result r = m->base.event_sync(ctx, ev ? ev->inner : NULL, err);
    if (r == ZERO_OK && ev && ev->stream >= 0) { /* (for R3: the host has seen the stream up to the record) */
        pthread_mutex_lock(&m->mu);
        if (m->host_known[ev->stream] < ev->seq) m->host_known[ev->stream] = ev->seq;
        pthread_mutex_unlock(&m->mu);
    }
    return r;
}

/* R3: the CPU reads host memory [lo, hi): every COMM or COPY copy into it is
   one the host has waited for */
static void r3_read(model *m, uintptr_t lo, uintptr_t hi) {
    int i;
    pthread_mutex_lock(&m->mu);
    for (i = 0; i < m->n_h;) {
        const acc *w = &m->hwrites[i];
        if (w->lo < hi && lo < w->hi) {
            m->r3++;
            m->r3_copy += w->stream == COPY;
            if (m->host_known[w->stream] < w->seq) {
                m->r3_bad++;
                if (m->printed++ < 3)
                    fprintf(stderr, "  R3 violated: the CPU reads host memory that %s call %lld (step %d %s) writes; the "
                                    "host waited for that stream's calls up to %lld only\n",
                            w->stream == COPY ? "copy" : "comm", (long long)w->seq, w->step, w->what,
                            (long long)m->host_known[w->stream]);
            }
            remove_at(m->hwrites, &m->n_h, i);
        } else {
            i++;
        }
    }
    pthread_mutex_unlock(&m->mu);
}

/* R3 at the CPU's adds: the chunk read, [src, src + n elements) */
static zero_result w_cpu_convert(void *cpu_ctx, void *dst, zero_dtype dst_dt, const void *src, zero_dtype src_dt, size_t n,
                                 int accumulate, zero_error *err) {
    model *m = model_of(cpu_ctx);
    r3_read(m, (uintptr_t)src, (uintptr_t)src + n * zero_dtype_size(src_dt));
    return m->base.cpu_convert(cpu_ctx, dst, dst_dt, src, src_dt, n, accumulate, err);
}

/* R3 at the CPU's Adam: each segment's gradients read */
static zero_result w_cpu_adam(void *cpu_ctx, const zero_adam_args *a, zero_error *err) {
    model *m = model_of(cpu_ctx);
    const size_t gs = zero_dtype_size(a->grad_dtype);
    int k;
    for (k = 0; k < a->n_segs; k++) {
        uintptr_t lo = (uintptr_t)a->grad + (uintptr_t)a->segs[k].offset * gs;
        r3_read(m, lo, lo + (uintptr_t)a->segs[k].count * gs);
    }
    return m->base.cpu_adam(cpu_ctx, a, err);
}

static zero_result w_sync(void *ctx, zero_stream_id s, zero_error *err) {
    model *m = model_of(ctx);
    zero_result r = m->base.sync(ctx, s, err);
    if (r == ZERO_OK && (unsigned)s < (unsigned)NS && pthread_equal(pthread_self(), m->owner)) {
        int o;
        pthread_mutex_lock(&m->mu);
        for (o = 0; o < NS; o++)
            if (o != (int)s && m->known[o][s] < m->n[s]) m->known[o][s] = m->n[s];
        if (m->host_known[s] < m->n[s]) m->host_known[s] = m->n[s];
        pthread_mutex_unlock(&m->mu);
    }
    return r;
}

static zero_result w_reduce_scatter(void *ctx, const void *send, void *recv, size_t count, zero_dtype dt, zero_op op,
                                    zero_stream_id s, zero_error *err) {
    model *m = model_of(ctx);
    pthread_mutex_lock(&m->mu);
    if ((int)s == COMM) on_comm_read(m, send, count * zero_dtype_size(dt) * (size_t)m->base.world);
    on_op(m, s, recv, count * zero_dtype_size(dt));
    on_side_read(m, s, send, count * zero_dtype_size(dt) * (size_t)m->base.world);
    pthread_mutex_unlock(&m->mu);
    return m->base.reduce_scatter(ctx, send, recv, count, dt, op, s, err);
}

static zero_result w_all_gather(void *ctx, const void *send, void *recv, size_t count, zero_dtype dt, zero_stream_id s,
                                zero_error *err) {
    model *m = model_of(ctx);
    pthread_mutex_lock(&m->mu);
    if ((int)s == COMM) on_comm_read(m, send, count * zero_dtype_size(dt));
    on_op(m, s, recv, count * zero_dtype_size(dt) * (size_t)m->base.world);
    on_side_read(m, s, send, count * zero_dtype_size(dt));
    pthread_mutex_unlock(&m->mu);
    return m->base.all_gather(ctx, send, recv, count, dt, s, err);
}

static zero_result w_all_reduce(void *ctx, const void *send, void *recv, size_t count, zero_dtype dt, zero_op op,
                                zero_stream_id s, zero_error *err) {
    MODEL_OP(s, recv, count * zero_dtype_size(dt));
    pthread_mutex_lock(&m->mu);
    on_side_read(m, s, send, count * zero_dtype_size(dt));
    pthread_mutex_unlock(&m->mu);
    return m->base.all_reduce(ctx, send, recv, count, dt, op, s, err);
}

static zero_result w_broadcast(void *ctx, void *buf, size_t count, zero_dtype dt, int root, zero_stream_id s,
                               zero_error *err) {
    MODEL_OP(s, buf, count * zero_dtype_size(dt));
    return m->base.broadcast(ctx, buf, count, dt, root, s, err);
}

static zero_result w_scale(void *ctx, void *x, size_t n, zero_dtype dt, float factor, zero_stream_id s, zero_error *err) {
    MODEL_OP(s, x, n * zero_dtype_size(dt));
    return m->base.scale(ctx, x, n, dt, factor, s, err);
}

static zero_result w_convert(void *ctx, void *dst, zero_dtype dst_dt, const void *src, zero_dtype src_dt, size_t n,
                             int accumulate, zero_stream_id s, zero_error *err) {
    MODEL_OP(s, dst, n * zero_dtype_size(dst_dt));
    pthread_mutex_lock(&m->mu);
    on_side_read(m, s, src, n * zero_dtype_size(src_dt));
    pthread_mutex_unlock(&m->mu);
    return m->base.convert(ctx, dst, dst_dt, src, src_dt, n, accumulate, s, err);
}

/* The call just queued on stream s (compute or COPY) wrote statistics at out: R8 judges the COMM writes there
   (the step's clear); a compute-stream one is kept for R7 (a COPY one is, as every COPY write into device memory).
   (m->mu held.) */
static void on_stats_write(model *m, zero_stream_id s, double *out) {
    uintptr_t lo = (uintptr_t)out, hi = lo + 2 * sizeof(double);
    if ((int)s == COMM || (unsigned)s >= (unsigned)NS) return;
    judge(m, m->writes, &m->n_w, (int)s, lo, hi, m->n[s], "R8", (int)s == COMP ? "a compute statistics write at" : "a COPY statistics write at", "write", &m->r8, NULL, &m->r8_bad);
    if ((int)s == COMP) {
        acc w;
        fill_acc(m, &w, lo, hi, m->n[s]);
        w.stream = COMP;
        add_acc(m, &m->pwrites, &m->n_pw, &m->cap_pw, &w);
    }
}

static zero_result w_sumsq(void *ctx, const void *x, size_t n, zero_dtype dt, double *out, zero_stream_id s,
                           zero_error *err) {
    MODEL_OP(s, out, 2 * sizeof(double));
    pthread_mutex_lock(&m->mu);
    on_stats_write(m, s, out);
    on_side_read(m, s, x, n * zero_dtype_size(dt)); /* (the statistics read the gradient: R5, R6) */
    pthread_mutex_unlock(&m->mu);
    return m->base.sumsq(ctx, x, n, dt, out, s, err);
}

/* each segment as w_sumsq records it, then the host's */
static zero_result w_sumsq_segs(void *ctx, const zero_sumsq_seg *segs, int n, zero_dtype dt, zero_stream_id s,
                                zero_error *err) {
    model *m = model_of(ctx);
    int i;
    pthread_mutex_lock(&m->mu);
    for (i = 0; segs && i < n; i++) {
        on_op(m, s, segs[i].out, 2 * sizeof(double));
        on_stats_write(m, s, segs[i].out);
        on_side_read(m, s, segs[i].x, (size_t)segs[i].count * zero_dtype_size(dt));
    }
    pthread_mutex_unlock(&m->mu);
    return m->base.sumsq_segs(ctx, segs, n, dt, s, err);
}

/* the device Adam writes master, m, v and the parameters: the parameters'
   extent stands for it (the pool is none of them) */
static zero_result w_adam(void *ctx, const zero_adam_args *a, zero_stream_id s, zero_error *err) {
    int64_t end = 0;
    int k;
    for (k = 0; a && k < a->n_segs; k++)
        if (a->segs[k].offset + a->segs[k].count > end) end = a->segs[k].offset + a->segs[k].count;
    {
        MODEL_OP(s, a && a->param ? a->param : NULL, (size_t)end * zero_dtype_size(a ? a->param_dtype : ZERO_DTYPE_FP32));
        return m->base.adam(ctx, a, s, err);
    }
}

/* adam_multi: each call as w_adam records it, then the host's */
static zero_result w_adam_multi(void *ctx, const zero_adam_args *a, int n, zero_stream_id s, zero_error *err) {
    model *m = model_of(ctx);
    int i, k;
    pthread_mutex_lock(&m->mu);
    for (i = 0; a && i < n; i++) {
        int64_t end = 0;
        for (k = 0; k < a[i].n_segs; k++)
            if (a[i].segs[k].offset + a[i].segs[k].count > end) end = a[i].segs[k].offset + a[i].segs[k].count;
        on_op(m, s, a[i].param, (size_t)end * zero_dtype_size(a[i].param_dtype));
        /* on the compute stream its gradient is read there: R1 (the reductions done), then R2 (the next ones wait) */
        if ((int)s == COMP && a[i].grad) on_read(m, a[i].grad, (size_t)end * zero_dtype_size(a[i].grad_dtype), 0, m->call);
    }
    pthread_mutex_unlock(&m->mu);
    return m->base.adam_multi(ctx, a, n, s, err);
}

/* *out: base with the model in front; registered as rank's */
static void model_wrap(model *m, int rank, const zero_backend *base, zero_backend *out) {
    memset(m, 0, sizeof *m);
    m->ctx = base->ctx;
    m->base = *base;
    m->owner = pthread_self();
    pthread_mutex_init(&m->mu, NULL);
    *out = *base;
    out->alloc = w_alloc;
    out->free = w_free;
    out->win_alloc = base->win_alloc ? w_win_alloc : NULL;
    out->win_free = base->win_free ? w_win_free : NULL;
    out->coll_group_begin = base->coll_group_begin ? w_coll_group_begin : NULL;
    out->memset0 = w_memset0;
    out->copy = w_copy;
    out->event_create = w_event_create;
    out->event_destroy = w_event_destroy;
    out->event_record = w_event_record;
    out->stream_wait = w_stream_wait;
    out->sync = w_sync;
    out->event_sync = base->event_sync ? w_event_sync : NULL;
    out->reduce_scatter = w_reduce_scatter;
    out->all_gather = w_all_gather;
    out->all_reduce = w_all_reduce;
    out->broadcast = w_broadcast;
    out->scale = w_scale;
    out->convert = w_convert;
    out->sumsq = w_sumsq;
    out->sumsq_segs = base->sumsq_segs ? w_sumsq_segs : NULL;
    out->adam = w_adam;
    out->adam_multi = base->adam_multi ? w_adam_multi : NULL;
    out->cpu_convert = base->cpu_convert ? w_cpu_convert : NULL;
    out->cpu_adam = base->cpu_adam ? w_cpu_adam : NULL;
    zt_wrap_set(rank, m->ctx, m);
}

static void model_done(model *m, int rank) {
    zt_wrap_set(rank, NULL, NULL);
    free(m->allocs);
    free(m->writes);
    free(m->reads);
    free(m->hwrites);
    free(m->cwrites);
    free(m->sreads);
    free(m->pwrites);
    m->pwrites = NULL;
    m->allocs = NULL;
    m->writes = m->reads = m->hwrites = m->cwrites = m->sreads = NULL;
    pthread_mutex_destroy(&m->mu);
}

/* ---- a job: one configuration on 1 or 2 host ranks ---- */

/* threshold 0 and a small pool; DeepSpeed's defaults (the pool holds every
   span; all tensors but the split ones persistent); threshold 50 and a
   small pool */
enum { POOL, DEFAULTS, PERSIST_SOME, KEEP }; /* KEEP: nothing persistent, a pool that holds every unit */

typedef struct job {
    char name[64];
    int stage; /* 0: 3 */
    int dtype, world, gas, offload, persist, reuse0;
    double ratio; /* offload_optimizer.ratio (0: the default, 1) */
    int pers[MAXW][NT]; /* tensor t is persistent (from the layout) */
    double clip;
    zero_result r[MAXW];
    char msg[MAXW][1024];
    model M[MAXW];
    int64_t changed[MAXW][STEPS]; /* elements a step's first fetches return that differ from the step before */
    int64_t moved[MAXW];          /* elements a later fetch of a step returned other than its first */
    int64_t hits[MAXW], fetches[MAXW], gathered[MAXW];
    int64_t overlapped[MAXW]; /* units whose CPU Adam ran beside the next forward's fetches */
    int64_t deferred[MAXW];   /* stages 1-2: units whose step all-gather ran beside the next forward */
    int cached;               /* stages 1-2: tensor 0 read through a pointer kept from before the first step, never
                                 fetched (a program that does not fetch: zero_step's full wait) */
    const void *kept[MAXW];   /* ... that pointer */
    int flushed;              /* stages 1-2: every tensor fetched, and tensor 0 also read through the kept pointer
                                 before each forward, after zero_flush (what docs/engine.md asks of such a read) */
    float w[MAXW][TOTAL];
} job;

/* the call under way ("name(tT)", or "name" for t < 0), for the model's messages */
static void at(model *m, int step, const char *name, int t) {
    pthread_mutex_lock(&m->mu);
    m->step = step;
    m->fetch = strstr(name, "zero_fetch") != NULL;
    m->call++;
    if (t >= 0) snprintf(m->what, sizeof m->what, "%s(t%d)", name, t);
    else snprintf(m->what, sizeof m->what, "%s", name);
    pthread_mutex_unlock(&m->mu);
}

/* The program's kernel on tensor t's parameters p: a call on the compute
   stream through the wrapped table, recorded as reading them. */
static zero_result kernel(model *m, const zero_backend *wb, void *scratch, int t, const void *p, zero_dtype dt,
                          int persistent, int64_t fetch_call) {
    zero_error err;
    zero_result r = wb->memset0(wb->ctx, scratch, 64, ZERO_STREAM_COMPUTE, &err);
    if (r != ZERO_OK) return r;
    pthread_mutex_lock(&m->mu);
    on_read(m, p, (size_t)SIZES[t] * zero_dtype_size(dt), persistent, fetch_call);
    pthread_mutex_unlock(&m->mu);
    return ZERO_OK;
}

/* The program's backward kernel writing a gradient g: a call on the compute
   stream, checked by R5 (the side streams' reads of g's memory are done). */
static zero_result grad_kernel(model *m, const zero_backend *wb, void *scratch, const void *g, size_t bytes) {
    zero_error err;
    zero_result r = wb->memset0(wb->ctx, scratch, 64, ZERO_STREAM_COMPUTE, &err);
    if (r != ZERO_OK) return r;
    pthread_mutex_lock(&m->mu);
    on_comp_write(m, (uintptr_t)g, (uintptr_t)g + bytes, m->n[COMP]);
    {
        acc w; /* for R4 and R6: a reduction and a copy to the host read it after it */
        fill_acc(m, &w, (uintptr_t)g, (uintptr_t)g + bytes, m->n[COMP]);
        add_acc(m, &m->cwrites, &m->n_cw, &m->cap_cw, &w);
    }
    pthread_mutex_unlock(&m->mu);
    return ZERO_OK;
}

/* fetch t, run the program's kernel on it, and compare what it reads with
   seen (the step's first fetch of t sets it) */
static zero_result fetch_read(zero_engine *e, model *m, const zero_backend *wb, void *scratch, const job *J, int s, int t,
                              int64_t o, int first, float *seen, int64_t *moved, const char *phase) {
    zero_result r;
    const void *p;
    int64_t i, fc;
    char name[32];
    snprintf(name, sizeof name, "%s zero_fetch", phase);
    at(m, s, name, t);
    fc = m->call;
    if (J->cached && t == 0) { /* (no fetch, no zero_param: the pointer kept from create) */
        p = J->kept[wb->rank];
    } else {
        if ((r = zero_fetch(e, t)) != ZERO_OK) return r;
        at(m, s, "zero_param", t);
        if (!(p = zero_param(e, t))) return zero_engine_error(e)->code;
    }
    snprintf(name, sizeof name, "%s kernel", phase);
    at(m, s, name, t);
    if ((r = kernel(m, wb, scratch, t, p, (zero_dtype)J->dtype, J->pers[wb->rank][t], fc)) != ZERO_OK) return r;
    for (i = 0; i < SIZES[t]; i++) {
        float x = zt_load(p, (zero_dtype)J->dtype, i);
        if (first) seen[o + i] = x;
        else *moved += !zt_same_bits(x, seen[o + i]);
    }
    return ZERO_OK;
}

static zero_result train(zero_engine *e, job *J, model *m, const zero_backend *wb, void *scratch, int rank) {
    static const char *const fwd = "forward", *const bwd = "backward";
    float seen[TOTAL], prev[TOTAL];
    int64_t off[NT];
    int s, mb, t;
    zero_result r;
    off[0] = 0;
    for (t = 1; t < NT; t++) off[t] = off[t - 1] + SIZES[t - 1];
    J->deferred[rank] = J->moved[rank] = 0; /* (a job copied from another's starts with its counts) */
    memset(J->changed[rank], 0, sizeof J->changed[rank]);
    if ((J->cached || J->flushed) && !(J->kept[rank] = zero_param(e, 0))) return zero_engine_error(e)->code;
    for (s = 0; s < STEPS; s++) {
        zero_step_info info;
        for (mb = 0; mb < J->gas; mb++) {
            if (J->flushed && mb == 0) { /* a read of the new weights before the forward's fetches: zero_flush first */
                at(m, s, "zero_flush", -1);
                if ((r = zero_flush(e)) != ZERO_OK) return r;
                at(m, s, "kernel through the kept pointer", 0);
                if ((r = kernel(m, wb, scratch, 0, J->kept[rank], (zero_dtype)J->dtype, J->pers[rank][0], m->call)) != ZERO_OK)
                    return r;
            }
            for (t = 0; t < NT; t++) { /* forward: each tensor read, then released */
                if ((r = fetch_read(e, m, wb, scratch, J, s, t, off[t], mb == 0, seen, &J->moved[rank], fwd)) != ZERO_OK)
                    return r;
                at(m, s, "forward zero_release", t);
                if (!(J->cached && t == 0) && (r = zero_release(e, t)) != ZERO_OK) return r;
            }
            for (t = NT - 1; t >= 0; t--) { /* backward: read again, the gradient from what was read */
                void *g;
                int64_t i;
                if ((r = fetch_read(e, m, wb, scratch, J, s, t, off[t], 0, seen, &J->moved[rank], bwd)) != ZERO_OK)
                    return r;
                at(m, s, "zero_grad", t);
                if (!(g = zero_grad(e, t))) return zero_engine_error(e)->code;
                at(m, s, "backward kernel: the gradient", t);
                if ((r = grad_kernel(m, wb, scratch, g, (size_t)SIZES[t] * zero_dtype_size((zero_dtype)J->dtype))) != ZERO_OK)
                    return r;
                for (i = 0; i < SIZES[t]; i++)
                    zt_store(g, (zero_dtype)J->dtype, i,
                             (float)zero_loss_scale(e) *
                                 (seen[off[t] + i] - 0.1f + 0.01f * (float)((rank * 7 + mb * 3 + s + i) % 5)));
                at(m, s, "zero_grad_ready", t);
                if ((r = zero_grad_ready(e, t)) != ZERO_OK) return r;
                at(m, s, "backward zero_release", t);
                if (!(J->cached && t == 0) && (r = zero_release(e, t)) != ZERO_OK) return r;
            }
        }
        if (s > 0) {
            int64_t i;
            for (i = 0; i < TOTAL; i++) J->changed[rank][s] += !zt_same_bits(seen[i], prev[i]);
        }
        memcpy(prev, seen, sizeof prev);
        at(m, s, "zero_step", -1);
        if ((r = zero_step(e, &info)) != ZERO_OK) return r;
        if (!info.applied) return ZERO_ERR_STATE;
        J->hits[rank] += info.fetch_hits;
        J->fetches[rank] += info.fetches;
        J->gathered[rank] += info.units_gathered;
        J->overlapped[rank] += info.cpu_units_overlapped;
        J->deferred[rank] += info.gathers_deferred;
    }
    return ZERO_OK;
}

/* ZERO_COLL_WINDOWS's note at create (rank 0): kept for the check; every other line left out */
static char windows_note[400];
static void note_of_windows(void *user, zero_log_level level, zero_msg item, int rank, const char *msg) {
    (void)user, (void)level, (void)rank;
    if (item == ZERO_MSG_ENGINE_COLL_WINDOWS) snprintf(windows_note, sizeof windows_note, "%s", msg);
}

static zero_result rank_fn(const zero_backend *b, void *arg) {
    job *J = (job *)arg;
    int rank = b->rank, t;
    model *m = &J->M[rank];
    zero_config c = zero_config_default();
    zero_tensor ts[NT];
    char names[NT][8];
    zero_backend wb;
    zero_error err;
    zero_engine *e = NULL;
    void *scratch = NULL;
    static zt_wave wave = {0.3, 0.2, 0.7, 0.013, 0};
    int64_t o = 0;
    model_wrap(m, rank, b, &wb);
    if (wb.alloc(wb.ctx, ZERO_MEM_DEVICE, 64, &scratch, &err) != ZERO_OK) {
        J->r[rank] = err.code;
        snprintf(J->msg[rank], sizeof J->msg[rank], "%s", err.msg);
        model_done(m, rank);
        return ZERO_OK;
    }
    memset(ts, 0, sizeof ts);
    for (t = 0; t < NT; t++) {
        snprintf(names[t], sizeof names[t], "t%d", t);
        ts[t].name = names[t];
        ts[t].numel = SIZES[t];
        ts[t].group = t / 3;
        ts[t].init = zt_init_wave;
        ts[t].init_user = &wave;
    }
    c.train_micro_batch_size_per_gpu = 1;
    c.gradient_accumulation_steps = J->gas;
    c.zero_optimization.stage = J->stage ? J->stage : 3;
    c.zero_optimization.reduce_bucket_size = 64; /* t2, t4, t5, t9 split: spans of several units */
    if (J->persist == KEEP) {
        c.zero_optimization.stage3_param_persistence_threshold = 0;
        if (J->reuse0) c.zero_optimization.stage3_max_reuse_distance = 0;
    } else if (J->persist != DEFAULTS) {
        /* a pool of a few units: fetches evict, prefetch runs ahead of the trace */
        c.zero_optimization.stage3_param_persistence_threshold = J->persist == PERSIST_SOME ? 50 : 0;
        c.zero_optimization.stage3_max_live_parameters = 200;
        c.zero_optimization.stage3_prefetch_bucket_size = 150;
        if (J->reuse0) c.zero_optimization.stage3_max_reuse_distance = 0; /* a release drops its span */
    }
    if (J->offload) {
        if (c.zero_optimization.stage == 3) c.zero_optimization.offload_param.device = ZERO_OFFLOAD_CPU;
        c.zero_optimization.offload_optimizer.device = ZERO_OFFLOAD_CPU;
        if (J->ratio > 0) c.zero_optimization.offload_optimizer.ratio = J->ratio;
    }
    c.optimizer.lr = 0.02; /* steps that move bf16 values too */
    c.optimizer.weight_decay = 0.01;
    c.gradient_clipping = J->clip;
    c.bf16.enabled = J->dtype == ZERO_DTYPE_BF16;
    c.log.level = ZERO_LOG_WARN;
    if (getenv("ZERO_COLL_WINDOWS")) { /* its note, rank 0's (info) */
        c.log.level = ZERO_LOG_INFO;
        c.log.fn = note_of_windows;
    }
    if (zero_config_resolve(&c, b->world, &err) != ZERO_OK || zero_engine_create(&e, &c, ts, NT, &wb, &err) != ZERO_OK) {
        J->r[rank] = err.code;
        snprintf(J->msg[rank], sizeof J->msg[rank], "%s", err.msg);
    } else {
        const zero_layout *l = zero_engine_layout(e);
        for (t = 0; t < NT; t++) J->pers[rank][t] = zero_layout_unit(l, zero_layout_tensor(l, t)->first_unit)->persistent;
        J->r[rank] = train(e, J, m, &wb, scratch, rank);
        if (J->r[rank] != ZERO_OK) snprintf(J->msg[rank], sizeof J->msg[rank], "%s", zero_engine_error(e)->msg);
        for (t = 0; t < NT && J->r[rank] == ZERO_OK; t++) {
            if (zero_read_state(e, t, ZERO_STATE_MASTER, 0, SIZES[t], J->w[rank] + o) != ZERO_OK) {
                J->r[rank] = zero_engine_error(e)->code;
                snprintf(J->msg[rank], sizeof J->msg[rank], "%s", zero_engine_error(e)->msg);
            }
            o += SIZES[t];
        }
        zero_engine_destroy(e);
    }
    wb.free(wb.ctx, ZERO_MEM_DEVICE, scratch);
    model_done(m, rank);
    return ZERO_OK;
}

/* ---- the checks of a finished job ---- */

static void check_job(job *J) {
    zero_error err;
    int64_t r1 = 0, r2 = 0, bad1 = 0, bad2 = 0, sync = 0, ahead = 0, atfetch = 0, p1 = 0, p2 = 0, npers = 0, r3 = 0, bad3 = 0;
    int64_t r4 = 0, bad4 = 0, r5 = 0, bad5 = 0, r5c = 0, r3c = 0, r6 = 0, bad6 = 0, r7 = 0, bad7 = 0, r8 = 0, bad8 = 0, rw = 0;
    const char *cs = getenv("ZERO_COPY_STREAM");
    const int copy = !(cs && strcmp(cs, "0") == 0);
    const int s3 = !J->stage || J->stage == 3;
    int rank, s, t;
    CHECKF(zero_host_run(J->world, rank_fn, J, &err) == ZERO_OK, "%s: zero_host_run: %s", J->name, err.msg);
    for (rank = 0; rank < J->world; rank++) {
        const model *m = &J->M[rank];
        CHECKF(J->r[rank] == ZERO_OK, "%s rank %d: %s", J->name, rank, J->msg[rank]);
        CHECKF(!m->lost, "%s rank %d: the model's tables could not grow", J->name, rank);
        r1 += m->r1;
        r2 += m->r2;
        bad1 += m->r1_bad;
        bad2 += m->r2_bad;
        r3 += m->r3;
        bad3 += m->r3_bad;
        r4 += m->r4;
        bad4 += m->r4_bad;
        r5 += m->r5;
        bad5 += m->r5_bad;
        r5c += m->r5_copy;
        r3c += m->r3_copy;
        r6 += m->r6;
        bad6 += m->r6_bad;
        r7 += m->r7;
        bad7 += m->r7_bad;
        r8 += m->r8;
        bad8 += m->r8_bad;
        rw += m->ready_waits;
        sync += m->by_sync;
        ahead += m->r1_ahead;
        atfetch += m->r2_fetch;
        p1 += m->r1_pers;
        p2 += m->r2_pers;
        for (t = 0; t < NT; t++) npers += J->pers[rank][t];
        /* the data the kernels read: the same at every fetch of a step, new after each step */
        CHECKF(J->moved[rank] == 0, "%s rank %d: %lld elements read differently within a step", J->name, rank,
               (long long)J->moved[rank]);
        for (s = 1; s < STEPS; s++)
            CHECKF(J->changed[rank][s] > TOTAL / 2, "%s rank %d step %d: %lld of %d elements changed by the step before",
                   J->name, rank, s, (long long)J->changed[rank][s], TOTAL);
        if (s3 && J->persist != DEFAULTS) /* fetches missed the pool, and some hit a prefetch or a kept span */
            CHECKF(J->hits[rank] > 0 && J->gathered[rank] > 0 && J->hits[rank] < J->fetches[rank],
                   "%s rank %d: %lld hits of %lld fetches, %lld units gathered", J->name, rank, (long long)J->hits[rank],
                   (long long)J->fetches[rank], (long long)J->gathered[rank]);
        if (!s3) { /* stages 1-2 on two ranks with Adam on the device, every unit fetched: from the second step on its
                      all-gathers run beside the next forward, each unit waited for at its fetch (>>gather-defer) */
            const char *d = getenv("ZERO_GATHER_DEFER"), *o = getenv("ZERO_STEP_OVERLAP");
            int want = J->world > 1 && !J->offload && !J->cached && !(d && !strcmp(d, "0")) && !(o && !strcmp(o, "0"));
            CHECKF(want ? J->deferred[rank] > 0 : J->deferred[rank] == 0, "%s rank %d: %lld units' gathers deferred",
                   J->name, rank, (long long)J->deferred[rank]);
        }
        if (s3 && J->persist == POOL) /* offload: the fetches' gathers wait for the overlapped CPU step's units (not with
                                   a ratio below 1: the plain CPU step) */
            CHECKF((J->overlapped[rank] > 0) == (J->offload && !(J->ratio > 0)), "%s rank %d: %lld units of CPU Adam overlapped", J->name, rank,
                   (long long)J->overlapped[rank]);
    }
    CHECKF(bad1 == 0, "%s: %lld of %lld R1 pairs: a program kernel reads the pool before the gather's writes", J->name,
           (long long)bad1, (long long)r1);
    CHECKF(bad2 == 0, "%s: %lld of %lld R2 pairs: a gather writes the pool before a released kernel's read", J->name,
           (long long)bad2, (long long)r2);
    CHECKF(r1 > 0 && (r2 > 0 || !s3), "%s: %lld R1 and %lld R2 checks", J->name, (long long)r1, (long long)r2);
    CHECKF(bad4 == 0, "%s: %lld of %lld R4 pairs: a collective reads memory before the compute stream's write of it",
           J->name, (long long)bad4, (long long)r4);
    if (!s3 && J->world > 1 && !getenv("ZERO_STEP_OVERLAP")) /* the step's gathers read what the compute stream's Adam wrote */
        CHECKF(r4 > 0, "%s: no R4 check", J->name);
    CHECKF(bad3 == 0, "%s: %lld of %lld R3 pairs: the CPU reads a chunk before its copy to the host is waited for", J->name,
           (long long)bad3, (long long)r3);
    if (J->offload) /* the CPU's Adam reads the gradients copied to the host (and with gas > 1 the CPU adds the
                       micro-batches before the last) */
        CHECKF(r3 > 0, "%s: no R3 check (the CPU read no gradient copied to the host)", J->name);
    CHECKF(bad5 == 0, "%s: %lld of %lld R5 pairs: the backward writes a gradient slot before a side stream's read of it",
           J->name, (long long)bad5, (long long)r5);
    CHECKF(r5 > 0, "%s: no R5 check", J->name); /* (every configuration reduces from slots it writes again) */
    CHECKF(bad6 == 0, "%s: %lld of %lld R6 pairs: a copy to the host reads a chunk before its writer is done", J->name,
           (long long)bad6, (long long)r6);
    if (J->offload) /* those chunks (with one micro-batch, the reduced ones) cross on the copy stream, from slots the
                       backward reuses */
        CHECKF(copy ? r3c > 0 && r5c > 0 && r6 > 0 : r3c == 0 && r5c == 0 && r6 == 0,
               "%s: %lld R3, %lld R5 and %lld R6 pairs on the copy stream%s", J->name, (long long)r3c, (long long)r5c,
               (long long)r6, copy ? "" : " (ZERO_COPY_STREAM=0)");
    CHECKF(bad7 == 0, "%s: %lld of %lld R7 pairs: the comm stream reads statistics before the compute or copy stream "
           "wrote them", J->name, (long long)bad7, (long long)r7);
    CHECKF(bad8 == 0, "%s: %lld of %lld R8 pairs: the compute or copy stream writes statistics before the comm stream's "
           "clear of them", J->name, (long long)bad8, (long long)r8);
    if (J->offload) /* one rank, one micro-batch: the compute stream takes each chunk's statistics, the step's norm
                       reads them on the comm stream and clears them there for the next step */
        CHECKF((r7 > 0) == (copy && J->world == 1 && J->gas == 1) && (r8 > 0) == (r7 > 0), "%s: %lld R7, %lld R8 pairs%s",
               J->name, (long long)r7, (long long)r8, copy ? "" : " (ZERO_COPY_STREAM=0)");
    /* ... and there the comm stream does not wait for the backward at each gradient (nothing on it reads one:
       its fetches wait only for their pool regions' readers), unless a ratio keeps units on the device */
    if (J->offload && copy && J->world == 1 && J->gas == 1)
        CHECKF((rw == 0) == !(J->ratio > 0), "%s: the comm stream waited for the compute stream %lld times in "
               "zero_grad_ready", J->name, (long long)rw);
    else
        CHECKF(rw > 0, "%s: the comm stream never waited for the compute stream in zero_grad_ready", J->name);
    /* fetches gather into regions that kernels read before (eviction, or the
       step's drop), prefetched gathers are waited for at their own fetch,
       and persistent tensors (gathered at create and by zero_step) are
       read and regathered where there are any */
    if (s3) CHECKF(atfetch > 0 && ahead > 0, "%s: %lld R2 pairs at fetches, %lld R1 pairs on prefetched gathers", J->name,
                   (long long)atfetch, (long long)ahead);
    if (s3) CHECKF(J->persist == POOL || J->persist == KEEP ? npers == 0 && p1 == 0 && p2 == 0 : npers > 0 && p1 > 0 && p2 > 0,
           "%s: %lld persistent tensors over the ranks, %lld R1 and %lld R2 pairs on them", J->name, (long long)npers,
           (long long)p1, (long long)p2);
    printf("%-38s R1 %4lld (prefetched %3lld, persistent %3lld)  R2 %4lld (at fetches %3lld, persistent %3lld)  "
           "by host sync %lld  failed %lld / %lld  R3 %lld (copy stream %lld) failed %lld  R4 %lld failed %lld  "
           "R5 %lld (copy stream %lld) failed %lld  R6 %lld failed %lld  R7 %lld failed %lld  R8 %lld failed %lld\n",
           J->name, (long long)r1, (long long)ahead, (long long)p1, (long long)r2, (long long)atfetch, (long long)p2,
           (long long)sync, (long long)bad1, (long long)bad2, (long long)r3, (long long)r3c, (long long)bad3, (long long)r4,
           (long long)bad4, (long long)r5, (long long)r5c, (long long)bad5, (long long)r6,
           (long long)bad6, (long long)r7, (long long)bad7, (long long)r8, (long long)bad8);
}

/* a's job again as b with `var`=0 in the environment: the same weights, its rules checked as a's */
static void same_with_env(const job *a, job *b, const char *var) {
    *b = *a;
    snprintf(b->name, sizeof b->name, "%.40s, %s=0", a->name, var);
    setenv(var, "0", 1);
    check_job(b);
    unsetenv(var);
    CHECKF(!memcmp(a->w, b->w, sizeof a->w), "%s: %s=0 changed the weights", a->name, var);
}

int main(void) {
    static job a, b, c;
    int dt, world, gas, i;
    double t0 = zt_now_s();
    zt_seed("test_engine_streams");
    /* a pool of a few units, each configuration without and with offload */
    for (dt = 0; dt < 2; dt++)
        for (world = 1; world <= 2; world++)
            for (gas = 1; gas <= 2; gas++) {
                int dtype = dt ? ZERO_DTYPE_BF16 : ZERO_DTYPE_FP32, k = dt + world + gas;
                memset(&a, 0, sizeof a);
                a.dtype = dtype;
                a.world = world;
                a.gas = gas;
                a.persist = POOL;
                a.reuse0 = k % 2; /* released spans dropped, or kept for the backward */
                a.clip = k % 3 == 0 ? 0 : 0.5; /* with and without clipping */
                b = a;
                b.offload = 1;
                snprintf(a.name, sizeof a.name, "pool %s w%d gas%d%s", zero_dtype_name((zero_dtype)dtype), world, gas,
                         a.reuse0 ? " reuse0" : "");
                snprintf(b.name, sizeof b.name, "%.40s, offload cpu", a.name);
                c = b;
                c.ratio = 0.5; /* partial offload: the first units' Adam on the device */
                snprintf(c.name, sizeof c.name, "%.40s, ratio 0.5", a.name);
                check_job(&a);
                check_job(&b);
                check_job(&c);
                for (i = 0; i < world; i++)
                    CHECKF(!memcmp(a.w[i], b.w[i], sizeof a.w[i]) && !memcmp(a.w[i], c.w[i], sizeof a.w[i]),
                           "%s rank %d: offload changed the weights", b.name, i);
                if (!getenv("ZERO_COPY_STREAM")) { /* the chunks on the comm stream: the model sees it */
                    static job d;
                    d = b;
                    snprintf(d.name, sizeof d.name, "%.40s, ZERO_COPY_STREAM=0", b.name);
                    setenv("ZERO_COPY_STREAM", "0", 1);
                    check_job(&d);
                    unsetenv("ZERO_COPY_STREAM");
                    for (i = 0; i < world; i++)
                        CHECKF(!memcmp(a.w[i], d.w[i], sizeof a.w[i]), "%s rank %d: the weights differ", d.name, i);
                }
            }
    /* persistent tensors: DeepSpeed's thresholds (every tensor not split), or at most 50 elements and a pool */
    {
        static const struct { int persist, dtype, world, gas, offload; } P[4] = {
            {DEFAULTS, ZERO_DTYPE_FP32, 2, 2, 0},
            {DEFAULTS, ZERO_DTYPE_BF16, 1, 1, 1},
            {PERSIST_SOME, ZERO_DTYPE_BF16, 2, 1, 1},
            {PERSIST_SOME, ZERO_DTYPE_FP32, 1, 2, 0},
        };
        for (i = 0; i < 4; i++) {
            memset(&a, 0, sizeof a);
            a.persist = P[i].persist;
            a.dtype = P[i].dtype;
            a.world = P[i].world;
            a.gas = P[i].gas;
            a.offload = P[i].offload;
            a.clip = 1.0;
            snprintf(a.name, sizeof a.name, "%s %s w%d gas%d%s", a.persist == DEFAULTS ? "defaults" : "persist<=50",
                     zero_dtype_name((zero_dtype)a.dtype), a.world, a.gas, a.offload ? ", offload cpu" : "");
            check_job(&a);
        }
    }
    /* a pool that holds every unit: a unit released in one micro-batch's backward is kept for the next
       micro-batch's forward (stage3_max_reuse_distance counts on into it), so once the first micro-batch
       has recorded the order, a step's later micro-batches gather nothing: 3 micro-batches a step gather
       what 2 do; with reuse distance 0 each micro-batch gathers again */
    {
        static job k2, k3;
        int reuse0;
        for (reuse0 = 0; reuse0 < 2; reuse0++) {
            memset(&k2, 0, sizeof k2);
            k2.persist = KEEP;
            k2.dtype = ZERO_DTYPE_BF16;
            k2.world = 2;
            k2.gas = 2;
            k2.reuse0 = reuse0;
            k2.clip = 0.5;
            k3 = k2;
            k3.gas = 3;
            snprintf(k2.name, sizeof k2.name, "keep bf16 w2 gas2%s", reuse0 ? " reuse0" : "");
            snprintf(k3.name, sizeof k3.name, "keep bf16 w2 gas3%s", reuse0 ? " reuse0" : "");
            check_job(&k2);
            check_job(&k3);
            for (i = 0; i < 2; i++) {
                CHECKF(2 * k3.fetches[i] == 3 * k2.fetches[i] && k2.gathered[i] > 0,
                       "keep rank %d: %lld fetches at gas 3, %lld at gas 2", i, (long long)k3.fetches[i], (long long)k2.fetches[i]);
                CHECKF(reuse0 ? 2 * k3.gathered[i] == 3 * k2.gathered[i] : k3.gathered[i] == k2.gathered[i],
                       "keep%s rank %d: %lld units gathered at gas 3, %lld at gas 2", reuse0 ? " reuse0" : "", i,
                       (long long)k3.gathered[i], (long long)k2.gathered[i]);
            }
        }
    }
    /* stages 1-2 on two ranks: the step's Adam on the compute stream, each chunk's all-gathers on the comm
       stream after it (R4), the next forward's reads after the gathers (R1); with gradient accumulation and
       clipping; the same weights as with Adam and the gathers one after the other (ZERO_STEP_OVERLAP=0) */
    for (i = 0; i < 4; i++) {
        memset(&a, 0, sizeof a);
        a.stage = 1 + i / 2;
        a.dtype = i % 2 ? ZERO_DTYPE_BF16 : ZERO_DTYPE_FP32;
        a.world = 2;
        a.gas = 1 + i % 2;
        a.clip = 0.5;
        snprintf(a.name, sizeof a.name, "stage %d %s w2 gas%d", a.stage, zero_dtype_name((zero_dtype)a.dtype), a.gas);
        check_job(&a);
        same_with_env(&a, &b, "ZERO_STEP_OVERLAP"); /* (the overlapped step) */
        /* the step's gathers beside the next forward: the same bits as zero_step's full wait (ZERO_GATHER_DEFER=0);
           a program that reads a tensor it never fetches keeps the full wait (R1 holds for its reads too) */
        same_with_env(&a, &b, "ZERO_GATHER_DEFER");
        b = a;
        b.cached = 1;
        snprintf(b.name, sizeof b.name, "%.40s, t0 not fetched", a.name);
        check_job(&b);
        CHECKF(!memcmp(a.w, b.w, sizeof a.w), "%s: a tensor read without a fetch changed the weights", a.name);
        b = a;
        b.flushed = 1;
        snprintf(b.name, sizeof b.name, "%.36s, t0 read after zero_flush", a.name);
        check_job(&b);
        CHECKF(!memcmp(a.w, b.w, sizeof a.w), "%s: zero_flush and a read changed the weights", a.name);
    }
    /* stage 2 with the optimizer offloaded (ZeRO-2 + optimizer offload), 1 and 2 ranks, gas 1 and 2, with
       clipping (the CPU's Adam in zero_step) and without (fp32, bf16: the early CPU step, each unit's Adam in
       the engine's thread once its event says the chunk is on the host): the copies to the host on the copy
       stream (with gas 1 the reduced chunks, with 2 the chunks the CPU adds) and the CPU's reads after them
       (R3, R5, R6); the weights bitwise those with the copies on the comm stream (ZERO_COPY_STREAM=0) */
    for (i = 0; i < 16; i++) {
        memset(&a, 0, sizeof a);
        a.stage = 2;
        a.offload = 1;
        a.dtype = i % 2 ? ZERO_DTYPE_BF16 : ZERO_DTYPE_FP32;
        a.world = 1 + (i / 2) % 2;
        a.clip = (i / 4) % 2 ? 0.5 : 0;
        a.gas = 1 + i / 8;
        snprintf(a.name, sizeof a.name, "stage 2 offload %s w%d gas%d%s", zero_dtype_name((zero_dtype)a.dtype), a.world,
                 a.gas, a.clip > 0 ? " clip" : "");
        check_job(&a);
        if (!getenv("ZERO_COPY_STREAM")) {
            int r;
            b = a;
            snprintf(b.name, sizeof b.name, "%.40s, ZERO_COPY_STREAM=0", a.name);
            setenv("ZERO_COPY_STREAM", "0", 1);
            check_job(&b);
            unsetenv("ZERO_COPY_STREAM");
            for (r = 0; r < a.world; r++)
                CHECKF(!memcmp(a.w[r], b.w[r], sizeof a.w[r]), "%s rank %d: the copy stream changed the weights", a.name, r);
        }
    }
    /* stage 3 on two ranks with ZERO_COLL_WINDOWS=1: the parameter shard and the pool in the backend's window
       memory (the host backend checks that every gather uses the same offsets on both ranks), the streams'
       rules on it as on the engine's own memory, and the weights of the run without */
    for (i = 0; i < 4; i++) {
        int r;
        memset(&a, 0, sizeof a);
        a.persist = i < 2 ? POOL : PERSIST_SOME;
        a.dtype = i % 2 ? ZERO_DTYPE_BF16 : ZERO_DTYPE_FP32;
        a.world = 2;
        a.gas = 1 + i % 2;
        a.reuse0 = i == 1;
        a.clip = 0.5;
        snprintf(a.name, sizeof a.name, "windows %s %s w2 gas%d", a.persist == POOL ? "pool" : "persist<=50",
                 zero_dtype_name((zero_dtype)a.dtype), a.gas);
        check_job(&a);
        b = a;
        snprintf(b.name, sizeof b.name, "%.40s, ZERO_COLL_WINDOWS=1", a.name);
        setenv("ZERO_COLL_WINDOWS", "1", 1);
        windows_note[0] = 0;
        check_job(&b);
        CHECKF(strstr(windows_note, "the parameter shard") && strstr(windows_note, "in window memory"), "%s: the note says '%s'",
               b.name, windows_note);
        if (i == 0) { /* on one rank, nothing: the note says why */
            c = a;
            c.world = 1;
            snprintf(c.name, sizeof c.name, "pool w1, ZERO_COLL_WINDOWS=1");
            windows_note[0] = 0;
            check_job(&c);
            CHECKF(c.M[0].n_win_alloc == 0 && strstr(windows_note, "nothing in window memory: one rank"),
                   "%s: %d window buffers, the note says '%s'", c.name, c.M[0].n_win_alloc, windows_note);
        }
        unsetenv("ZERO_COLL_WINDOWS");
        for (r = 0; r < 2; r++)
            CHECKF(a.M[r].n_win_alloc == 0 && b.M[r].n_win_alloc == 2, "%s rank %d: %d window buffers (%d without)", b.name,
                   r, b.M[r].n_win_alloc, a.M[r].n_win_alloc);
        /* and no groups of collectives with the windows (NCCL's symmetric kernels in a group gave other bytes); the
           persistent spans' reductions are grouped without them */
        for (r = 0; r < 2; r++)
            CHECKF((a.persist == POOL || a.M[r].n_group > 0) && b.M[r].n_group == 0,
                   "%s rank %d: %d groups of collectives (%d without)", b.name, r, b.M[r].n_group, a.M[r].n_group);
        CHECKF(strstr(windows_note, "each collective alone"), "%s: the note says '%s'", b.name, windows_note);
        CHECKF(!memcmp(a.w, b.w, sizeof a.w), "%s: the windows changed the weights", b.name);
    }
    printf("%.2f s\n", zt_now_s() - t0);
    return zt_finish();
}
