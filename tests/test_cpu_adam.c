/* test_cpu_adam.c - zero_offload.h: the CPU thread pool and CPU Adam.

   The scalar path must equal the host backend's adam bit for bit. The SIMD
   paths (whichever this CPU has) use FMA, so they are held to a tolerance:
     master, m, v: |simd - scalar| <= 2^-21 * scale   (4 fp32 ulp of the
                   magnitude of the terms that make the value: for m,
                   b1|m0| + (1-b1)|g|; for v, b2 v0 + (1-b2) g^2; for the
                   parameter |p0| (1 + lr wd) + |update|)
     16-bit param: the rounding of the path's own master, exactly, and within
                   1 ulp of the 16-bit type of the scalar path's param
   and every path against a double-precision reference: 2^-19 * scale (16 ulp).
   The parameter's scale includes the update's sensitivity to m and v (a
   condition number): where L2 decay cancels the gradient, v is tiny and its
   relative error large, and every fp32 implementation differs there.
   Every path gives the same bits whatever the thread count, and whatever the
   kind of store: calls over ZERO_CPU_NT_MIN elements use streaming stores,
   set low here (8192) so that the thread tests and test_streaming run them
   while the small calls of the path matrix keep ordinary stores.
   Master and state stored in bf16 (test_storage): every path's results are
   its own fp32-storage results from the same inputs rounded to nearest even
   bf16, bit for bit, and the tolerances above grow by the bf16 rounding.
   ZERO_TEST_QUICK=1 (sanitizer runs) skips the throughput print.

   Run alone: make test T=test_cpu_adam */
#define _GNU_SOURCE /* setenv / unsetenv */
#define ZERO_CPU_NT_MIN 8192
#define ZERO_IMPLEMENTATION
#include "zero.h"
#include "zero_offload.h"
#include "zero_test.h"

#define TOL_SIMD (1.0 / (1 << 21))
#define TOL_REF (1.0 / (1 << 19))

/* ---- a test case: inputs, and one run's outputs ---- */

typedef struct tcase {
    int64_t n; /* elements in the buffers */
    zero_dtype gdt, pdt;
    int has_param;
    zero_adam_seg segs[16];
    int n_segs;
    float beta1, beta2, eps, bc1, bc2, grad_scale;
    int adamw;
    float *master0, *m0, *v0;
    void *grad;
    void *param0;
} tcase;

typedef struct tout {
    float *master, *m, *v;
    void *param;
} tout;

/* Segments: counts from `counts`, each starting a few elements after the last
   (odd gaps), with their own lr and weight decay (every third has none). */
static void tc_init(tcase *c, const int64_t *counts, int ns, zero_dtype gdt, zero_dtype pdt,
                    int has_param, int adamw, int bias_corr) {
    int64_t off = 3, i;
    int k, t = 7;
    memset(c, 0, sizeof *c);
    c->n_segs = ns;
    for (k = 0; k < ns; k++) {
        c->segs[k].offset = off;
        c->segs[k].count = counts[k];
        c->segs[k].lr = (float)zt_rand_range(1e-4, 3e-3);
        c->segs[k].weight_decay = (k % 3 == 2) ? 0.0f : (float)zt_rand_range(0.001, 0.1);
        off += counts[k] + 1 + 2 * (k % 2); /* gaps of 1 or 3 */
    }
    c->n = off;
    c->gdt = gdt;
    c->pdt = pdt;
    c->has_param = has_param;
    c->beta1 = 0.9f;
    c->beta2 = 0.999f;
    c->eps = 1e-8f;
    c->adamw = adamw;
    c->grad_scale = (float)zt_rand_range(0.25, 1.0);
    if (bias_corr) {
        c->bc1 = 1.0f - powf(c->beta1, (float)t);
        c->bc2 = 1.0f / sqrtf(1.0f - powf(c->beta2, (float)t));
    } else {
        c->bc1 = c->bc2 = 1.0f;
    }
    c->master0 = (float *)malloc(sizeof(float) * (size_t)c->n);
    c->m0 = (float *)malloc(sizeof(float) * (size_t)c->n);
    c->v0 = (float *)malloc(sizeof(float) * (size_t)c->n);
    c->grad = malloc(zero_dtype_size(gdt) * (size_t)c->n);
    c->param0 = malloc(4 * (size_t)c->n);
    for (i = 0; i < c->n; i++) {
        double g = zt_rand_range(-1, 1) * (zt_rand01() < 0.1 ? 100 : 1);
        c->master0[i] = (float)zt_rand_range(-1, 1);
        c->m0[i] = (float)(zt_rand_range(-0.1, 0.1));
        c->v0[i] = (float)(zt_rand01() < 0.05 ? 0.0 : zt_rand_range(0, 0.01));
        if (i % 97 == 5) g = 0;
        zt_store(c->grad, gdt, i, (float)g);
        zt_store(c->param0, has_param ? pdt : ZERO_DTYPE_FP32, i, -7.0f); /* never a result */
    }
}

static void tc_free(tcase *c) {
    free(c->master0), free(c->m0), free(c->v0), free(c->grad), free(c->param0);
}

static void out_alloc(const tcase *c, tout *o) {
    o->master = (float *)malloc(sizeof(float) * (size_t)c->n);
    o->m = (float *)malloc(sizeof(float) * (size_t)c->n);
    o->v = (float *)malloc(sizeof(float) * (size_t)c->n);
    o->param = malloc(4 * (size_t)c->n);
    memcpy(o->master, c->master0, sizeof(float) * (size_t)c->n);
    memcpy(o->m, c->m0, sizeof(float) * (size_t)c->n);
    memcpy(o->v, c->v0, sizeof(float) * (size_t)c->n);
    memcpy(o->param, c->param0, 4 * (size_t)c->n);
}

static void out_free(tout *o) { free(o->master), free(o->m), free(o->v), free(o->param); }

static zero_adam_args tc_args(const tcase *c, tout *o) {
    zero_adam_args a;
    memset(&a, 0, sizeof a);
    a.master = o->master, a.m = o->m, a.v = o->v;
    a.grad = c->grad, a.grad_dtype = c->gdt;
    a.param = c->has_param ? o->param : NULL, a.param_dtype = c->pdt;
    a.segs = c->segs, a.n_segs = c->n_segs;
    a.beta1 = c->beta1, a.beta2 = c->beta2, a.eps = c->eps;
    a.bc1 = c->bc1, a.bc2 = c->bc2, a.grad_scale = c->grad_scale, a.adamw = c->adamw;
    return a;
}

