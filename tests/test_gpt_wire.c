/* test_gpt_wire.c - examples/gpt/gpt_wire.h, the GPT example's wiring to
   the engine (its tensor table and the order of the engine calls of one
   micro-batch, the code examples/gpt/gpt.cu runs on GPUs), on host ranks:
   gpt_ref.h's float64 model runs as its compute pieces, on the engine's
   parameter and gradient buffers in the compute dtype, so a change of call
   order, flags or groups that would break gpt.cu fails here without a GPU.

   - Training through a real zero_engine: a tiny GPT-2 (L 2, C 16, H 2, T 8,
     V 32, the head tied to wte, 2 sequences per rank, the same batch at
     each of 4 steps of Adam) at stages 0-3 x compute dtype fp32 / bf16 /
     fp16 x {no offload, offload_optimizer "cpu" (stages 1-3), both offloads
     "cpu" (stage 3)} x world 1 and 2, 48 runs, the tensors as
     gpt_wire_tensors registers them, without ZERO_TENSOR_GRAD_ANY_ORDER
     (the engine finds the tied embedding itself). Every loss finite, each
     step's below the last by 0.05 (the loss falls about 0.15 a step from
     log 32), and every run's losses those of stage 0 without offload in the
     same dtype and world: within 1e-6 relative in fp32, 1e-3 in bf16 and
     fp16. The compute is the same float64 code on the same bits in every
     run, and host ranks reduce in rank order at every stage, so today the
     runs agree to the last bit; the bounds leave room for an optimizer path
     that rounds otherwise (a SIMD CPU Adam moves fp32 weights by an ulp or
     so, far below 1e-6 of the loss; in 16 bits one such ulp can flip a
     weight's rounding to the dtype, 2^-8 relative in bf16, which moves the
     loss by a small part of that) while a wrong call order, a gradient
     reduced before it was complete or a lost share of wte's moves the loss
     by 1e-2 or more.
   - Stages 2-3 without the hint: the memory report counts wte's span as
     found in the backward (a buffer of its own beside the two-slot ring).
     With the hint (GPT_WIRE_WTE_ANY_ORDER, gpt --grad-any-order): planned
     at create, and the same losses bitwise.
   - recompute (the block's forward again before its backward, a second
     read of its parameters) at stage 3, world 2, each dtype: the losses
     of the run without, bitwise.
   - The same wiring on plain buffers, no engine (built as
     test_gpt_wire_plain.c, with the seam below; tests/gpu_gpt.cu runs the
     CUDA model so): every parameter read between its fetch and
     release, every fetch released, every gradient asked for and handed over
     exactly once, wte's asked for at the head; the loss that of
     gpt_ref_loss_grad bitwise, and each gradient as it was at its hand-over
     (what an engine reduces) gpt_ref_loss_grad's rounded to fp32 (wte: its
     two shares rounded apart, 2e-6 of its largest element).
   - The tensor table: HF GPT-2's names, no weight decay on exactly the 1-D
     tensors, GRAD_WRITE on every tensor but wte, GRAD_ANY_ORDER on wte only
     with the option; in the engine's layout no unit holds tensors of two
     blocks (stage 3 gathers a block at a time).

   Run alone: make test T=test_gpt_wire */
#ifndef ZERO_TEST_SHARED_IMPL /* (tests/run.sh links tests/zero_impl.c's build instead) */
#define ZERO_IMPLEMENTATION
#endif
#include "zero.h"
#include "examples/gpt/gpt_model.h"

enum { STEPS = 4, BATCH = 2 /* sequences per rank */, MAXW = 2 };
static const gpt_dims DIMS = {2, 16, 2, 8, 32, 0};
#define NT (4 + GPT_PER_BLOCK * 2) /* gpt_n_tensors(&DIMS) */
#define SEQ_IDS (8 + 1)            /* a row's ids: T + 1 */

