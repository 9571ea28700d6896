/* test_host.c - the 16-bit float helpers and the host backend (zero_host_run and every
   zero_backend function), against references computed here in double.

   Run alone: make test T=test_host */
#define _POSIX_C_SOURCE 200809L /* setenv/unsetenv in this test only */
#define ZERO_IMPLEMENTATION
#include "zero.h"
#include "zero_test.h"

#include <pthread.h>
#include <stdarg.h>

#define F64 ((zero_dtype)ZERO__DTYPE_F64)
#define MAXW 8

/* ---- references ---- */

/* d rounded to nearest-even with mant_bits stored mantissa bits, normals down to 2^emin
   (below: fixed spacing, the subnormals), inf past max_finite. Plain double arithmetic:
   every step is exact for the float inputs used here. */
static double ref_round(double d, int mant_bits, int emin, double max_finite) {
    double a = fabs(d), ulp, q, fl, diff, r;
    int e;
    if (d != d || a == 0 || isinf(a)) return d;
    frexp(a, &e);
    e -= 1; /* a in [2^e, 2^(e+1)) */
    if (e < emin) e = emin;
    ulp = ldexp(1.0, e - mant_bits);
    q = a / ulp;
    fl = floor(q);
    diff = q - fl;
    r = diff > 0.5 ? fl + 1 : diff < 0.5 ? fl : (fmod(fl, 2.0) == 0 ? fl : fl + 1);
    r *= ulp;
    if (r > max_finite) r = INFINITY;
    return copysign(r, d);
}
static double ref_f16(double d) { return ref_round(d, 10, -14, 65504.0); }
static double ref_bf16(double d) { return ref_round(d, 7, -126, ldexp(255.0, 120)); }

static double ref_to(zero_dtype dt, double d) {
    switch ((int)dt) {
    case ZERO_DTYPE_FP16: return ref_f16(d);
    case ZERO_DTYPE_BF16: return ref_bf16(d);
    case ZERO_DTYPE_FP32: return (double)(float)d;
    default: return d;
    }
}

/* ---- buffers of any dtype, read and written as double ---- */

static double get(zero_dtype dt, const void *p, size_t i) {
    switch ((int)dt) {
    case ZERO_DTYPE_FP16: return zero_f16_to_f32(((const zero_f16 *)p)[i]);
    case ZERO_DTYPE_BF16: return zero_bf16_to_f32(((const zero_bf16 *)p)[i]);
    case ZERO_DTYPE_FP32: return ((const float *)p)[i];
    default: return ((const double *)p)[i];
    }
}

/* v must be representable in dt */
static void put(zero_dtype dt, void *p, size_t i, double v) {
    switch ((int)dt) {
    case ZERO_DTYPE_FP16: ((zero_f16 *)p)[i] = zero_f32_to_f16((float)v); break;
    case ZERO_DTYPE_BF16: ((zero_bf16 *)p)[i] = zero_f32_to_bf16((float)v); break;
    case ZERO_DTYPE_FP32: ((float *)p)[i] = (float)v; break;
    default: ((double *)p)[i] = v; break;
    }
}

static int same(double a, double b) { return a == b || (a != a && b != b); }

/* ---- 16-bit floats ---- */

static double f16_value(unsigned h) { /* the binary16 definition, in double */
    int e = (int)((h >> 10) & 0x1F), m = (int)(h & 0x3FF);
    double v = e ? ldexp(1.0 + m / 1024.0, e - 15) : ldexp((double)m, -24);
    return (h & 0x8000) ? -v : v;
}

static void test_f16_exhaustive(void) {
    unsigned h;
    long bad_value = 0, bad_trip = 0, bad_nan = 0, bad_tie = 0;
    for (h = 0; h < 65536; h++) {
        float f = zero_f16_to_f32((zero_f16)h);
        unsigned e = (h >> 10) & 0x1F;
        if (e == 0x1F && (h & 0x3FF)) { /* NaN: stays NaN, sign kept, comes back quiet */
            zero_f16 back = zero_f32_to_f16(f);
            if (!isnan(f) || !!signbit(f) != !!(h & 0x8000)) bad_nan++;
            if ((back & 0x7E00) != 0x7E00 || (back & 0x8000) != (h & 0x8000)) bad_nan++;
            continue;
        }
        if (e == 0x1F) {
            if (!isinf(f) || !!signbit(f) != !!(h & 0x8000)) bad_value++;
        } else if ((double)f != f16_value(h) || !!signbit(f) != !!(h & 0x8000)) {
            bad_value++;
        }
        if (zero_f32_to_f16(f) != h) bad_trip++;
        /* the float half-way to the next binary16 up (in magnitude) ties to even */
        if (e != 0x1F) {
            unsigned next = h + 1;
            float mid = (float)((f16_value(h) + (((next >> 10) & 0x1F) == 0x1F
                                                     ? ((h & 0x8000) ? -65536.0 : 65536.0)
                                                     : f16_value(next))) / 2);
            unsigned want = (h & 1) ? next : h;
            if (zero_f32_to_f16(mid) != want) bad_tie++;
        }
    }
    CHECKF(bad_value == 0, "%ld f16 -> f32 values differ from the definition", bad_value);
    CHECKF(bad_trip == 0, "%ld f16 -> f32 -> f16 round trips changed the bits", bad_trip);
    CHECKF(bad_nan == 0, "%ld NaN patterns lost NaN-ness, sign or quietness", bad_nan);
    CHECKF(bad_tie == 0, "%ld half-way values did not round to even", bad_tie);
}

static void test_bf16_exhaustive(void) {
    unsigned h;
    long bad_value = 0, bad_trip = 0, bad_nan = 0, bad_tie = 0;
    for (h = 0; h < 65536; h++) {
        float f = zero_bf16_to_f32((zero_bf16)h);
        uint32_t u;
        unsigned e = (h >> 7) & 0xFF;
        memcpy(&u, &f, sizeof u);
        if (u != (uint32_t)h << 16) bad_value++;
        if (e == 0xFF && (h & 0x7F)) {
            zero_bf16 back = zero_f32_to_bf16(f);
            if (!isnan(f) || (back & 0x7FC0) != 0x7FC0 || (back & 0x8000) != (h & 0x8000))
                bad_nan++;
            continue;
        }
        if (zero_f32_to_bf16(f) != h) bad_trip++;
        if (e != 0xFF) {
            uint32_t mid_bits = ((uint32_t)h << 16) | 0x8000u; /* exactly half-way up */
            float mid;
            unsigned want = (h & 1) ? h + 1 : h;
            memcpy(&mid, &mid_bits, sizeof mid);
            if (zero_f32_to_bf16(mid) != want) bad_tie++;
        }
    }
    CHECKF(bad_value == 0, "%ld bf16 -> f32 values wrong", bad_value);
    CHECKF(bad_trip == 0, "%ld bf16 round trips changed the bits", bad_trip);
    CHECKF(bad_nan == 0, "%ld bf16 NaN patterns lost NaN-ness, sign or quietness", bad_nan);
    CHECKF(bad_tie == 0, "%ld bf16 half-way values did not round to even", bad_tie);
}

/* Random floats: raw bit patterns (every exponent, subnormals, inf, NaN) and values
   spread over the binary16 range, against the double reference. */
static void test_16bit_random(void) {
    long i, n = 1000000, bad16 = 0, bad_bf = 0, bad_bias = 0;
    char first[256] = "";
    for (i = 0; i < n; i++) {
        uint32_t u = (uint32_t)zt_rand_u64(), want_bits;
        float x;
        double got, want;
        if (i & 1) { /* concentrate on the binary16 range, subnormals included */
            double v = zt_rand_range(-1, 1) * ldexp(1.0, (int)zt_rand_int(-27, 17));
            x = (float)v;
            memcpy(&u, &x, sizeof u);
        } else {
            memcpy(&x, &u, sizeof x);
        }
        got = zero_f16_to_f32(zero_f32_to_f16(x));
        want = ref_f16(x);
        if (!same(got, want) || (!isnan(want) && !!signbit(got) != !!signbit(want)) ||
            (isnan(want) && !!signbit(got) != !!signbit(x))) {
            if (!bad16++)
                snprintf(first, sizeof first, "f16 of %.9g (0x%08x): got %.9g want %.9g", x,
                         (unsigned)u, got, want);
        }
        got = zero_bf16_to_f32(zero_f32_to_bf16(x));
        want = ref_bf16(x);
        if (!same(got, want) || (!isnan(want) && !!signbit(got) != !!signbit(want)) ||
            (isnan(want) && !!signbit(got) != !!signbit(x))) {
            if (!bad_bf++)
                snprintf(first, sizeof first, "bf16 of %.9g (0x%08x): got %.9g want %.9g", x,
                         (unsigned)u, got, want);
        }
        if (!isnan(x)) { /* the classic bias trick on the bits */
            want_bits = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
            if (zero_f32_to_bf16(x) != want_bits) bad_bias++;
        }
    }
    CHECKF(bad16 == 0 && bad_bf == 0, "%ld f16 and %ld bf16 of %ld random floats wrong; first: %s",
           bad16, bad_bf, n, first);
    CHECKF(bad_bias == 0, "%ld bf16 conversions differ from the bias trick", bad_bias);
}

static void test_16bit_known(void) {
    CHECK_EQ_INT(zero_f32_to_f16(1.0f), 0x3C00);
    CHECK_EQ_INT(zero_f32_to_f16(-2.0f), 0xC000);
    CHECK_EQ_INT(zero_f32_to_f16(65504.0f), 0x7BFF);
    CHECK_EQ_INT(zero_f32_to_f16(65519.996f), 0x7BFF);
    CHECK_EQ_INT(zero_f32_to_f16(65520.0f), 0x7C00);
    CHECK_EQ_INT(zero_f32_to_f16(-1e9f), 0xFC00);
    CHECK_EQ_INT(zero_f32_to_f16(INFINITY), 0x7C00);
    CHECK_EQ_INT(zero_f32_to_f16(5.9604645e-8f), 0x0001);    /* 2^-24 */
    CHECK_EQ_INT(zero_f32_to_f16(2.9802322e-8f), 0x0000);    /* 2^-25: tie to even 0 */
    CHECK_EQ_INT(zero_f32_to_f16(2.9802326e-8f), 0x0001);    /* just above the tie */
    CHECK_EQ_INT(zero_f32_to_f16(-0.0f), 0x8000);
    CHECK_EQ_INT(zero_f32_to_f16(6.1035156e-5f), 0x0400);    /* 2^-14, smallest normal */
    CHECK_EQ_INT(zero_f32_to_f16(6.0975552e-5f), 0x03FF);    /* largest subnormal */
    CHECK_EQ_INT(zero_f32_to_f16(NAN) & 0x7E00, 0x7E00);
    CHECK_EQ_INT(zero_f32_to_bf16(1.0f), 0x3F80);
    CHECK_EQ_INT(zero_f32_to_bf16(FLT_MAX), 0x7F80);         /* rounds up to inf */
    CHECK_EQ_INT(zero_f32_to_bf16(-NAN) & 0xFFC0, 0xFFC0);
    CHECK_EQ_INT(zero_f32_to_bf16(1.00390625f), 0x3F80);     /* 1 + 2^-8: tie to even */
    CHECK_EQ_INT(zero_f32_to_bf16(1.01171875f), 0x3F82);     /* 1 + 3 * 2^-8: tie up */
    CHECK(zero_bf16_to_f32(0x0001) == ldexpf(1.0f, -133));   /* float subnormal kept */
    CHECK_EQ_INT(zero_dtype_size(ZERO_DTYPE_DEFAULT), 4);
    CHECK_EQ_INT(zero_dtype_size(ZERO_DTYPE_FP32), 4);
    CHECK_EQ_INT(zero_dtype_size(ZERO_DTYPE_FP16), 2);
    CHECK_EQ_INT(zero_dtype_size(ZERO_DTYPE_BF16), 2);
    CHECK_EQ_INT(zero_dtype_size(F64), 8);
    CHECK_EQ_INT(zero_dtype_size((zero_dtype)99), 0);
    CHECK(strcmp(zero_dtype_name(ZERO_DTYPE_FP16), "fp16") == 0);
    CHECK(strcmp(zero_dtype_name(ZERO_DTYPE_BF16), "bf16") == 0);
    CHECK(strcmp(zero_dtype_name(ZERO_DTYPE_FP32), "fp32") == 0);
    CHECK(strcmp(zero_dtype_name(F64), "fp64") == 0);
    CHECK(strcmp(zero_dtype_name((zero_dtype)-1), "unknown dtype") == 0);
}

/* ---- collectives against the reference ---- */

/* Input element i of rank `rank` in configuration cfg: any rank can recompute any
   other's, so every rank checks its result without shared state. Magnitudes spread
   over several binades so the summation order shows. */
static double gen(uint64_t seed, int cfg, int rank, size_t i, zero_dtype dt) {
    uint64_t h = zt_mix64(seed ^ zt_mix64(((uint64_t)cfg << 40) ^ ((uint64_t)rank << 28) ^ i));
    double u = (double)(h >> 11) * (2.0 / 9007199254740992.0) - 1.0;
    int k = (dt == ZERO_DTYPE_FP16 || dt == ZERO_DTYPE_BF16) ? (int)(h & 7) - 4
                                                               : (int)(h % 41) - 20;
    return ref_to(dt, ldexp(u, k));
}

static double eps_of(zero_dtype dt) {
    switch ((int)dt) {
    case ZERO_DTYPE_FP16: return ldexp(1.0, -10);
    case ZERO_DTYPE_BF16: return ldexp(1.0, -7);
    case ZERO_DTYPE_FP32: return ldexp(1.0, -23);
    default: return ldexp(1.0, -52);
    }
}

/* The documented rule: rank order, each partial sum rounded to the dtype (16-bit types
   add in float first); max/min exact. */