static int out_same(const tcase *c, const tout *x, const tout *y) {
    size_t n = (size_t)c->n;
    return !memcmp(x->master, y->master, n * 4) && !memcmp(x->m, y->m, n * 4) &&
           !memcmp(x->v, y->v, n * 4) && !memcmp(x->param, y->param, n * 4);
}

/* ---- the host backend's adam ---- */

typedef struct host_job {
    zero_adam_args *a;
    zero_result res;
} host_job;

static zero_result host_adam_fn(const zero_backend *b, void *arg) {
    host_job *j = (host_job *)arg;
    zero_error err;
    j->res = b->adam(b->ctx, j->a, ZERO_STREAM_COMPUTE, &err);
    if (j->res == ZERO_OK) j->res = b->sync(b->ctx, ZERO_STREAM_COMPUTE, &err);
    return j->res;
}

static zero_result run_host(const tcase *c, tout *o) {
    zero_adam_args a = tc_args(c, o);
    host_job j;
    zero_error err;
    j.a = &a;
    j.res = ZERO_OK;
    if (zero_host_run(1, host_adam_fn, &j, &err) != ZERO_OK) return err.code;
    return j.res;
}

static zero_result run_cpu(const tcase *c, tout *o, zero_simd_level level, zero_cpu_pool *pool) {
    zero_adam_args a = tc_args(c, o);
    zero_error err;
    zero_result r = zero_cpu_adam_at(&a, level, pool, &err);
    if (r != ZERO_OK) fprintf(stderr, "zero_cpu_adam_at: %s\n", err.msg);
    return r;
}

/* ---- comparisons ---- */

static int seg_of(const tcase *c, int64_t i) {
    int k;
    for (k = 0; k < c->n_segs; k++)
        if (i >= c->segs[k].offset && i < c->segs[k].offset + c->segs[k].count) return k;
    return -1;
}

/* Checks path output x against the scalar output s (tolerance TOL_SIMD; s NULL:
   skipped) and the double reference (TOL_REF); untouched elements stay as
   they were. x and s ran with master stored in mdt and m and v in sdt
   (widened into the tout): a bf16 array's values carry its rounding too,
   half a bf16 ulp (2^-8 of the value) from the reference and one (2^-7)
   from the scalar path's. A 16-bit parameter copy is the rounding of the
   path's fp32 master: with a bf16 master only a bf16 copy (the master's own
   bits) and an fp32 one (which rounds to them) show it here. Returns the
   number of bad elements (CHECKs only once per call). */
static int compare_stored(const tcase *c, const tout *x, const tout *s, const char *what, zero_dtype mdt,
                          zero_dtype sdt) {
    const double rm = mdt == ZERO_DTYPE_BF16 ? 1.0 / 256 : 0, rs = sdt == ZERO_DTYPE_BF16 ? 1.0 / 256 : 0;
    int64_t i;
    int bad = 0, bad_ref = 0, bad_param = 0, bad_gap = 0;
    size_t ps = c->has_param ? zero_dtype_size(c->pdt) : 4;
    for (i = 0; i < c->n; i++) {
        int k = seg_of(c, i);
        if (k < 0) {
            if (x->master[i] != c->master0[i] || x->m[i] != c->m0[i] || x->v[i] != c->v0[i] ||
                memcmp((char *)x->param + i * ps, (char *)c->param0 + i * ps, ps) != 0)
                bad_gap++;
            continue;
        }
        {
            const zero_adam_seg *sg = &c->segs[k];
            double b1 = c->beta1, b2 = c->beta2, wd = sg->weight_decay, lr = sg->lr;
            double p0 = c->master0[i], g0 = (double)zt_load(c->grad, c->gdt, i) * c->grad_scale;
            double g = g0, gmag = fabs(g0), m, v, d, p, upd;
            double sm, sv, sp;
            if (!c->adamw && wd != 0) g += wd * p0, gmag += fabs(wd * p0);
            m = b1 * c->m0[i] + (1 - b1) * g;
            v = b2 * c->v0[i] + (1 - b2) * g * g;
            d = sqrt(v) * c->bc2 + c->eps;
            p = p0;
            if (c->adamw && wd != 0) p = p - lr * wd * p;
            upd = (lr / c->bc1) * (m / d);
            p = p - upd;
            sm = b1 * fabs(c->m0[i]) + (1 - b1) * gmag;
            sv = b2 * c->v0[i] + (1 - b2) * gmag * gmag;
            /* the update's own error grows with m's: bound it through sm */
            sp = fabs(p0) * (1 + lr * wd) + fabs(upd) + (lr / c->bc1) * sm / d;
            /* and with v's (through d = sqrt(v) bc2 + eps): ill-conditioned where the L2
               term cancels the gradient and v is tiny */
            sp += v > 0 ? fabs(upd) * c->bc2 * sv / (2 * sqrt(v) * d) : 1e30;
            if (!(fabs(x->master[i] - p) <= TOL_REF * sp + rm * fabs(p)) ||
                !(fabs(x->m[i] - m) <= TOL_REF * sm + rs * fabs(m)) || !(fabs(x->v[i] - v) <= TOL_REF * sv + rs * v)) {
                if (bad_ref++ < 3)
                    fprintf(stderr, "%s: ref mismatch at %lld: master %.9g/%.9g m %.9g/%.9g v %.9g/%.9g\n",
                            what, (long long)i, x->master[i], p, x->m[i], m, x->v[i], v);
            }
            if (s && (!(fabs(x->master[i] - s->master[i]) <= TOL_SIMD * sp + 2 * rm * fabs(s->master[i])) ||
                      !(fabs(x->m[i] - s->m[i]) <= TOL_SIMD * sm + 2 * rs * fabs(s->m[i])) ||
                      !(fabs(x->v[i] - s->v[i]) <= TOL_SIMD * sv + 2 * rs * s->v[i]))) {
                if (bad++ < 3)
                    fprintf(stderr, "%s: scalar mismatch at %lld: master %.9g/%.9g m %.9g/%.9g v %.9g/%.9g\n",
                            what, (long long)i, x->master[i], s->master[i], x->m[i], s->m[i], x->v[i],
                            s->v[i]);
            }
            if (c->has_param) {
                if (c->pdt == ZERO_DTYPE_FP32) {
                    float q;
                    memcpy(&q, (char *)x->param + i * 4, 4);
                    if (mdt == ZERO_DTYPE_BF16 ? zero_f32_to_bf16(q) != zero_f32_to_bf16(x->master[i])
                                               : memcmp(&q, &x->master[i], 4) != 0)
                        bad_param++;
                } else if (mdt != ZERO_DTYPE_BF16 || c->pdt == ZERO_DTYPE_BF16) {
                    uint16_t q = ((const uint16_t *)x->param)[i];
                    uint16_t want = c->pdt == ZERO_DTYPE_FP16 ? zero_f32_to_f16(x->master[i])
                                                              : zero_f32_to_bf16(x->master[i]);
                    /* exactly this path's master, rounded. Against the scalar path only through
                       the master's tolerance above: where that allows more than an fp16 ulp
                       (ill-conditioned elements), a one-ulp check of the params failed at random */
                    if (q != want) {
                        if (bad_param++ < 3)
                            fprintf(stderr, "%s: param at %lld: %04x, want %04x (master %.9g -> %.9g)\n",
                                    what, (long long)i, q, want, x->master[i], zt_round(c->pdt, x->master[i]));
                    }
                }
            } else if (memcmp((char *)x->param + i * ps, (char *)c->param0 + i * ps, ps) != 0) {
                bad_param++;
            }
        }
    }
    CHECKF(bad == 0, "%s: %d elements beyond the SIMD tolerance of the scalar path", what, bad);
    CHECKF(bad_ref == 0, "%s: %d elements beyond the tolerance of the double reference", what, bad_ref);
    CHECKF(bad_param == 0, "%s: %d parameters wrong", what, bad_param);
    CHECKF(bad_gap == 0, "%s: %d elements outside the segments changed", what, bad_gap);
    return bad + bad_ref + bad_param + bad_gap;
}