#ifdef GPT_WIRE_TEST_PLAIN
/* ---- the seam: the wiring on plain buffers (test_gpt_wire_plain.c) ----

   gpt_wire.h calls the engine by name (zero_fetch(e, t), zero_param,
   zero_grad, zero_grad_ready, zero_release, zero_engine_error). Built as
   test_gpt_wire_plain.c (GPT_WIRE_TEST_PLAIN), those names mean the
   functions below around gpt_wire.h's #include, the engine pointer
   standing for a plain_io: the wiring runs with no engine, the way
   tests/gpu_gpt.cu runs the CUDA model, and what it did is recorded. */

/* fp32 parameters and gradients, and what the wiring did with them */
typedef struct plain_io {
    float *p[NT], *g[NT];
    float *h[NT]; /* each gradient as it was handed over: what an engine reduces */
    int fetched[NT], asked[NT], ready[NT], bad;
    int wte_asked_at; /* the count of handed-over gradients when wte's was asked for */
    int n_ready;
} plain_io;

static zero_engine *plain_engine(plain_io *p) { return (zero_engine *)(void *)p; }

static void *pio_param(zero_engine *e, int t) {
    plain_io *io = (plain_io *)(void *)e;
    if (!io->fetched[t]) io->bad++;
    return io->p[t];
}
static void *pio_grad(zero_engine *e, int t) {
    plain_io *io = (plain_io *)(void *)e;
    if (io->asked[t]++) io->bad++;
    if (t == GPT_WTE) io->wte_asked_at = io->n_ready;
    memset(io->g[t], 0, (size_t)gpt_tensor_numel(&DIMS, t) * sizeof(float));
    return io->g[t];
}
static zero_result pio_ready(zero_engine *e, int t) {
    plain_io *io = (plain_io *)(void *)e;
    if (!io->asked[t] || io->ready[t]++) io->bad++;
    memcpy(io->h[t], io->g[t], (size_t)gpt_tensor_numel(&DIMS, t) * sizeof(float));
    io->n_ready++;
    return ZERO_OK;
}
static zero_result pio_fetch(zero_engine *e, int t) {
    ((plain_io *)(void *)e)->fetched[t]++;
    return ZERO_OK;
}
static zero_result pio_release(zero_engine *e, int t) {
    plain_io *io = (plain_io *)(void *)e;
    if (io->fetched[t]-- <= 0) io->bad++;
    return ZERO_OK;
}

static const zero_error *pio_error(zero_engine *e) { /* (the calls above cannot fail) */
    static zero_error none; /* (zero: ZERO_OK) */
    (void)e;
    return &none;
}

#include "gpt_seam.h" /* the names mean the functions above */
#endif
#include "examples/gpt/gpt_wire.h"
#ifdef GPT_WIRE_TEST_PLAIN
#include "gpt_seam.h" /* the engine's again */
#endif
#include "examples/gpt/gpt_ref.h"
#include "zero_test.h"

/* Sample b of rank's batch, the same at every step (the loss falls at
   each): a start hashed from (rank, b), then each next id a fixed
   permutation of the last */
static void sample(int rank, int b, int *row) {
    int i;
    row[0] = (int)(zt_mix64((uint64_t)rank * 131u + (uint64_t)b) % (uint64_t)DIMS.vocab);
    for (i = 1; i < SEQ_IDS; i++) row[i] = (row[i - 1] * 5 + 3) % DIMS.vocab;
}

static void init_gpt(void *user, int t, int64_t off, int64_t n, float *out) {
    int64_t i;
    for (i = 0; i < n; i++) out[i] = (float)gpt_init_value((const gpt_dims *)user, 7, t, off + i);
}

/* ---- the compute pieces: gpt_ref.h on compute-dtype buffers ---- */

