/* test_safetensors.c - reading safetensors checkpoints (zero_safetensors_*)
   from files this test writes with its own small writer (the 8-byte
   little-endian header length, the JSON header padded with spaces to a
   multiple of 8, then the data):
   - F32, F16, BF16 and F64 tensors of random bits read into fp32, fp16 and
     bf16, whole, in random ranges and transposed, every element against its
     value decoded from the bits and rounded here in double; zero-element
     tensors, scalars; name order, find, count, metadata; reads from several
     threads at once;
   - sharded checkpoints (model.safetensors.index.json and its shards)
     opened by directory and by index, and a directory with
     model.safetensors alone;
   - malformed input refused with an error naming the file (and the
     tensor): short files, header lengths past the end, bad JSON, data
     offsets that overlap, run backwards, leave a gap or trailing bytes or
     disagree with dtype x shape, unknown dtypes, bad shapes, broken
     indexes, a FIFO (under alarm: opening it must not block), an empty
     directory; an I64 tensor read as fp32;
   - zero_safetensors_bind, then zero_engine_create on host ranks (worlds 1,
     2 and 4, stages 0-3, fp32 and bf16): every master weight equals the
     file's value (F64 rounded to float), transposed (transpose_2d) and
     renamed too; a tensor the rename drops keeps its own init; ignored
     checkpoint tensors; missing and unexpected names listed in one error;
     shape and dtype mismatches; a failed bind changes nothing;
   - the file truncated after bind: create fails on every rank, naming it;
   - the program's memory (zero_tensor.data, stages 0-2) holds the
     checkpoint's values in the compute dtype after create.

   Run alone: make test T=test_safetensors
   `test_safetensors --corpus DIR` writes the seed corpus of
   tests/fuzz_safetensors.c into DIR. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp, mkfifo, truncate, alarm, sigaction in this test */
#ifndef ZERO_TEST_SHARED_IMPL /* (tests/run.sh links tests/zero_impl.c's build instead) */
#define ZERO_IMPLEMENTATION
#endif
#include "zero.h"
#include "zero_test.h"

#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/* ---- a hang fails loudly: the whole test runs under alarm() ---- */

static const char *volatile phase = "start";

static void on_alarm(int sig) {
    static const char head[] = "test_safetensors: timed out (alarm) in: ";
    const char *p = phase;
    (void)sig;
    if (write(2, head, sizeof head - 1) < 0 || write(2, p, strlen(p)) < 0 || write(2, "\n", 1) < 0) _exit(3);
    _exit(3);
}

/* ---- a growing string ---- */

typedef struct sbuf {
    char *p;
    size_t n, cap;
} sbuf;