static int compare(const tcase *c, const tout *x, const tout *s, const char *what) {
    return compare_stored(c, x, s, what, ZERO_DTYPE_FP32, ZERO_DTYPE_FP32);
}

/* ---- the matrix ---- */

static const zero_dtype dts[3] = {ZERO_DTYPE_FP32, ZERO_DTYPE_FP16, ZERO_DTYPE_BF16};

static void test_paths(const zero_simd_level *levels, int n_levels) {
    static const int64_t counts[] = {0, 1, 7, 15, 16, 17, 1003, 64, 33};
    int gi, pi, adamw, bc, li;
    for (gi = 0; gi < 3; gi++)
        for (pi = -1; pi < 4; pi++) /* -1: no param; 3: fp32 param aliasing master */
            for (adamw = 0; adamw < 2; adamw++)
                for (bc = 0; bc < 2; bc++) {
                    tcase c;
                    tout host, sc;
                    char what[128];
                    zero_dtype pdt = pi < 0 || pi == 3 ? ZERO_DTYPE_FP32 : dts[pi];
                    tc_init(&c, counts, (int)(sizeof counts / sizeof counts[0]), dts[gi], pdt, pi >= 0,
                            adamw, bc);
                    out_alloc(&c, &host);
                    out_alloc(&c, &sc);
                    snprintf(what, sizeof what, "grad %s, param %s, adamw %d, bias_correction %d",
                             zero_dtype_name(dts[gi]),
                             pi < 0 ? "none" : pi == 3 ? "fp32=master" : zero_dtype_name(pdt), adamw, bc);
                    if (pi == 3) { /* the param is the master itself: nothing to write */
                        zero_adam_args a = tc_args(&c, &sc);
                        a.param = a.master;
                        CHECK(zero_cpu_adam_at(&a, ZERO_SIMD_SCALAR, NULL, NULL) == ZERO_OK);
                        a = tc_args(&c, &host);
                        a.param = a.master;
                        {
                            host_job j;
                            j.a = &a;
                            CHECK(zero_host_run(1, host_adam_fn, &j, NULL) == ZERO_OK);
                        }
                        CHECKF(out_same(&c, &sc, &host), "%s: scalar != host", what);
                        for (li = 0; li < n_levels; li++) {
                            tout o;
                            out_alloc(&c, &o);
                            a = tc_args(&c, &o);
                            a.param = a.master;
                            CHECK(zero_cpu_adam_at(&a, levels[li], NULL, NULL) == ZERO_OK);
                            CHECKF(!memcmp(o.param, c.param0, 4 * (size_t)c.n), "%s: param written", what);
                            out_free(&o);
                        }
                    } else {
                        CHECK(run_host(&c, &host) == ZERO_OK);
                        CHECK(run_cpu(&c, &sc, ZERO_SIMD_SCALAR, NULL) == ZERO_OK);
                        CHECKF(out_same(&c, &sc, &host), "%s: scalar != host backend (bitwise)", what);
                        compare(&c, &sc, NULL, what);
                        for (li = 0; li < n_levels; li++) {
                            tout o;
                            char w2[160];
                            snprintf(w2, sizeof w2, "%s %s", zero_simd_level_name(levels[li]), what);
                            out_alloc(&c, &o);
                            CHECK(run_cpu(&c, &o, levels[li], NULL) == ZERO_OK);
                            compare(&c, &o, &sc, w2);
                            out_free(&o);
                        }
                    }
                    out_free(&host);
                    out_free(&sc);
                    tc_free(&c);
                }
}

/* Thread counts 1, 2, 3, 8: the same bits as no pool, on every path. */
static void test_threads(const zero_simd_level *levels, int n_levels) {
    static const int64_t counts[] = {70001, 5, 40000, 17, 99999};
    static const int nt[] = {1, 2, 3, 8};
    int li, ti;
    tcase c;
    tc_init(&c, counts, 5, ZERO_DTYPE_BF16, ZERO_DTYPE_FP16, 1, 1, 1);
    for (li = -1; li < n_levels; li++) {
        zero_simd_level lv = li < 0 ? ZERO_SIMD_SCALAR : levels[li];
        tout ref;
        out_alloc(&c, &ref);
        CHECK(run_cpu(&c, &ref, lv, NULL) == ZERO_OK);
        for (ti = 0; ti < 4; ti++) {
            zero_cpu_pool *pool = NULL;
            tout o;
            CHECK(zero_cpu_pool_create(&pool, nt[ti], NULL, NULL) == ZERO_OK);
            CHECK_EQ_INT(zero_cpu_pool_threads(pool), nt[ti]);
            out_alloc(&c, &o);
            CHECK(run_cpu(&c, &o, lv, pool) == ZERO_OK);
            CHECKF(out_same(&c, &o, &ref), "%s, %d threads: differs from 1 thread", zero_simd_level_name(lv),
                   nt[ti]);
            out_free(&o);
            zero_cpu_pool_destroy(pool);
        }
        out_free(&ref);
    }
    tc_free(&c);
}