typedef struct host_mb {
    gpt_ref_acts A;
    zero_dtype dt;
    const int *tokens;
    double gscale;          /* d loss_sum / d logit: the loss scale over the tokens */
    double loss;            /* the micro-batch's loss sum */
    double *p[NT], *g[NT];  /* parameters as last read, in double; gradient scratch */
} host_mb;

static void load(const host_mb *m, int t, const void *src) {
    int64_t i;
    for (i = 0; i < gpt_tensor_numel(&DIMS, t); i++) m->p[t][i] = zt_load(src, m->dt, i);
}
static void clear_grad(const host_mb *m, int t) {
    memset(m->g[t], 0, (size_t)gpt_tensor_numel(&DIMS, t) * sizeof(double));
}
/* the scratch gradient of t into the engine's buffer: written, or added (wte's two shares) */
static void put_grad(const host_mb *m, int t, void *dst, int add) {
    int64_t i;
    for (i = 0; i < gpt_tensor_numel(&DIMS, t); i++)
        zt_store(dst, m->dt, i, (float)((add ? zt_load(dst, m->dt, i) : 0.0) + m->g[t][i]));
}

static zero_result h_embed(void *u, const void *wte, const void *wpe, zero_error *err) {
    host_mb *m = (host_mb *)u;
    (void)err;
    load(m, GPT_WTE, wte);
    load(m, GPT_WPE, wpe);
    gpt_ref_embed(&m->A, m->tokens, m->p[GPT_WTE], m->p[GPT_WPE]);
    return ZERO_OK;
}
static zero_result h_block_fwd(void *u, int l, int slot, int out_resid, const void *const *p, zero_error *err) {
    host_mb *m = (host_mb *)u;
    int k, t0 = gpt_block_tensor(l, 0);
    (void)err;
    for (k = 0; k < GPT_PER_BLOCK; k++) load(m, t0 + k, p[k]);
    gpt_ref_block_fwd(&m->A, l, slot, (const double *const *)(m->p + t0), out_resid);
    return ZERO_OK;
}
static zero_result h_lnf_fwd(void *u, const void *w, const void *b, zero_error *err) {
    host_mb *m = (host_mb *)u;
    int tf = gpt_lnf_w(&DIMS);
    (void)err;
    load(m, tf, w);
    load(m, tf + 1, b);
    gpt_ref_lnf_fwd(&m->A, m->p[tf], m->p[tf + 1]);
    return ZERO_OK;
}
static zero_result h_head(void *u, const void *wte, void *gwte, zero_error *err) {
    host_mb *m = (host_mb *)u;
    (void)err;
    load(m, GPT_WTE, wte);
    if (gwte) clear_grad(m, GPT_WTE);
    m->loss += gpt_ref_head(&m->A, m->tokens, m->p[GPT_WTE], m->gscale, gwte ? m->g[GPT_WTE] : NULL);
    if (gwte) put_grad(m, GPT_WTE, gwte, 1);
    return ZERO_OK;
}
static zero_result h_piece_before(void *u, gpt_wire_piece piece, int l, int slot, const void *const *p,
                                  zero_error *err) {
    (void)u, (void)piece, (void)l, (void)slot, (void)p, (void)err; /* the float64 pieces run whole in write */
    return ZERO_OK;
}
static zero_result h_piece_write(void *u, gpt_wire_piece piece, int l, int slot, const void *const *p, void *const *g,
                                 zero_error *err) {
    static const gpt_ref_bwd_fn fn[GPT_WIRE_PIECE_COUNT] = {
        gpt_ref_bwd_lnf, gpt_ref_bwd_mlp_proj,  gpt_ref_bwd_fc_b, gpt_ref_bwd_fc_w,
        gpt_ref_bwd_ln2, gpt_ref_bwd_attn_proj, gpt_ref_bwd_qkv,  gpt_ref_bwd_ln1};
    host_mb *m = (host_mb *)u;
    int t[2], i, k, n = gpt_wire_piece_tensors(&DIMS, piece, l, t);
    int t0 = piece == GPT_WIRE_LNF ? gpt_lnf_w(&DIMS) : gpt_block_tensor(l, 0);
    (void)err;
    for (k = 0; k < (piece == GPT_WIRE_LNF ? 2 : GPT_PER_BLOCK); k++) load(m, t0 + k, p[k]);
    for (i = 0; i < n; i++) clear_grad(m, t[i]);
    fn[piece](&m->A, l, slot, (const double *const *)(m->p + t0), m->g + t0);
    for (i = 0; i < n; i++) put_grad(m, t[i], g[i], 0);
    return ZERO_OK;
}
static zero_result h_embed_bwd(void *u, void *gwte, void *gwpe, zero_error *err) {
    host_mb *m = (host_mb *)u;
    (void)err;
    clear_grad(m, GPT_WTE);
    clear_grad(m, GPT_WPE);
    gpt_ref_embed_bwd(&m->A, m->tokens, m->g[GPT_WTE], m->g[GPT_WPE]);
    put_grad(m, GPT_WTE, gwte, 1);
    put_grad(m, GPT_WPE, gwpe, 0);
    return ZERO_OK;
}
static const gpt_wire_compute host_pieces = {h_embed,        h_block_fwd,   h_lnf_fwd,  h_head,
                                             h_piece_before, h_piece_write, h_embed_bwd};

