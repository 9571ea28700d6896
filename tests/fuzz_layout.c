/* tests/fuzz_layout.c - libFuzzer target for the registration of program-owned
   buffers (zero.h: zero_engine_create with zero_tensor.data and .grad, the
   layout's checks of names, sizes and shapes).

   Fuzz (from the repository root; `make fuzz-layout` does this):
       clang -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -I. -o fz tests/fuzz_layout.c -lm -lpthread
       ./fz -max_total_time=600 build/fuzz_layout_corpus tests/fuzz_layout_corpus
   Replay without libFuzzer (what `make test` does with the seed corpus):
       clang ... -DZERO_FUZZ_REPLAY ... && ./fr tests/fuzz_layout_corpus/[a-z]*

   An input is a tensor table on one host rank: byte 0 the stage (0-3) and
   dtype (fp32 / bf16), byte 1 the tensor count (1-8) and whether the
   parameters and the gradients point into the program's memory, then 8
   bytes per tensor: elements (0 allowed), shape (none, right, or wrong;
   an extent may be huge), group, flags, and the offsets of its data and
   its gradient in one arena of the program's (the gradient may point into
   the data: an alias), with a byte's misalignment or a range past the
   arena's end. The backend is the host backend with the arena's extent
   known (mem_extent), as the CUDA backend knows a cudaMalloc's.

   Invariants: zero_engine_create succeeds exactly when a plain checker
   written here finds the table valid (names, 1 .. 2^50 elements, a shape
   whose product is the element count, data for all or none and not at
   stage 3, gradients for every trainable tensor or none and none for a
   frozen one, each range aligned and inside the arena, no two ranges of
   the program's memory overlapping: data with data, gradients with
   gradients, a gradient with any data); a refusal carries an item and a
   message; an engine that was created trains one step. A broken invariant
   aborts. */
#define ZERO_IMPLEMENTATION
#include "zero.h"
#include "fuzz_common.h"

#define FZ_ARENA 4096 /* bytes */
#define FZ_MAXT 8

static unsigned char *fz_arena;

static int64_t fz_extent(void *ctx, const void *p) {
    uintptr_t a = (uintptr_t)p, lo = (uintptr_t)fz_arena, hi = lo + FZ_ARENA;
    (void)ctx;
    return a >= lo && a < hi ? (int64_t)(hi - a) : -1;
}

typedef struct fz_case {
    int stage, dtype, n, with_data, with_grad;
    zero_tensor ts[FZ_MAXT];
    char names[FZ_MAXT][8];
    zero_result r;
    zero_error err;
    int trained;
} fz_case;

static void fz_init(void *user, int t, int64_t off, int64_t n, float *out) {
    int64_t i;
    (void)user;
    for (i = 0; i < n; i++) out[i] = 0.01f * (float)((t * 7 + off + i) % 11);
}

/* one micro-batch and a step: every trainable tensor's gradient written whole */
static int fz_train(zero_engine *e, const fz_case *c) {
    int t;
    for (t = 0; t < c->n; t++)
        if (zero_fetch(e, t) != ZERO_OK || !zero_param(e, t) || zero_release(e, t) != ZERO_OK) return 0;
    for (t = c->n - 1; t >= 0; t--) {
        void *g;
        if (c->ts[t].flags & ZERO_TENSOR_FROZEN) continue;
        if (!(g = zero_grad(e, t))) return 0;
        memset(g, 0, (size_t)c->ts[t].numel * zero_dtype_size((zero_dtype)c->dtype));
        if (zero_grad_ready(e, t) != ZERO_OK) return 0;
    }
    return zero_step(e, NULL) == ZERO_OK;
}

static zero_result fz_rank(const zero_backend *b0, void *arg) {
    fz_case *c = (fz_case *)arg;
    zero_backend b = *b0;
    zero_config cfg = zero_config_default();
    zero_engine *e = NULL;
    b.mem_extent = fz_extent;
    cfg.train_micro_batch_size_per_gpu = 1;
    cfg.zero_optimization.stage = c->stage;
    cfg.zero_optimization.reduce_bucket_size = 16;
    cfg.bf16.enabled = c->dtype == ZERO_DTYPE_BF16;
    cfg.log.level = ZERO_LOG_LEVEL_COUNT;
    zero__ok(&c->err);
    c->r = zero_config_resolve(&cfg, 1, &c->err);
    if (c->r == ZERO_OK) c->r = zero_engine_create(&e, &cfg, c->ts, c->n, &b, &c->err);
    if (c->r == ZERO_OK) {
        c->trained = fz_train(e, c);
        if (!c->trained) fprintf(stderr, "fuzz_layout: training failed: %s\n", zero_engine_error(e)->msg);
        zero_engine_destroy(e);
    }
    return ZERO_OK;
}

/* [a, a + n) and [b, b + m) share a byte */
static int fz_overlap(uintptr_t a, size_t n, uintptr_t b, size_t m) { return a < b + m && b < a + n; }