static double ref_reduce(zero_dtype dt, zero_op op, const double *x, int world) {
    int s;
    if (op != ZERO_OP_SUM) {
        double acc = x[0];
        for (s = 1; s < world; s++)
            acc = op == ZERO_OP_MAX ? (x[s] > acc ? x[s] : acc) : (x[s] < acc ? x[s] : acc);
        return acc;
    }
    if (dt == F64) {
        double acc = x[0];
        for (s = 1; s < world; s++) acc += x[s];
        return acc;
    } else {
        float acc = (float)x[0];
        for (s = 1; s < world; s++) acc = (float)ref_to(dt, (double)(acc + (float)x[s]));
        return acc;
    }
}

typedef struct coll_arg {
    uint64_t seed;
    int only_sum16;       /* determinism runs: fewer configurations */
    long bad[MAXW], loose[MAXW], checked[MAXW], calls[MAXW];
    char first[MAXW][320];
    unsigned char *capture[MAXW]; /* determinism: every result byte in call order */
    size_t capture_len[MAXW], capture_cap;
} coll_arg;

static void note(coll_arg *a, int rank, long *counter, const char *fmt, ...) {
    va_list ap;
    if ((*counter)++ == 0 && a->first[rank][0] == 0) {
        va_start(ap, fmt);
        vsnprintf(a->first[rank], sizeof a->first[rank], fmt, ap);
        va_end(ap);
    }
}

static void capture(coll_arg *a, int rank, const void *p, size_t bytes) {
    if (!a->capture[rank] || !bytes) return;
    if (a->capture_len[rank] + bytes <= a->capture_cap)
        memcpy(a->capture[rank] + a->capture_len[rank], p, bytes);
    a->capture_len[rank] += bytes;
}

enum { K_RS, K_AG, K_AR, K_BC };
static const char *const knames[] = {"reduce_scatter", "all_gather", "all_reduce", "broadcast"};

/* One collective, checked on this rank. cap: elements of sendb and recvb. */
static void one_coll(const zero_backend *b, coll_arg *a, int cfg, zero_dtype dt, size_t count,
                     int inplace, int kind, int opr, unsigned char *sendb, unsigned char *recvb,
                     size_t cap) {
    int W = b->world, R = b->rank, s;
    size_t esz = zero_dtype_size(dt), i, n_out = 0;
    zero_op op = (zero_op)opr;
    zero_error err;
    zero_result res = ZERO_OK;
    const void *send = sendb;
    void *recv = recvb;
    double xs[MAXW];
    memset(sendb, 0x5A, cap * 8);
    memset(recvb, 0xA5, cap * 8);
    switch (kind) {
    case K_RS:
        for (i = 0; i < (size_t)W * count; i++) put(dt, sendb, i, gen(a->seed, cfg, R, i, dt));
        if (inplace) recv = sendb + (size_t)R * count * esz;
        res = b->reduce_scatter(b->ctx, send, recv, count, dt, op, ZERO_STREAM_COMM, &err);
        n_out = count;
        break;
    case K_AR:
        for (i = 0; i < count; i++) put(dt, sendb, i, gen(a->seed, cfg, R, i, dt));
        if (inplace) recv = sendb;
        res = b->all_reduce(b->ctx, send, recv, count, dt, op, ZERO_STREAM_COMM, &err);
        n_out = count;
        break;
    case K_AG:
        if (inplace) {
            send = recvb + (size_t)R * count * esz;
            for (i = 0; i < count; i++) put(dt, recvb, (size_t)R * count + i,
                                            gen(a->seed, cfg, R, i, dt));
        } else {
            for (i = 0; i < count; i++) put(dt, sendb, i, gen(a->seed, cfg, R, i, dt));
        }
        res = b->all_gather(b->ctx, send, recv, count, dt, ZERO_STREAM_COMM, &err);
        n_out = (size_t)W * count;
        break;
    default:
        for (i = 0; i < count; i++) put(dt, recvb, i, gen(a->seed, cfg, R, i, dt));
        res = b->broadcast(b->ctx, recvb, count, dt, opr, ZERO_STREAM_COMM, &err);
        n_out = count;
        break;
    }
    a->calls[R]++;
    if (res != ZERO_OK) {
        note(a, R, &a->bad[R], "%s %s count %zu: %s", knames[kind], zero_dtype_name(dt), count,
             err.msg);
        return;
    }
    capture(a, R, recv, n_out * esz);
    for (i = 0; i < n_out; i++) {
        double got = get(dt, recv, i), want;
        a->checked[R]++;
        if (kind == K_AG) {
            want = gen(a->seed, cfg, (int)(i / count), i % count, dt);
        } else if (kind == K_BC) {
            want = gen(a->seed, cfg, opr, i, dt);
        } else {
            size_t j = kind == K_RS ? (size_t)R * count + i : i;
            double exact = 0, mag = 0;
            for (s = 0; s < W; s++) {
                xs[s] = gen(a->seed, cfg, s, j, dt);
                exact += xs[s];
                mag += fabs(xs[s]);
            }
            want = ref_reduce(dt, op, xs, W);
            if (op == ZERO_OP_SUM && !(fabs(got - exact) <= (W - 1) * eps_of(dt) * mag))
                note(a, R, &a->loose[R], "%s %s sum: %.17g is not within rounding of the exact "
                     "%.17g", knames[kind], zero_dtype_name(dt), got, exact);
        }
        if (!same(got, want)) {
            note(a, R, &a->bad[R], "%s %s op %d count %zu %s world %d rank %d: element %zu got "
                 "%.17g want %.17g", knames[kind], zero_dtype_name(dt), opr, count,
                 inplace ? "in place" : "out of place", W, R, i, got, want);
            break;
        }
    }
    /* nothing written outside the result */
    if (!inplace || kind == K_BC) {
        const unsigned char *tail = (const unsigned char *)recv + n_out * esz;
        for (i = 0; i < 16 * esz; i++)
            if (tail[i] != 0xA5) {
                note(a, R, &a->bad[R], "%s wrote past its %zu result elements", knames[kind],
                     n_out);
                break;
            }
    } else if (kind == K_RS || kind == K_AR) { /* other chunks of send are left alone */
        size_t lo = kind == K_RS ? (size_t)R * count : 0, hi = lo + count;
        for (i = 0; i < (kind == K_RS ? (size_t)W * count : 0); i++)
            if ((i < lo || i >= hi) && !same(get(dt, sendb, i), gen(a->seed, cfg, R, i, dt))) {
                note(a, R, &a->bad[R], "in-place reduce_scatter changed element %zu of send", i);
                break;
            }
    }
}

static zero_result run_colls(const zero_backend *b, void *varg) {
    static const zero_dtype dts[] = {ZERO_DTYPE_FP32, ZERO_DTYPE_FP16, ZERO_DTYPE_BF16, F64};
    static const size_t counts[] = {0, 1, 3, 8, 61, 300};
    coll_arg *a = (coll_arg *)varg;
    int W = b->world, cfg = 0, di, ci, inplace, kind, op;
    size_t cap = (size_t)W * 300 + 32;
    void *sendb = NULL, *recvb = NULL;
    zero_error err;
    zero_result res;
    if ((res = b->alloc(b->ctx, ZERO_MEM_DEVICE, cap * 8, &sendb, &err)) != ZERO_OK) return res;
    if ((res = b->alloc(b->ctx, ZERO_MEM_DEVICE, cap * 8, &recvb, &err)) != ZERO_OK) return res;
    for (di = 0; di < 4; di++) {
        for (ci = 0; ci < 6; ci++) {
            for (inplace = 0; inplace < 2; inplace++) {
                for (kind = 0; kind < 4; kind++) {
                    int nops = kind == K_AG ? 1 : kind == K_BC ? (inplace ? 0 : W) : 3;
                    if (a->only_sum16 && (di != 1 || kind == K_AG || kind == K_BC)) continue;
                    for (op = 0; op < nops; op++) {
                        if (a->only_sum16 && op != ZERO_OP_SUM) continue;
                        one_coll(b, a, ++cfg, dts[di], counts[ci], inplace, kind, op,
                                 (unsigned char *)sendb, (unsigned char *)recvb, cap);
                    }
                }
            }
        }
    }
    b->free(b->ctx, ZERO_MEM_DEVICE, sendb);
    b->free(b->ctx, ZERO_MEM_DEVICE, recvb);
    return ZERO_OK;
}

static void test_collectives(void) {
    static const int worlds[] = {1, 2, 3, 4, 8};
    int wi, s;
    for (wi = 0; wi < 5; wi++) {
        coll_arg a;
        zero_error err;
        long bad = 0, loose = 0, checked = 0, calls = 0;
        zero_result res;
        int W = worlds[wi];
        memset(&a, 0, sizeof a);
        a.seed = zt_rand_u64();
        res = zero_host_run(W, run_colls, &a, &err);
        CHECKF(res == ZERO_OK, "world %d: %s", W, err.msg);
        for (s = 0; s < W; s++) {
            bad += a.bad[s];
            loose += a.loose[s];
            checked += a.checked[s];
            calls += a.calls[s];
            if (a.first[s][0]) fprintf(stderr, "world %d rank %d: %s\n", W, s, a.first[s]);
        }
        CHECKF(bad == 0, "world %d: %ld wrong results", W, bad);
        CHECKF(loose == 0, "world %d: %ld sums outside the rounding bound", W, loose);
        for (s = 1; s < W; s++) CHECK_EQ_INT(a.calls[s], a.calls[0]);
        CHECK(calls > 0);
        printf("collectives, world %d: %ld calls, %ld elements checked\n", W, calls, checked);
    }
}

/* Two runs on the same inputs give the same bytes, on every rank. */
static void test_determinism(void) {
    coll_arg a, b;
    size_t cap = 1 << 20;
    int s, W = 4, equal = 1;
    zero_error err;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    a.seed = b.seed = zt_rand_u64();
    a.only_sum16 = b.only_sum16 = 1;
    a.capture_cap = b.capture_cap = cap;
    for (s = 0; s < W; s++) {
        a.capture[s] = (unsigned char *)malloc(cap);
        b.capture[s] = (unsigned char *)malloc(cap);
    }
    CHECK(zero_host_run(W, run_colls, &a, &err) == ZERO_OK);
    CHECK(zero_host_run(W, run_colls, &b, &err) == ZERO_OK);
    for (s = 0; s < W; s++) {
        CHECK(a.capture_len[s] > 0 && a.capture_len[s] <= cap);
        if (a.capture_len[s] != b.capture_len[s] ||
            memcmp(a.capture[s], b.capture[s], a.capture_len[s] < cap ? a.capture_len[s] : cap))
            equal = 0;
        free(a.capture[s]);
        free(b.capture[s]);
    }
    CHECKF(equal, "two runs of the same fp16 reductions differ");
}

/* NaN and inf through every op and dtype. */
typedef struct nan_arg {
    int bad[MAXW];
} nan_arg;

static zero_result run_nan(const zero_backend *b, void *varg) {
    static const zero_dtype dts[] = {ZERO_DTYPE_FP32, ZERO_DTYPE_FP16, ZERO_DTYPE_BF16, F64};
    nan_arg *a = (nan_arg *)varg;
    int di, op, R = b->rank;
    for (di = 0; di < 4; di++) {
        for (op = 0; op < 3; op++) {
            double buf[4];
            zero_dtype dt = dts[di];
            /* element 0: rank 1 has NaN; 1: the last rank has NaN; 2: rank 0 has +inf;
               3: finite */
            put(dt, buf, 0, R == 1 ? NAN : 1.0);
            put(dt, buf, 1, R == b->world - 1 ? NAN : -2.0);
            put(dt, buf, 2, R == 0 ? INFINITY : 3.0);
            put(dt, buf, 3, (double)R);
            if (b->all_reduce(b->ctx, buf, buf, 4, dt, (zero_op)op, ZERO_STREAM_COMM, NULL)) {
                a->bad[R]++;
                continue;
            }
            if (!isnan(get(dt, buf, 0)) || !isnan(get(dt, buf, 1))) a->bad[R]++;
            if (op != ZERO_OP_MIN && get(dt, buf, 2) != INFINITY) a->bad[R]++;
            if (op == ZERO_OP_MIN && get(dt, buf, 2) != 3.0) a->bad[R]++;
            if (get(dt, buf, 3) != (op == ZERO_OP_SUM ? 3.0 : op == ZERO_OP_MAX ? 2.0 : 0.0))
                a->bad[R]++;
        }
    }
    return ZERO_OK;
}

static void test_nan(void) {
    nan_arg a;
    int s, bad = 0;
    memset(&a, 0, sizeof a);
    CHECK(zero_host_run(3, run_nan, &a, NULL) == ZERO_OK);
    for (s = 0; s < 3; s++) bad += a.bad[s];
    CHECKF(bad == 0, "%d NaN/inf results wrong", bad);
}

/* Many ranks: every rank's thread starts, and one all_reduce adds them all. */
typedef struct wide_arg {
    int bad[1024];
} wide_arg;

static zero_result run_wide(const zero_backend *b, void *varg) {
    wide_arg *a = (wide_arg *)varg;
    double x[8];
    int i;
    zero_result res;
    for (i = 0; i < 8; i++) x[i] = (double)(b->rank * 8 + i);
    res = b->all_reduce(b->ctx, x, x, 8, F64, ZERO_OP_SUM, ZERO_STREAM_COMM, NULL);
    if (res != ZERO_OK) return res;
    for (i = 0; i < 8; i++) /* sum over r of (8 r + i) */
        if (x[i] != 8.0 * (double)b->world * (b->world - 1) / 2 + (double)i * b->world)
            a->bad[b->rank]++;
    return ZERO_OK;
}

static void test_wide(void) {
    static wide_arg a;
    int s, bad = 0;
    double t0 = zt_now_s();
    zero_error err;
    zero_result res = zero_host_run(1024, run_wide, &a, &err);
    CHECKF(res == ZERO_OK, "%s", err.msg);
    for (s = 0; s < 1024; s++) bad += a.bad[s];
    CHECK(bad == 0);
    printf("1024 ranks: one all_reduce in %.3f s\n", zt_now_s() - t0);
}

/* ---- failures: mismatch, a rank leaving, timeout, bad arguments ---- */