static void host_mb_free(host_mb *m) {
    int t;
    gpt_ref_acts_free(&m->A);
    for (t = 0; t < NT; t++) free(m->p[t]), free(m->g[t]);
}
static int host_mb_alloc(host_mb *m, zero_dtype dt, int slots) {
    int t, bad = 0;
    memset(m, 0, sizeof *m);
    m->dt = dt;
    for (t = 0; t < NT; t++) {
        m->p[t] = (double *)calloc((size_t)gpt_tensor_numel(&DIMS, t), sizeof(double));
        m->g[t] = (double *)calloc((size_t)gpt_tensor_numel(&DIMS, t), sizeof(double));
        bad |= !m->p[t] || !m->g[t];
    }
    if (bad || gpt_ref_acts_alloc(&m->A, &DIMS, BATCH, slots)) {
        host_mb_free(m);
        return 1;
    }
    return 0;
}

#ifndef GPT_WIRE_TEST_PLAIN
/* ---- training through the engine ---- */

typedef struct run {
    int stage, world, offload_opt, offload_param, recompute, opts; /* opts: gpt_wire_tensors' */
    zero_dtype dt;
    double loss[STEPS]; /* rank 0: each step's loss, averaged over the ranks */
    zero_memory_stats ms; /* rank 0, after training */
    zero_result r;
    char err[1100];
} run;