/* Streaming stores: one call over all segments (>= ZERO_CPU_NT_MIN elements)
   against one call per segment (each below it: ordinary stores), bit for bit,
   and against the scalar path's tolerance; with master, m, v and the
   parameter copy at different alignments (each buffer starts `sh` elements
   past a 64-byte boundary), so that the head before master's first aligned
   line, buffers that stream beside ones that cannot, and odd tails all run. */
static void out_alloc_at(const tcase *c, tout *o, void *raw[4], const int sh[4]) {
    size_t ps = c->has_param ? zero_dtype_size(c->pdt) : 4, bytes = ((size_t)c->n + 16) * 4;
    int j;
    for (j = 0; j < 4; j++) raw[j] = aligned_alloc(64, (bytes + 63) / 64 * 64);
    o->master = (float *)raw[0] + sh[0];
    o->m = (float *)raw[1] + sh[1];
    o->v = (float *)raw[2] + sh[2];
    o->param = (char *)raw[3] + (size_t)sh[3] * ps;
    memcpy(o->master, c->master0, sizeof(float) * (size_t)c->n);
    memcpy(o->m, c->m0, sizeof(float) * (size_t)c->n);
    memcpy(o->v, c->v0, sizeof(float) * (size_t)c->n);
    memcpy(o->param, c->param0, 4 * (size_t)c->n);
}

static void test_streaming(const zero_simd_level *levels, int n_levels) {
    static const int64_t counts[] = {4097, 31, 5003, 1, 8191, 4103, 17, 2000};
    /* master, m, v, param shifts: all aligned; all alike, unaligned; m, v and the
       param each off master's alignment; v off, the param streaming only at 16 bytes */
    static const int shifts[4][4] = {{0, 0, 0, 0}, {3, 3, 3, 3}, {0, 1, 8, 2}, {5, 5, 13, 13}};
    static const zero_dtype gd[4] = {ZERO_DTYPE_FP16, ZERO_DTYPE_BF16, ZERO_DTYPE_FP32, ZERO_DTYPE_FP32};
    static const zero_dtype pd[4] = {ZERO_DTYPE_FP16, ZERO_DTYPE_BF16, ZERO_DTYPE_FP32, ZERO_DTYPE_FP32};
    const int ns = (int)(sizeof counts / sizeof counts[0]);
    int64_t total = 0;
    int di, si, li, k;
    for (k = 0; k < ns; k++) total += counts[k];
    CHECK(total >= ZERO_CPU_NT_MIN);
    for (di = 0; di < 4; di++) {
        tcase c;
        tout sc;
        zero_cpu_pool *pool = NULL;
        tc_init(&c, counts, ns, gd[di], pd[di], di < 3, 1, 1);
        out_alloc(&c, &sc);
        CHECK(run_cpu(&c, &sc, ZERO_SIMD_SCALAR, NULL) == ZERO_OK);
        CHECK(zero_cpu_pool_create(&pool, 3, NULL, NULL) == ZERO_OK);
        for (li = 0; li < n_levels; li++)
            for (si = 0; si < 4; si++) {
                void *raw_nt[4], *raw_one[4];
                tout nt, one;
                zero_adam_args a;
                char what[160];
                snprintf(what, sizeof what, "%s streaming, grad %s, param %s, shifts %d %d %d %d",
                         zero_simd_level_name(levels[li]), zero_dtype_name(gd[di]),
                         di < 3 ? zero_dtype_name(pd[di]) : "none", shifts[si][0], shifts[si][1], shifts[si][2],
                         shifts[si][3]);
                out_alloc_at(&c, &nt, raw_nt, shifts[si]);
                out_alloc_at(&c, &one, raw_one, shifts[si]);
                a = tc_args(&c, &nt);
                CHECK(zero_cpu_adam_at(&a, levels[li], si % 2 ? pool : NULL, NULL) == ZERO_OK);
                for (k = 0; k < ns; k++) { /* each below ZERO_CPU_NT_MIN: ordinary stores */
                    CHECK(c.segs[k].count < ZERO_CPU_NT_MIN);
                    a = tc_args(&c, &one);
                    a.segs = &c.segs[k], a.n_segs = 1;
                    CHECK(zero_cpu_adam_at(&a, levels[li], NULL, NULL) == ZERO_OK);
                }
                CHECKF(out_same(&c, &nt, &one), "%s: differs from ordinary stores", what);
                compare(&c, &nt, &sc, what);
                for (k = 0; k < 4; k++) free(raw_nt[k]), free(raw_one[k]);
            }
        zero_cpu_pool_destroy(pool);
        out_free(&sc);
        tc_free(&c);
    }
}

/* ---- bf16 storage of master and state ---- */

/* One run of c's segments with master stored in mdt and m and v in sdt, each
   buffer (master, m, v, the parameter copy) starting sh[j] elements past a
   64-byte boundary, on `level` (-1: the host backend's adam): one call over
   every segment, or one call per segment (per_seg: each below
   ZERO_CPU_NT_MIN, ordinary stores). The results come back widened to fp32
   in o (out_alloc'd), the parameter copy as it was written. */