typedef struct fail_arg {
    int scenario;
    zero_result res[MAXW], res2[MAXW];
    zero_msg item[MAXW], item2[MAXW];
    char msg[MAXW][1024];
    double took[MAXW], took2[MAXW];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int flag;
} fail_arg;

enum {
    S_KIND_MISMATCH, S_COUNT_MISMATCH, S_DTYPE_MISMATCH, S_OP_MISMATCH, S_ROOT_MISMATCH,
    S_LEAVE_OK, S_LEAVE_ERR, S_TIMEOUT, S_BAD_ARG_PEER, S_FN_ERR, S_BACKEND_ERR
};

static void wait_flag(fail_arg *a) {
    struct timespec ts;
    pthread_mutex_lock(&a->mu);
    timespec_get(&ts, TIME_UTC);
    ts.tv_sec += 20; /* a safety net for this test, not part of what is tested */
    while (!a->flag)
        if (pthread_cond_timedwait(&a->cv, &a->mu, &ts) != 0) break;
    pthread_mutex_unlock(&a->mu);
}

static void set_flag(fail_arg *a) {
    pthread_mutex_lock(&a->mu);
    a->flag = 1;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
}

static zero_result run_fail(const zero_backend *b, void *varg) {
    fail_arg *a = (fail_arg *)varg;
    int R = b->rank, W = b->world;
    float x[64];
    zero_error err;
    zero_result res = ZERO_OK;
    double t0;
    memset(x, 0, sizeof x);
    memset(&err, 0, sizeof err);
    t0 = zt_now_s();
    switch (a->scenario) {
    case S_KIND_MISMATCH:
        if (R == 0)
            res = b->all_gather(b->ctx, x, x + 8, 8, ZERO_DTYPE_FP16, ZERO_STREAM_COMM, &err);
        else
            res = b->reduce_scatter(b->ctx, x, x + 32, 8, ZERO_DTYPE_FP16, ZERO_OP_SUM,
                                    ZERO_STREAM_COMM, &err);
        break;
    case S_COUNT_MISMATCH:
        res = b->all_reduce(b->ctx, x, x, R == W - 1 ? 7 : 8, ZERO_DTYPE_FP32, ZERO_OP_SUM,
                            ZERO_STREAM_COMM, &err);
        break;
    case S_DTYPE_MISMATCH:
        res = b->all_reduce(b->ctx, x, x, 8, R == 1 ? ZERO_DTYPE_BF16 : ZERO_DTYPE_FP16,
                            ZERO_OP_SUM, ZERO_STREAM_COMM, &err);
        break;
    case S_OP_MISMATCH:
        res = b->all_reduce(b->ctx, x, x, 8, ZERO_DTYPE_FP32, R == 1 ? ZERO_OP_MAX : ZERO_OP_SUM,
                            ZERO_STREAM_COMM, &err);
        break;
    case S_ROOT_MISMATCH:
        res = b->broadcast(b->ctx, x, 8, ZERO_DTYPE_FP32, R == 1 ? 1 : 0, ZERO_STREAM_COMM, &err);
        break;
    case S_LEAVE_OK:
    case S_LEAVE_ERR:
        if (R == W - 1) return a->scenario == S_LEAVE_OK ? ZERO_OK : ZERO_ERR_IO;
        res = b->all_reduce(b->ctx, x, x, 8, ZERO_DTYPE_FP32, ZERO_OP_SUM, ZERO_STREAM_COMM,
                            &err);
        break;
    case S_TIMEOUT:
        if (R == W - 1) { /* arrives only after the others gave up */
            wait_flag(a);
            t0 = zt_now_s();
        }
        res = b->all_gather(b->ctx, x, x + 16, 8, ZERO_DTYPE_FP32, ZERO_STREAM_COMM, &err);
        if (R == 0) set_flag(a);
        break;
    case S_BAD_ARG_PEER:
        res = b->all_reduce(b->ctx, R == 1 ? NULL : x, x, 8, ZERO_DTYPE_FP32, ZERO_OP_SUM,
                            ZERO_STREAM_COMM, &err);
        break;
    case S_FN_ERR:
        return R == 1 ? ZERO_ERR_IO : ZERO_OK;
    case S_BACKEND_ERR: {
        void *p = NULL;
        if (R == 0) return b->alloc(b->ctx, ZERO_MEM_PINNED, SIZE_MAX - 1, &p, &err);
        return ZERO_OK;
    }
    default: break;
    }
    a->took[R] = zt_now_s() - t0;
    a->res[R] = res;
    a->item[R] = err.item;
    snprintf(a->msg[R], sizeof a->msg[R], "%s", err.msg);
    /* sticky: the next collective fails at once with the same item */
    t0 = zt_now_s();
    memset(&err, 0, sizeof err);
    a->res2[R] = b->all_reduce(b->ctx, x, x, 8, ZERO_DTYPE_FP32, ZERO_OP_SUM, ZERO_STREAM_COMM,
                               &err);
    a->item2[R] = err.item;
    a->took2[R] = zt_now_s() - t0;
    return res;
}

static zero_result fail_run(fail_arg *a, int scenario, int world, zero_error *err) {
    memset(a, 0, sizeof *a);
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->cv, NULL);
    a->scenario = scenario;
    {
        zero_result res = zero_host_run(world, run_fail, a, err);
        pthread_cond_destroy(&a->cv);
        pthread_mutex_destroy(&a->mu);
        return res;
    }
}

static void test_mismatch(void) {
    static fail_arg a;
    zero_error err;
    int s, sc;
    zero_result res = fail_run(&a, S_KIND_MISMATCH, 2, &err);
    CHECK_EQ_INT(res, ZERO_ERR_STATE);
    CHECK_EQ_INT(err.item, ZERO_MSG_HOST_COLLECTIVE_MISMATCH);
    CHECK(strncmp(err.msg, "rank 0: ", 8) == 0);
    for (s = 0; s < 2; s++) {
        CHECK_EQ_INT(a.res[s], ZERO_ERR_STATE);
        CHECK_EQ_INT(a.item[s], ZERO_MSG_HOST_COLLECTIVE_MISMATCH);
        CHECK_STR_CONTAINS(a.msg[s], "rank 0 called all_gather #1 (count 8, fp16)");
        CHECK_STR_CONTAINS(a.msg[s], "rank 1 called reduce_scatter #1 (count 8, fp16, sum)");
        CHECK_EQ_INT(a.item2[s], ZERO_MSG_HOST_COLLECTIVE_MISMATCH);
        CHECK(a.took2[s] < 5.0); /* at once: far below the 300 s deadline, loose for loaded machines */
    }
    for (sc = S_COUNT_MISMATCH; sc <= S_ROOT_MISMATCH; sc++) {
        int W = sc == S_COUNT_MISMATCH ? 4 : 3;
        res = fail_run(&a, sc, W, &err);
        CHECK_EQ_INT(res, ZERO_ERR_STATE);
        for (s = 0; s < W; s++) {
            CHECK_EQ_INT(a.item[s], ZERO_MSG_HOST_COLLECTIVE_MISMATCH);
            CHECK_EQ_INT(a.item2[s], ZERO_MSG_HOST_COLLECTIVE_MISMATCH);
        }
        CHECK_STR_CONTAINS(a.msg[0], sc == S_COUNT_MISMATCH   ? "count 7"
                                     : sc == S_DTYPE_MISMATCH ? "bf16"
                                     : sc == S_OP_MISMATCH    ? "max"
                                                              : "root 1");
    }
}

static void test_leave(void) {
    static fail_arg a;
    zero_error err;
    int s;
    zero_result res = fail_run(&a, S_LEAVE_OK, 3, &err);
    CHECK_EQ_INT(res, ZERO_ERR_STATE);
    CHECK_EQ_INT(err.item, ZERO_MSG_HOST_PEER_EXITED);
    CHECK_STR_CONTAINS(err.msg, "rank 0: rank 2 left (returned ok) while rank ");
    for (s = 0; s < 2; s++) {
        CHECK_EQ_INT(a.res[s], ZERO_ERR_STATE);
        CHECK_EQ_INT(a.item[s], ZERO_MSG_HOST_PEER_EXITED);
        CHECK_STR_CONTAINS(a.msg[s], "waits in all_reduce #1");
        CHECKF(a.took[s] < 5.0, "rank %d waited %.3f s", s, a.took[s]);
        CHECK_EQ_INT(a.item2[s], ZERO_MSG_HOST_PEER_EXITED);
    }
    /* the rank that left with an error is named as well */
    res = fail_run(&a, S_LEAVE_ERR, 3, &err);
    CHECK_EQ_INT(res, ZERO_ERR_STATE);
    CHECK_STR_CONTAINS(err.msg, "rank 2 left (returned input/output error)");
    CHECK_STR_CONTAINS(err.msg, "\nrank 2: fn returned input/output error");
}

static void test_timeout(void) {
    static fail_arg a;
    zero_error err;
    zero_result res;
    int s;
    setenv("ZERO_HOST_TIMEOUT_S", "1", 1);
    res = fail_run(&a, S_TIMEOUT, 3, &err);
    CHECK_EQ_INT(res, ZERO_ERR_TIMEOUT);
    CHECK_EQ_INT(err.item, ZERO_MSG_HOST_TIMEOUT);
    /* the first to give up waited the full second; the other may have been woken by it */
    CHECKF((a.took[0] > 0.9 || a.took[1] > 0.9) && a.took[0] < 5 && a.took[1] < 5,
           "ranks gave up after %.3f and %.3f s", a.took[0], a.took[1]);
    for (s = 0; s < 2; s++) CHECK_EQ_INT(a.item[s], ZERO_MSG_HOST_TIMEOUT);
    CHECK_STR_CONTAINS(a.msg[0], "all_gather #1 (count 8, fp32): rank 2 did not arrive within 1 s");
    CHECK_EQ_INT(a.item[2], ZERO_MSG_HOST_TIMEOUT); /* the late rank fails at once */
    CHECK(a.took[2] < 2.5); /* fails on arrival, not after waiting a deadline of its own */
    /* fractions of a second */
    setenv("ZERO_HOST_TIMEOUT_S", "0.25", 1);
    res = fail_run(&a, S_TIMEOUT, 2, &err);
    CHECK_EQ_INT(res, ZERO_ERR_TIMEOUT);
    CHECKF(a.took[0] > 0.2 && a.took[0] < 3, "gave up after %.3f s", a.took[0]);
    /* an invalid value warns (once) and keeps the default: nothing times out */
    setenv("ZERO_HOST_TIMEOUT_S", "soon", 1);
    res = fail_run(&a, S_LEAVE_OK, 2, &err);
    CHECK_EQ_INT(a.item[0], ZERO_MSG_HOST_PEER_EXITED);
    unsetenv("ZERO_HOST_TIMEOUT_S");
    /* ZERO_TIMEOUT_S, the one name of every backend, is read first;
       ZERO_HOST_TIMEOUT_S is its alias when it is unset */
    setenv("ZERO_TIMEOUT_S", "0.25", 1);
    setenv("ZERO_HOST_TIMEOUT_S", "30", 1);
    res = fail_run(&a, S_TIMEOUT, 2, &err);
    CHECK_EQ_INT(res, ZERO_ERR_TIMEOUT);
    CHECKF(a.took[0] > 0.2 && a.took[0] < 3, "ZERO_TIMEOUT_S=0.25: gave up after %.3f s", a.took[0]);
    unsetenv("ZERO_TIMEOUT_S");
    unsetenv("ZERO_HOST_TIMEOUT_S");
}

static void test_run_errors(void) {
    static fail_arg a;
    zero_error err;
    zero_result res;
    res = fail_run(&a, S_BAD_ARG_PEER, 3, &err);
    CHECK_EQ_INT(res, ZERO_ERR_STATE); /* rank 0 is the lowest failing rank */
    CHECK_EQ_INT(a.res[1], ZERO_ERR_INVALID_ARG);
    CHECK_EQ_INT(a.item[1], ZERO_MSG_NULL_ARG);
    CHECK_STR_CONTAINS(a.msg[1], "all_reduce: send is NULL");
    CHECK_EQ_INT(a.item[0], ZERO_MSG_HOST_COLLECTIVE_MISMATCH);
    CHECK_STR_CONTAINS(a.msg[0], "rank 1 called all_reduce #1 (count 8, fp32, sum) with invalid");
    CHECK(a.took[0] < 5.0);
    CHECK_STR_CONTAINS(err.msg, "\nrank 1: host all_reduce: send is NULL");

    res = fail_run(&a, S_FN_ERR, 2, &err);
    CHECK_EQ_INT(res, ZERO_ERR_IO);
    CHECK_EQ_INT(err.code, ZERO_ERR_IO);
    CHECK(strcmp(err.msg, "rank 1: fn returned input/output error") == 0);

    res = fail_run(&a, S_BACKEND_ERR, 2, &err);
    CHECK_EQ_INT(res, ZERO_ERR_OUT_OF_MEMORY);
    CHECK_EQ_INT(err.item, ZERO_MSG_OUT_OF_MEMORY);
    CHECK_STR_CONTAINS(err.msg, "rank 0: host alloc: ");
    CHECK_STR_CONTAINS(err.msg, "bytes of pinned memory");

    CHECK_EQ_INT(zero_host_run(0, run_fail, &a, &err), ZERO_ERR_INVALID_ARG);
    CHECK_EQ_INT(err.item, ZERO_MSG_BAD_ARG);
    CHECK_EQ_INT(zero_host_run(1025, run_fail, &a, &err), ZERO_ERR_INVALID_ARG);
    CHECK_EQ_INT(zero_host_run(-3, run_fail, &a, NULL), ZERO_ERR_INVALID_ARG);
    CHECK_EQ_INT(zero_host_run(2, NULL, &a, &err), ZERO_ERR_INVALID_ARG);
    CHECK_EQ_INT(err.item, ZERO_MSG_NULL_ARG);
}

/* Each malformed call in a run of its own (the group stays failed after one). */
typedef struct badcall_arg {
    int which;
    zero_result res;
    zero_msg item;
    char msg[1024];
} badcall_arg;