/* the plain checker: 1 when the table should be accepted */
static int fz_valid(const fz_case *c) {
    size_t es = zero_dtype_size((zero_dtype)c->dtype);
    int t, u;
    for (t = 0; t < c->n; t++) {
        const zero_tensor *x = &c->ts[t];
        int64_t prod = 1;
        int d;
        if (x->numel < 1 || x->numel > ((int64_t)1 << 50)) return 0;
        for (d = 0; d < x->ndim; d++) {
            if (x->shape[d] < 0 || x->shape[d] > ((int64_t)1 << 50)) return 0;
            prod = x->shape[d] == 0 || prod <= ((int64_t)1 << 50) / x->shape[d] ? prod * x->shape[d] : ((int64_t)1 << 51);
        }
        if (x->ndim > 0 && prod != x->numel) return 0;
    }
    if (c->with_data && c->stage == 3) return 0;
    for (t = 0; t < c->n; t++) {
        const zero_tensor *x = &c->ts[t];
        size_t bytes = (size_t)x->numel * es;
        if (x->data && ((uintptr_t)x->data % es || fz_extent(NULL, x->data) < (int64_t)bytes)) return 0;
        if (x->grad && ((uintptr_t)x->grad % es || fz_extent(NULL, x->grad) < (int64_t)bytes)) return 0;
        for (u = 0; u < c->n; u++) {
            const zero_tensor *y = &c->ts[u];
            size_t ybytes = (size_t)y->numel * es;
            if (u > t && x->data && y->data && fz_overlap((uintptr_t)x->data, bytes, (uintptr_t)y->data, ybytes)) return 0;
            if (u > t && x->grad && y->grad && fz_overlap((uintptr_t)x->grad, bytes, (uintptr_t)y->grad, ybytes)) return 0;
            if (x->grad && y->data && fz_overlap((uintptr_t)x->grad, bytes, (uintptr_t)y->data, ybytes)) return 0;
        }
    }
    return 1;
}

static int fz_one(const unsigned char *data, size_t size) {
    static fz_case c;
    zero_error err;
    int t, want, frozen = 0;
    size_t es;
    if (size < 2) return 1;
    if (!fz_arena && !(fz_arena = (unsigned char *)malloc(FZ_ARENA + 64))) return 1;
    memset(&c, 0, sizeof c);
    c.stage = data[0] & 3;
    c.dtype = data[0] & 4 ? ZERO_DTYPE_BF16 : ZERO_DTYPE_FP32;
    c.n = 1 + (data[1] & 7);
    c.with_data = (data[1] >> 3) & 1;
    c.with_grad = (data[1] >> 4) & 1;
    es = zero_dtype_size((zero_dtype)c.dtype);
    data += 2, size -= 2;
    for (t = 0; t < c.n; t++) {
        unsigned char b[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        zero_tensor *x = &c.ts[t];
        size_t k;
        for (k = 0; k < 8 && k < size; k++) b[k] = data[k];
        data += k, size -= k;
        snprintf(c.names[t], sizeof c.names[t], "t%d", t);
        x->name = c.names[t];
        x->numel = b[0] & 63; /* 0 allowed */
        x->group = b[1] & 3;
        x->flags = (b[1] >> 2) & (ZERO_TENSOR_FROZEN | ZERO_TENSOR_NO_DECAY | ZERO_TENSOR_GRAD_WRITE |
                                  ZERO_TENSOR_GRAD_ANY_ORDER);
        x->init = fz_init;
        switch (b[2] & 3) { /* the shape: none, right, wrong, or with a huge extent beside a zero */
        case 0: break;
        case 1: x->ndim = 2, x->shape[0] = 1, x->shape[1] = x->numel; break;
        case 2: x->ndim = 1, x->shape[0] = x->numel + 1 + (b[2] >> 2); break;
        default:
            x->ndim = 2;
            x->shape[(b[2] >> 2) & 1] = 0;
            x->shape[1 - ((b[2] >> 2) & 1)] = (int64_t)1 << (40 + (b[2] >> 3 & 15) * 2);
            break;
        }
        /* offsets in elements (the arena holds FZ_ARENA bytes: some ranges run past it), and a byte's
           misalignment */
        if (c.with_data) x->data = fz_arena + (size_t)(b[3] | (b[4] & 1) << 8) * es + ((b[4] >> 1) == 1 ? 1 : 0);
        if (c.with_grad && !(x->flags & ZERO_TENSOR_FROZEN)) {
            if (b[5] & 1) x->grad = c.with_data ? c.ts[b[6] % (t + 1)].data : NULL; /* an alias of some tensor's data */
            else x->grad = fz_arena + (size_t)(b[6] | (b[7] & 3) << 8) * es + ((b[7] >> 2) == 1 ? 1 : 0);
            if (!x->grad) x->grad = fz_arena + (size_t)b[6] * es;
        }
        frozen += (x->flags & ZERO_TENSOR_FROZEN) != 0;
    }
    if (frozen == c.n) c.ts[0].flags &= ~ZERO_TENSOR_FROZEN; /* (all frozen is refused for another reason) */
    want = fz_valid(&c);
    if (zero_host_run(1, fz_rank, &c, &err) != ZERO_OK) return 0;
    FZ_ASSERT((c.r == ZERO_OK) == want);
    if (c.r == ZERO_OK) FZ_ASSERT(c.trained);
    else FZ_ASSERT(c.err.item != ZERO_MSG_NONE && c.err.msg[0]);
    if ((c.r == ZERO_OK) != want)
        fprintf(stderr, "fuzz_layout: stage %d %s, %d tensors: create %s, the checker %s (%s)\n", c.stage,
                zero_dtype_name((zero_dtype)c.dtype), c.n, c.r == ZERO_OK ? "accepted" : "refused",
                want ? "accepts" : "refuses", c.err.msg);
    return 1;
}