static zero_result run_stored(const tcase *c, tout *o, zero_dtype mdt, zero_dtype sdt, const int sh[4], int level,
                              zero_cpu_pool *pool, int per_seg) {
    const size_t msz = mdt == ZERO_DTYPE_BF16 ? 2 : 4, ssz = sdt == ZERO_DTYPE_BF16 ? 2 : 4;
    const size_t ps = c->has_param ? zero_dtype_size(c->pdt) : 4, bytes = ((size_t)c->n + 32) * 4;
    unsigned char *raw[4], *mas, *mom, *var, *par;
    zero_result res = ZERO_OK;
    int64_t i;
    int j, k;
    for (j = 0; j < 4; j++) raw[j] = (unsigned char *)aligned_alloc(64, (bytes + 63) / 64 * 64);
    mas = raw[0] + (size_t)sh[0] * msz, mom = raw[1] + (size_t)sh[1] * ssz, var = raw[2] + (size_t)sh[2] * ssz;
    par = raw[3] + (size_t)sh[3] * ps;
    for (i = 0; i < c->n; i++) {
        zt_store(mas, mdt, i, c->master0[i]);
        zt_store(mom, sdt, i, c->m0[i]);
        zt_store(var, sdt, i, c->v0[i]);
    }
    memcpy(par, c->param0, ps * (size_t)c->n);
    for (k = 0; k < (per_seg ? c->n_segs : 1) && res == ZERO_OK; k++) {
        zero_adam_args a = tc_args(c, o);
        zero_error err;
        a.master = mas, a.m = mom, a.v = var, a.param = c->has_param ? par : NULL;
        a.master_dtype = mdt, a.state_dtype = sdt;
        if (per_seg) a.segs = &c->segs[k], a.n_segs = 1;
        if (level < 0) {
            host_job hj;
            hj.a = &a;
            hj.res = ZERO_OK;
            res = zero_host_run(1, host_adam_fn, &hj, &err) != ZERO_OK ? err.code : hj.res;
        } else {
            res = zero_cpu_adam_at(&a, (zero_simd_level)level, pool, &err);
            if (res != ZERO_OK) fprintf(stderr, "zero_cpu_adam_at: %s\n", err.msg);
        }
    }
    for (i = 0; i < c->n; i++) {
        o->master[i] = zt_load(mas, mdt, i);
        o->m[i] = zt_load(mom, sdt, i);
        o->v[i] = zt_load(var, sdt, i);
    }
    memcpy(o->param, par, ps * (size_t)c->n);
    for (j = 0; j < 4; j++) free(raw[j]);
    return res;
}

/* Elements where run x (master in mdt, m and v in sdt) is not run f (fp32
   storage, the same path and inputs) rounded to that storage: each bf16
   array f's nearest even bf16, each fp32 array and the parameter copy f's
   bits. */
static int64_t stored_rounded(const tcase *c, const tout *x, const tout *f, zero_dtype mdt, zero_dtype sdt) {
    const size_t ps = c->has_param ? zero_dtype_size(c->pdt) : 4;
    int64_t i, bad = 0;
    for (i = 0; i < c->n; i++) {
        float wm = zt_round(mdt, f->master[i]), wa = zt_round(sdt, f->m[i]), wv = zt_round(sdt, f->v[i]);
        bad += memcmp(&x->master[i], &wm, 4) != 0 || memcmp(&x->m[i], &wa, 4) != 0 || memcmp(&x->v[i], &wv, 4) != 0 ||
               memcmp((const char *)x->param + i * ps, (const char *)f->param + i * ps, ps) != 0;
    }
    return bad;
}

/* master and state in bf16 (both, or one alone) on every path: the scalar
   path bitwise the host backend's adam; each path's results bitwise its own
   run with fp32 storage from the same inputs (bf16 values), rounded
   (stored_rounded); one call over all segments (streaming stores) bitwise one
   call per segment (ordinary stores); each path against the double
   reference and the SIMD paths against the scalar one, the bf16 rounding
   added to the tolerances (compare_stored). The buffers start at element
   shifts from a 64-byte boundary that align a bf16 array to AVX-512's 32
   bytes, to AVX2's 16 only, or to neither, and the segments have odd
   lengths, so heads, tails and buffers that cannot stream beside ones that
   do all run. */
static void test_storage(const zero_simd_level *levels, int n_levels) {
    static const int64_t counts[] = {4097, 31, 5003, 1, 8191, 7, 15, 16, 17, 2000};
    static const int shifts[4][4] = {{0, 0, 0, 0}, {3, 3, 3, 3}, {16, 0, 8, 2}, {5, 21, 13, 13}};
    static const zero_dtype st[3][2] = {{ZERO_DTYPE_BF16, ZERO_DTYPE_BF16},
                                        {ZERO_DTYPE_BF16, ZERO_DTYPE_FP32},
                                        {ZERO_DTYPE_FP32, ZERO_DTYPE_BF16}};
    static const zero_dtype gd[4] = {ZERO_DTYPE_FP16, ZERO_DTYPE_BF16, ZERO_DTYPE_FP32, ZERO_DTYPE_FP32};
    static const zero_dtype pd[4] = {ZERO_DTYPE_FP16, ZERO_DTYPE_BF16, ZERO_DTYPE_FP32, ZERO_DTYPE_FP32};
    const int ns = (int)(sizeof counts / sizeof counts[0]);
    const int none[4] = {0, 0, 0, 0};
    int64_t total = 0, i;
    int si, di, li, k;
    zero_cpu_pool *pool = NULL;
    for (k = 0; k < ns; k++) total += counts[k];
    CHECK(total >= ZERO_CPU_NT_MIN);
    CHECK(zero_cpu_pool_create(&pool, 3, NULL, NULL) == ZERO_OK);
    for (si = 0; si < 3; si++)
        for (di = 0; di < 4; di++) {
            const zero_dtype mdt = st[si][0], sdt = st[si][1];
            tcase c;
            tout host, sc, sc32;
            char what[192];
            tc_init(&c, counts, ns, gd[di], pd[di], di < 3, di % 2, 1);
            for (i = 0; i < c.n; i++) { /* inputs a bf16 array holds exactly */
                c.master0[i] = zt_round(ZERO_DTYPE_BF16, c.master0[i]);
                c.m0[i] = zt_round(ZERO_DTYPE_BF16, c.m0[i]);
                c.v0[i] = zt_round(ZERO_DTYPE_BF16, c.v0[i]);
            }
            snprintf(what, sizeof what, "master %s, state %s, grad %s, param %s, adamw %d", zero_dtype_name(mdt),
                     zero_dtype_name(sdt), zero_dtype_name(gd[di]), di < 3 ? zero_dtype_name(pd[di]) : "none", di % 2);
            out_alloc(&c, &host), out_alloc(&c, &sc), out_alloc(&c, &sc32);
            CHECK(run_stored(&c, &host, mdt, sdt, none, -1, NULL, 0) == ZERO_OK);
            CHECK(run_stored(&c, &sc, mdt, sdt, none, ZERO_SIMD_SCALAR, NULL, 0) == ZERO_OK);
            CHECK(run_cpu(&c, &sc32, ZERO_SIMD_SCALAR, NULL) == ZERO_OK);
            CHECKF(out_same(&c, &sc, &host), "scalar %s: differs from the host backend", what);
            CHECKF(stored_rounded(&c, &sc, &sc32, mdt, sdt) == 0, "scalar %s: %lld elements not the fp32 run rounded",
                   what, (long long)stored_rounded(&c, &sc, &sc32, mdt, sdt));
            compare_stored(&c, &sc, NULL, what, mdt, sdt);
            for (li = 0; li < n_levels; li++) {
                tout f32;
                int sh;
                out_alloc(&c, &f32);
                CHECK(run_cpu(&c, &f32, levels[li], NULL) == ZERO_OK);
                for (sh = 0; sh < 4; sh++) {
                    tout nt, one;
                    char w2[256];
                    int64_t bad;
                    snprintf(w2, sizeof w2, "%s %s, shifts %d %d %d %d", zero_simd_level_name(levels[li]), what,
                             shifts[sh][0], shifts[sh][1], shifts[sh][2], shifts[sh][3]);
                    out_alloc(&c, &nt), out_alloc(&c, &one);
                    CHECK(run_stored(&c, &nt, mdt, sdt, shifts[sh], levels[li], sh % 2 ? pool : NULL, 0) == ZERO_OK);
                    CHECK(run_stored(&c, &one, mdt, sdt, shifts[sh], levels[li], NULL, 1) == ZERO_OK);
                    CHECKF(out_same(&c, &nt, &one), "%s: streaming stores differ from ordinary ones", w2);
                    bad = stored_rounded(&c, &nt, &f32, mdt, sdt);
                    CHECKF(bad == 0, "%s: %lld elements not the path's fp32 run rounded", w2, (long long)bad);
                    compare_stored(&c, &nt, &sc, w2, mdt, sdt);
                    out_free(&nt), out_free(&one);
                }
                out_free(&f32);
            }
            out_free(&host), out_free(&sc), out_free(&sc32);
            tc_free(&c);
        }
    zero_cpu_pool_destroy(pool);
}