static zero_result run_badcall(const zero_backend *b, void *varg) {
    badcall_arg *a = (badcall_arg *)varg;
    double x[16];
    zero_error err;
    void *v = b->ctx;
    char *odd = (char *)x + 1;
    const zero_dtype f32 = ZERO_DTYPE_FP32;
    const zero_stream_id cs = ZERO_STREAM_COMM;
    memset(x, 0, sizeof x);
    switch (a->which) {
    case 0: a->res = b->all_reduce(v, x, x, 4, ZERO_DTYPE_DEFAULT, ZERO_OP_SUM, cs, &err); break;
    case 1: a->res = b->all_reduce(v, x, x, 4, f32, (zero_op)7, cs, &err); break;
    case 2: a->res = b->broadcast(v, x, 4, f32, b->world, cs, &err); break;
    case 3: a->res = b->broadcast(v, x, 4, f32, -1, cs, &err); break;
    case 4: a->res = b->all_gather(v, x, x, SIZE_MAX / 2 + 1, ZERO_DTYPE_FP16, cs, &err); break;
    case 5: a->res = b->reduce_scatter(v, odd, x, 2, f32, ZERO_OP_SUM, cs, &err); break;
    case 6: a->res = b->all_gather(v, x, NULL, 2, f32, cs, &err); break;
    case 7: a->res = b->all_reduce(v, x, x, 4, f32, ZERO_OP_SUM, (zero_stream_id)9, &err); break;
    case 8: a->res = b->broadcast(v, NULL, 4, f32, 0, cs, &err); break;
    case 9: a->res = b->all_reduce(NULL, x, x, 4, f32, ZERO_OP_SUM, cs, &err); break;
    /* count 0 with NULL buffers is a valid (empty) collective */
    default: a->res = b->all_reduce(v, NULL, NULL, 0, f32, ZERO_OP_SUM, cs, &err); break;
    }
    a->item = a->res == ZERO_OK ? ZERO_MSG_NONE : err.item;
    snprintf(a->msg, sizeof a->msg, "%s", a->res == ZERO_OK ? "" : err.msg);
    return ZERO_OK;
}

static void test_bad_calls(void) {
    static const zero_msg want[] = {ZERO_MSG_BAD_ARG, ZERO_MSG_BAD_ARG, ZERO_MSG_BAD_ARG,
                                    ZERO_MSG_BAD_ARG, ZERO_MSG_BAD_ARG, ZERO_MSG_BAD_ARG,
                                    ZERO_MSG_NULL_ARG, ZERO_MSG_BAD_ARG, ZERO_MSG_NULL_ARG,
                                    ZERO_MSG_NULL_ARG, ZERO_MSG_NONE};
    static const char *const text[] = {"dtype 0 (default)", "op 7", "root 1", "root -1",
                                       "overflows", "not aligned", "recv is NULL", "stream 9",
                                       "buf is NULL", "ctx is NULL", ""};
    int i;
    for (i = 0; i < 11; i++) {
        badcall_arg a;
        memset(&a, 0, sizeof a);
        a.which = i;
        CHECK(zero_host_run(1, run_badcall, &a, NULL) == ZERO_OK);
        CHECKF(a.item == want[i], "case %d: item %s, want %s (%s)", i, zero_msg_name(a.item),
               zero_msg_name(want[i]), a.msg);
        CHECK_STR_CONTAINS(a.msg, text[i]);
    }
}

/* ---- memory, copies, events ---- */

static zero_result run_memory(const zero_backend *b, void *varg) {
    void *p[ZERO_MEM_KIND_COUNT], *z1 = NULL, *z2 = NULL, *q = NULL;
    zero_event *ev = NULL;
    zero_error err;
    int k;
    size_t sizes[ZERO_MEM_KIND_COUNT] = {1000, 77, 4096};
    unsigned char src[100], dst[100];
    (void)varg;
    CHECK(strcmp(b->name, "host") == 0);
    for (k = 0; k < ZERO_MEM_KIND_COUNT; k++) {
        CHECK(b->alloc(b->ctx, (zero_mem_kind)k, sizes[k], &p[k], &err) == ZERO_OK);
        CHECK(p[k] && (uintptr_t)p[k] % 64 == 0);
        memset(p[k], 0x11 * (k + 1), sizes[k]); /* all of it is ours (ASan checks) */
        CHECK_EQ_INT(zero_host_allocated_bytes(b, (zero_mem_kind)k), sizes[k]);
    }
    CHECK(b->alloc(b->ctx, ZERO_MEM_HOST, 0, &z1, &err) == ZERO_OK);
    CHECK(b->alloc(b->ctx, ZERO_MEM_HOST, 0, &z2, &err) == ZERO_OK);
    CHECK(z1 && z2 && z1 != z2);
    CHECK_EQ_INT(zero_host_allocated_bytes(b, ZERO_MEM_HOST), sizes[ZERO_MEM_HOST]);
    b->free(b->ctx, ZERO_MEM_HOST, z1);
    b->free(b->ctx, ZERO_MEM_HOST, z2);
    b->free(b->ctx, ZERO_MEM_HOST, NULL);
    CHECK(b->memset0(b->ctx, p[0], sizes[0], ZERO_STREAM_COMPUTE, &err) == ZERO_OK);
    CHECK(((unsigned char *)p[0])[0] == 0 && ((unsigned char *)p[0])[999] == 0);
    for (k = 0; k < 100; k++) src[k] = (unsigned char)k;
    CHECK(b->copy(b->ctx, p[1], src, 77, ZERO_STREAM_COMM, &err) == ZERO_OK);
    CHECK(b->copy(b->ctx, dst, p[1], 77, ZERO_STREAM_COMM, &err) == ZERO_OK);
    CHECK(memcmp(dst, src, 77) == 0);
    CHECK(b->copy(b->ctx, NULL, NULL, 0, ZERO_STREAM_COMM, &err) == ZERO_OK);
    CHECK(b->copy(b->ctx, NULL, src, 4, ZERO_STREAM_COMM, &err) == ZERO_ERR_INVALID_ARG);
    CHECK_EQ_INT(err.item, ZERO_MSG_NULL_ARG);
    CHECK(b->memset0(b->ctx, NULL, 4, ZERO_STREAM_COMM, &err) == ZERO_ERR_INVALID_ARG);
    CHECK(b->memset0(b->ctx, p[0], 4, ZERO_STREAM_COPY, &err) == ZERO_OK); /* the third stream */
    CHECK(b->memset0(b->ctx, p[0], 4, ZERO_STREAM_COUNT, &err) == ZERO_ERR_INVALID_ARG);
    CHECK_EQ_INT(err.item, ZERO_MSG_BAD_ARG);
    /* wrong kind at free: counted back to the kind it was allocated as, and noted */
    b->free(b->ctx, ZERO_MEM_HOST, p[ZERO_MEM_PINNED]);
    CHECK_EQ_INT(zero_host_allocated_bytes(b, ZERO_MEM_PINNED), 0);
    CHECK_EQ_INT(zero_host_allocated_bytes(b, ZERO_MEM_HOST), sizes[ZERO_MEM_HOST]);
    b->free(b->ctx, ZERO_MEM_DEVICE, p[ZERO_MEM_DEVICE]);
    b->free(b->ctx, ZERO_MEM_HOST, p[ZERO_MEM_HOST]);
    for (k = 0; k < ZERO_MEM_KIND_COUNT; k++)
        CHECK_EQ_INT(zero_host_allocated_bytes(b, (zero_mem_kind)k), 0);
    CHECK_EQ_INT(zero_host_allocated_bytes(b, ZERO_MEM_KIND_COUNT), 0);
    CHECK_EQ_INT(zero_host_allocated_bytes(NULL, ZERO_MEM_HOST), 0);
    /* failures */
    CHECK(b->alloc(b->ctx, ZERO_MEM_DEVICE, SIZE_MAX - 8, &q, &err) == ZERO_ERR_OUT_OF_MEMORY);
    CHECK(q == NULL);
    CHECK_EQ_INT(err.item, ZERO_MSG_OUT_OF_MEMORY);
    CHECK_STR_CONTAINS(err.msg, "bytes of device memory");
    CHECK(b->alloc(b->ctx, (zero_mem_kind)3, 8, &q, &err) == ZERO_ERR_INVALID_ARG);
    CHECK(b->alloc(b->ctx, ZERO_MEM_HOST, 8, NULL, &err) == ZERO_ERR_INVALID_ARG);
    CHECK_EQ_INT(err.item, ZERO_MSG_NULL_ARG);
    /* events: trivial on the host, but checked */
    CHECK(b->event_create(b->ctx, &ev, &err) == ZERO_OK && ev);
    CHECK(b->event_record(b->ctx, ev, ZERO_STREAM_COMPUTE, &err) == ZERO_OK);
    CHECK(b->stream_wait(b->ctx, ZERO_STREAM_COMM, ev, &err) == ZERO_OK);
    CHECK(b->sync(b->ctx, ZERO_STREAM_COMM, &err) == ZERO_OK);
    CHECK(b->event_record(b->ctx, NULL, ZERO_STREAM_COMPUTE, &err) == ZERO_ERR_INVALID_ARG);
    CHECK(b->stream_wait(b->ctx, (zero_stream_id)5, ev, &err) == ZERO_ERR_INVALID_ARG);
    CHECK(b->sync(b->ctx, (zero_stream_id)-1, &err) == ZERO_ERR_INVALID_ARG);
    CHECK(b->event_create(b->ctx, NULL, &err) == ZERO_ERR_INVALID_ARG);
    b->event_destroy(b->ctx, ev);
    b->event_destroy(b->ctx, NULL);
    return ZERO_OK;
}

static zero_result run_limit(const zero_backend *b, void *varg) {
    void *p = NULL, *q = NULL;
    zero_error err;
    (void)varg;
    CHECK(b->alloc(b->ctx, ZERO_MEM_DEVICE, 600, &p, &err) == ZERO_OK);
    CHECK(b->alloc(b->ctx, ZERO_MEM_PINNED, 500, &q, &err) == ZERO_ERR_OUT_OF_MEMORY);
    CHECK_STR_CONTAINS(err.msg, "500 bytes of pinned memory: over ZERO_HOST_MEM_LIMIT (this "
                                "rank holds 600 bytes)");
    b->free(b->ctx, ZERO_MEM_DEVICE, p);
    CHECK(b->alloc(b->ctx, ZERO_MEM_PINNED, 500, &q, &err) == ZERO_OK);
    b->free(b->ctx, ZERO_MEM_PINNED, q);
    return ZERO_OK;
}

static void test_memory(void) {
    zero_error err;
    CHECK(zero_host_run(1, run_memory, NULL, &err) == ZERO_OK);
    setenv("ZERO_HOST_MEM_LIMIT", "1000", 1);
    CHECK(zero_host_run(1, run_limit, NULL, &err) == ZERO_OK);
    unsetenv("ZERO_HOST_MEM_LIMIT");
}

/* ---- kernels ---- */

static const zero_dtype kdts[] = {ZERO_DTYPE_FP32, ZERO_DTYPE_FP16, ZERO_DTYPE_BF16};

static zero_result run_kernels(const zero_backend *b, void *varg) {
    enum { N = 1000 };
    double x[N], y[N], out[2];
    double orig[N], origy[N];
    zero_error err;
    int di, dj, acc, i, bad;
    (void)varg;
    /* scale: one rounding of the float product */
    for (di = 0; di < 3; di++) {
        zero_dtype dt = kdts[di];
        float f = (float)zt_rand_range(-3, 3);
        for (i = 0; i < N; i++) {
            orig[i] = ref_to(dt, zt_rand_range(-100, 100));
            put(dt, x, (size_t)i, orig[i]);
        }
        CHECK(b->scale(b->ctx, x, N, dt, f, ZERO_STREAM_COMM, &err) == ZERO_OK);
        for (bad = 0, i = 0; i < N; i++)
            if (!same(get(dt, x, (size_t)i), ref_to(dt, (double)((float)orig[i] * f)))) bad++;
        CHECKF(bad == 0, "scale %s: %d wrong", zero_dtype_name(dt), bad);
    }
    /* convert, plain and accumulating, every pair */
    for (di = 0; di < 3; di++)
        for (dj = 0; dj < 3; dj++)
            for (acc = 0; acc < 2; acc++) {
                zero_dtype dd = kdts[di], sd = kdts[dj];
                for (i = 0; i < N; i++) {
                    orig[i] = ref_to(sd, zt_rand_range(-10, 10) *
                                             ldexp(1.0, (int)zt_rand_int(-30, 20)));
                    origy[i] = ref_to(dd, zt_rand_range(-10, 10));
                    put(sd, x, (size_t)i, orig[i]);
                    put(dd, y, (size_t)i, origy[i]);
                }
                CHECK(b->convert(b->ctx, y, dd, x, sd, N, acc, ZERO_STREAM_COMM, &err) == ZERO_OK);
                for (bad = 0, i = 0; i < N; i++) {
                    double want = acc ? ref_to(dd, (double)((float)origy[i] + (float)orig[i]))
                                      : ref_to(dd, (double)(float)orig[i]);
                    if (!same(get(dd, y, (size_t)i), want)) bad++;
                }
                CHECKF(bad == 0, "convert %s <- %s accumulate %d: %d wrong", zero_dtype_name(dd),
                       zero_dtype_name(sd), acc, bad);
            }
    /* sumsq: sequential double sum added to out[0]; out[1] flags inf/nan, never reset */
    for (di = 0; di < 3; di++) {
        zero_dtype dt = kdts[di];
        double want = 0;
        for (i = 0; i < N; i++) {
            double v = ref_to(dt, zt_rand_range(-5, 5));
            put(dt, x, (size_t)i, v);
            want += v * v;
        }
        out[0] = 1.5;
        out[1] = 0;
        CHECK(b->sumsq(b->ctx, x, N, dt, out, ZERO_STREAM_COMM, &err) == ZERO_OK);
        CHECKF(out[0] == 1.5 + want, "sumsq %s: %.17g want %.17g", zero_dtype_name(dt), out[0],
               1.5 + want);
        CHECK(out[1] == 0);
        put(dt, x, 17, INFINITY);
        CHECK(b->sumsq(b->ctx, x, N, dt, out, ZERO_STREAM_COMM, &err) == ZERO_OK);
        CHECK(out[1] == 1 && isinf(out[0]));
        put(dt, x, 17, NAN);
        out[0] = 0;
        out[1] = 2; /* max(out[1], 1): a larger flag stays */
        CHECK(b->sumsq(b->ctx, x, N, dt, out, ZERO_STREAM_COMM, &err) == ZERO_OK);
        CHECK(out[1] == 2 && isnan(out[0]));
        put(dt, x, 17, 1.0);
        out[1] = 1; /* finite data leaves a set flag alone */
        CHECK(b->sumsq(b->ctx, x, N, dt, out, ZERO_STREAM_COMM, &err) == ZERO_OK);
        CHECK(out[1] == 1);
    }
    out[0] = 3;
    CHECK(b->sumsq(b->ctx, NULL, 0, ZERO_DTYPE_FP32, out, ZERO_STREAM_COMM, &err) == ZERO_OK);
    CHECK(out[0] == 3);
    /* argument errors */
    CHECK(b->sumsq(b->ctx, x, N, ZERO_DTYPE_FP32, NULL, ZERO_STREAM_COMM, &err) ==
          ZERO_ERR_INVALID_ARG);
    CHECK(b->sumsq(b->ctx, NULL, 4, ZERO_DTYPE_FP32, out, ZERO_STREAM_COMM, &err) ==
          ZERO_ERR_INVALID_ARG);
    CHECK(b->scale(b->ctx, x, N, F64, 2.0f, ZERO_STREAM_COMM, &err) == ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "host scale: dtype 4 (fp64) is not fp32, fp16, bf16");
    CHECK(b->convert(b->ctx, y, (zero_dtype)9, x, ZERO_DTYPE_FP32, 4, 0, ZERO_STREAM_COMM, &err) ==
          ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "dst_dt");
    CHECK(b->convert(b->ctx, y, ZERO_DTYPE_FP32, (char *)x + 2, ZERO_DTYPE_FP32, 4, 0,
                     ZERO_STREAM_COMM, &err) == ZERO_ERR_INVALID_ARG);
    CHECK(b->scale(NULL, x, N, ZERO_DTYPE_FP32, 2.0f, ZERO_STREAM_COMM, &err) ==
          ZERO_ERR_INVALID_ARG);
    return ZERO_OK;
}