#if defined(__GNUC__) || defined(__clang__)
static void sb_add(sbuf *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#endif
static void sb_add(sbuf *s, const char *fmt, ...) {
    va_list ap;
    int k;
    va_start(ap, fmt);
    k = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (k < 0) return;
    if (s->n + (size_t)k + 1 > s->cap) {
        size_t cap = (s->n + (size_t)k + 1) * 2;
        char *p = (char *)realloc(s->p, cap);
        if (!p) {
            fprintf(stderr, "test_safetensors: out of memory\n");
            exit(1);
        }
        s->p = p;
        s->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(s->p + s->n, s->cap - s->n, fmt, ap);
    va_end(ap);
    s->n += (size_t)k;
}

/* ---- the writer: the format as its specification states it ---- */

/* path <- len as 8 little-endian bytes, hdr_n bytes of hdr, data_n bytes of data */
static int write_raw(const char *path, uint64_t len, const char *hdr, size_t hdr_n, const void *data, size_t data_n) {
    unsigned char le[8];
    FILE *f = fopen(path, "wb");
    int i, ok;
    for (i = 0; i < 8; i++) le[i] = (unsigned char)(len >> (8 * i));
    if (!f) return 0;
    ok = fwrite(le, 1, 8, f) == 8 && (hdr_n == 0 || fwrite(hdr, 1, hdr_n, f) == hdr_n) &&
         (data_n == 0 || fwrite(data, 1, data_n, f) == data_n);
    return fclose(f) == 0 && ok;
}

/* a header padded with spaces to a multiple of 8, its true length in front; data_n bytes of a pattern behind */
static uint64_t write_json(const char *path, const char *json, size_t data_n) {
    sbuf h = {0};
    unsigned char *data = (unsigned char *)malloc(data_n ? data_n : 1);
    size_t i;
    uint64_t n;
    for (i = 0; i < data_n; i++) data[i] = (unsigned char)(0x3C + i % 7); /* small positive floats */
    sb_add(&h, "%s", json);
    while (h.n % 8) sb_add(&h, " ");
    n = write_raw(path, h.n, h.p, h.n, data, data_n) ? h.n : 0;
    free(h.p);
    free(data);
    return n;
}

static size_t dtype_bytes(const char *dt) {
    if (!strcmp(dt, "F64") || !strcmp(dt, "I64") || !strcmp(dt, "U64")) return 8;
    if (!strcmp(dt, "F32") || !strcmp(dt, "I32") || !strcmp(dt, "U32")) return 4;
    if (!strcmp(dt, "F16") || !strcmp(dt, "BF16") || !strcmp(dt, "I16") || !strcmp(dt, "U16")) return 2;
    return 1; /* U8, I8, BOOL */
}

static int is_float(const char *dt) {
    return !strcmp(dt, "F32") || !strcmp(dt, "F16") || !strcmp(dt, "BF16") || !strcmp(dt, "F64");
}

/* ---- values: bits decoded and rounded in double, independently of zero.h ---- */

/* an IEEE binary number of ebits exponent and mbits mantissa bits */
static double dec_bits(uint64_t bits, int ebits, int mbits) {
    uint64_t m = bits & ((1ull << mbits) - 1);
    int e = (int)((bits >> mbits) & ((1u << ebits) - 1)), bias = (1 << (ebits - 1)) - 1;
    double v;
    if (e == (1 << ebits) - 1) v = m ? NAN : INFINITY;
    else if (e == 0) v = ldexp((double)m, 1 - bias - mbits);
    else v = ldexp((double)(m | (1ull << mbits)), e - bias - mbits);
    return (bits >> (mbits + ebits)) & 1 ? -v : v;
}

static double decode(const char *dt, uint64_t b) {
    if (!strcmp(dt, "F32")) return dec_bits(b, 8, 23);
    if (!strcmp(dt, "F16")) return dec_bits(b, 5, 10);
    if (!strcmp(dt, "BF16")) return dec_bits(b, 8, 7);
    if (!strcmp(dt, "F64")) return dec_bits(b, 11, 52);
    return 0;
}

/* x rounded to the nearest (ties to even) number of that format; past the largest: inf */
static double round_fmt(double x, int ebits, int mbits) {
    int emax = (1 << (ebits - 1)) - 1, emin = 1 - emax, e;
    double a = fabs(x), q, r;
    if (isnan(x) || isinf(x) || x == 0) return x;
    frexp(a, &e); /* a in [2^(e-1), 2^e) */
    e -= 1;
    if (e < emin) e = emin;
    q = ldexp(1.0, e - mbits); /* the spacing of the format at a */
    r = nearbyint(a / q) * q;  /* a / q is exact: a power-of-two scaling */
    if (r > ldexp(2.0 - ldexp(1.0, -mbits), emax)) r = INFINITY;
    return copysign(r, x);
}

static int fmt_e(zero_dtype dt) { return dt == ZERO_DTYPE_FP16 ? 5 : 8; }
static int fmt_m(zero_dtype dt) { return dt == ZERO_DTYPE_FP16 ? 10 : dt == ZERO_DTYPE_BF16 ? 7 : 23; }

static int same_val(double got, double want) {
    return isnan(want) ? isnan(got) : got == want && !signbit(got) == !signbit(want);
}

/* Is got what a dt buffer should hold of the exact value v? F64 into fp16 /
   bf16 may also round through fp32 first (zero_f32_to_f16 / _bf16 of the
   float nearest v). */
static int accept(double got, double v, int from_f64, zero_dtype dt) {
    if (same_val(got, round_fmt(v, fmt_e(dt), fmt_m(dt)))) return 1;
    return from_f64 && dt != ZERO_DTYPE_FP32 && same_val(got, round_fmt(round_fmt(v, 8, 23), fmt_e(dt), fmt_m(dt)));
}

/* element k of a dt buffer, decoded here */
static double out_val(const void *buf, zero_dtype dt, int64_t k) {
    const unsigned char *p = (const unsigned char *)buf;
    if (dt == ZERO_DTYPE_FP32) {
        uint32_t u;
        memcpy(&u, p + 4 * k, 4);
        return dec_bits(u, 8, 23);
    } else {
        uint16_t u;
        memcpy(&u, p + 2 * k, 2);
        return dt == ZERO_DTYPE_FP16 ? dec_bits(u, 5, 10) : dec_bits(u, 8, 7);
    }
}

/* Random bits of a dtype: any bits, specials (zeros, infinities, NaN, the
   edges of fp16 / bf16 / fp32 rounding), and values of moderate exponent;
   tame: finite values of magnitude about 0.004 to 8 only. */
static uint64_t gen_bits(const char *dt, int tame) {
    static const uint32_t sp32[] = {0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00001u,
                                    0x477FE000u, 0x477FF000u, 0x477FEFFFu, 0xC77FF001u, 0x33800000u, 0x33000000u,
                                    0x33000001u, 0x00000001u, 0x807FFFFFu, 0x7F7FFFFFu, 0x3F808000u, 0x3F818000u,
                                    0x3F801000u, 0x3F803000u, 0x387FE000u, 0x38800000u};
    static const double sp64[] = {0.0, -0.0, 1.0 + 0x1p-11, 1.0 + 0x1p-11 + 0x1p-40, -(1.0 + 0x1p-8 + 0x1p-40),
                                  1.0 + 0x1p-8, 0x1.fffffep127, 0x1.fffffefffffffp127, 0x1.ffffffp127, 0x1p-150,
                                  0x1.8p-149, 0x1p-151, 1e-310, 65520.0, 65519.999, -1e300, 0x1p-25, 0x1.000001p-25};
    int cat = (int)zt_rand_int(0, 9);
    uint64_t r = zt_rand_u64(), sign = r >> 63;
    if (!strcmp(dt, "F32")) {
        if (!tame && cat < 2) return r & 0xFFFFFFFFu;
        if (!tame && cat == 9) return sp32[zt_rand_int(0, (long)(sizeof sp32 / sizeof sp32[0]) - 1)];
        return sign << 31 | (uint64_t)(tame ? zt_rand_int(119, 129) : zt_rand_int(100, 144)) << 23 | (r & 0x7FFFFFu);
    }
    if (!strcmp(dt, "F16")) {
        if (!tame) return r & 0xFFFFu;
        return sign << 15 | (uint64_t)zt_rand_int(7, 17) << 10 | (r & 0x3FFu);
    }
    if (!strcmp(dt, "BF16")) {
        if (!tame && cat < 4) return r & 0xFFFFu;
        return sign << 15 | (uint64_t)(tame ? zt_rand_int(119, 129) : zt_rand_int(100, 144)) << 7 | (r & 0x7Fu);
    }
    if (!strcmp(dt, "F64")) {
        if (!tame && cat < 2) return r;
        if (!tame && cat == 9) {
            double d = sp64[zt_rand_int(0, (long)(sizeof sp64 / sizeof sp64[0]) - 1)];
            uint64_t u;
            if (zt_rand_int(0, 5) == 0) d = zt_rand_int(0, 1) ? INFINITY : NAN;
            memcpy(&u, &d, 8);
            return u;
        }
        return sign << 63 | (uint64_t)(tame ? zt_rand_int(1015, 1025) : cat < 5 ? zt_rand_int(1023 - 152, 1023 + 130)
                                                                                  : zt_rand_int(1023 - 27, 1023 + 17))
                                 << 52 |
               (zt_rand_u64() & 0xFFFFFFFFFFFFFull);
    }
    return r;
}

/* ---- a tensor of the test: its bits as the file holds them, its values ---- */

typedef struct rt {
    char name[64];
    const char *dtype;
    int ndim;
    int64_t shape[ZERO_MAX_DIMS];
    int64_t numel;
    unsigned char *bits; /* little-endian, as written */
    size_t bytes;
    double *val;         /* element values (float dtypes) */
    uint64_t begin;      /* its data_offsets begin, as written */
} rt;

static void rt_make(rt *t, const char *name, const char *dtype, int ndim, const int64_t *shape, int tame) {
    size_t es = dtype_bytes(dtype), k;
    int64_t i;
    int d;
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->dtype = dtype;
    t->ndim = ndim;
    t->numel = 1;
    for (d = 0; d < ndim; d++) t->numel *= t->shape[d] = shape[d];
    t->bytes = (size_t)t->numel * es;
    t->bits = (unsigned char *)malloc(t->bytes ? t->bytes : 1);
    t->val = (double *)malloc(sizeof(double) * (size_t)(t->numel ? t->numel : 1));
    if (!t->bits || !t->val) {
        fprintf(stderr, "test_safetensors: out of memory\n");
        exit(1);
    }
    for (i = 0; i < t->numel; i++) {
        uint64_t b = gen_bits(dtype, tame);
        for (k = 0; k < es; k++) t->bits[(size_t)i * es + k] = (unsigned char)(b >> (8 * k));
        t->val[i] = decode(dtype, b);
    }
}

static void rt_free(rt *t, int n) {
    int i;
    for (i = 0; i < n; i++) {
        free(t[i].bits);
        free(t[i].val);
    }
}

/* A valid file: the tensors ts[order[k]] (ts[k] when order is NULL) in this
   order, their data back to back; meta: the members of "__metadata__" as
   JSON text, or NULL. Sets each tensor's begin; returns the header length
   (0: the write failed). */
static uint64_t write_rts(const char *path, rt *ts, const int *order, int n, const char *meta) {
    sbuf h = {0};
    size_t total = 0, at = 0;
    unsigned char *data;
    uint64_t len;
    int k, d;
    for (k = 0; k < n; k++) total += ts[order ? order[k] : k].bytes;
    data = (unsigned char *)malloc(total ? total : 1);
    if (!data) return 0;
    sb_add(&h, "{");
    if (meta && n % 2) sb_add(&h, "\"__metadata__\":{%s},", meta);
    for (k = 0; k < n; k++) {
        rt *t = &ts[order ? order[k] : k];
        const char *sp = k % 3 == 1 ? " " : ""; /* some whitespace for the parser */
        t->begin = at;
        sb_add(&h, "%s%s\"%s\":%s{\"dtype\":%s\"%s\",%s\"shape\":%s[", k ? "," : "", sp, t->name, sp, sp, t->dtype, sp, sp);
        for (d = 0; d < t->ndim; d++) sb_add(&h, "%s%lld", d ? "," : "", (long long)t->shape[d]);
        sb_add(&h, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)at, (unsigned long long)(at + t->bytes));
        memcpy(data + at, t->bits, t->bytes);
        at += t->bytes;
    }
    if (meta && !(n % 2)) sb_add(&h, "%s\"__metadata__\":{%s}", n ? "," : "", meta);
    sb_add(&h, "}");
    while (h.n % 8) sb_add(&h, " ");
    len = write_raw(path, h.n, h.p, h.n, data, total) ? h.n : 0;
    free(h.p);
    free(data);
    return len;
}

/* ---- small checks ---- */

static const char *base_name(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* want: alternatives separated by '|'; msg must contain one of them */
static int has_any(const char *msg, const char *want) {
    char alt[256];
    const char *p = want;
    while (*p) {
        size_t n = strcspn(p, "|");
        snprintf(alt, sizeof alt, "%.*s", (int)n, p);
        if (strstr(msg, alt)) return 1;
        p += n;
        if (*p) p++;
    }
    return 0;
}

static zero_safetensors *open_ok(const char *path, const char *what) {
    zero_safetensors *st = NULL;
    zero_error err;
    zero_result r;
    memset(&err, 0, sizeof err);
    r = zero_safetensors_open(&st, path, &err);
    CHECKF(r == ZERO_OK && st, "%s: open %s: %s", what, path, err.msg);
    return r == ZERO_OK ? st : NULL;
}

/* open must fail with an error that names each of want[] (alternatives by '|') */
static void expect_fail(const char *path, const char *what, const char *want1, const char *want2, const char *want3) {
    zero_safetensors *st = NULL;
    zero_error err;
    zero_result r;
    const char *want[3] = {want1, want2, want3};
    int k;
    memset(&err, 0, sizeof err);
    phase = what;
    r = zero_safetensors_open(&st, path, &err);
    CHECKF(r != ZERO_OK, "%s: %s opened", what, path);
    if (r == ZERO_OK) {
        zero_safetensors_close(st);
        return;
    }
    CHECKF(err.code == r && err.item != ZERO_MSG_NONE && err.msg[0], "%s: code %d item %d msg \"%s\"", what, (int)err.code,
           (int)err.item, err.msg);
    for (k = 0; k < 3; k++)
        if (want[k]) CHECKF(has_any(err.msg, want[k]), "%s: \"%s\" names no \"%s\"", what, err.msg, want[k]);
}

/* ---- a. reads ---- */

static const struct rspec {
    const char *name, *dtype;
    int ndim; /* -1: [0]; -2: [0, 5] */
} RSPEC[] = {
    {"layers.0.f32", "F32", 2},  {"layers.0.f16", "F16", 2},  {"layers.1.bf16", "BF16", 1}, {"layers.1.f64", "F64", 2},
    {"a.cube", "F32", 3},        {"bf16.wide", "BF16", 2},    {"f16.vec", "F16", 1},        {"f64.vec", "F64", 1},
    {"scalar.f32", "F32", 0},    {"scalar.f64", "F64", 0},    {"scalar.bf16", "BF16", 0},   {"empty.f32", "F32", -2},
    {"empty.bf16", "BF16", -1},  {"tok.ids64", "I64", 1},     {"attn.mask8", "U8", 1},      {"Zeta.upper", "F16", 2},
    {"f32.vec", "F32", 1},       {"bf16.tall", "BF16", 2},
};
enum { NRS = (int)(sizeof RSPEC / sizeof RSPEC[0]) };

static void make_reads(rt *ts, int small) {
    int k, d;
    long top = small ? 3 : 17;
    for (k = 0; k < NRS; k++) {
        int64_t shape[3] = {0, 5, 0};
        int nd = RSPEC[k].ndim;
        if (nd == -1) nd = 1;
        else if (nd == -2) nd = 2;
        else
            for (d = 0; d < nd; d++) shape[d] = zt_rand_int(1, top);
        if (!small && !strcmp(RSPEC[k].name, "bf16.wide")) shape[0] = zt_rand_int(2, 9), shape[1] = zt_rand_int(30, 70);
        if (!small && !strcmp(RSPEC[k].name, "bf16.tall")) shape[0] = zt_rand_int(30, 70), shape[1] = zt_rand_int(2, 9);
        rt_make(&ts[k], RSPEC[k].name, RSPEC[k].dtype, nd, shape, 0);
    }
}

/* elements [off, off + cnt) of tensor i (of its transpose when tr) into dt, against t's values */
static void check_read(zero_safetensors *st, int i, const rt *t, int64_t off, int64_t cnt, int tr, zero_dtype dt) {
    size_t es = zero_dtype_size(dt);
    unsigned char *buf = (unsigned char *)malloc((size_t)(cnt + 4) * es);
    zero_error err;
    zero_result r;
    int64_t k, bad = 0, first = -1;
    size_t g;
    int guard_ok = 1, f64 = !strcmp(t->dtype, "F64");
    if (!buf) return;
    memset(buf, 0xA5, (size_t)(cnt + 4) * es);
    memset(&err, 0, sizeof err);
    r = zero_safetensors_read(st, i, off, cnt, tr, dt, buf, &err);
    CHECKF(r == ZERO_OK, "read %s [%lld, +%lld) tr %d as %s: %s", t->name, (long long)off, (long long)cnt, tr,
           zero_dtype_name(dt), err.msg);
    if (r == ZERO_OK) {
        for (k = 0; k < cnt; k++) {
            int64_t x = off + k, src = x;
            if (tr) src = (x % t->shape[0]) * t->shape[1] + x / t->shape[0]; /* transpose [C, R] of [R, C] */
            if (!accept(out_val(buf, dt, k), t->val[src], f64, dt)) {
                if (first < 0) first = k;
                bad++;
            }
        }
        if (first >= 0) {
            int64_t x = off + first, src = tr ? (x % t->shape[0]) * t->shape[1] + x / t->shape[0] : x;
            CHECKF(0, "read %s (%s) [%lld, +%lld) tr %d as %s: %lld wrong; element %lld (source %lld): value %.17g, got %.17g, want %.17g",
                   t->name, t->dtype, (long long)off, (long long)cnt, tr, zero_dtype_name(dt), (long long)bad,
                   (long long)x, (long long)src, t->val[src], out_val(buf, dt, first),
                   round_fmt(t->val[src], fmt_e(dt), fmt_m(dt)));
        } else {
            CHECK(1);
        }
    }
    for (g = (size_t)cnt * es; g < (size_t)(cnt + 4) * es; g++) guard_ok &= buf[g] == 0xA5;
    CHECKF(guard_ok, "read %s [%lld, +%lld) as %s wrote past the output", t->name, (long long)off, (long long)cnt,
           zero_dtype_name(dt));
    free(buf);
}

static void read_fail(zero_safetensors *st, int i, int64_t off, int64_t cnt, int tr, zero_dtype dt, const char *what,
                      const char *want1, const char *want2) {
    float out[64];
    zero_error err;
    zero_result r;
    memset(&err, 0, sizeof err);
    r = zero_safetensors_read(st, i, off, cnt, tr, dt, out, &err);
    CHECKF(r != ZERO_OK, "%s: read succeeded", what);
    if (r == ZERO_OK) return;
    CHECKF(err.code == r && err.msg[0], "%s: no error message", what);
    if (want1) CHECKF(strstr(err.msg, want1) != NULL, "%s: \"%s\" lacks \"%s\"", what, err.msg, want1);
    if (want2) CHECKF(strstr(err.msg, want2) != NULL, "%s: \"%s\" lacks \"%s\"", what, err.msg, want2);
}

typedef struct reader_job {
    zero_safetensors *st;
    const rt *ts;
    int64_t bad, errors;
} reader_job;

static void *reader_thread(void *arg) {
    reader_job *R = (reader_job *)arg;
    int rep, k;
    for (rep = 0; rep < 3; rep++)
        for (k = 0; k < NRS; k++) {
            const rt *t = &R->ts[k];
            float *out;
            zero_error err;
            int i = zero_safetensors_find(R->st, t->name);
            int64_t x;
            if (!is_float(t->dtype) || t->numel == 0) continue;
            out = (float *)malloc(sizeof(float) * (size_t)t->numel);
            if (!out || zero_safetensors_read(R->st, i, 0, t->numel, 0, ZERO_DTYPE_FP32, out, &err) != ZERO_OK) {
                R->errors++;
            } else {
                for (x = 0; x < t->numel; x++)
                    if (!accept((double)out[x], t->val[x], 0, ZERO_DTYPE_FP32)) R->bad++;
            }
            free(out);
        }
    return NULL;
}

static void test_reads(const char *dir) {
    rt ts[NRS];
    int order[NRS], k, i, n;
    char path[1200];
    uint64_t hdr;
    zero_safetensors *st;
    phase = "reads";
    make_reads(ts, 0);
    for (k = 0; k < NRS; k++) order[k] = k;
    for (k = NRS - 1; k > 0; k--) { /* the file's order is not the name order */
        int j = (int)zt_rand_int(0, k), x = order[k];
        order[k] = order[j];
        order[j] = x;
    }
    snprintf(path, sizeof path, "%s/reads.safetensors", dir);
    hdr = write_rts(path, ts, order, NRS, "\"format\":\"pt\",\"note\":\"say \\\"hi\\\"\",\"empty\":\"\"");
    CHECK(hdr > 0);
    if (!(st = open_ok(path, "reads"))) {
        rt_free(ts, NRS);
        return;
    }
    /* count, name order, find */
    n = zero_safetensors_count(st);
    CHECK_EQ_INT(n, NRS);
    for (i = 0; i < n; i++) {
        const zero_safetensors_tensor *g = zero_safetensors_get(st, i), *p = i ? zero_safetensors_get(st, i - 1) : NULL;
        CHECK(g != NULL);
        if (!g) continue;
        if (p) CHECKF(strcmp(p->name, g->name) < 0, "get(%d) '%s' after '%s': not in name order", i, g->name, p->name);
        CHECK_EQ_INT(zero_safetensors_find(st, g->name), i);
    }
    CHECK(zero_safetensors_get(st, n) == NULL);
    CHECK(zero_safetensors_get(st, -1) == NULL);
    CHECK_EQ_INT(zero_safetensors_find(st, "nope"), -1);
    CHECK_EQ_INT(zero_safetensors_find(st, ""), -1);
    CHECK_EQ_INT(zero_safetensors_find(st, "layers.0"), -1);
    CHECK_EQ_INT(zero_safetensors_find(st, "__metadata__"), -1);
    /* each tensor as written */
    for (k = 0; k < NRS; k++) {
        const rt *t = &ts[k];
        const zero_safetensors_tensor *g;
        int d, same = 1;
        i = zero_safetensors_find(st, t->name);
        CHECKF(i >= 0, "'%s' not found", t->name);
        if (i < 0 || !(g = zero_safetensors_get(st, i))) continue;
        CHECK(strcmp(g->name, t->name) == 0);
        CHECKF(strcmp(g->dtype, t->dtype) == 0, "'%s': dtype %s want %s", t->name, g->dtype, t->dtype);
        CHECK_EQ_INT(g->ndim, t->ndim);
        for (d = 0; d < t->ndim && d < ZERO_MAX_DIMS; d++) same &= g->shape[d] == t->shape[d];
        CHECKF(same, "'%s': shape differs", t->name);
        CHECK_EQ_INT(g->numel, t->numel);
        CHECK_EQ_INT(g->bytes, t->bytes);
        CHECKF(g->offset == 8 + hdr + t->begin, "'%s': offset %llu want %llu", t->name, (unsigned long long)g->offset,
               (unsigned long long)(8 + hdr + t->begin));
        CHECKF(g->file && strcmp(base_name(g->file), "reads.safetensors") == 0, "'%s': file %s", t->name,
               g->file ? g->file : "(null)");
    }
    /* metadata */
    {
        const char *v = zero_safetensors_metadata(st, "format");
        CHECKF(v && !strcmp(v, "pt"), "metadata format: %s", v ? v : "(null)");
        v = zero_safetensors_metadata(st, "note");
        CHECKF(v && !strcmp(v, "say \"hi\""), "metadata note: %s", v ? v : "(null)");
        v = zero_safetensors_metadata(st, "empty");
        CHECKF(v && !strcmp(v, ""), "metadata empty: %s", v ? v : "(null)");
        CHECK(zero_safetensors_metadata(st, "missing") == NULL);
        CHECK(zero_safetensors_metadata(st, "layers.0.f32") == NULL);
    }
    /* values: whole, ranges, transposed, into each dtype */
    for (k = 0; k < NRS; k++) {
        const rt *t = &ts[k];
        zero_dtype dt;
        int rep;
        i = zero_safetensors_find(st, t->name);
        if (i < 0 || !is_float(t->dtype)) continue;
        phase = t->name;
        for (dt = ZERO_DTYPE_FP32; dt <= ZERO_DTYPE_BF16; dt = (zero_dtype)(dt + 1)) {
            check_read(st, i, t, 0, t->numel, 0, dt);
            for (rep = 0; rep < 4 && t->numel > 0; rep++) {
                int64_t off = zt_rand_int(0, (long)t->numel - 1), cnt = zt_rand_int(1, (long)(t->numel - off));
                check_read(st, i, t, off, cnt, 0, dt);
            }
            if (t->ndim == 2 && t->numel > 0) {
                check_read(st, i, t, 0, t->numel, 1, dt);
                for (rep = 0; rep < 3; rep++) {
                    int64_t off = zt_rand_int(0, (long)t->numel - 1), cnt = zt_rand_int(1, (long)(t->numel - off));
                    check_read(st, i, t, off, cnt, 1, dt);
                }
            }
        }
        check_read(st, i, t, 0, 0, 0, ZERO_DTYPE_FP32); /* nothing asked: nothing written */
    }
    /* reads that must fail */
    phase = "reads that fail";
    read_fail(st, zero_safetensors_find(st, "tok.ids64"), 0, 4, 0, ZERO_DTYPE_FP32, "I64 as fp32", "tok.ids64", "I64");
    read_fail(st, zero_safetensors_find(st, "attn.mask8"), 0, 1, 0, ZERO_DTYPE_FP32, "U8 as fp32", "attn.mask8", "U8");
    {
        int iv = zero_safetensors_find(st, "f16.vec"), ic = zero_safetensors_find(st, "a.cube");
        int64_t nv = ts[6].numel;
        read_fail(st, iv, nv - 1, 2, 0, ZERO_DTYPE_FP32, "range past the end", NULL, NULL);
        read_fail(st, iv, nv + 1, 0, 0, ZERO_DTYPE_FP32, "offset past the end", NULL, NULL);
        read_fail(st, iv, -1, 1, 0, ZERO_DTYPE_FP32, "negative offset", NULL, NULL);
        read_fail(st, iv, 0, -1, 0, ZERO_DTYPE_FP32, "negative count", NULL, NULL);
        read_fail(st, iv, 0, 1, 1, ZERO_DTYPE_FP32, "transpose of 1-D", NULL, NULL);
        read_fail(st, ic, 0, 1, 1, ZERO_DTYPE_FP32, "transpose of 3-D", NULL, NULL);
        read_fail(st, iv, 0, 1, 0, ZERO_DTYPE_COUNT, "unknown output dtype", NULL, NULL);
        read_fail(st, n, 0, 1, 0, ZERO_DTYPE_FP32, "tensor past the count", NULL, NULL);
        read_fail(st, -1, 0, 1, 0, ZERO_DTYPE_FP32, "tensor -1", NULL, NULL);
    }
    /* several threads at once */
    phase = "reads from threads";
    {
        enum { NTH = 4 };
        pthread_t th[NTH];
        reader_job R[NTH];
        int started[NTH];
        for (k = 0; k < NTH; k++) {
            R[k].st = st, R[k].ts = ts, R[k].bad = 0, R[k].errors = 0;
            started[k] = pthread_create(&th[k], NULL, reader_thread, &R[k]) == 0;
            CHECK(started[k]);
        }
        for (k = 0; k < NTH; k++) {
            if (!started[k]) continue;
            pthread_join(th[k], NULL);
            CHECKF(R[k].bad == 0 && R[k].errors == 0, "thread %d: %lld wrong values, %lld failed reads", k,
                   (long long)R[k].bad, (long long)R[k].errors);
        }
    }
    zero_safetensors_close(st);
    /* a file without __metadata__ */
    {
        rt one;
        int64_t s = 3;
        rt_make(&one, "w", "F32", 1, &s, 0);
        snprintf(path, sizeof path, "%s/nometa.safetensors", dir);
        CHECK(write_rts(path, &one, NULL, 1, NULL) > 0);
        if ((st = open_ok(path, "no metadata"))) {
            CHECK(zero_safetensors_metadata(st, "format") == NULL);
            CHECK_EQ_INT(zero_safetensors_count(st), 1);
            check_read(st, 0, &one, 0, 3, 0, ZERO_DTYPE_FP32);
            zero_safetensors_close(st);
        }
        rt_free(&one, 1);
    }
    /* a file with no tensors at all */
    snprintf(path, sizeof path, "%s/notensors.safetensors", dir);
    CHECK(write_json(path, "{\"__metadata__\":{\"format\":\"pt\"}}", 0) > 0);
    if ((st = open_ok(path, "no tensors"))) {
        CHECK_EQ_INT(zero_safetensors_count(st), 0);
        CHECK(zero_safetensors_get(st, 0) == NULL);
        zero_safetensors_close(st);
    }
    rt_free(ts, NRS);
}

/* ---- b. sharded ---- */

enum { NSH = 7 };

static void check_set(zero_safetensors *st, const rt *ts, int n, const char *const *file_of, const char *what) {
    int k;
    CHECKF(zero_safetensors_count(st) == n, "%s: count %d want %d", what, zero_safetensors_count(st), n);
    for (k = 0; k < n; k++) {
        int i = zero_safetensors_find(st, ts[k].name);
        const zero_safetensors_tensor *g = zero_safetensors_get(st, i);
        CHECKF(i >= 0 && g, "%s: '%s' not found", what, ts[k].name);
        if (i < 0 || !g) continue;
        CHECKF(g->file && !strcmp(base_name(g->file), file_of[k]), "%s: '%s' in %s, want %s", what, ts[k].name,
               g->file ? g->file : "(null)", file_of[k]);
        CHECK_EQ_INT(g->bytes, ts[k].bytes);
        CHECK_EQ_INT(g->numel, ts[k].numel);
        check_read(st, i, &ts[k], 0, ts[k].numel, 0, ZERO_DTYPE_FP32);
        if (ts[k].ndim == 2) check_read(st, i, &ts[k], 0, ts[k].numel, 1, ZERO_DTYPE_BF16);
    }
    for (k = 1; k < zero_safetensors_count(st); k++)
        CHECK(strcmp(zero_safetensors_get(st, k - 1)->name, zero_safetensors_get(st, k)->name) < 0);
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    CHECKF(f != NULL, "cannot write %s", path);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

static void test_sharded(const char *base) {
    static const char *const dts[4] = {"F32", "F16", "BF16", "F64"};
    static const char *const shard[3] = {"model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors",
                                         "model-00003-of-00003.safetensors"};
    const char *file_of[NSH];
    rt ts[NSH], decoy;
    char dir[1100], path[1300], name[32];
    sbuf idx = {0};
    uint64_t total = 0;
    int k, s;
    zero_safetensors *st;
    phase = "sharded";
    snprintf(dir, sizeof dir, "%s/sharded", base);
    CHECK(mkdir(dir, 0755) == 0);
    for (k = 0; k < NSH; k++) {
        int64_t shape[2] = {zt_rand_int(1, 9), zt_rand_int(1, 9)};
        snprintf(name, sizeof name, "model.layers.%d.w", k);
        rt_make(&ts[k], name, dts[k % 4], 1 + k % 2, shape, 0);
        file_of[k] = shard[(k * 2) % 3];
        total += ts[k].bytes;
    }
    for (s = 0; s < 3; s++) {
        int order[NSH], n = 0;
        for (k = NSH - 1; k >= 0; k--)
            if (file_of[k] == shard[s]) order[n++] = k;
        snprintf(path, sizeof path, "%s/%s", dir, shard[s]);
        CHECK(write_rts(path, ts, order, n, "\"format\":\"pt\"") > 0);
    }
    sb_add(&idx, "{\n  \"metadata\": {\"total_size\": %llu},\n  \"weight_map\": {\n", (unsigned long long)total);
    for (k = NSH - 1; k >= 0; k--) sb_add(&idx, "    \"%s\": \"%s\"%s\n", ts[k].name, file_of[k], k ? "," : "");
    sb_add(&idx, "  }\n}\n");
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    write_text(path, idx.p);
    /* a model.safetensors beside the index: the index wins */
    {
        int64_t one = 2;
        rt_make(&decoy, "decoy", "F32", 1, &one, 0);
        snprintf(path, sizeof path, "%s/model.safetensors", dir);
        CHECK(write_rts(path, &decoy, NULL, 1, NULL) > 0);
    }
    if ((st = open_ok(dir, "sharded directory"))) {
        const char *v = zero_safetensors_metadata(st, "format");
        check_set(st, ts, NSH, file_of, "sharded directory");
        CHECK_EQ_INT(zero_safetensors_find(st, "decoy"), -1);
        CHECKF(v && !strcmp(v, "pt"), "sharded metadata: %s", v ? v : "(null)");
        zero_safetensors_close(st);
    }
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    if ((st = open_ok(path, "index file"))) {
        check_set(st, ts, NSH, file_of, "index file");
        zero_safetensors_close(st);
    }
    /* one shard opened as a file: its tensors only */
    snprintf(path, sizeof path, "%s/%s", dir, shard[1]);
    if ((st = open_ok(path, "one shard"))) {
        int n = 0;
        for (k = 0; k < NSH; k++) n += file_of[k] == shard[1];
        CHECK_EQ_INT(zero_safetensors_count(st), n);
        zero_safetensors_close(st);
    }
    /* a directory with model.safetensors alone */
    {
        const char *mf[NSH];
        snprintf(dir, sizeof dir, "%s/single", base);
        CHECK(mkdir(dir, 0755) == 0);
        snprintf(path, sizeof path, "%s/model.safetensors", dir);
        CHECK(write_rts(path, ts, NULL, NSH, NULL) > 0);
        for (k = 0; k < NSH; k++) mf[k] = "model.safetensors";
        if ((st = open_ok(dir, "single-file directory"))) {
            check_set(st, ts, NSH, mf, "single-file directory");
            zero_safetensors_close(st);
        }
    }
    free(idx.p);
    rt_free(ts, NSH);
    rt_free(&decoy, 1);
}

/* ---- c. malformed input ---- */

typedef struct bad_case {
    const char *name;   /* the file's name */
    const char *tensor; /* the error must name it too (alternatives by '|'), or NULL */
} bad_case;

static const bad_case BAD[] = {
    {"short", NULL},           {"len_past_end", NULL},    {"len_huge", NULL},          {"len_zero", NULL},
    {"not_json", NULL},        {"not_object", NULL},      {"truncated", "w.second"},   {"overlap", "w.ov1|w.ov2"},
    {"backwards", "w.back"},   {"gap", NULL},             {"trailing", NULL},          {"size_mismatch", "w.sizebad"},
    {"dtype_unknown", "w.dtypebad"}, {"shape_negative", "w.negshape"}, {"shape_fraction", "w.fracshape"},
    {"shape_string", "w.strshape"},  {"shape_overflow", "w.huge"},     {"shape_ndim", "w.ndim9"},
    {"shape_huge_after_zero", "w.zhuge"}, {"shape_huge_before_zero", "w.hugez"},
    {"offsets_one", "w.offs"}, {"offsets_negative", "w.negoff"}, {"offsets_huge", "w.bigoff"},
    {"dtype_missing", "w.nodtype"}, {"entry_not_object", "w.notobj"}, {"duplicate_name", NULL},
};
enum { NBAD = (int)(sizeof BAD / sizeof BAD[0]) };

static const char GOOD1[] = "{\"w.a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";

/* writes malformed case k at path; 0 when the write failed */
static int write_bad(int k, const char *path) {
    const char *n = BAD[k].name;
#define T(nm, dt, shape, offs) "\"" nm "\":{\"dtype\":\"" dt "\",\"shape\":" shape ",\"data_offsets\":" offs "}"
    if (!strcmp(n, "short")) return write_raw(path, 0, NULL, 0, NULL, 0) && truncate(path, 5) == 0;
    if (!strcmp(n, "len_past_end")) {
        sbuf h = {0};
        int ok;
        sb_add(&h, "%s", GOOD1);
        while (h.n % 8) sb_add(&h, " ");
        ok = write_raw(path, 4096, h.p, h.n, "\0\0\200\077", 4);
        free(h.p);
        return ok;
    }
    if (!strcmp(n, "len_huge")) {
        sbuf h = {0};
        int ok;
        sb_add(&h, "%s", GOOD1);
        while (h.n % 8) sb_add(&h, " ");
        ok = write_raw(path, 0xFFFFFFFFFFFFFFF0ull, h.p, h.n, "\0\0\200\077", 4);
        free(h.p);
        return ok;
    }
    if (!strcmp(n, "len_zero")) return write_raw(path, 0, NULL, 0, GOOD1, sizeof GOOD1 - 1);
    if (!strcmp(n, "not_json")) return write_json(path, "{\"w.a\":{\"dtype\":\"F32\",\"shape\":[1],nope", 4) > 0;
    if (!strcmp(n, "not_object")) return write_json(path, "[1,2,3]", 0) > 0;
    if (!strcmp(n, "truncated")) return write_json(path, "{" T("w.first", "F32", "[4]", "[0,16]") "," T("w.second", "F32", "[8]", "[16,48]") "}", 30) > 0;
    if (!strcmp(n, "overlap")) return write_json(path, "{" T("w.ov1", "F32", "[4]", "[0,16]") "," T("w.ov2", "F32", "[4]", "[8,24]") "}", 24) > 0;
    if (!strcmp(n, "backwards")) return write_json(path, "{" T("w.fill", "F32", "[4]", "[0,16]") "," T("w.back", "F32", "[2]", "[16,8]") "}", 16) > 0;
    if (!strcmp(n, "gap")) return write_json(path, "{" T("w.g1", "F32", "[2]", "[0,8]") "," T("w.g2", "F32", "[2]", "[12,20]") "}", 20) > 0;
    if (!strcmp(n, "trailing")) return write_json(path, "{" T("w.t1", "F32", "[2]", "[0,8]") "}", 12) > 0;
    if (!strcmp(n, "size_mismatch")) return write_json(path, "{" T("w.sizebad", "F32", "[2,3]", "[0,20]") "}", 20) > 0;
    if (!strcmp(n, "dtype_unknown")) return write_json(path, "{" T("w.dtypebad", "F33", "[2]", "[0,8]") "}", 8) > 0;
    if (!strcmp(n, "shape_negative")) return write_json(path, "{" T("w.negshape", "F32", "[-1,2]", "[0,8]") "}", 8) > 0;
    if (!strcmp(n, "shape_fraction")) return write_json(path, "{" T("w.fracshape", "F32", "[2.5]", "[0,10]") "}", 10) > 0;
    if (!strcmp(n, "shape_string")) return write_json(path, "{" T("w.strshape", "F32", "[\"2\"]", "[0,8]") "}", 8) > 0;
    if (!strcmp(n, "shape_overflow"))
        return write_json(path, "{" T("w.huge", "F32", "[4294967296,4294967296,4294967296]", "[0,8]") "}", 8) > 0;
    /* an extent past 2^60 beside a zero: refused in either order (no element, but not a shape anyone means) */
    if (!strcmp(n, "shape_huge_after_zero"))
        return write_json(path, "{" T("w.zhuge", "F32", "[0,4611686018427387904]", "[0,0]") "}", 0) > 0;
    if (!strcmp(n, "shape_huge_before_zero"))
        return write_json(path, "{" T("w.hugez", "F32", "[4611686018427387904,0]", "[0,0]") "}", 0) > 0;
    if (!strcmp(n, "shape_ndim")) return write_json(path, "{" T("w.ndim9", "F32", "[1,1,1,1,1,1,1,1,2]", "[0,8]") "}", 8) > 0;
    if (!strcmp(n, "offsets_one")) return write_json(path, "{" T("w.offs", "F32", "[2]", "[0]") "}", 8) > 0;
    if (!strcmp(n, "offsets_negative")) return write_json(path, "{" T("w.negoff", "F32", "[2]", "[-8,0]") "}", 0) > 0;
    if (!strcmp(n, "offsets_huge"))
        return write_json(path, "{" T("w.bigoff", "F32", "[2]", "[0,18446744073709551615]") "}", 8) > 0;
    if (!strcmp(n, "dtype_missing"))
        return write_json(path, "{\"w.nodtype\":{\"shape\":[2],\"data_offsets\":[0,8]}}", 8) > 0;
    if (!strcmp(n, "entry_not_object")) return write_json(path, "{\"w.notobj\":5}", 0) > 0;
    if (!strcmp(n, "duplicate_name")) return write_json(path, "{" T("w.dup", "F32", "[2]", "[0,8]") "," T("w.dup", "F32", "[2]", "[0,8]") "}", 8) > 0;
#undef T
    return 0;
}

static void test_bad(const char *base) {
    char dir[600], sub[900], path[1300], want[64];
    int k;
    snprintf(dir, sizeof dir, "%s/bad", base);
    CHECK(mkdir(dir, 0755) == 0);
    for (k = 0; k < NBAD; k++) {
        snprintf(path, sizeof path, "%s/%s.safetensors", dir, BAD[k].name);
        CHECKF(write_bad(k, path), "cannot write %s", path);
        expect_fail(path, BAD[k].name, base_name(path), BAD[k].tensor, NULL);
    }
    /* a path that is not there */
    snprintf(path, sizeof path, "%s/absent.safetensors", dir);
    expect_fail(path, "absent", "absent.safetensors", NULL, NULL);
    /* indexes */
    {
        static const char *const sh1 = "{\"__metadata__\":{\"format\":\"pt\"},"
                                       "\"a.w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                                       "\"x.dup\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}";
        static const char *const sh2 = "{\"b.w\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[0,4]},"
                                       "\"x.dup\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}";
        static const struct {
            const char *name, *index, *want1, *want2;
        } IDX[] = {
            {"idx_missing_shard",
             "{\"metadata\":{},\"weight_map\":{\"a.w\":\"s1.safetensors\",\"x.dup\":\"s1.safetensors\","
             "\"b.w\":\"gone-00002.safetensors\"}}",
             "gone-00002.safetensors", NULL},
            {"idx_lacking",
             "{\"weight_map\":{\"a.w\":\"s1.safetensors\",\"x.dup\":\"s1.safetensors\",\"x.lacking\":\"s1.safetensors\"}}",
             "x.lacking", "s1.safetensors"},
            {"idx_twice",
             "{\"weight_map\":{\"a.w\":\"s1.safetensors\",\"b.w\":\"s2.safetensors\",\"x.dup\":\"s1.safetensors\"}}",
             "x.dup", NULL},
            {"idx_not_json", "{\"weight_map\":{\"a.w\":\"s1.safetensors\",", "model.safetensors.index.json", NULL},
            {"idx_no_weight_map", "{\"metadata\":{\"total_size\":8}}", "model.safetensors.index.json", NULL},
            {"idx_map_not_strings", "{\"weight_map\":{\"a.w\":1}}", "model.safetensors.index.json", NULL},
        };
        for (k = 0; k < (int)(sizeof IDX / sizeof IDX[0]); k++) {
            snprintf(sub, sizeof sub, "%s/%s", dir, IDX[k].name);
            CHECK(mkdir(sub, 0755) == 0);
            snprintf(path, sizeof path, "%s/s1.safetensors", sub);
            CHECK(write_json(path, sh1, 12) > 0);
            snprintf(path, sizeof path, "%s/s2.safetensors", sub);
            CHECK(write_json(path, sh2, 8) > 0);
            snprintf(path, sizeof path, "%s/model.safetensors.index.json", sub);
            write_text(path, IDX[k].index);
            expect_fail(sub, IDX[k].name, IDX[k].want1, IDX[k].want2, NULL);
            expect_fail(path, IDX[k].name, IDX[k].want1, IDX[k].want2, NULL);
        }
        /* the shards themselves are fine */
        {
            zero_safetensors *st;
            snprintf(path, sizeof path, "%s/idx_twice/s2.safetensors", dir);
            if ((st = open_ok(path, "idx_twice's s2"))) zero_safetensors_close(st);
        }
    }
    /* not regular files: a FIFO (opening one for reading blocks until a
       writer comes: the reader must not), a FIFO shard, an empty directory */
    {
        unsigned prev = alarm(10);
        snprintf(path, sizeof path, "%s/pipe.safetensors", dir);
        CHECK(mkfifo(path, 0644) == 0);
        expect_fail(path, "a FIFO", "pipe.safetensors", NULL, NULL);
        snprintf(sub, sizeof sub, "%s/idx_fifo", dir);
        CHECK(mkdir(sub, 0755) == 0);
        snprintf(path, sizeof path, "%s/fifo-00001.safetensors", sub);
        CHECK(mkfifo(path, 0644) == 0);
        snprintf(path, sizeof path, "%s/model.safetensors.index.json", sub);
        write_text(path, "{\"weight_map\":{\"a.w\":\"fifo-00001.safetensors\"}}");
        expect_fail(sub, "a FIFO shard", "fifo-00001.safetensors", NULL, NULL);
        snprintf(sub, sizeof sub, "%s/fifo_model", dir);
        CHECK(mkdir(sub, 0755) == 0);
        snprintf(path, sizeof path, "%s/model.safetensors", sub);
        CHECK(mkfifo(path, 0644) == 0);
        expect_fail(sub, "a FIFO model.safetensors", "model.safetensors", NULL, NULL);
        snprintf(sub, sizeof sub, "%s/emptydir", dir);
        CHECK(mkdir(sub, 0755) == 0);
        snprintf(want, sizeof want, "emptydir");
        expect_fail(sub, "an empty directory", want, NULL, NULL);
        alarm(prev);
    }
}

/* ---- d. bind + create on host ranks ---- */

enum { NB = 6, BMAX = 960 };
static const char *const BNAME[NB] = {"a.w", "a.b", "big.w", "big.b", "flat", "head.w"};
static const char *const BDTYPE[NB] = {"F32", "F16", "BF16", "F64", "F32", "F64"};
static const int BNDIM[NB] = {2, 1, 2, 1, 0, 2};
static const int64_t BSHAPE[NB][2] = {{10, 6}, {6, 1}, {24, 40}, {40, 1}, {12, 1}, {6, 9}};
static zt_wave own_wave = {0.25, 0.5, 0.3, 0.01, 0}; /* the tensors' own init */

static int64_t bnumel(int t) { return BSHAPE[t][0] * BSHAPE[t][1]; }

static void bind_tensors(zero_tensor *ts) {
    int t;
    memset(ts, 0, sizeof(zero_tensor) * NB);
    for (t = 0; t < NB; t++) {
        ts[t].name = BNAME[t];
        ts[t].numel = bnumel(t);
        ts[t].ndim = BNDIM[t];
        if (BNDIM[t] >= 1) ts[t].shape[0] = BSHAPE[t][0];
        if (BNDIM[t] == 2) ts[t].shape[1] = BSHAPE[t][1];
        ts[t].group = t / 2;
        ts[t].init = zt_init_wave;
        ts[t].init_user = &own_wave;
    }
}

/* The checkpoint of the engine's tensors: names with a prefix, 2-D
   tensors [out, in] when tr; "flat" (ndim 0 in the engine) as [3, 4], or
   [12] when tr (no 2-D tensor to transpose). */
static void bind_file(rt *f, const char *prefix, int tr) {
    char name[64];
    int t;
    for (t = 0; t < NB; t++) {
        int64_t shape[2] = {BSHAPE[t][0], BSHAPE[t][1]};
        int nd = BNDIM[t];
        if (nd == 2 && tr) shape[0] = BSHAPE[t][1], shape[1] = BSHAPE[t][0];
        if (nd == 0) {
            if (tr) nd = 1;
            else nd = 2, shape[0] = 3, shape[1] = 4;
        }
        snprintf(name, sizeof name, "%s%s", prefix, BNAME[t]);
        rt_make(&f[t], name, BDTYPE[t], nd, shape, 1);
    }
}

/* what engine tensor t should start from */
static double WANT[NB][BMAX];
static int WANT_F64[NB];

static void want_file(int t, const rt *f, int tr) {
    int64_t k, R = BSHAPE[t][0], C = BSHAPE[t][1];
    for (k = 0; k < bnumel(t); k++) WANT[t][k] = f->val[tr && BNDIM[t] == 2 ? (k % C) * R + k / C : k];
    WANT_F64[t] = !strcmp(f->dtype, "F64");
}
static void want_all(const rt *f, int tr) {
    int t;
    for (t = 0; t < NB; t++) want_file(t, &f[t], tr);
}
static void want_own(int t) {
    int64_t k;
    for (k = 0; k < bnumel(t); k++) WANT[t][k] = zt_wave_at(&own_wave, t, k);
    WANT_F64[t] = 0;
}

typedef struct bjob {
    zero_tensor ts[NB];
    int stage, world, bf16, ext;
    const char *own;            /* each rank opens this checkpoint and binds its own tensors (as a process of
                                   its own would), after setting .data when ext; NULL: ts come bound */
    const char *trunc;          /* own: truncated to trunc_to by rank 0 after every rank bound, before create */
    off_t trunc_to;
    pthread_barrier_t bar;
    zero_result r[4];
    char msg[4][1100];
    float w[NB][BMAX];          /* master weights (rank 0) */
    int64_t data_bad[4];        /* ext: elements of the rank's memory that differ */
    char data_first[4][300];
} bjob;

static zero_result bind_rank(const zero_backend *b, void *arg) {
    bjob *J = (bjob *)arg;
    zero_config cfg = zero_config_default();
    zero_tensor ts[NB];
    void *mem[NB] = {0};
    zero_engine *e = NULL;
    zero_error err;
    zero_result r;
    zero_dtype cdt = J->bf16 ? ZERO_DTYPE_BF16 : ZERO_DTYPE_FP32;
    zero_safetensors *st = NULL;
    int t, rk = b->rank;
    memcpy(ts, J->ts, sizeof ts);
    if (J->ext)
        for (t = 0; t < NB; t++) { /* the program's memory: garbage that differs by rank */
            size_t n = (size_t)bnumel(t) * zero_dtype_size(cdt);
            if (!(mem[t] = malloc(n))) return ZERO_ERR_OUT_OF_MEMORY;
            memset(mem[t], 0x41 + rk, n);
            ts[t].data = mem[t];
        }
    if (J->own) {
        r = zero_safetensors_open(&st, J->own, &err);
        if (r == ZERO_OK && (r = zero_safetensors_bind(st, ts, NB, NULL, &err)) != ZERO_OK) {
            zero_safetensors_close(st);
            st = NULL;
        }
        if (r != ZERO_OK) {
            J->r[rk] = r;
            snprintf(J->msg[rk], sizeof J->msg[rk], "open and bind: %s", err.msg);
            for (t = 0; t < NB; t++) free(mem[t]);
            return ZERO_OK;
        }
    }
    if (J->trunc) { /* the file changes under the bound ranks */
        pthread_barrier_wait(&J->bar);
        if (rk == 0 && truncate(J->trunc, J->trunc_to) != 0) J->trunc = NULL;
        pthread_barrier_wait(&J->bar);
    }
    cfg.train_micro_batch_size_per_gpu = 1;
    cfg.zero_optimization.stage = J->stage;
    cfg.zero_optimization.reduce_bucket_size = 256; /* big.w (960) over several units */
    cfg.zero_optimization.stage3_param_persistence_threshold = 8;
    cfg.bf16.enabled = J->bf16;
    cfg.log.level = ZERO_LOG_LEVEL_COUNT;
    if ((r = zero_config_resolve(&cfg, b->world, &err)) == ZERO_OK) r = zero_engine_create(&e, &cfg, ts, NB, b, &err);
    J->r[rk] = r;
    if (r != ZERO_OK) {
        snprintf(J->msg[rk], sizeof J->msg[rk], "%s", err.msg);
        for (t = 0; t < NB; t++) free(mem[t]);
        zero_safetensors_close(st);
        return ZERO_OK;
    }
    for (t = 0; t < NB; t++) {
        float w[BMAX];
        if (zero_read_state(e, t, ZERO_STATE_MASTER, 0, bnumel(t), w) != ZERO_OK) {
            J->r[rk] = ZERO_ERR_STATE;
            snprintf(J->msg[rk], sizeof J->msg[rk], "zero_read_state: %s", zero_engine_error(e)->msg);
            break;
        }
        if (rk == 0) memcpy(J->w[t], w, sizeof(float) * (size_t)bnumel(t));
    }
    if (J->ext)
        for (t = 0; t < NB; t++) {
            int64_t k;
            for (k = 0; k < bnumel(t); k++) {
                double got = out_val(mem[t], cdt, k);
                if (!accept(got, WANT[t][k], WANT_F64[t], cdt)) {
                    if (!J->data_bad[rk])
                        snprintf(J->data_first[rk], sizeof J->data_first[rk], "%s[%lld]: got %.9g want %.9g", BNAME[t],
                                 (long long)k, got, round_fmt(WANT[t][k], fmt_e(cdt), fmt_m(cdt)));
                    J->data_bad[rk]++;
                }
            }
        }
    zero_engine_destroy(e);
    zero_safetensors_close(st);
    for (t = 0; t < NB; t++) free(mem[t]);
    return ZERO_OK;
}

/* the run and its checks: every rank created; every master weight equals WANT */
static void run_bind(bjob *J, int world, int stage, int bf16, int ext, const char *what) {
    zero_error err;
    int r, t;
    J->world = world, J->stage = stage, J->bf16 = bf16, J->ext = ext;
    memset(J->r, 0, sizeof J->r);
    memset(J->data_bad, 0, sizeof J->data_bad);
    memset(J->w, 0xff, sizeof J->w);
    phase = what;
    CHECKF(zero_host_run(world, bind_rank, J, &err) == ZERO_OK, "%s: host run: %s", what, err.msg);
    for (r = 0; r < world; r++)
        CHECKF(J->r[r] == ZERO_OK, "%s (world %d stage %d %s%s) rank %d: %s", what, world, stage, bf16 ? "bf16" : "fp32",
               ext ? ", program memory" : "", r, J->msg[r]);
    if (J->r[0] != ZERO_OK) return;
    for (t = 0; t < NB; t++) {
        int64_t k, bad = 0, first = -1;
        for (k = 0; k < bnumel(t); k++) {
            float want = (float)round_fmt(WANT[t][k], 8, 23);
            int ok = zt_same_bits(J->w[t][k], want);
            /* the program's memory in bf16 is the initial weights: the master may be their rounding */
            if (!ok && ext && bf16) ok = accept(J->w[t][k], WANT[t][k], WANT_F64[t], ZERO_DTYPE_BF16);
            if (!ok) {
                if (first < 0) first = k;
                bad++;
            }
        }
        CHECKF(first < 0, "%s (world %d stage %d %s%s): master '%s' %lld wrong; [%lld] = %.9g want %.9g", what, world,
               stage, bf16 ? "bf16" : "fp32", ext ? ", program memory" : "", BNAME[t], (long long)bad,
               (long long)first, first >= 0 ? J->w[t][first] : 0.0, first >= 0 ? round_fmt(WANT[t][first], 8, 23) : 0.0);
    }
    if (ext)
        for (r = 0; r < world; r++)
            CHECKF(J->data_bad[r] == 0, "%s (world %d stage %d %s): rank %d's memory: %lld wrong; %s", what, world, stage,
                   bf16 ? "bf16" : "fp32", r, (long long)J->data_bad[r], J->data_first[r]);
}

typedef struct ren {
    const char *prefix, *drop; /* drop: the engine name the rename maps to NULL */
    int set_transpose;         /* set *transpose for 2-D tensors */
    int preset_want;           /* what *transpose should come preset to for 2-D tensors */
    const zero_tensor *ts;
    int calls, bad_name, bad_preset, saw_mask, saw_head, ignore_calls;
} ren;

static const char *rename_fn(void *user, int t, const char *name, char *buf, size_t cap, int *transpose) {
    ren *R = (ren *)user;
    R->calls++;
    if (t < 0 || t >= NB || strcmp(name, R->ts[t].name) != 0) R->bad_name++;
    if (t >= 0 && t < NB && R->ts[t].ndim == 2 && *transpose != R->preset_want) R->bad_preset++;
    if (R->drop && !strcmp(name, R->drop)) return NULL;
    if (R->set_transpose && t >= 0 && t < NB && R->ts[t].ndim == 2) *transpose = 1;
    snprintf(buf, cap, "%s%s", R->prefix, name);
    return buf;
}

static int ignore_fn(void *user, const char *ckpt_name) {
    ren *R = (ren *)user;
    R->ignore_calls++;
    if (!strcmp(ckpt_name, "model.mask")) return R->saw_mask = 1;
    if (!strcmp(ckpt_name, "lm_head.w")) return R->saw_head = 1;
    return 0;
}

/* bind must fail, name each of want[], and leave the tensors as they were */
static void bind_fail(zero_safetensors *st, zero_tensor *ts, int n, const zero_safetensors_options *opt, const char *what,
                      const char *const *want, int n_want) {
    zero_tensor before[NB];
    zero_error err;
    zero_result r;
    int k;
    memcpy(before, ts, sizeof(zero_tensor) * (size_t)n);
    memset(&err, 0, sizeof err);
    r = zero_safetensors_bind(st, ts, n, opt, &err);
    CHECKF(r != ZERO_OK, "%s: bind succeeded", what);
    if (r == ZERO_OK) return;
    CHECKF(err.code == r && err.msg[0], "%s: no message", what);
    for (k = 0; k < n_want; k++) CHECKF(strstr(err.msg, want[k]) != NULL, "%s: \"%s\" lacks \"%s\"", what, err.msg, want[k]);
    CHECKF(memcmp(before, ts, sizeof(zero_tensor) * (size_t)n) == 0, "%s: the failed bind changed the tensors", what);
    for (k = 0; k < n; k++)
        CHECKF(ts[k].init == before[k].init && ts[k].init_user == before[k].init_user, "%s: '%s' init changed", what,
               ts[k].name);
}

static void test_bind(const char *dir) {
    static bjob J;
    rt plain[NB], hf[NB + 2], strict[NB], extra[2];
    char path[1200];
    zero_safetensors *st, *sh;
    zero_error err;
    zero_safetensors_options opt;
    int world, stage, bf16, t;
    static const int WORLDS[3] = {1, 2, 4};

    bind_file(plain, "", 0);
    snprintf(path, sizeof path, "%s/plain.safetensors", dir);
    CHECK(write_rts(path, plain, NULL, NB, "\"format\":\"pt\"") > 0);
    bind_file(hf, "model.", 1);
    {
        int64_t s4 = 4, s3 = 3;
        rt_make(&hf[NB], "model.mask", "I64", 1, &s4, 0);
        rt_make(&hf[NB + 1], "lm_head.w", "F32", 1, &s3, 1);
    }
    snprintf(path, sizeof path, "%s/hf.safetensors", dir);
    CHECK(write_rts(path, hf, NULL, NB + 2, NULL) > 0);

    /* the plain file over worlds, stages and dtypes */
    snprintf(path, sizeof path, "%s/plain.safetensors", dir);
    if (!(st = open_ok(path, "bind"))) return;
    want_all(plain, 0);
    for (world = 0; world < 3; world++)
        for (stage = 0; stage <= 3; stage++)
            for (bf16 = 0; bf16 <= 1; bf16++) {
                bind_tensors(J.ts);
                memset(&err, 0, sizeof err);
                CHECKF(zero_safetensors_bind(st, J.ts, NB, NULL, &err) == ZERO_OK, "bind: %s", err.msg);
                for (t = 0; t < NB; t++) CHECKF(J.ts[t].init != zt_init_wave, "bind left '%s' its own init", BNAME[t]);
                run_bind(&J, WORLDS[world], stage, bf16, 0, "plain");
            }
    { /* one handle bound twice (two engines from one file): the first binding stays valid, the engine
         created from it after the second bind reads the file's values (ASan: no use after free) */
        zero_tensor other[NB];
        bind_tensors(J.ts);
        bind_tensors(other);
        CHECKF(zero_safetensors_bind(st, J.ts, NB, NULL, &err) == ZERO_OK, "first bind: %s", err.msg);
        CHECKF(zero_safetensors_bind(st, other, NB, NULL, &err) == ZERO_OK, "second bind: %s", err.msg);
        run_bind(&J, WORLDS[1], 2, 0, 0, "the first of two bindings");
        memcpy(J.ts, other, sizeof other);
        run_bind(&J, WORLDS[1], 2, 0, 0, "the second of two bindings");
    }

    /* f. the program's memory, stages 0-2: .data set, then bound; create
       writes the checkpoint's values into every rank's memory */
    for (world = 1; world < 3; world++)
        for (stage = 0; stage <= 2; stage++)
            for (bf16 = 0; bf16 <= 1; bf16++) {
                bind_tensors(J.ts);
                J.own = path;
                run_bind(&J, WORLDS[world], stage, bf16, 1, "program memory");
                J.own = NULL;
            }
    /* each rank with a checkpoint of its own, as separate processes have */
    bind_tensors(J.ts);
    J.own = path;
    run_bind(&J, 4, 3, 1, 0, "a checkpoint per rank");
    run_bind(&J, 2, 0, 0, 0, "a checkpoint per rank");
    J.own = NULL;

    /* shape and dtype mismatches, the transposed shape expected under transpose_2d */
    {
        rt odd[3];
        int64_t s1[2] = {11, 17}, s2[2] = {5, 3}, s3 = 4;
        zero_tensor one[1];
        const char *w1[3] = {"odd.w", "13", "17"}, *w2[2] = {"flat.x", "12"}, *w3[2] = {"tok.ids64", "I64"},
                   *w4[3] = {"sq.w", "11", "13"};
        zero_safetensors *so;
        rt_make(&odd[0], "odd.w", "F32", 2, s1, 1);
        rt_make(&odd[1], "flat.x", "F32", 2, s2, 1);
        rt_make(&odd[2], "tok.ids64", "I64", 1, &s3, 0);
        snprintf(path, sizeof path, "%s/shape.safetensors", dir);
        CHECK(write_rts(path, odd, NULL, 3, NULL) > 0);
        if ((so = open_ok(path, "shape"))) {
            memset(&opt, 0, sizeof opt);
            opt.allow_unexpected = 1;
            memset(one, 0, sizeof one);
            one[0].name = "odd.w", one[0].numel = 11 * 13, one[0].ndim = 2, one[0].shape[0] = 11, one[0].shape[1] = 13;
            one[0].init = zt_init_wave, one[0].init_user = &own_wave;
            bind_fail(so, one, 1, &opt, "2-D shape mismatch", w1, 3);
            memset(one, 0, sizeof one);
            one[0].name = "flat.x", one[0].numel = 12, one[0].init = zt_init_wave, one[0].init_user = &own_wave;
            bind_fail(so, one, 1, &opt, "numel mismatch", w2, 2);
            one[0].name = "tok.ids64", one[0].numel = 4, one[0].ndim = 1, one[0].shape[0] = 4;
            bind_fail(so, one, 1, &opt, "I64 tensor", w3, 2);
            zero_safetensors_close(so);
        }
        rt_free(odd, 3);
        /* transpose_2d: a [11, 13] file tensor for a [11, 13] engine tensor is the wrong way round */
        rt_make(&odd[0], "sq.w", "F32", 2, (int64_t[2]){11, 13}, 1);
        snprintf(path, sizeof path, "%s/square.safetensors", dir);
        CHECK(write_rts(path, odd, NULL, 1, NULL) > 0);
        if ((so = open_ok(path, "square"))) {
            memset(&opt, 0, sizeof opt);
            opt.transpose_2d = 1;
            memset(one, 0, sizeof one);
            one[0].name = "sq.w", one[0].numel = 11 * 13, one[0].ndim = 2, one[0].shape[0] = 11, one[0].shape[1] = 13;
            bind_fail(so, one, 1, &opt, "transposed shape", w4, 3);
            one[0].shape[0] = 13, one[0].shape[1] = 11; /* [13, 11] reads the [11, 13] file transposed */
            CHECKF(zero_safetensors_bind(so, one, 1, &opt, &err) == ZERO_OK, "transposed bind: %s", err.msg);
            zero_safetensors_close(so);
        }
        rt_free(odd, 1);
    }
    zero_safetensors_close(st);

    /* Hugging Face names and layout: rename, transpose_2d, ignore */
    snprintf(path, sizeof path, "%s/hf.safetensors", dir);
    if ((sh = open_ok(path, "hf"))) {
        ren R;
        static const int RUNS[3][3] = {{2, 1, 0}, {2, 3, 1}, {4, 2, 0}};
        int k;
        const char *w_unexp[1] = {"model.a.b"};
        want_all(hf, 1);
        for (k = 0; k < 3; k++) {
            bind_tensors(J.ts);
            memset(&R, 0, sizeof R);
            R.prefix = "model.", R.preset_want = 1, R.ts = J.ts;
            memset(&opt, 0, sizeof opt);
            opt.rename = rename_fn, opt.ignore = ignore_fn, opt.user = &R, opt.transpose_2d = 1;
            CHECKF(zero_safetensors_bind(sh, J.ts, NB, &opt, &err) == ZERO_OK, "hf bind: %s", err.msg);
            CHECKF(R.calls >= NB && R.bad_name == 0 && R.bad_preset == 0,
                   "rename: %d calls, %d with a wrong name, %d with *transpose not preset to 1", R.calls, R.bad_name,
                   R.bad_preset);
            CHECKF(R.saw_mask && R.saw_head, "ignore was not asked about model.mask (%d) and lm_head.w (%d)", R.saw_mask,
                   R.saw_head);
            run_bind(&J, RUNS[k][0], RUNS[k][1], RUNS[k][2], 0, "hf transpose_2d");
        }
        /* transpose set per tensor by the rename, transpose_2d off */
        for (k = 0; k < 2; k++) {
            bind_tensors(J.ts);
            memset(&R, 0, sizeof R);
            R.prefix = "model.", R.set_transpose = 1, R.preset_want = 0, R.ts = J.ts;
            memset(&opt, 0, sizeof opt);
            opt.rename = rename_fn, opt.ignore = ignore_fn, opt.user = &R;
            CHECKF(zero_safetensors_bind(sh, J.ts, NB, &opt, &err) == ZERO_OK, "hf bind (per tensor): %s", err.msg);
            CHECKF(R.bad_name == 0 && R.bad_preset == 0, "rename: %d wrong names, %d *transpose not preset to 0",
                   R.bad_name, R.bad_preset);
            run_bind(&J, k ? 4 : 1, k ? 3 : 0, k, 0, "hf transpose per tensor");
        }
        /* the rename drops a.b: its own init stays; model.a.b is then unexpected */
        bind_tensors(J.ts);
        memset(&R, 0, sizeof R);
        R.prefix = "model.", R.drop = "a.b", R.preset_want = 1, R.ts = J.ts;
        memset(&opt, 0, sizeof opt);
        opt.rename = rename_fn, opt.ignore = ignore_fn, opt.user = &R, opt.transpose_2d = 1;
        bind_fail(sh, J.ts, NB, &opt, "dropped a.b, strict", w_unexp, 1);
        opt.allow_unexpected = 1;
        CHECKF(zero_safetensors_bind(sh, J.ts, NB, &opt, &err) == ZERO_OK, "hf bind dropping a.b: %s", err.msg);
        CHECK(J.ts[1].init == zt_init_wave && J.ts[1].init_user == &own_wave);
        want_own(1);
        run_bind(&J, 2, 2, 1, 0, "hf, a.b dropped");
        run_bind(&J, 4, 3, 0, 0, "hf, a.b dropped");
        /* without the ignore callback the extras are unexpected */
        bind_tensors(J.ts);
        memset(&R, 0, sizeof R);
        R.prefix = "model.", R.preset_want = 1, R.ts = J.ts;
        opt.ignore = NULL, opt.allow_unexpected = 0;
        {
            const char *w[2] = {"model.mask", "lm_head.w"};
            bind_fail(sh, J.ts, NB, &opt, "extras not ignored", w, 2);
        }
        zero_safetensors_close(sh);
    }

    /* missing and unexpected names: one error lists them all */
    {
        int order[NB], n = 0;
        int64_t s2 = 2, s3 = 3;
        zero_safetensors *ss;
        rt_make(&extra[0], "u.one", "F32", 1, &s2, 1);
        rt_make(&extra[1], "u.two", "BF16", 1, &s3, 1);
        bind_file(strict, "", 0);
        for (t = 0; t < NB; t++) {
            if (t == 1 || t == 4) continue; /* a.b and flat missing */
            order[n++] = t;
        }
        {
            rt all[NB + 2];
            int ord[NB + 2], m = 0;
            for (t = 0; t < n; t++) all[m] = strict[order[t]], ord[m] = m, m++;
            all[m] = extra[0], ord[m] = m, m++;
            all[m] = extra[1], ord[m] = m, m++;
            snprintf(path, sizeof path, "%s/strict.safetensors", dir);
            CHECK(write_rts(path, all, ord, m, NULL) > 0);
        }
        if ((ss = open_ok(path, "strict"))) {
            const char *both[4] = {"a.b", "flat", "u.one", "u.two"};
            memset(&opt, 0, sizeof opt);
            bind_tensors(J.ts);
            bind_fail(ss, J.ts, NB, &opt, "strict", both, 4);
            bind_fail(ss, J.ts, NB, NULL, "strict (opt NULL)", both, 4);
            opt.allow_missing = 1;
            bind_fail(ss, J.ts, NB, &opt, "allow_missing", both + 2, 2);
            opt.allow_missing = 0, opt.allow_unexpected = 1;
            bind_fail(ss, J.ts, NB, &opt, "allow_unexpected", both, 2);
            opt.allow_missing = 1;
            CHECKF(zero_safetensors_bind(ss, J.ts, NB, &opt, &err) == ZERO_OK, "allow both: %s", err.msg);
            CHECK(J.ts[1].init == zt_init_wave && J.ts[4].init == zt_init_wave);
            CHECK(J.ts[0].init != zt_init_wave && J.ts[2].init != zt_init_wave);
            want_all(strict, 0);
            want_own(1);
            want_own(4);
            run_bind(&J, 2, 3, 0, 0, "missing and unexpected allowed");
            run_bind(&J, 1, 1, 1, 0, "missing and unexpected allowed");
            zero_safetensors_close(ss);
        }
        rt_free(strict, NB);
        rt_free(extra, 2);
    }
    rt_free(plain, NB);
    rt_free(hf, NB + 2);
}

/* ---- e. a read failing inside zero_engine_create ---- */

static void test_truncated(const char *dir) {
    static bjob J;
    rt f[NB];
    char path[1200];
    int mode, k, r;
    static const int RUNS[2][2][2] = {{{2, 1}, {4, 3}}, {{4, 3}, {2, 0}}}; /* [mode][run]: world, stage */
    bind_file(f, "", 0);
    snprintf(path, sizeof path, "%s/trunc.safetensors", dir);
    for (mode = 0; mode < 2; mode++) { /* 0: every tensor's data gone; 1: the last two bytes */
        uint64_t hdr = write_rts(path, f, NULL, NB, NULL);
        struct stat sb;
        zero_safetensors *st;
        zero_error err;
        CHECK(hdr > 0 && stat(path, &sb) == 0);
        if (!(st = open_ok(path, "truncated"))) continue;
        bind_tensors(J.ts);
        CHECKF(zero_safetensors_bind(st, J.ts, NB, NULL, &err) == ZERO_OK, "bind: %s", err.msg);
        CHECK(truncate(path, mode == 0 ? (off_t)(8 + hdr) : (off_t)sb.st_size - 2) == 0);
        for (k = 0; k < 2; k++) {
            int world = RUNS[mode][k][0];
            J.world = world, J.stage = RUNS[mode][k][1], J.bf16 = k, J.ext = 0;
            for (r = 0; r < 4; r++) J.r[r] = ZERO_OK, J.msg[r][0] = 0;
            phase = "create from a truncated file";
            zero_host_run(world, bind_rank, &J, &err);
            for (r = 0; r < world; r++) {
                CHECKF(J.r[r] != ZERO_OK, "truncated (%s) world %d stage %d: rank %d created",
                       mode ? "tail" : "all data", world, J.stage, r);
                CHECKF(has_any(J.msg[r], mode ? "trunc.safetensors|head.w" : "trunc.safetensors|a.w|a.b|big.w|big.b|flat|head.w"),
                       "truncated world %d rank %d: \"%s\" names neither the file nor a tensor", world, r, J.msg[r]);
            }
        }
        /* the file whole again: the same binding creates (no read fails now) */
        CHECK(write_rts(path, f, NULL, NB, NULL) == hdr);
        want_all(f, 0);
        run_bind(&J, 2, 2, mode, 0, "the file restored after a failed create");
        zero_safetensors_close(st);
    }
    /* each rank with its own open checkpoint (as processes have): a rank
       whose own reads succeed learns of the others' failure */
    for (mode = 0; mode < 2; mode++) {
        struct stat sb;
        zero_error err;
        int world = 4;
        uint64_t hdr = write_rts(path, f, NULL, NB, NULL);
        CHECK(hdr > 0 && stat(path, &sb) == 0);
        bind_tensors(J.ts);
        J.own = J.trunc = path;
        J.trunc_to = mode == 0 ? (off_t)(8 + hdr) : (off_t)sb.st_size - 2;
        J.world = world, J.stage = 3, J.bf16 = mode, J.ext = 0; /* tail: one rank owns it */
        for (r = 0; r < 4; r++) J.r[r] = ZERO_OK, J.msg[r][0] = 0;
        CHECK(pthread_barrier_init(&J.bar, NULL, (unsigned)world) == 0);
        phase = "create from a truncated file, a checkpoint per rank";
        zero_host_run(world, bind_rank, &J, &err);
        pthread_barrier_destroy(&J.bar);
        CHECKF(J.trunc != NULL, "truncate %s", path);
        for (r = 0; r < world; r++) {
            CHECKF(J.r[r] != ZERO_OK, "truncated (%s, a checkpoint per rank) world %d stage %d: rank %d created",
                   mode ? "tail" : "all data", world, J.stage, r);
            CHECKF(has_any(J.msg[r], mode ? "trunc.safetensors|head.w" : "trunc.safetensors|a.w|a.b|big.w|big.b|flat|head.w"),
                   "truncated, a checkpoint per rank, world %d rank %d: \"%s\" names neither the file nor a tensor", world,
                   r, J.msg[r]);
        }
        J.own = J.trunc = NULL;
    }
    rt_free(f, NB);
}

/* ---- the seed corpus of tests/fuzz_safetensors.c ---- */

static int write_corpus(const char *dir) {
    static const char *const dts[4] = {"F32", "F16", "BF16", "F64"};
    char path[1200];
    int k, ok = 1;
    for (k = 0; k < 4; k++) zt_rng_s[k] = zt_mix64((uint64_t)k + 11); /* the same corpus every time */
    for (k = 0; k < 4; k++) { /* one dtype each: a matrix, a vector, a scalar */
        rt ts[3];
        int64_t shape[2] = {3, 4};
        char name[32];
        snprintf(name, sizeof name, "%s.w", dts[k]);
        rt_make(&ts[0], name, dts[k], 2, shape, 0);
        snprintf(name, sizeof name, "%s.b", dts[k]);
        rt_make(&ts[1], name, dts[k], 1, shape + 1, 0);
        snprintf(name, sizeof name, "%s.s", dts[k]);
        rt_make(&ts[2], name, dts[k], 0, shape, 0);
        snprintf(path, sizeof path, "%s/valid_%s", dir, dts[k]);
        ok &= write_rts(path, ts, NULL, 3, k ? NULL : "\"format\":\"pt\"") > 0;
        rt_free(ts, 3);
    }
    { /* every dtype, empty tensors, integers, metadata of a sharded save */
        rt ts[NRS];
        make_reads(ts, 1);
        snprintf(path, sizeof path, "%s/valid_mixed", dir);
        ok &= write_rts(path, ts, NULL, NRS, "\"format\":\"pt\",\"total_size\":\"4096\",\"shard\":\"1 of 3\"") > 0;
        rt_free(ts, NRS);
    }
    /* indexes: tests/fuzz_safetensors.c opens an input that starts with '{'
       as model.safetensors.index.json beside its shards a.safetensors
       (tensors a, b) and b.safetensors (tensor c) */
    snprintf(path, sizeof path, "%s/index_valid", dir);
    write_text(path, "{\"metadata\":{\"total_size\":30},\"weight_map\":{\"a\":\"a.safetensors\",\"b\":\"a.safetensors\","
                     "\"c\":\"b.safetensors\"}}");
    snprintf(path, sizeof path, "%s/index_missing_shard", dir);
    write_text(path, "{\"metadata\":{},\"weight_map\":{\"a\":\"a.safetensors\",\"c\":\"c.safetensors\"}}");
    for (k = 0; k < NBAD; k++) {
        static const char *const pick[] = {"short", "len_past_end", "len_huge", "not_json", "not_object", "truncated",
                                           "overlap", "backwards", "gap", "trailing", "size_mismatch",
                                           "shape_overflow", "offsets_huge"};
        size_t j;
        for (j = 0; j < sizeof pick / sizeof pick[0]; j++)
            if (!strcmp(pick[j], BAD[k].name)) {
                snprintf(path, sizeof path, "%s/bad_%s", dir, BAD[k].name);
                ok &= write_bad(k, path);
            }
    }
    { /* a header length with an odd first byte: the target rewrites it to fit the JSON */
        sbuf h = {0};
        sb_add(&h, "{\"w.a\":{\"dtype\":\"BF16\",\"shape\":[2,1],\"data_offsets\":[0,4]}}");
        while (h.n % 8) sb_add(&h, " ");
        snprintf(path, sizeof path, "%s/odd_length", dir);
        ok &= write_raw(path, 1, h.p, h.n, "\200\077\000\300", 4);
        free(h.p);
    }
    printf("seed corpus written to %s\n", dir);
    return ok ? 0 : 1;
}

int main(int argc, char **argv) {
    char base[] = "/tmp/zero_test_st_XXXXXX";
    struct sigaction sa;
    if (argc == 3 && !strcmp(argv[1], "--corpus")) return write_corpus(argv[2]);
    zt_seed("test_safetensors");
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    alarm(120); /* the whole test; it takes seconds */
    if (!mkdtemp(base)) {
        CHECKF(0, "mkdtemp");
        return zt_finish();
    }
    test_reads(base);
    test_sharded(base);
    test_bad(base);
    test_bind(base);
    test_truncated(base);
    alarm(0);
    {
        char cmd[200];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
        CHECKF(system(cmd) == 0, "rm -rf %s", base);
    }
    return zt_finish();
}