/* ---- the pool on its own ---- */

typedef struct pool_job {
    unsigned char *hits;
    int threads;
    int bad;
    pthread_mutex_t mu;
} pool_job;

static void pool_task(void *arg, int64_t b, int64_t e, int thread) {
    pool_job *j = (pool_job *)arg;
    int64_t i;
    if (b % 64 != 0 || thread < 0 || thread >= j->threads || b >= e) {
        pthread_mutex_lock(&j->mu);
        j->bad++;
        pthread_mutex_unlock(&j->mu);
    }
    for (i = b; i < e; i++) j->hits[i]++; /* pieces do not overlap: no race */
}

static void test_pool(void) {
    static const int nt[] = {1, 2, 3, 8};
    static const int64_t ns[] = {0, 1, 63, 64, 65, 1000, 100003};
    static const int64_t grains[] = {0, 1, 64, 100, 4096};
    int ti, ni, gi, rep;
    zero_error err;
    for (ti = 0; ti < 4; ti++) {
        zero_cpu_pool *pool;
        CHECK(zero_cpu_pool_create(&pool, nt[ti], NULL, &err) == ZERO_OK);
        for (ni = 0; ni < 7; ni++)
            for (gi = 0; gi < 5; gi++)
                for (rep = 0; rep < 3; rep++) {
                    pool_job j;
                    int64_t i, wrong = 0;
                    j.hits = (unsigned char *)calloc((size_t)ns[ni] + 1, 1);
                    j.threads = nt[ti];
                    j.bad = 0;
                    pthread_mutex_init(&j.mu, NULL);
                    CHECK(zero_cpu_pool_run(pool, pool_task, &j, ns[ni], grains[gi], &err) == ZERO_OK);
                    for (i = 0; i < ns[ni]; i++) wrong += j.hits[i] != 1;
                    CHECKF(wrong == 0 && j.bad == 0, "%d threads, n %lld, grain %lld: %lld elements not run once, "
                           "%d bad pieces", nt[ti], (long long)ns[ni], (long long)grains[gi], (long long)wrong, j.bad);
                    pthread_mutex_destroy(&j.mu);
                    free(j.hits);
                }
        zero_cpu_pool_destroy(pool);
    }
    { /* no pool: the caller does it all */
        pool_job j;
        j.hits = (unsigned char *)calloc(1000, 1);
        j.threads = 1;
        j.bad = 0;
        pthread_mutex_init(&j.mu, NULL);
        CHECK(zero_cpu_pool_run(NULL, pool_task, &j, 1000, 128, NULL) == ZERO_OK);
        CHECK(j.hits[0] == 1 && j.hits[999] == 1 && j.bad == 0);
        pthread_mutex_destroy(&j.mu);
        free(j.hits);
    }
    CHECK_EQ_INT(zero_cpu_pool_threads(NULL), 1);
    CHECK(zero_cpu_pool_create(NULL, 2, NULL, &err) == ZERO_ERR_INVALID_ARG);
    CHECK(zero_cpu_pool_run(NULL, NULL, NULL, 10, 64, &err) == ZERO_ERR_INVALID_ARG);
    CHECK(zero_cpu_pool_run(NULL, pool_task, NULL, -1, 64, &err) == ZERO_ERR_INVALID_ARG);
    zero_cpu_pool_destroy(NULL);
    { /* threads <= 0: ZERO_CPU_THREADS */
        zero_cpu_pool *pool = NULL;
        setenv("ZERO_CPU_THREADS", "3", 1);
        CHECK(zero_cpu_pool_create(&pool, 0, NULL, &err) == ZERO_OK);
        CHECK_EQ_INT(zero_cpu_pool_threads(pool), 3);
        zero_cpu_pool_destroy(pool);
        unsetenv("ZERO_CPU_THREADS");
    }
}

/* ---- errors, ZERO_NO_SIMD ---- */