/* Adam: the float kernel over several steps against the same update in double. */
static zero_result run_adam(const zero_backend *b, void *varg) {
    enum { N = 3000, STEPS = 5 };
    static float master[N], m[N], v[N], gradf[N];
    static double pd[N], md[N], vd[N], mag[N], magp[N];
    static unsigned char grad[N * 4], param[N * 4];
    static const zero_adam_seg segs[] = {
        {0, 1000, 1e-3f, 0.0f, 0}, {1000, 1500, 3e-3f, 0.1f, 0}, {2600, 400, 5e-4f, 0.01f, 0}};
    double worst_p = 0, worst_m = 0, worst_v = 0;
    int adamw, gi, pi, t, i, k, bad_store = 0, bad_gap = 0, bad_err = 0;
    zero_error err;
    (void)varg;
    for (adamw = 0; adamw < 2; adamw++)
        for (gi = 0; gi < 3; gi++)
            for (pi = 0; pi < 5; pi++) { /* param: NULL, fp32, fp32 == master, fp16, bf16 */
                zero_dtype gdt = kdts[gi];
                zero_dtype pdt = pi == 3 ? ZERO_DTYPE_FP16 : pi == 4 ? ZERO_DTYPE_BF16
                                                                    : ZERO_DTYPE_FP32;
                zero_adam_args a;
                memset(&a, 0, sizeof a);
                for (i = 0; i < N; i++) {
                    master[i] = (float)zt_rand_range(-1, 1);
                    pd[i] = master[i];
                    m[i] = v[i] = 0;
                    md[i] = vd[i] = mag[i] = 0;
                    magp[i] = fabs(pd[i]);
                }
                memset(param, 0xEE, sizeof param);
                a.master = master;
                a.m = m;
                a.v = v;
                a.grad = grad;
                a.grad_dtype = gdt;
                a.param = pi == 0 ? NULL : pi == 2 ? (void *)master : (void *)param;
                a.param_dtype = pdt;
                a.segs = segs;
                a.n_segs = 3;
                a.beta1 = 0.9f;
                a.beta2 = 0.999f;
                a.eps = 1e-8f;
                a.grad_scale = 0.5f;
                a.adamw = adamw;
                for (t = 1; t <= STEPS; t++) {
                    a.bc1 = (float)(1 - pow(0.9, t));
                    a.bc2 = (float)(1 / sqrt(1 - pow(0.999, t)));
                    for (i = 0; i < N; i++) {
                        put(gdt, grad, (size_t)i, ref_to(gdt, zt_rand_range(-2, 2)));
                        gradf[i] = (float)get(gdt, grad, (size_t)i);
                    }
                    if (b->adam(b->ctx, &a, ZERO_STREAM_COMPUTE, &err) != ZERO_OK) bad_err++;
                    for (k = 0; k < 3; k++) {
                        double lr = segs[k].lr, wd = segs[k].weight_decay;
                        for (i = (int)segs[k].offset; i < segs[k].offset + segs[k].count; i++) {
                            double g = (double)gradf[i] * 0.5, terms = fabs(g);
                            if (!adamw && wd != 0) g += wd * pd[i], terms += fabs(wd * pd[i]);
                            md[i] = (double)a.beta1 * md[i] + (1 - (double)a.beta1) * g;
                            vd[i] = (double)a.beta2 * vd[i] + (1 - (double)a.beta2) * g * g;
                            mag[i] = (double)a.beta1 * mag[i] + (1 - (double)a.beta1) * terms;
                            double u = lr / a.bc1 * md[i] /
                                       (sqrt(vd[i]) * (double)a.bc2 + (double)a.eps);
                            if (adamw && wd != 0) pd[i] -= lr * wd * pd[i];
                            pd[i] -= u;
                            /* the update's size, times how much of its gradient's terms cancelled: with
                               Adam's L2 decay (g = grad + wd p) a g near 0 keeps the fp32 rounding of
                               its terms, and m / sqrt(v) carries it to u where eps is not negligible
                               (seed 38119630778050: g 1.8e-7 from terms of 0.054, u 4e-4 apart) */
                            magp[i] += fabs(u) * (g != 0 ? terms / fabs(g) : INFINITY);
                        }
                    }
                }
                for (k = 0; k < 3; k++)
                    for (i = (int)segs[k].offset; i < segs[k].offset + segs[k].count; i++) {
                        /* p and m can cancel towards 0: measure their errors against the
                           size of the terms that made them (for p: its updates, each scaled
                           by its gradient's cancellation, and its own value, which the fp32
                           master rounds at every step; for m: the gradients' terms) */
                        double ep = fabs(master[i] - pd[i]) / (magp[i] + fabs(pd[i]));
                        double em = fabs(m[i] - md[i]) / mag[i];
                        double ev = fabs(v[i] - vd[i]) / vd[i];
                        if (ep > worst_p) worst_p = ep;
                        if (em > worst_m) worst_m = em;
                        if (ev > worst_v) worst_v = ev;
                        if (pi == 1 || pi >= 3)
                            if (!same(get(pdt, param, (size_t)i), ref_to(pdt, master[i])))
                                bad_store++;
                    }
                for (i = 2500; i < 2600; i++) { /* outside every segment: untouched */
                    if (master[i] != (float)pd[i] || m[i] != 0 || v[i] != 0) bad_gap++;
                    if (pi == 1 || pi >= 3) bad_gap += param[i * zero_dtype_size(pdt)] != 0xEE;
                }
            }
    CHECK(bad_err == 0);
    CHECKF(worst_p < 1e-6, "master: worst relative error %.3g", worst_p);
    CHECKF(worst_m < 1e-6, "m: worst error %.3g of the size of its terms", worst_m);
    CHECKF(worst_v < 2e-6, "v: worst relative error %.3g", worst_v);
    CHECKF(bad_store == 0, "%d compute-dtype copies are not round(master)", bad_store);
    CHECKF(bad_gap == 0, "%d elements outside the segments changed", bad_gap);
    printf("adam vs double, %d steps: worst relative error master %.2g, m %.2g, v %.2g\n",
           STEPS, worst_p, worst_m, worst_v);
    {
        zero_adam_args a;
        zero_adam_seg bad = {-1, 4, 1e-3f, 0, 0};
        memset(&a, 0, sizeof a);
        CHECK(b->adam(b->ctx, NULL, ZERO_STREAM_COMPUTE, &err) == ZERO_ERR_INVALID_ARG);
        a.segs = segs;
        a.n_segs = 3;
        a.grad_dtype = ZERO_DTYPE_FP32;
        CHECK(b->adam(b->ctx, &a, ZERO_STREAM_COMPUTE, &err) == ZERO_ERR_INVALID_ARG);
        CHECK_STR_CONTAINS(err.msg, "host adam: master is NULL");
        a.master = master;
        a.m = m;
        a.v = v;
        a.grad = grad;
        a.grad_dtype = F64;
        CHECK(b->adam(b->ctx, &a, ZERO_STREAM_COMPUTE, &err) == ZERO_ERR_INVALID_ARG);
        CHECK_STR_CONTAINS(err.msg, "grad_dtype");
        a.grad_dtype = ZERO_DTYPE_FP16;
        a.segs = &bad;
        a.n_segs = 1;
        CHECK(b->adam(b->ctx, &a, ZERO_STREAM_COMPUTE, &err) == ZERO_ERR_INVALID_ARG);
        CHECK_STR_CONTAINS(err.msg, "segment 0 has offset -1");
        a.n_segs = 0; /* nothing to do */
        CHECK(b->adam(b->ctx, &a, ZERO_STREAM_COMPUTE, &err) == ZERO_OK);
    }
    return ZERO_OK;
}

/* ZERO_OP_AVG is scale-by-1/world-then-sum: each contribution rounded to the
   dtype after the scaling, the partial sums as SUM rounds them (ncclAvg's
   meaning, and what the engine's gradient reductions rely on). */
typedef struct avg_job {
    zero_dtype dt;
    float in[8][37];
    float got[8][37];
    zero_result r[8];
} avg_job;

static zero_result avg_rank(const zero_backend *b, void *arg) {
    avg_job *A = (avg_job *)arg;
    size_t es = zero_dtype_size(A->dt), i;
    unsigned char send[37 * 4], recv[37 * 4];
    for (i = 0; i < 37; i++) {
        float v = A->in[b->rank][i];
        if (A->dt == ZERO_DTYPE_FP16) ((zero_f16 *)send)[i] = zero_f32_to_f16(v);
        else if (A->dt == ZERO_DTYPE_BF16) ((zero_bf16 *)send)[i] = zero_f32_to_bf16(v);
        else ((float *)send)[i] = v;
    }
    A->r[b->rank] = b->all_reduce(b->ctx, send, recv, 37, A->dt, ZERO_OP_AVG, ZERO_STREAM_COMM, NULL);
    for (i = 0; i < 37; i++)
        A->got[b->rank][i] = A->dt == ZERO_DTYPE_FP16 ? zero_f16_to_f32(((zero_f16 *)recv)[i])
                             : A->dt == ZERO_DTYPE_BF16 ? zero_bf16_to_f32(((zero_bf16 *)recv)[i])
                                                        : ((float *)recv)[i];
    (void)es;
    return ZERO_OK;
}

static void test_avg(void) {
    static avg_job A;
    zero_error err;
    int w, d, r, i;
    for (d = ZERO_DTYPE_FP32; d <= ZERO_DTYPE_BF16; d++)
        for (w = 1; w <= 8; w += (w < 4 ? 1 : 4)) {
            memset(&A, 0, sizeof A);
            A.dt = (zero_dtype)d;
            for (r = 0; r < w; r++)
                for (i = 0; i < 37; i++) A.in[r][i] = zt_round(A.dt, (float)zt_rand_range(-300, 300));
            CHECK(zero_host_run(w, avg_rank, &A, &err) == ZERO_OK);
            for (r = 0; r < w; r++) CHECK(A.r[r] == ZERO_OK);
            for (i = 0; i < 37; i++) {
                float f = 1.0f / (float)w, acc = zt_round(A.dt, A.in[0][i] * f);
                double exact = 0;
                for (r = 1; r < w; r++) acc = zt_round(A.dt, acc + zt_round(A.dt, A.in[r][i] * f));
                for (r = 0; r < w; r++) exact += A.in[r][i];
                exact /= w;
                for (r = 0; r < w; r++)
                    CHECKF(A.got[r][i] == acc, "avg %s world %d element %d rank %d: %.9g want %.9g", zero_dtype_name(A.dt), w,
                           i, r, A.got[r][i], acc);
                CHECK(fabs(acc - exact) <= (d == ZERO_DTYPE_FP32 ? 1e-4 : d == ZERO_DTYPE_FP16 ? 0.5 : 4.0) * w);
            }
        }
}

static void test_kernels(void) {
    zero_error err;
    CHECK(zero_host_run(1, run_kernels, NULL, &err) == ZERO_OK);
    CHECK(zero_host_run(1, run_adam, NULL, &err) == ZERO_OK);
}

/* ---- hybrid sharding: shard and replica groups ----

   The test works the groups out itself: shard group of rank r under shard size G is
   r / G * G .. r / G * G + G - 1, its replica group r % G, r % G + G, ...; a group's
   ranks (and the chunks of reduce_scatter and all_gather) in world order. */

static const zero_group grp_kinds[] = {ZERO_GROUP_SHARD, ZERO_GROUP_REPLICA, ZERO_GROUP_WORLD};
static const char *const grp_names[] = {"world", "shard", "replica"};

static const char *op_name(zero_op op) {
    return op == ZERO_OP_SUM ? "sum" : op == ZERO_OP_AVG ? "avg" : op == ZERO_OP_MAX ? "max" : "min";
}