static zero_result train_rank(const zero_backend *be, void *arg) {
    run *R = (run *)arg;
    zero_config cfg = zero_config_default();
    gpt_wire_name names[NT];
    zero_tensor ts[NT];
    zero_engine *e = NULL;
    zero_error err;
    host_mb m;
    int rows[BATCH * SEQ_IDS], k, b;
    zero_result r = ZERO_OK;
    gpt_wire w;
    memset(&err, 0, sizeof err);
    cfg.train_micro_batch_size_per_gpu = BATCH;
    cfg.gradient_accumulation_steps = 1;
    cfg.zero_optimization.stage = R->stage;
    cfg.zero_optimization.reduce_bucket_size = 1000; /* several units a block; wte and wpe one unit */
    cfg.zero_optimization.stage3_param_persistence_threshold = 0; /* every tensor fetched and released */
    cfg.zero_optimization.stage3_max_live_parameters = 8000;       /* about two blocks */
    cfg.zero_optimization.stage3_prefetch_bucket_size = 4000;
    cfg.zero_optimization.offload_optimizer.device = (zero_offload_device)R->offload_opt;
    cfg.zero_optimization.offload_param.device = (zero_offload_device)R->offload_param;
    cfg.optimizer.lr = 1e-2;
    cfg.optimizer.weight_decay = 0.01;
    cfg.bf16.enabled = R->dt == ZERO_DTYPE_BF16;
    cfg.fp16.enabled = R->dt == ZERO_DTYPE_FP16;
    cfg.fp16.initial_scale_power = 8;
    cfg.log.level = ZERO_LOG_WARN;
    gpt_wire_tensors(&DIMS, R->opts, names, ts, init_gpt, (void *)&DIMS);
    if ((r = zero_config_resolve(&cfg, be->world, &err)) != ZERO_OK ||
        (r = zero_engine_create(&e, &cfg, ts, NT, be, &err)) != ZERO_OK) {
        if (be->rank == 0) R->r = r, snprintf(R->err, sizeof R->err, "create: %s", err.msg);
        return ZERO_OK;
    }
    if (host_mb_alloc(&m, R->dt, R->recompute ? 1 : DIMS.layers)) {
        zero_engine_destroy(e);
        return ZERO_ERR_OUT_OF_MEMORY;
    }
    w.e = e, w.d = &DIMS, w.recompute = R->recompute, w.c = &host_pieces, w.user = &m;
    for (k = 0; k < STEPS && r == ZERO_OK; k++) {
        zero_step_info info;
        double loss;
        for (b = 0; b < BATCH; b++) sample(be->rank, b, rows + b * SEQ_IDS);
        m.tokens = rows;
        m.loss = 0;
        m.gscale = zero_loss_scale(e) / (BATCH * DIMS.seq);
        if ((r = gpt_wire_step(&w, &err)) != ZERO_OK) break;
        loss = m.loss / (BATCH * DIMS.seq);
        if ((r = zero_all_reduce_scalars(e, &loss, 1, ZERO_OP_AVG)) != ZERO_OK ||
            (r = zero_step(e, &info)) != ZERO_OK) {
            err = *zero_engine_error(e);
            break;
        }
        if (be->rank == 0) R->loss[k] = loss;
    }
    if (r != ZERO_OK && be->rank == 0) R->r = r, snprintf(R->err, sizeof R->err, "step %d: %s", k, err.msg);
    if (be->rank == 0) zero_memory_report(e, &R->ms);
    host_mb_free(&m);
    zero_engine_destroy(e);
    return ZERO_OK;
}

static void train(run *R) {
    zero_error err;
    CHECKF(zero_host_run(R->world, train_rank, R, &err) == ZERO_OK, "host run: %s", err.msg);
}

static const char *dt_name(zero_dtype dt) {
    return dt == ZERO_DTYPE_BF16 ? "bf16" : dt == ZERO_DTYPE_FP16 ? "fp16" : "fp32";
}

/* R's losses against base's: the largest relative difference */
static double max_rel(const run *R, const run *base) {
    double m = 0;
    int k;
    for (k = 0; k < STEPS; k++) {
        double d = fabs(R->loss[k] - base->loss[k]) / fabs(base->loss[k]);
        if (!(d <= m)) m = d; /* keeps a NaN */
    }
    return m;
}

static int same_losses(const run *a, const run *b) { return !memcmp(a->loss, b->loss, sizeof a->loss); }