static void test_errors(void) {
    static const int64_t counts[] = {100};
    tcase c;
    tout o;
    zero_adam_args a;
    zero_error err;
    zero_adam_seg segs[2];
    zero_cpu_features f = zero_cpu_detect();
    tc_init(&c, counts, 1, ZERO_DTYPE_FP16, ZERO_DTYPE_BF16, 1, 0, 1);
    out_alloc(&c, &o);
    CHECK(zero_cpu_adam(NULL, NULL, &err) == ZERO_ERR_INVALID_ARG && err.item == ZERO_MSG_NULL_ARG);
    CHECK(zero_cpu_adam_at(NULL, ZERO_SIMD_SCALAR, NULL, &err) == ZERO_ERR_INVALID_ARG);
    a = tc_args(&c, &o);
    CHECK(zero_cpu_adam_at(&a, ZERO_SIMD_COUNT, NULL, &err) == ZERO_ERR_INVALID_ARG);
    CHECK(zero_cpu_adam_at(&a, (zero_simd_level)-1, NULL, &err) == ZERO_ERR_INVALID_ARG);
    { /* a level this CPU lacks: UNSUPPORTED (nothing to try where it has them all) */
        int have2 = f.avx2 && f.fma && f.f16c, have512 = have2 && f.avx512f && f.avx512bw && f.avx512vl;
#if !defined(__x86_64__) || !(defined(__GNUC__) || defined(__clang__))
        have2 = have512 = 0;
#endif
        CHECK(zero_cpu_adam_at(&a, ZERO_SIMD_AVX2, NULL, &err) == (have2 ? ZERO_OK : ZERO_ERR_UNSUPPORTED));
        CHECK(zero_cpu_adam_at(&a, ZERO_SIMD_AVX512, NULL, &err) ==
              (have512 ? ZERO_OK : ZERO_ERR_UNSUPPORTED));
        if (!have512) CHECK_STR_CONTAINS(err.msg, "avx512");
    }
    a = tc_args(&c, &o), a.segs = NULL;
    CHECK(zero_cpu_adam(&a, NULL, &err) == ZERO_ERR_INVALID_ARG && err.item == ZERO_MSG_NULL_ARG);
    a = tc_args(&c, &o), a.n_segs = -1;
    CHECK(zero_cpu_adam(&a, NULL, &err) == ZERO_ERR_INVALID_ARG);
    a = tc_args(&c, &o), a.master = NULL;
    CHECK(zero_cpu_adam(&a, NULL, &err) == ZERO_ERR_INVALID_ARG && err.item == ZERO_MSG_NULL_ARG);
    a = tc_args(&c, &o), a.m = NULL;
    CHECK(zero_cpu_adam(&a, NULL, &err) == ZERO_ERR_INVALID_ARG);
    a = tc_args(&c, &o), a.v = NULL;
    CHECK(zero_cpu_adam(&a, NULL, &err) == ZERO_ERR_INVALID_ARG);
    a = tc_args(&c, &o), a.grad = NULL;
    CHECK(zero_cpu_adam(&a, NULL, &err) == ZERO_ERR_INVALID_ARG);
    a = tc_args(&c, &o), a.grad_dtype = ZERO_DTYPE_COUNT;
    CHECK(zero_cpu_adam(&a, NULL, &err) == ZERO_ERR_INVALID_ARG);
    a = tc_args(&c, &o), a.param_dtype = ZERO_DTYPE_COUNT;
    CHECK(zero_cpu_adam(&a, NULL, &err) == ZERO_ERR_INVALID_ARG);
    a = tc_args(&c, &o), a.master = (float *)((char *)o.master + 1);
    CHECK(zero_cpu_adam(&a, NULL, &err) == ZERO_ERR_INVALID_ARG);
    /* storage: fp32 (or default) and bf16 only; buffers aligned to their storage's elements; Muon's segments
       need fp32 state */
    a = tc_args(&c, &o), a.master_dtype = ZERO_DTYPE_FP16;
    CHECK(zero_cpu_adam(&a, NULL, &err) == ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "master_dtype");
    a = tc_args(&c, &o), a.state_dtype = ZERO_DTYPE_COUNT;
    CHECK(zero_cpu_adam(&a, NULL, &err) == ZERO_ERR_INVALID_ARG);
    a = tc_args(&c, &o), a.m = (char *)o.m + 2; /* fp32 state: 4 bytes */
    CHECK(zero_cpu_adam(&a, NULL, &err) == ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "aligned");
    a = tc_args(&c, &o), a.master_dtype = ZERO_DTYPE_BF16, a.master = (char *)o.master + 1;
    CHECK(zero_cpu_adam(&a, NULL, &err) == ZERO_ERR_INVALID_ARG);
    a = tc_args(&c, &o), a.state_dtype = ZERO_DTYPE_BF16, a.v = (char *)o.v + 3;
    CHECK(zero_cpu_adam(&a, NULL, &err) == ZERO_ERR_INVALID_ARG);
    a = tc_args(&c, &o), a.master_dtype = a.state_dtype = ZERO_DTYPE_BF16; /* bf16: 2 bytes are aligned */
    a.master = (char *)o.master + 2, a.m = (char *)o.m + 6, a.v = (char *)o.v + 2;
    CHECKF(zero_cpu_adam(&a, NULL, &err) == ZERO_OK, "%s", err.msg);
    segs[0] = c.segs[0], segs[0].muon = 1;
    a = tc_args(&c, &o), a.kind = ZERO_OPTIMIZER_MUON, a.state_dtype = ZERO_DTYPE_BF16, a.segs = segs, a.n_segs = 1;
    CHECK(zero_cpu_adam(&a, NULL, &err) == ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "Muon");
    a.state_dtype = ZERO_DTYPE_FP32, a.master_dtype = ZERO_DTYPE_BF16; /* its master may be bf16 */
    CHECKF(zero_cpu_adam(&a, NULL, &err) == ZERO_OK, "%s", err.msg);
    segs[0].muon = 0;
    segs[0] = c.segs[0], segs[1] = c.segs[0];
    segs[1].count = -1;
    a = tc_args(&c, &o), a.segs = segs, a.n_segs = 2;
    CHECK(zero_cpu_adam(&a, NULL, &err) == ZERO_ERR_INVALID_ARG);
    segs[1].count = 10, segs[1].offset = segs[0].offset + 50; /* overlaps segment 0 */
    CHECK(zero_cpu_adam(&a, NULL, &err) == ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "overlap");
    segs[1].offset = 0, segs[1].count = 3, segs[0].count = 90; /* out of order, apart: fine */
    CHECKF(zero_cpu_adam(&a, NULL, &err) == ZERO_OK, "%s", err.msg);
    /* nothing to do: NULL buffers are fine */
    memset(&a, 0, sizeof a);
    a.grad_dtype = ZERO_DTYPE_FP32;
    CHECK(zero_cpu_adam(&a, NULL, &err) == ZERO_OK);
    a.grad_dtype = ZERO_DTYPE_DEFAULT; /* not a buffer's dtype */
    CHECK(zero_cpu_adam(&a, NULL, &err) == ZERO_ERR_INVALID_ARG);
    CHECKF(memcmp(o.master, c.master0, 4 * (size_t)c.n) != 0, "the earlier OK run changed nothing");
    out_free(&o);
    tc_free(&c);
}