/* The world ranks of rank R's group g; returns how many, *me: R's place among them,
   *gid: which group of its kind it is. */
static int grp_members(int W, int G, int R, zero_group g, int *members, int *me, int *gid) {
    int i, n;
    if (g == ZERO_GROUP_SHARD) {
        n = G;
        for (i = 0; i < n; i++) members[i] = R / G * G + i;
        *me = R % G;
        *gid = R / G;
    } else if (g == ZERO_GROUP_REPLICA) {
        n = W / G;
        for (i = 0; i < n; i++) members[i] = R % G + i * G;
        *me = R / G;
        *gid = R % G;
    } else {
        n = W;
        for (i = 0; i < n; i++) members[i] = i;
        *me = R;
        *gid = 0;
    }
    return n;
}

/* Input element i of world rank `rank` in call cfg; each group of a kind adds its own
   offset, so data that crossed into another group cannot come out right by chance. */
static double gin(uint64_t seed, int cfg, int gid, int rank, size_t i, zero_dtype dt) {
    return ref_to(dt, gen(seed, cfg, rank, i, dt) + 64.0 * gid);
}

/* The documented reduction over n contributions in group order, emulated in float:
   AVG scales each by 1/n (a float) and rounds the product to the dtype; every partial
   sum is rounded to the dtype (fp32: the float addition itself); max/min exact. */
static double gref_reduce(zero_dtype dt, zero_op op, const double *x, int n) {
    float pre = 1.0f / (float)n, acc;
    int s;
    if (op == ZERO_OP_MAX || op == ZERO_OP_MIN) {
        double m = x[0];
        for (s = 1; s < n; s++) m = op == ZERO_OP_MAX ? (x[s] > m ? x[s] : m) : (x[s] < m ? x[s] : m);
        return m;
    }
    acc = (float)x[0];
    if (op == ZERO_OP_AVG) {
        float p = acc * pre;
        acc = (float)ref_to(dt, (double)p);
    }
    for (s = 1; s < n; s++) {
        float v = (float)x[s], sum;
        if (op == ZERO_OP_AVG) {
            float p = v * pre;
            v = (float)ref_to(dt, (double)p);
        }
        sum = acc + v;
        acc = (float)ref_to(dt, (double)sum);
    }
    return acc;
}

typedef struct gval_arg {
    uint64_t seed;
    int quick;
    long bad[MAXW], loose[MAXW], checked[MAXW], calls[MAXW];
    char first[MAXW][400];
    /* the early-exit test */
    pthread_mutex_t mu;
    int left, mode;
} gval_arg;

static void gnote(gval_arg *a, int rank, long *counter, const char *fmt, ...) {
    va_list ap;
    if ((*counter)++ == 0 && a->first[rank][0] == 0) {
        va_start(ap, fmt);
        vsnprintf(a->first[rank], sizeof a->first[rank], fmt, ap);
        va_end(ap);
    }
}

/* One collective over group grp under shard size G, checked on this rank. plain: a world
   call goes through the plain collective instead of the group_ one. cap: bytes of each
   buffer. Returns the call's result. */
static zero_result gcoll_one(const zero_backend *b, gval_arg *a, int cfg, int G, zero_group grp,
                             zero_dtype dt, size_t count, int inplace, int kind, zero_op op, int plain,
                             unsigned char *sendb, unsigned char *recvb, size_t cap) {
    int W = b->world, R = b->rank, members[MAXW], me, gid, n, s;
    size_t esz = zero_dtype_size(dt), i, n_out, n_in;
    const void *send = sendb;
    void *recv = recvb;
    zero_error err;
    zero_result res;
    double xs[MAXW];
    n = grp_members(W, G, R, grp, members, &me, &gid);
    n_in = kind == K_RS ? (size_t)n * count : count;
    n_out = kind == K_AG ? (size_t)n * count : count;
    memset(sendb, 0x5A, cap);
    memset(recvb, 0xA5, cap);
    memset(&err, 0, sizeof err);
    if (kind == K_AG && inplace) {
        send = recvb + (size_t)me * count * esz;
        for (i = 0; i < count; i++) put(dt, recvb, (size_t)me * count + i, gin(a->seed, cfg, gid, R, i, dt));
    } else {
        for (i = 0; i < n_in; i++) put(dt, sendb, i, gin(a->seed, cfg, gid, R, i, dt));
        if (inplace) recv = kind == K_RS ? sendb + (size_t)me * count * esz : sendb;
    }
    if (plain && grp == ZERO_GROUP_WORLD)
        res = kind == K_RS ? b->reduce_scatter(b->ctx, send, recv, count, dt, op, ZERO_STREAM_COMM, &err)
            : kind == K_AG ? b->all_gather(b->ctx, send, recv, count, dt, ZERO_STREAM_COMM, &err)
                           : b->all_reduce(b->ctx, send, recv, count, dt, op, ZERO_STREAM_COMM, &err);
    else
        res = kind == K_RS ? b->group_reduce_scatter(b->ctx, grp, send, recv, count, dt, op, ZERO_STREAM_COMM, &err)
            : kind == K_AG ? b->group_all_gather(b->ctx, grp, send, recv, count, dt, ZERO_STREAM_COMM, &err)
                           : b->group_all_reduce(b->ctx, grp, send, recv, count, dt, op, ZERO_STREAM_COMM, &err);
    a->calls[R]++;
    if (res != ZERO_OK) {
        gnote(a, R, &a->bad[R], "world %d G %d rank %d: %s group %s %s count %zu: %s", W, G, R,
              grp_names[grp], knames[kind], zero_dtype_name(dt), count, err.msg);
        return res;
    }
    for (i = 0; i < n_out; i++) {
        double got = get(dt, recv, i), want;
        a->checked[R]++;
        if (kind == K_AG) {
            want = gin(a->seed, cfg, gid, members[i / count], i % count, dt);
        } else {
            size_t j = kind == K_RS ? (size_t)me * count + i : i;
            double exact = 0, mag = 0;
            for (s = 0; s < n; s++) {
                xs[s] = gin(a->seed, cfg, gid, members[s], j, dt);
                exact += xs[s];
                mag += fabs(xs[s]);
            }
            want = gref_reduce(dt, op, xs, n);
            if (op == ZERO_OP_AVG) {
                exact /= n;
                mag /= n;
            }
            /* fp32 against the double sum: within the rounding of n - 1 additions (and the
               n scalings of AVG), in units of the terms' size */
            if (dt == ZERO_DTYPE_FP32 && (op == ZERO_OP_SUM || op == ZERO_OP_AVG) &&
                !(fabs(got - exact) <= (n + 1) * eps_of(dt) * mag))
                gnote(a, R, &a->loose[R], "world %d G %d %s group %s %s: %.17g is %.3g from the double "
                      "result %.17g", W, G, grp_names[grp], knames[kind], op_name(op), got,
                      fabs(got - exact), exact);
        }
        if (!same(got, want)) {
            gnote(a, R, &a->bad[R], "world %d G %d rank %d: %s group %s %s %s count %zu %s: element %zu "
                  "got %.17g want %.17g", W, G, R, grp_names[grp], knames[kind], zero_dtype_name(dt),
                  kind == K_AG ? "-" : op_name(op), count, inplace ? "in place" : "out of place",
                  i, got, want);
            break;
        }
    }
    if (!inplace) { /* nothing written past the result */
        const unsigned char *tail = (const unsigned char *)recv + n_out * esz;
        for (i = 0; i < 16 * esz; i++)
            if (tail[i] != 0xA5) {
                gnote(a, R, &a->bad[R], "%s group %s wrote past its %zu result elements", grp_names[grp],
                      knames[kind], n_out);
                break;
            }
    } else if (kind == K_RS) { /* the other chunks of send are left alone */
        for (i = 0; i < n_in; i++)
            if ((i / count) != (size_t)me && !same(get(dt, sendb, i), gin(a->seed, cfg, gid, R, i, dt))) {
                gnote(a, R, &a->bad[R], "in-place %s group reduce_scatter changed element %zu of send",
                      grp_names[grp], i);
                break;
            }
    } else if (kind == K_AG) {
        const unsigned char *tail = recvb + n_out * esz;
        for (i = 0; i < 16 * esz; i++)
            if (tail[i] != 0xA5) {
                gnote(a, R, &a->bad[R], "in-place %s group all_gather wrote past its result", grp_names[grp]);
                break;
            }
    }
    return ZERO_OK;
}

#define GCAP ((size_t)(MAXW * 77 + 64) * 4)

static zero_result run_gvals(const zero_backend *b, void *varg) {
    static const zero_dtype dts[] = {ZERO_DTYPE_FP32, ZERO_DTYPE_FP16, ZERO_DTYPE_BF16};
    static const size_t counts[] = {0, 1, 7, 77};
    static const zero_op ops[] = {ZERO_OP_SUM, ZERO_OP_AVG, ZERO_OP_MAX, ZERO_OP_MIN};
    gval_arg *a = (gval_arg *)varg;
    int W = b->world, R = b->rank, G, gi, di, ci, inplace, kind, oi, cfg = 0;
    int n_counts = a->quick ? 3 : 4;
    unsigned char *sendb = NULL, *recvb = NULL;
    zero_error err;
    zero_result res;
    if ((res = b->alloc(b->ctx, ZERO_MEM_DEVICE, GCAP, (void **)&sendb, &err)) != ZERO_OK) return res;
    if ((res = b->alloc(b->ctx, ZERO_MEM_DEVICE, GCAP, (void **)&recvb, &err)) != ZERO_OK) return res;
    /* the world group needs no groups_init: it is the plain collective */
    gcoll_one(b, a, ++cfg, W, ZERO_GROUP_WORLD, ZERO_DTYPE_FP32, 5, 0, K_AR, ZERO_OP_SUM, 0, sendb, recvb, GCAP);
    for (G = 1; G <= W; G++) {
        if (W % G) continue;
        if ((res = b->groups_init(b->ctx, G, &err)) != ZERO_OK) {
            gnote(a, R, &a->bad[R], "world %d: groups_init(%d): %s", W, G, err.msg);
            break;
        }
        for (gi = 0; gi < 3; gi++)
            for (di = 0; di < 3; di++)
                for (ci = 0; ci < n_counts; ci++)
                    for (inplace = 0; inplace < 2; inplace++)
                        for (kind = K_RS; kind <= K_AR; kind++)
                            for (oi = 0; oi < (kind == K_AG ? 1 : 4); oi++) {
                                /* MIN once per group kind: bf16, 7 elements */
                                if (oi == 3 && !(di == 2 && ci == 2)) continue;
                                gcoll_one(b, a, ++cfg, G, grp_kinds[gi], dts[di], counts[ci], inplace,
                                          kind, ops[oi], 0, sendb, recvb, GCAP);
                            }
    }
    b->free(b->ctx, ZERO_MEM_DEVICE, sendb);
    b->free(b->ctx, ZERO_MEM_DEVICE, recvb);
    return ZERO_OK;
}

/* even: every rank made the same calls */
static void gval_report(gval_arg *a, int W, int even, const char *what, zero_result res, const zero_error *err) {
    long bad = 0, loose = 0, checked = 0;
    int s;
    CHECKF(res == ZERO_OK, "%s, world %d: %s", what, W, err->msg);
    for (s = 0; s < W; s++) {
        bad += a->bad[s];
        loose += a->loose[s];
        checked += a->checked[s];
        if (a->first[s][0]) fprintf(stderr, "%s, world %d rank %d: %s\n", what, W, s, a->first[s]);
    }
    CHECKF(bad == 0, "%s, world %d: %ld wrong results or failed calls", what, W, bad);
    CHECKF(loose == 0, "%s, world %d: %ld fp32 results outside the rounding bound", what, W, loose);
    for (s = 1; s < W && even; s++) CHECK_EQ_INT(a->calls[s], a->calls[0]);
    CHECK(checked > 0);
}

static void test_group_values(void) {
    static const int worlds[] = {1, 2, 4, 6, 8};
    static gval_arg a;
    int wi, s;
    long calls = 0, checked = 0;
    setenv("ZERO_TIMEOUT_S", "30", 1); /* a hang fails in 30 s, not 300 */
    for (wi = 0; wi < 5; wi++) {
        zero_error err;
        zero_result res;
        memset(&a, 0, sizeof a);
        a.seed = zt_rand_u64();
        a.quick = getenv("ZERO_TEST_QUICK") && atoi(getenv("ZERO_TEST_QUICK"));
        memset(&err, 0, sizeof err);
        res = zero_host_run(worlds[wi], run_gvals, &a, &err);
        gval_report(&a, worlds[wi], 1, "group collectives", res, &err);
        for (s = 0; s < worlds[wi]; s++) {
            calls += a.calls[s];
            checked += a.checked[s];
        }
    }
    unsetenv("ZERO_TIMEOUT_S");
    printf("group collectives, worlds 1 2 4 6 8, every shard size: %ld calls, %ld elements checked\n",
           calls, checked);
}

/* Groups run their own numbers of collectives between world collectives: a group
   collective involves only its members. World 8, shard size 4: shard group 0 runs three
   all_reduces, replica group 1 two reduce_scatters and replica group 2 one all_gather,
   the others none; the world collectives around them mix plain and group_ calls. */