static void test_stages(void) {
    static const zero_dtype dts[3] = {ZERO_DTYPE_FP32, ZERO_DTYPE_BF16, ZERO_DTYPE_FP16};
    /* offload: 0 none, 1 the optimizer on the CPU (stages 1-3), 2 and the parameters (stage 3) */
    static const struct {
        int stage, offload;
    } cfgs[] = {{0, 0}, {1, 0}, {1, 1}, {2, 0}, {2, 1}, {3, 0}, {3, 1}, {3, 2}};
    static run base, R;
    int di, world, c, k, runs = 0;
    printf("c. stages 0-3 x fp32/bf16/fp16 x offload x world 1, 2 (loss per step; max rel. diff. to stage 0)\n");
    for (di = 0; di < 3; di++)
        for (world = 1; world <= MAXW; world++)
            for (c = 0; c < (int)(sizeof cfgs / sizeof cfgs[0]); c++) {
                run *X = c == 0 ? &base : &R;
                double bound = dts[di] == ZERO_DTYPE_FP32 ? 1e-6 : 1e-3, rel;
                int finite = 1;
                memset(X, 0, sizeof *X);
                X->stage = cfgs[c].stage, X->world = world, X->dt = dts[di];
                X->offload_opt = cfgs[c].offload >= 1 ? ZERO_OFFLOAD_CPU : ZERO_OFFLOAD_NONE;
                X->offload_param = cfgs[c].offload == 2 ? ZERO_OFFLOAD_CPU : ZERO_OFFLOAD_NONE;
                train(X);
                runs++;
                CHECKF(X->r == ZERO_OK, "stage %d %s world %d offload %d: %s", X->stage, dt_name(X->dt), world,
                       cfgs[c].offload, X->err);
                if (X->r != ZERO_OK) continue;
                for (k = 0; k < STEPS; k++) finite &= isfinite(X->loss[k]);
                rel = max_rel(X, &base);
                printf("   stage %d %s world %d offload %-14s loss %.6f -> %.6f   %.2g\n", X->stage, dt_name(X->dt),
                       world, cfgs[c].offload == 2 ? "opt+param cpu" : cfgs[c].offload ? "optimizer cpu" : "none",
                       X->loss[0], X->loss[STEPS - 1], rel);
                CHECK(finite);
                for (k = 1; k < STEPS; k++)
                    CHECKF(X->loss[k] < X->loss[k - 1] - 0.05, "step %d: the loss did not fall: %.6f -> %.6f", k,
                           X->loss[k - 1], X->loss[k]);
                CHECKF(rel <= bound, "stage %d %s world %d offload %d: losses %.3g from stage 0's (allowed %.3g)",
                       X->stage, dt_name(X->dt), world, cfgs[c].offload, rel, bound);
                if (X->stage >= 2 && world > 1) /* wte's span: found in the first micro-batch, a buffer of its own */
                    CHECKF(X->ms.grad_own_spans >= 1 && X->ms.grad_own_found == X->ms.grad_own_spans,
                           "stage %d: %d own spans, %d found", X->stage, X->ms.grad_own_spans, X->ms.grad_own_found);
            }
    printf("   %d runs\n", runs);
}

/* the hint, and recompute: the same losses bitwise */
static void test_hint_recompute(void) {
    static run plain, X;
    static const zero_dtype dts[3] = {ZERO_DTYPE_FP32, ZERO_DTYPE_BF16, ZERO_DTYPE_FP16};
    int stage, di;
    printf("d. GPT_WIRE_WTE_ANY_ORDER (stages 2-3, fp32, world 2) and recompute (stage 3, world 2): losses bitwise\n");
    for (stage = 2; stage <= 3; stage++) {
        memset(&plain, 0, sizeof plain);
        plain.stage = stage, plain.world = 2, plain.dt = ZERO_DTYPE_FP32;
        X = plain;
        X.opts = GPT_WIRE_WTE_ANY_ORDER;
        train(&plain);
        train(&X);
        CHECKF(plain.r == ZERO_OK && X.r == ZERO_OK, "%s / %s", plain.err, X.err);
        CHECKF(same_losses(&plain, &X), "stage %d: the hint changed the losses (%.3g)", stage, max_rel(&X, &plain));
        CHECKF(X.ms.grad_own_spans >= 1 && X.ms.grad_own_found == 0, "stage %d, hint: %d own spans, %d found", stage,
               X.ms.grad_own_spans, X.ms.grad_own_found);
        printf("   stage %d: hint: %d span(s) planned at create, %d found; without: %d found\n", stage,
               X.ms.grad_own_spans, X.ms.grad_own_found, plain.ms.grad_own_found);
    }
    for (di = 0; di < 3; di++) {
        memset(&plain, 0, sizeof plain);
        plain.stage = 3, plain.world = 2, plain.dt = dts[di];
        X = plain;
        X.recompute = 1;
        train(&plain);
        train(&X);
        CHECKF(plain.r == ZERO_OK && X.r == ZERO_OK, "%s / %s", plain.err, X.err);
        CHECKF(same_losses(&plain, &X), "%s: recompute changed the losses (%.3g)", dt_name(dts[di]),
               max_rel(&X, &plain));
    }
}