static void test_no_simd(zero_simd_level best) {
    static const int64_t counts[] = {1000, 333};
    tcase c;
    tout sc, def, forced;
    tc_init(&c, counts, 2, ZERO_DTYPE_FP16, ZERO_DTYPE_FP16, 1, 1, 1);
    out_alloc(&c, &sc), out_alloc(&c, &def), out_alloc(&c, &forced);
    CHECK(run_cpu(&c, &sc, ZERO_SIMD_SCALAR, NULL) == ZERO_OK);
    {
        tout best_o;
        zero_adam_args a = tc_args(&c, &def);
        out_alloc(&c, &best_o);
        CHECK(run_cpu(&c, &best_o, best, NULL) == ZERO_OK);
        CHECK(zero_cpu_adam(&a, NULL, NULL) == ZERO_OK);
        CHECKF(out_same(&c, &def, &best_o), "zero_cpu_adam is not the %s path", zero_simd_level_name(best));
        out_free(&best_o);
    }
    setenv("ZERO_NO_SIMD", "1", 1);
    CHECK(zero_cpu_simd_level(NULL) == ZERO_SIMD_SCALAR);
    {
        zero_adam_args a = tc_args(&c, &forced);
        CHECK(zero_cpu_adam(&a, NULL, NULL) == ZERO_OK);
        CHECKF(out_same(&c, &forced, &sc), "ZERO_NO_SIMD=1: zero_cpu_adam is not the scalar path");
    }
    unsetenv("ZERO_NO_SIMD");
    out_free(&sc), out_free(&def), out_free(&forced);
    tc_free(&c);
}

/* ---- throughput (printed, not checked) ---- */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* 2^24 parameters, fp16 gradient and parameter copy, AdamW, on every path
   with 1 and 2 threads, for master and state in fp32, in bf16, and bf16
   master beside fp32 state. Bytes per parameter: the gradient read and the
   parameter written (2 + 2), master, m and v each read and written: 28 with
   fp32 storage, 16 with bf16, 24 with a bf16 master alone. */
static void bench(const zero_simd_level *levels, int n_levels) {
    static const zero_dtype st[3][2] = {{ZERO_DTYPE_FP32, ZERO_DTYPE_FP32},
                                        {ZERO_DTYPE_BF16, ZERO_DTYPE_BF16},
                                        {ZERO_DTYPE_BF16, ZERO_DTYPE_FP32}};
    const int64_t n = (int64_t)1 << 24;
    void *master = malloc(4 * (size_t)n), *m = malloc(4 * (size_t)n), *v = malloc(4 * (size_t)n);
    zero_f16 *grad = (zero_f16 *)malloc(2 * (size_t)n), *param = (zero_f16 *)malloc(2 * (size_t)n);
    zero_adam_seg seg;
    zero_adam_args a;
    int64_t i;
    int si, li, t;
    if (!master || !m || !v || !grad || !param) {
        printf("bench: no memory\n");
        free(master), free(m), free(v), free(grad), free(param);
        return;
    }
    memset(&seg, 0, sizeof seg);
    seg.offset = 0, seg.count = n, seg.lr = 1e-3f, seg.weight_decay = 0.01f;
    memset(&a, 0, sizeof a);
    a.master = master, a.m = m, a.v = v, a.grad = grad, a.grad_dtype = ZERO_DTYPE_FP16;
    a.param = param, a.param_dtype = ZERO_DTYPE_FP16, a.segs = &seg, a.n_segs = 1;
    a.beta1 = 0.9f, a.beta2 = 0.999f, a.eps = 1e-8f, a.bc1 = 0.1f, a.bc2 = 1.0f, a.grad_scale = 1.0f, a.adamw = 1;
    for (si = 0; si < 3; si++) {
        const int bytes = 4 + 2 * ((int)zero_dtype_size(st[si][0]) + 2 * (int)zero_dtype_size(st[si][1]));
        a.master_dtype = st[si][0], a.state_dtype = st[si][1];
        for (i = 0; i < n; i++) {
            zt_store(master, st[si][0], i, (float)(i % 1000) * 1e-3f);
            zt_store(m, st[si][1], i, 0.0f);
            zt_store(v, st[si][1], i, 0.0f);
            grad[i] = zero_f32_to_f16((float)(i % 77) * 1e-2f);
        }
        for (li = -1; li < n_levels; li++) {
            zero_simd_level lv = li < 0 ? ZERO_SIMD_SCALAR : levels[li];
            for (t = 1; t <= 2; t++) {
                zero_cpu_pool *pool = NULL;
                double best = 1e30;
                int rep;
                if (zero_cpu_pool_create(&pool, t, NULL, NULL) != ZERO_OK) continue;
                for (rep = 0; rep < 3; rep++) {
                    double t0 = now_s(), dt;
                    zero_error err;
                    if (zero_cpu_adam_at(&a, lv, pool, &err) != ZERO_OK) printf("bench: %s\n", err.msg);
                    dt = now_s() - t0;
                    if (dt < best) best = dt;
                }
                zero_cpu_pool_destroy(pool);
                printf("bench: 2^24 params, fp16 grad+param, master %s state %s, %-6s %d thread%s: %7.1f M params/s, "
                       "%6.2f GB/s (%d B/param)\n",
                       zero_dtype_name(st[si][0]), zero_dtype_name(st[si][1]), zero_simd_level_name(lv), t,
                       t > 1 ? "s" : " ", n / best * 1e-6, bytes * n / best * 1e-9, bytes);
            }
        }
    }
    free(master), free(m), free(v), free(grad), free(param);
}

int main(void) {
    zero_simd_level levels[2];
    int n_levels = 0;
    zero_cpu_features f = zero_cpu_detect();
    zero_simd_level best;
    const char *quick = getenv("ZERO_TEST_QUICK");
    zt_seed("test_cpu_adam");
    unsetenv("ZERO_NO_SIMD");
    unsetenv("ZERO_CPU_THREADS");
    best = zero_cpu_simd_level(&f);
    if (best >= ZERO_SIMD_AVX2) levels[n_levels++] = ZERO_SIMD_AVX2;
    if (best >= ZERO_SIMD_AVX512) levels[n_levels++] = ZERO_SIMD_AVX512;
    printf("test_cpu_adam: SIMD paths here: scalar%s%s\n", n_levels > 0 ? ", avx2" : "",
           n_levels > 1 ? ", avx512" : "");
    test_pool();
    test_paths(levels, n_levels);
    test_threads(levels, n_levels);
    test_streaming(levels, n_levels);
    test_storage(levels, n_levels);
    test_errors();
    test_no_simd(best);
    if (!(quick && atoi(quick))) bench(levels, n_levels);
    return zt_finish();
}