static zero_result run_gindep(const zero_backend *b, void *varg) {
    gval_arg *a = (gval_arg *)varg;
    int R = b->rank, G = 4, i, cfg;
    unsigned char *sendb = NULL, *recvb = NULL;
    zero_error err;
    zero_result res;
    if ((res = b->alloc(b->ctx, ZERO_MEM_DEVICE, GCAP, (void **)&sendb, &err)) != ZERO_OK) return res;
    if ((res = b->alloc(b->ctx, ZERO_MEM_DEVICE, GCAP, (void **)&recvb, &err)) != ZERO_OK) return res;
    if ((res = b->groups_init(b->ctx, G, &err)) != ZERO_OK) {
        gnote(a, R, &a->bad[R], "groups_init(%d): %s", G, err.msg);
        goto out;
    }
    gcoll_one(b, a, 1, G, ZERO_GROUP_WORLD, ZERO_DTYPE_FP32, 13, 0, K_AR, ZERO_OP_SUM, R & 1, sendb, recvb, GCAP);
    cfg = 100;
    if (R / G == 0)
        for (i = 0; i < 3; i++)
            gcoll_one(b, a, cfg + i, G, ZERO_GROUP_SHARD, ZERO_DTYPE_FP32, 9, i == 1, K_AR, ZERO_OP_SUM, 0, sendb,
                      recvb, GCAP);
    if (R % G == 1)
        for (i = 0; i < 2; i++)
            gcoll_one(b, a, cfg + 10 + i, G, ZERO_GROUP_REPLICA, ZERO_DTYPE_BF16, 5, 0, K_RS, ZERO_OP_AVG, 0,
                      sendb, recvb, GCAP);
    if (R % G == 2)
        gcoll_one(b, a, cfg + 20, G, ZERO_GROUP_REPLICA, ZERO_DTYPE_FP16, 3, 1, K_AG, ZERO_OP_SUM, 0, sendb,
                  recvb, GCAP);
    gcoll_one(b, a, 2, G, ZERO_GROUP_WORLD, ZERO_DTYPE_FP16, 11, 0, K_AR, ZERO_OP_SUM, !(R & 1), sendb, recvb,
              GCAP);
    gcoll_one(b, a, 3, G, ZERO_GROUP_WORLD, ZERO_DTYPE_FP32, 3, 0, K_AG, ZERO_OP_SUM, R < 4, sendb, recvb, GCAP);
    /* and the groups every rank is in, after the uneven stretch */
    gcoll_one(b, a, 4, G, ZERO_GROUP_SHARD, ZERO_DTYPE_FP32, 6, 0, K_RS, ZERO_OP_MAX, 0, sendb, recvb, GCAP);
    gcoll_one(b, a, 5, G, ZERO_GROUP_REPLICA, ZERO_DTYPE_BF16, 6, 0, K_AR, ZERO_OP_SUM, 0, sendb, recvb, GCAP);
out:
    b->free(b->ctx, ZERO_MEM_DEVICE, sendb);
    b->free(b->ctx, ZERO_MEM_DEVICE, recvb);
    return ZERO_OK;
}

/* Ranks that finished their own group's collectives and returned are no reason to fail
   another group's collective. mode 0: world 6, shard size 2; shard group 1 (ranks 2, 3)
   stays, the other shard groups run one shard all_reduce and return. mode 1: world 4,
   shard size 2; replica group 1 (ranks 1, 3) stays, replica group 0 runs one replica
   all_reduce and returns. Of the staying group, the first rank waits in a collective
   while the others leave; the second arrives only after they left. */
static void gexit_sleep(double s) {
    struct timespec ts;
    ts.tv_sec = (time_t)s;
    ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
    nanosleep(&ts, NULL);
}

static zero_result run_gexit(const zero_backend *b, void *varg) {
    gval_arg *a = (gval_arg *)varg;
    int R = b->rank, W = b->world, G = 2, left = 0, tries;
    zero_group grp = a->mode ? ZERO_GROUP_REPLICA : ZERO_GROUP_SHARD;
    int gid = a->mode ? R % G : R / G, me = a->mode ? R / G : R % G;
    unsigned char *sendb = NULL, *recvb = NULL;
    zero_error err;
    zero_result res;
    if ((res = b->alloc(b->ctx, ZERO_MEM_DEVICE, GCAP, (void **)&sendb, &err)) != ZERO_OK) return res;
    if ((res = b->alloc(b->ctx, ZERO_MEM_DEVICE, GCAP, (void **)&recvb, &err)) != ZERO_OK) return res;
    if ((res = b->groups_init(b->ctx, G, &err)) != ZERO_OK) {
        gnote(a, R, &a->bad[R], "groups_init(%d): %s", G, err.msg);
        goto out;
    }
    if (gid != 1) {
        gcoll_one(b, a, 1, G, grp, ZERO_DTYPE_FP32, 8, 0, K_AR, ZERO_OP_SUM, 0, sendb, recvb, GCAP);
        pthread_mutex_lock(&a->mu);
        a->left++;
        pthread_mutex_unlock(&a->mu);
        goto out; /* leaves fn right after */
    }
    if (me == 1) { /* arrive only once every leaving rank is on its way out */
        for (tries = 0; tries < 2000 && left < W - 2; tries++) {
            gexit_sleep(0.005);
            pthread_mutex_lock(&a->mu);
            left = a->left;
            pthread_mutex_unlock(&a->mu);
        }
        gexit_sleep(0.1);
    }
    gcoll_one(b, a, 2, G, grp, ZERO_DTYPE_FP32, 8, 0, K_AR, ZERO_OP_SUM, 0, sendb, recvb, GCAP);
    gcoll_one(b, a, 3, G, grp, ZERO_DTYPE_BF16, 5, 1, K_RS, ZERO_OP_SUM, 0, sendb, recvb, GCAP);
    gcoll_one(b, a, 4, G, grp, ZERO_DTYPE_FP16, 5, 0, K_AG, ZERO_OP_SUM, 0, sendb, recvb, GCAP);
out:
    b->free(b->ctx, ZERO_MEM_DEVICE, sendb);
    b->free(b->ctx, ZERO_MEM_DEVICE, recvb);
    return ZERO_OK;
}

static void test_group_independence(void) {
    static gval_arg a;
    zero_error err;
    zero_result res;
    int mode;
    setenv("ZERO_TIMEOUT_S", "30", 1); /* a hang fails in 30 s, not 300 */
    memset(&a, 0, sizeof a);
    a.seed = zt_rand_u64();
    res = zero_host_run(8, run_gindep, &a, &err);
    gval_report(&a, 8, 0, "uneven group collectives", res, &err);
    CHECK_EQ_INT(a.calls[0], 3 + 5);  /* shard group 0: three more */
    CHECK_EQ_INT(a.calls[5], 2 + 5);  /* replica group 1 */
    CHECK_EQ_INT(a.calls[6], 1 + 5);  /* replica group 2 */
    CHECK_EQ_INT(a.calls[7], 5);

    for (mode = 0; mode < 2; mode++) {
        int W = mode ? 4 : 6, s, stay[2], n_left = 0;
        long bad = 0;
        memset(&a, 0, sizeof a);
        a.seed = zt_rand_u64();
        a.mode = mode;
        stay[0] = mode ? 1 : 2;
        stay[1] = 3;
        pthread_mutex_init(&a.mu, NULL);
        res = zero_host_run(W, run_gexit, &a, &err);
        pthread_mutex_destroy(&a.mu);
        CHECKF(res == ZERO_OK, "%s group: ranks of other groups left: %s", mode ? "replica" : "shard", err.msg);
        for (s = 0; s < W; s++) {
            bad += a.bad[s];
            if (a.first[s][0]) fprintf(stderr, "early exit, rank %d: %s\n", s, a.first[s]);
            if (s != stay[0] && s != stay[1]) {
                n_left++;
                CHECK_EQ_INT(a.calls[s], 1);
            }
        }
        CHECK(bad == 0);
        CHECK_EQ_INT(a.calls[stay[0]], 3);
        CHECK_EQ_INT(a.calls[stay[1]], 3);
        CHECK_EQ_INT(a.left, n_left);
    }
    unsetenv("ZERO_TIMEOUT_S");
}

/* Remaking the groups with another shard size. The uneven stretch first: shard group 0
   ran three collectives and replica group 0 one that the others did not, so the new
   groups must not inherit the old groups' call counts. */
static zero_result run_greinit(const zero_backend *b, void *varg) {
    static const int sizes[] = {2, 4, 1, 2, 4};
    gval_arg *a = (gval_arg *)varg;
    int R = b->rank, k, i, G, cfg;
    unsigned char *sendb = NULL, *recvb = NULL;
    zero_error err;
    zero_result res;
    if ((res = b->alloc(b->ctx, ZERO_MEM_DEVICE, GCAP, (void **)&sendb, &err)) != ZERO_OK) return res;
    if ((res = b->alloc(b->ctx, ZERO_MEM_DEVICE, GCAP, (void **)&recvb, &err)) != ZERO_OK) return res;
    for (k = 0; k < 5; k++) {
        G = sizes[k];
        if ((res = b->groups_init(b->ctx, G, &err)) != ZERO_OK) {
            gnote(a, R, &a->bad[R], "groups_init(%d) (#%d): %s", G, k + 1, err.msg);
            break;
        }
        if (k == 0) {
            if (R / G == 0)
                for (i = 0; i < 3; i++)
                    gcoll_one(b, a, 50 + i, G, ZERO_GROUP_SHARD, ZERO_DTYPE_FP32, 4, 0, K_AR,
                              ZERO_OP_SUM, 0, sendb, recvb, GCAP);
            if (R % G == 0)
                gcoll_one(b, a, 60, G, ZERO_GROUP_REPLICA, ZERO_DTYPE_FP32, 4, 0, K_AG, ZERO_OP_SUM, 0, sendb,
                          recvb, GCAP);
        }
        cfg = 1000 * (k + 1);
        if (gcoll_one(b, a, cfg + 1, G, ZERO_GROUP_SHARD, ZERO_DTYPE_FP32, 7, 0, K_AR, ZERO_OP_SUM, 0, sendb,
                      recvb, GCAP) != ZERO_OK ||
            gcoll_one(b, a, cfg + 2, G, ZERO_GROUP_REPLICA, ZERO_DTYPE_BF16, 5, 1, K_RS, ZERO_OP_AVG, 0, sendb,
                      recvb, GCAP) != ZERO_OK ||
            gcoll_one(b, a, cfg + 3, G, ZERO_GROUP_SHARD, ZERO_DTYPE_FP16, 3, 0, K_AG, ZERO_OP_SUM, 0, sendb,
                      recvb, GCAP) != ZERO_OK ||
            gcoll_one(b, a, cfg + 4, G, ZERO_GROUP_WORLD, ZERO_DTYPE_FP32, 6, 0, K_AR, ZERO_OP_MAX, 0, sendb,
                      recvb, GCAP) != ZERO_OK)
            break;
    }
    b->free(b->ctx, ZERO_MEM_DEVICE, sendb);
    b->free(b->ctx, ZERO_MEM_DEVICE, recvb);
    return ZERO_OK;
}

/* Every rank makes the same calls: groups_init(G1), collectives, groups_init(G2),
   collectives, ... over the shard sizes of world 6 (one of them twice in a row). */
static zero_result run_greinit_even(const zero_backend *b, void *varg) {
    static const int sizes[] = {3, 2, 6, 1, 3, 3};
    gval_arg *a = (gval_arg *)varg;
    int R = b->rank, k, gi;
    unsigned char *sendb = NULL, *recvb = NULL;
    zero_error err;
    zero_result res;
    if ((res = b->alloc(b->ctx, ZERO_MEM_DEVICE, GCAP, (void **)&sendb, &err)) != ZERO_OK) return res;
    if ((res = b->alloc(b->ctx, ZERO_MEM_DEVICE, GCAP, (void **)&recvb, &err)) != ZERO_OK) return res;
    for (k = 0; k < 6; k++) {
        if ((res = b->groups_init(b->ctx, sizes[k], &err)) != ZERO_OK) {
            gnote(a, R, &a->bad[R], "groups_init(%d) (#%d): %s", sizes[k], k + 1, err.msg);
            break;
        }
        for (gi = 0; gi < 3; gi++) {
            int cfg = 100 * k + 10 * gi;
            gcoll_one(b, a, cfg + 1, sizes[k], grp_kinds[gi], ZERO_DTYPE_FP16, 9, 0, K_AR, ZERO_OP_AVG, 0, sendb,
                      recvb, GCAP);
            gcoll_one(b, a, cfg + 2, sizes[k], grp_kinds[gi], ZERO_DTYPE_FP32, 4, 1, K_RS, ZERO_OP_SUM, 0, sendb,
                      recvb, GCAP);
            gcoll_one(b, a, cfg + 3, sizes[k], grp_kinds[gi], ZERO_DTYPE_BF16, 2, 1, K_AG, ZERO_OP_SUM, 0, sendb,
                      recvb, GCAP);
        }
    }
    b->free(b->ctx, ZERO_MEM_DEVICE, sendb);
    b->free(b->ctx, ZERO_MEM_DEVICE, recvb);
    return ZERO_OK;
}

static void test_group_reinit(void) {
    static gval_arg a;
    zero_error err;
    zero_result res;
    memset(&a, 0, sizeof a);
    a.seed = zt_rand_u64();
    res = zero_host_run(6, run_greinit_even, &a, &err);
    gval_report(&a, 6, 1, "groups remade", res, &err);
    CHECK_EQ_INT(a.calls[0], 6 * 9);

    /* an uneven stretch before remaking them; a mismatch here would stop every rank at
       once, so the ZERO_TIMEOUT_S below only bounds a hang */
    setenv("ZERO_TIMEOUT_S", "10", 1);
    memset(&a, 0, sizeof a);
    a.seed = zt_rand_u64();
    res = zero_host_run(4, run_greinit, &a, &err);
    unsetenv("ZERO_TIMEOUT_S");
    gval_report(&a, 4, 0, "groups remade after uneven group calls", res, &err);
    CHECK_EQ_INT(a.calls[1], 3 + 5 * 4);
    CHECK_EQ_INT(a.calls[3], 5 * 4);
}

/* ---- group errors ---- */

enum {
    GE_SIZE,          /* every rank: groups_init(gsz[rank]) */
    GE_BEFORE_INIT,   /* rank 0: a shard all_reduce without groups; the others groups_init(1) */
    GE_BEFORE_INIT2,  /* every rank: a replica all_gather without groups */
    GE_SKIP_MISMATCH, /* shard size 2: rank 1 skips the shard all_reduce, calls a shard all_gather */
    GE_SKIP_TIMEOUT,  /* shard size 2: rank 1 skips the shard all_reduce, waits in a world one */
    GE_BAD_GROUP,     /* shard size 2: rank 0 names group gsz[0] */
    GE_MEMBER_LEFT    /* shard size 2: rank 1 returns while rank 0 waits in a shard all_reduce */
};