/* ---- the tensor table ---- */

static void test_table(void) {
    gpt_wire_name names[NT];
    zero_tensor ts[NT];
    zero_layout *lay = NULL;
    zero_layout_args args;
    zero_error err;
    int t, u, opts, flags_ok = 1, units_ok = 1;
    printf("a. the tensor table and the units it makes\n");
    for (opts = 0; opts <= GPT_WIRE_WTE_ANY_ORDER; opts += GPT_WIRE_WTE_ANY_ORDER) {
        gpt_wire_tensors(&DIMS, opts, names, ts, init_gpt, (void *)&DIMS);
        for (t = 0; t < NT; t++) {
            int want = (ts[t].ndim == 1 ? ZERO_TENSOR_NO_DECAY : 0) |
                       (t == GPT_WTE ? (opts ? ZERO_TENSOR_GRAD_ANY_ORDER : 0) : ZERO_TENSOR_GRAD_WRITE);
            if (ts[t].flags != want || ts[t].numel != gpt_tensor_numel(&DIMS, t) || ts[t].init != init_gpt) {
                flags_ok = 0;
                fprintf(stderr, "%s: flags %#x, want %#x\n", ts[t].name, (unsigned)ts[t].flags, (unsigned)want);
            }
        }
    }
    CHECK(flags_ok);
    CHECK(!strcmp(ts[GPT_WTE].name, "wte.weight") && !strcmp(ts[GPT_WPE].name, "wpe.weight"));
    CHECK(!strcmp(ts[gpt_block_tensor(1, GPT_MLP_PROJ_B)].name, "h.1.mlp.c_proj.bias"));
    CHECK(!strcmp(ts[gpt_lnf_w(&DIMS)].name, "ln_f.weight"));
    memset(&args, 0, sizeof args);
    args.world = 2;
    args.bucket_elems = 1000;
    CHECKF(zero_layout_create(&lay, ts, NT, &args, &err) == ZERO_OK, "%s", err.msg);
    if (!lay) return;
    for (u = 0; u < zero_layout_unit_count(lay); u++) {
        const zero_unit *un = zero_layout_unit(lay, u);
        int k0, k1;
        if (gpt_tensor_block(&DIMS, un->first_tensor, &k0) != gpt_tensor_block(&DIMS, un->last_tensor, &k1)) {
            units_ok = 0;
            fprintf(stderr, "unit %d holds %s .. %s\n", u, ts[un->first_tensor].name, ts[un->last_tensor].name);
        }
    }
    CHECKF(units_ok, "a unit across two blocks");
    printf("   %d tensors, %d units, none across two blocks\n", NT, zero_layout_unit_count(lay));
    zero_layout_destroy(lay);
}

#endif /* !GPT_WIRE_TEST_PLAIN */

#ifdef GPT_WIRE_TEST_PLAIN
static void test_plain_io(void) {
    plain_io pio;
    host_mb m;
    gpt_wire w;
    zero_error err;
    double *rp[NT], *rg[NT], loss = 0;
    int rows[BATCH * SEQ_IDS], t, b, balanced = 1, all_ready = 1, grads_ok = 1;
    int64_t i;
    printf("b. the wiring on plain fp32 buffers (no engine) against gpt_ref_loss_grad\n");
    memset(&pio, 0, sizeof pio);
    memset(&err, 0, sizeof err);
    for (t = 0; t < NT; t++) {
        int64_t n = gpt_tensor_numel(&DIMS, t);
        pio.p[t] = (float *)malloc((size_t)n * sizeof(float));
        pio.g[t] = (float *)malloc((size_t)n * sizeof(float));
        pio.h[t] = (float *)calloc((size_t)n, sizeof(float));
        rp[t] = (double *)malloc((size_t)n * sizeof(double));
        rg[t] = (double *)malloc((size_t)n * sizeof(double));
        init_gpt((void *)&DIMS, t, 0, n, pio.p[t]);
        for (i = 0; i < n; i++) rp[t][i] = pio.p[t][i];
    }
    for (b = 0; b < BATCH; b++) sample(0, b, rows + b * SEQ_IDS);
    CHECK(host_mb_alloc(&m, ZERO_DTYPE_FP32, DIMS.layers) == 0);
    m.tokens = rows;
    m.gscale = 1.0 / (BATCH * DIMS.seq);
    w.e = plain_engine(&pio), w.d = &DIMS, w.recompute = 0, w.c = &host_pieces, w.user = &m;
    CHECKF(gpt_wire_step(&w, &err) == ZERO_OK, "%s", err.msg);
    CHECK(gpt_ref_loss_grad(&DIMS, (const double *const *)rp, rows, BATCH, &loss, rg) == 0);
    for (t = 0; t < NT; t++) {
        double mx = 0, diff = 0;
        balanced &= pio.fetched[t] == 0;
        all_ready &= pio.asked[t] == 1 && pio.ready[t] == 1;
        for (i = 0; i < gpt_tensor_numel(&DIMS, t); i++) {
            if (fabs(rg[t][i]) > mx) mx = fabs(rg[t][i]);
            if (!(fabs(pio.h[t][i] - rg[t][i]) <= diff)) diff = fabs(pio.h[t][i] - rg[t][i]);
        }
        /* every tensor but wte: one rounding of the same double; wte: its two shares rounded apart */
        if (!(diff <= (t == GPT_WTE ? 2e-6 : 1e-7) * mx)) {
            grads_ok = 0;
            fprintf(stderr, "tensor %d: max diff %.3g of max %.3g\n", t, diff, mx);
        }
    }
    CHECKF(pio.bad == 0, "%d misuses (a read outside fetch/release, a gradient asked twice or handed over twice)",
           pio.bad);
    CHECKF(balanced, "a fetch without its release");
    CHECKF(all_ready, "a gradient not asked for or not handed over");
    CHECKF(pio.wte_asked_at == 0, "wte's gradient asked for after %d hand-overs, not at the head", pio.wte_asked_at);
    CHECKF(m.loss / (BATCH * DIMS.seq) == loss, "loss %.17g, gpt_ref_loss_grad's %.17g", m.loss / (BATCH * DIMS.seq),
           loss);
    CHECK(grads_ok);
    printf("   loss %.9f (gpt_ref_loss_grad %.9f), %d gradients handed over\n", m.loss / (BATCH * DIMS.seq), loss,
           pio.n_ready);
    host_mb_free(&m);
    for (t = 0; t < NT; t++) free(pio.p[t]), free(pio.g[t]), free(pio.h[t]), free(rp[t]), free(rg[t]);
}
#endif

int main(void) {
    double t0 = zt_now_s();
    CHECK_EQ_INT(gpt_n_tensors(&DIMS), NT);
#ifdef GPT_WIRE_TEST_PLAIN
    zt_seed("test_gpt_wire_plain");
    test_plain_io();
#else
    zt_seed("test_gpt_wire");
    test_table();
    test_stages();
    test_hint_recompute();
#endif
    printf("%.1f s\n", zt_now_s() - t0);
    return zt_finish();
}