typedef struct gerr_arg {
    int scenario, gsz[MAXW];
    zero_result res[MAXW];
    zero_msg item[MAXW];
    char msg[MAXW][1024];
    double took[MAXW];
    int reached[MAXW];   /* how many calls returned ZERO_OK */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int flag;
} gerr_arg;

static void gerr_signal(gerr_arg *a) {
    pthread_mutex_lock(&a->mu);
    a->flag = 1;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
}

static void gerr_wait(gerr_arg *a) {
    struct timespec ts;
    pthread_mutex_lock(&a->mu);
    timespec_get(&ts, TIME_UTC);
    ts.tv_sec += 20; /* a safety net for this test */
    while (!a->flag)
        if (pthread_cond_timedwait(&a->cv, &a->mu, &ts) != 0) break;
    pthread_mutex_unlock(&a->mu);
}

/* The calls of a scenario in order; the first failure is recorded (result, item,
   message, seconds since the rank started) and ends fn with that result. */
static zero_result run_gerr(const zero_backend *b, void *varg) {
    gerr_arg *a = (gerr_arg *)varg;
    int R = b->rank;
    float x[64];
    zero_error err;
    zero_result res = ZERO_OK;
    double t0 = zt_now_s();
    const zero_stream_id cs = ZERO_STREAM_COMM;
    const zero_dtype f32 = ZERO_DTYPE_FP32;
    memset(x, 0, sizeof x);
    memset(&err, 0, sizeof err);
#define GSTEP(call)                   \
    do {                              \
        if ((res = (call)) != ZERO_OK) \
            goto done;                \
        a->reached[R]++;              \
    } while (0)
    switch (a->scenario) {
    case GE_SIZE:
        GSTEP(b->groups_init(b->ctx, a->gsz[R], &err));
        GSTEP(b->group_all_reduce(b->ctx, ZERO_GROUP_SHARD, x, x, 8, f32, ZERO_OP_SUM, cs, &err));
        break;
    case GE_BEFORE_INIT:
        if (R == 0) GSTEP(b->group_all_reduce(b->ctx, ZERO_GROUP_SHARD, x, x, 8, f32, ZERO_OP_SUM, cs, &err));
        else GSTEP(b->groups_init(b->ctx, 1, &err));
        break;
    case GE_BEFORE_INIT2:
        GSTEP(b->group_all_gather(b->ctx, ZERO_GROUP_REPLICA, x, x + 8, 8, f32, cs, &err));
        break;
    case GE_SKIP_MISMATCH:
        GSTEP(b->groups_init(b->ctx, 2, &err));
        if (R != 1) GSTEP(b->group_all_reduce(b->ctx, ZERO_GROUP_SHARD, x, x, 8, f32, ZERO_OP_SUM, cs, &err));
        else GSTEP(b->group_all_gather(b->ctx, ZERO_GROUP_SHARD, x, x + 8, 8, f32, cs, &err));
        GSTEP(b->all_reduce(b->ctx, x, x, 8, f32, ZERO_OP_SUM, cs, &err));
        break;
    case GE_SKIP_TIMEOUT:
        GSTEP(b->groups_init(b->ctx, 2, &err));
        if (R == 0) {
            gerr_signal(a);
            GSTEP(b->group_all_reduce(b->ctx, ZERO_GROUP_SHARD, x, x, 8, f32, ZERO_OP_SUM, cs, &err));
        } else {
            gerr_wait(a);
            gexit_sleep(0.3); /* rank 0's deadline passes first: its message is the one kept */
            if (R != 1)
                GSTEP(b->group_all_reduce(b->ctx, ZERO_GROUP_SHARD, x, x, 8, f32, ZERO_OP_SUM, cs, &err));
        }
        GSTEP(b->all_reduce(b->ctx, x, x, 8, f32, ZERO_OP_SUM, cs, &err));
        break;
    case GE_BAD_GROUP:
        GSTEP(b->groups_init(b->ctx, 2, &err));
        GSTEP(b->group_all_reduce(b->ctx, R == 0 ? (zero_group)a->gsz[0] : ZERO_GROUP_SHARD, x, x, 8, f32,
                                  ZERO_OP_SUM, cs, &err));
        break;
    case GE_MEMBER_LEFT:
        GSTEP(b->groups_init(b->ctx, 2, &err));
        if (R == 1) return ZERO_OK;
        GSTEP(b->group_all_reduce(b->ctx, ZERO_GROUP_SHARD, x, x, 8, f32, ZERO_OP_SUM, cs, &err));
        break;
    default: break;
    }
#undef GSTEP
done:
    a->took[R] = zt_now_s() - t0;
    a->res[R] = res;
    a->item[R] = res == ZERO_OK ? ZERO_MSG_NONE : err.item;
    snprintf(a->msg[R], sizeof a->msg[R], "%s", res == ZERO_OK ? "" : err.msg);
    return res;
}

static zero_result gerr_run(gerr_arg *a, int scenario, int world, const int *gsz, zero_error *err) {
    zero_result res;
    int s;
    memset(a, 0, sizeof *a);
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->cv, NULL);
    a->scenario = scenario;
    for (s = 0; s < world && gsz; s++) a->gsz[s] = gsz[s];
    memset(err, 0, sizeof *err);
    res = zero_host_run(world, run_gerr, a, err);
    pthread_cond_destroy(&a->cv);
    pthread_mutex_destroy(&a->mu);
    return res;
}

static void test_group_errors(void) {
    static gerr_arg a;
    static const int bad_sizes[] = {3, 0, 8, -1, 5};
    zero_error err;
    zero_result res;
    int s, k;
    char want[128];
    /* 10 s: the fail-fast cases must end far sooner; it only bounds a hang */
    setenv("ZERO_TIMEOUT_S", "10", 1);

    /* a shard size that does not divide the world, on every rank */
    for (k = 0; k < 5; k++) {
        int gsz[4];
        for (s = 0; s < 4; s++) gsz[s] = bad_sizes[k];
        res = gerr_run(&a, GE_SIZE, 4, gsz, &err);
        CHECK_EQ_INT(res, ZERO_ERR_INVALID_ARG);
        snprintf(want, sizeof want, "groups_init: shard size %d does not divide world 4", bad_sizes[k]);
        for (s = 0; s < 4; s++) {
            CHECK_EQ_INT(a.res[s], ZERO_ERR_INVALID_ARG);
            CHECK_EQ_INT(a.item[s], ZERO_MSG_BAD_ARG);
            CHECK_STR_CONTAINS(a.msg[s], want);
            CHECKF(a.took[s] < 3.0, "G %d rank %d: %.3f s", bad_sizes[k], s, a.took[s]);
        }
        CHECK_STR_CONTAINS(err.msg, want);
    }
    /* on one rank only: the others fail at once, with that rank's reason */
    {
        int gsz[4] = {2, 2, 3, 2};
        res = gerr_run(&a, GE_SIZE, 4, gsz, &err);
        CHECK(res != ZERO_OK);
        CHECK_EQ_INT(a.item[2], ZERO_MSG_BAD_ARG);
        CHECK_STR_CONTAINS(a.msg[2], "shard size 3 does not divide world 4");
        for (s = 0; s < 4; s++) {
            CHECKF(a.took[s] < 3.0, "rank %d failed after %.3f s", s, a.took[s]);
            CHECK_EQ_INT(a.reached[s], 0);
            if (s == 2) continue;
            CHECK_EQ_INT(a.item[s], ZERO_MSG_HOST_COLLECTIVE_MISMATCH);
            CHECK_STR_CONTAINS(a.msg[s], "rank 2 called groups_init #1 (shard size 3) with invalid arguments");
        }
        CHECK_STR_CONTAINS(err.msg, "shard size 3 does not divide world 4");
    }
    /* different valid shard sizes: a mismatch naming both */
    {
        int gsz[4] = {2, 2, 4, 4};
        res = gerr_run(&a, GE_SIZE, 4, gsz, &err);
        CHECK_EQ_INT(res, ZERO_ERR_STATE);
        CHECK_EQ_INT(err.item, ZERO_MSG_HOST_COLLECTIVE_MISMATCH);
        for (s = 0; s < 4; s++) {
            CHECK_EQ_INT(a.item[s], ZERO_MSG_HOST_COLLECTIVE_MISMATCH);
            CHECK_STR_CONTAINS(a.msg[s], "rank 0 called groups_init #1 (shard size 2) while rank 2 called "
                                         "groups_init #1 (shard size 4)");
            CHECKF(a.took[s] < 3.0, "rank %d failed after %.3f s", s, a.took[s]);
        }
    }
    /* a group collective before groups_init */
    res = gerr_run(&a, GE_BEFORE_INIT, 3, NULL, &err);
    CHECK_EQ_INT(res, ZERO_ERR_INVALID_ARG);
    CHECK_EQ_INT(a.item[0], ZERO_MSG_BAD_ARG);
    CHECK_STR_CONTAINS(a.msg[0], "group_all_reduce: the groups are not made (call groups_init first)");
    for (s = 1; s < 3; s++) {
        CHECK_EQ_INT(a.item[s], ZERO_MSG_HOST_COLLECTIVE_MISMATCH);
        CHECK_STR_CONTAINS(a.msg[s], "groups_init first");
        CHECKF(a.took[s] < 3.0, "rank %d failed after %.3f s", s, a.took[s]);
    }
    res = gerr_run(&a, GE_BEFORE_INIT2, 2, NULL, &err);
    CHECK_EQ_INT(res, ZERO_ERR_INVALID_ARG);
    for (s = 0; s < 2; s++) {
        CHECK_EQ_INT(a.item[s], ZERO_MSG_BAD_ARG);
        CHECK_STR_CONTAINS(a.msg[s], "group_all_gather: the groups are not made (call groups_init first)");
    }
    /* a rank that skips a shard-group collective and calls another: a mismatch in the
       shard group; the other shard group's collective completes */
    res = gerr_run(&a, GE_SKIP_MISMATCH, 4, NULL, &err);
    CHECK_EQ_INT(res, ZERO_ERR_STATE);
    for (s = 0; s < 4; s++) {
        CHECK_EQ_INT(a.item[s], ZERO_MSG_HOST_COLLECTIVE_MISMATCH);
        CHECK_STR_CONTAINS(a.msg[s], "rank 0 called all_reduce #1 in the shard group (count 8, fp32, sum) "
                                     "while rank 1 called all_gather #1 in the shard group (count 8, fp32)");
        CHECKF(a.took[s] < 3.0, "rank %d failed after %.3f s", s, a.took[s]);
    }
    CHECK_EQ_INT(a.reached[0], 1);
    CHECK_EQ_INT(a.reached[1], 1);
    /* ranks 2 and 3 finish their shard all_reduce unless the mismatch came first */
    CHECK(a.reached[2] >= 1 && a.reached[3] >= 1 && a.reached[2] <= 2 && a.reached[3] <= 2);
    /* an invalid group value */
    {
        static const int bad_groups[] = {7, ZERO_GROUP_COUNT, -1};
        for (k = 0; k < 3; k++) {
            int gsz[2] = {bad_groups[k], 0};
            res = gerr_run(&a, GE_BAD_GROUP, 2, gsz, &err);
            CHECK_EQ_INT(res, ZERO_ERR_INVALID_ARG);
            CHECK_EQ_INT(a.item[0], ZERO_MSG_BAD_ARG);
            snprintf(want, sizeof want, "group %d", bad_groups[k]);
            CHECK_STR_CONTAINS(a.msg[0], want);
            CHECK_EQ_INT(a.item[1], ZERO_MSG_HOST_COLLECTIVE_MISMATCH);
            CHECK_STR_CONTAINS(a.msg[1], "with invalid arguments");
            CHECKF(a.took[1] < 3.0, "rank 1 failed after %.3f s", a.took[1]);
        }
    }
    /* the partner in a shard group leaves */
    res = gerr_run(&a, GE_MEMBER_LEFT, 4, NULL, &err);
    CHECK_EQ_INT(res, ZERO_ERR_STATE);
    CHECK_EQ_INT(a.item[0], ZERO_MSG_HOST_PEER_EXITED);
    CHECK_STR_CONTAINS(a.msg[0], "rank 1 left (returned ok) while rank 0 waits in all_reduce #1 in the shard group");
    CHECKF(a.took[0] < 3.0, "rank 0 failed after %.3f s", a.took[0]);
    CHECK_STR_CONTAINS(err.msg, "rank 0: rank 1 left");

    /* a rank that skips a shard-group collective and waits elsewhere: a timeout naming the
       shard group and the missing rank */
    setenv("ZERO_TIMEOUT_S", "1", 1);
    res = gerr_run(&a, GE_SKIP_TIMEOUT, 4, NULL, &err);
    CHECK_EQ_INT(res, ZERO_ERR_TIMEOUT);
    for (s = 0; s < 4; s++) {
        CHECK_EQ_INT(a.item[s], ZERO_MSG_HOST_TIMEOUT);
        CHECK_STR_CONTAINS(a.msg[s], "all_reduce #1 in the shard group (count 8, fp32, sum): rank 1 did not "
                                     "arrive within 1 s");
        CHECKF(a.took[s] < 5.0, "rank %d failed after %.3f s", s, a.took[s]);
    }
    CHECKF(a.took[0] > 0.9, "rank 0 gave up after %.3f s", a.took[0]);
    CHECK_EQ_INT(a.reached[0], 1);
    unsetenv("ZERO_TIMEOUT_S");
}

int main(void) {
    double t0 = zt_now_s();
    zt_seed("test_host");
    test_16bit_known();
    test_f16_exhaustive();
    test_bf16_exhaustive();
    test_16bit_random();
    test_collectives();
    test_determinism();
    test_nan();
    test_wide();
    test_mismatch();
    test_leave();
    test_timeout();
    test_run_errors();
    test_bad_calls();
    test_memory();
    test_kernels();
    test_group_values();
    test_group_independence();
    test_group_reinit();
    test_group_errors();
    printf("test_host: %.2f s\n", zt_now_s() - t0);
    test_avg();
    return zt_finish();
}
