/* test_gpt_ref.c - examples/gpt/gpt_ref.h, the float64 GPT-2 the GPU
   model is checked against:
     - its backward against central differences of its forward, every tensor
       (all elements of the small ones, a random sample of the large), with
       1, 2 and 4 heads, on random non-default weights;
     - its forward against a second, position-by-position forward written
       here from gpt_model.h's description;
     - causality: position T-1's loss, taken as T L(seq T) - (T-1) L(seq T-1),
       must be -log of a distribution over its target (the losses of the
       earlier positions cancel only if they cannot see input T-1);
     - the loss at GPT-2's initialisation is about log V;
     - wpe with more rows than the context (a checkpoint's n_positions):
       the loss and gradients of the rows read are those of a model cut to
       them, the other rows' gradient is zero;
     - what gpt.cu reads of a Hugging Face GPT-2: config.json (the shape,
       the keys the model depends on, clear errors) and its tensor names;
     - the token files (llm.c's, raw uint16, text) and their errors.

   Run alone: make test T=test_gpt_ref */
#define _POSIX_C_SOURCE 200809L /* mkdtemp, rmdir */
#include "examples/gpt/gpt_ref.h"
#include "zero_test.h"

#include <unistd.h>

/* ---------------------------------------------------------------------- */
/* helpers                                                                */

typedef struct model {
    gpt_dims d;
    int n;         /* tensors */
    double **p, **g;
} model;

static void model_free(model *m) {
    int t;
    for (t = 0; t < m->n; t++) {
        if (m->p) free(m->p[t]);
        if (m->g) free(m->g[t]);
    }
    free(m->p);
    free(m->g);
    memset(m, 0, sizeof *m);
}

static int model_alloc(model *m, gpt_dims d) {
    int t;
    memset(m, 0, sizeof *m);
    m->d = d;
    m->n = gpt_n_tensors(&d);
    m->p = (double **)calloc((size_t)m->n, sizeof(double *));
    m->g = (double **)calloc((size_t)m->n, sizeof(double *));
    if (!m->p || !m->g) return model_free(m), 1;
    for (t = 0; t < m->n; t++) {
        m->p[t] = (double *)calloc((size_t)gpt_tensor_numel(&d, t), sizeof(double));
        m->g[t] = (double *)calloc((size_t)gpt_tensor_numel(&d, t), sizeof(double));
        if (!m->p[t] || !m->g[t]) return model_free(m), 1;
    }
    return 0;
}

static double rand_normal(void) {
    double u1 = 1.0 - zt_rand01(), u2 = zt_rand01(); /* u1 in (0, 1] */
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* Far from GPT-2's init, so that every gradient is well away from zero:
   matrices and embeddings N(0, 0.3), biases N(0, 0.1), LN weights 1 + N(0, 0.2). */
static void model_random(model *m) {
    int t;
    int64_t i;
    for (t = 0; t < m->n; t++) {
        int k, l = gpt_tensor_block(&m->d, t, &k);
        int64_t s[2];
        int mat = gpt_tensor_shape(&m->d, t, s) == 2;
        int lnw = (l == m->d.layers && k == 0) || (l >= 0 && l < m->d.layers && (k == GPT_LN1_W || k == GPT_LN2_W));
        for (i = 0; i < gpt_tensor_numel(&m->d, t); i++)
            m->p[t][i] = mat ? 0.3 * rand_normal() : lnw ? 1.0 + 0.2 * rand_normal() : 0.1 * rand_normal();
    }
}

static void model_init(model *m, uint64_t seed) {
    int t;
    int64_t i;
    for (t = 0; t < m->n; t++)
        for (i = 0; i < gpt_tensor_numel(&m->d, t); i++) m->p[t][i] = gpt_init_value(&m->d, seed, t, i);
}

static void random_tokens(int *tok, int n, int vocab) {
    int i;
    for (i = 0; i < n; i++) tok[i] = (int)zt_rand_int(0, vocab - 1);
}

/* The reference's loss (with grads into m->g when want_grads); NaN when it
   fails, counted in ref_failures (one check at the end, not one per call) */
static int ref_failures;
static double ref_loss(const model *m, const gpt_dims *d, const int *tok, int B, int want_grads) {
    double loss = NAN;
    if (gpt_ref_loss_grad(d, (const double *const *)m->p, tok, B, &loss, want_grads ? m->g : NULL)) ref_failures++;
    return loss;
}

/* The 16 kinds of tensor, for the error table: wte, wpe, a block's 12, ln_f's 2 */
#define N_KINDS (2 + GPT_PER_BLOCK + 2)
static const char *const kind_name[N_KINDS] = {
    "wte", "wpe", "ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight",
    "attn.c_proj.bias", "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight",
    "mlp.c_proj.bias", "ln_f.weight", "ln_f.bias"};
static int kind_of(const gpt_dims *d, int t) {
    int k, l = gpt_tensor_block(d, t, &k);
    return l < 0 ? t : l == d->layers ? 2 + GPT_PER_BLOCK + k : 2 + k;
}

/* ---------------------------------------------------------------------- */
/* a. the backward against central differences                            */

#define FD_SMALL 64    /* tensors this small: every element */
#define FD_SAMPLE 24   /* larger ones: this many random elements */
/* The five-point central difference (error O(h^4)): with the plain
   two-point one the best h (about 1e-5) still leaves rounding errors of
   1e-10 .. 1e-9 in the difference, too close to what the tolerance below
   must allow; here h = 2e-4 leaves about 1e-11 of rounding and as little
   truncation. Over 150 seeds the largest error was 1.1e-7 (of the 1e-6). */
#define FD_H 2e-4      /* step, relative to max(|p|, 1) */
#define FD_TOL 1e-6    /* |fd - g| <= FD_TOL max(|g|, FD_FLOOR) */
#define FD_FLOOR 1e-4  /* checked gradients are mostly 1e-3 .. 0.3; below the floor, absolute 1e-10 */

static double fd_worst_all;

static void check_grads(gpt_dims d, int B) {
    model m;
    int *tok, t, kind, checked = 0;
    double worst[N_KINDS] = {0}, gmax[N_KINDS] = {0}, loss;
    int count[N_KINDS] = {0};
    if (model_alloc(&m, d)) {
        CHECKF(0, "out of memory");
        return;
    }
    tok = (int *)malloc((size_t)B * (d.seq + 1) * sizeof(int));
    if (!tok) {
        CHECKF(0, "out of memory");
        model_free(&m);
        return;
    }
    model_random(&m);
    random_tokens(tok, B * (d.seq + 1), d.vocab);
    loss = ref_loss(&m, &d, tok, B, 1);
    printf("  L=%d C=%d H=%d T=%d V=%d P=%d B=%d: loss %.6f\n", d.layers, d.dim, d.heads, d.seq, d.vocab,
           gpt_positions(&d), B, loss);
    for (t = 0; t < m.n; t++) {
        int64_t numel = gpt_tensor_numel(&d, t), j, n_check = numel <= FD_SMALL ? numel : FD_SAMPLE;
        int bad = 0;
        double worst_t = 0;
        char name[64];
        kind = kind_of(&d, t);
        for (j = 0; j < n_check; j++) {
            int64_t i = numel <= FD_SMALL ? j : (int64_t)zt_rand_int(0, (long)numel - 1);
            double p0 = m.p[t][i], h = FD_H * (fabs(p0) > 1 ? fabs(p0) : 1), l[4], fd, g, err;
            int s;
            for (s = 0; s < 4; s++) { /* p0 - 2h, p0 - h, p0 + h, p0 + 2h */
                m.p[t][i] = p0 + (s < 2 ? s - 2 : s - 1) * h;
                l[s] = ref_loss(&m, &d, tok, B, 0);
            }
            m.p[t][i] = p0;
            fd = (8 * (l[2] - l[1]) - (l[3] - l[0])) / (12 * h);
            g = m.g[t][i];
            err = fabs(fd - g) / (fabs(g) > FD_FLOOR ? fabs(g) : FD_FLOOR);
            if (!(err <= FD_TOL)) {
                if (bad < 3)
                    fprintf(stderr, "    %s[%lld]: analytic %.12g, central difference %.12g (rel err %.3g)\n",
                            gpt_tensor_name(&d, t, name, sizeof name), (long long)i, g, fd, err);
                bad++;
            }
            if (!(err <= worst_t)) worst_t = err;
            if (fabs(g) > gmax[kind]) gmax[kind] = fabs(g);
        }
        count[kind] += (int)n_check;
        checked += (int)n_check;
        if (!(worst_t <= worst[kind])) worst[kind] = worst_t;
        CHECKF(bad == 0, "%s: %d of %lld elements beyond rel %.0e", gpt_tensor_name(&d, t, name, sizeof name), bad,
               (long long)n_check, FD_TOL);
    }
    printf("    %-20s %8s %10s %10s\n", "tensor", "checked", "max |g|", "max rel err");
    for (kind = 0; kind < N_KINDS; kind++) {
        printf("    %-20s %8d %10.3g %10.3g\n", kind_name[kind], count[kind], gmax[kind], worst[kind]);
        /* a kind whose gradient is all zero would check nothing */
        CHECKF(gmax[kind] > 1e-4, "%s: largest checked gradient %.3g: the test would not see a wrong one",
               kind_name[kind], gmax[kind]);
        if (!(worst[kind] <= fd_worst_all)) fd_worst_all = worst[kind];
    }
    printf("    %d elements checked\n", checked);
    free(tok);
    model_free(&m);
}

static void test_gradcheck(void) {
    /* H = 2; then 1 and 4 heads; then odd sizes and a third sequence; */
    /* ... and wpe with more rows than the context */
    static const gpt_dims dims[] = {{2, 16, 2, 8, 32, 0}, {2, 16, 1, 8, 32, 0}, {2, 16, 4, 8, 32, 0},
                                    {1, 12, 3, 5, 19, 0}, {1, 16, 2, 6, 24, 9}};
    static const int batch[] = {2, 2, 2, 3, 2};
    int i;
    printf("a. backward vs five-point central differences (h = %.0e relative, tol %.0e of max(|g|, %.0e))\n", FD_H,
           FD_TOL, FD_FLOOR);
    for (i = 0; i < (int)(sizeof dims / sizeof dims[0]); i++) check_grads(dims[i], batch[i]);
    printf("  max rel err over all: %.3g\n", fd_worst_all);
}

/* ---------------------------------------------------------------------- */
/* b. an independent forward, one sequence, position by position          */

/* y[O] = x[I] W[:, col0 .. col0 + O) + bias[col0 ..], W with ld columns */
static void row_affine(double *y, const double *x, const double *W, const double *bias, int I, int O, int ld,
                       int col0) {
    int o, i;
    for (o = 0; o < O; o++) {
        double s = bias[col0 + o];
        for (i = 0; i < I; i++) s += x[i] * W[(size_t)i * ld + col0 + o];
        y[o] = s;
    }
}

static void row_layernorm(double *y, const double *x, const double *w, const double *b, int C) {
    double mean = 0, var = 0;
    int i;
    for (i = 0; i < C; i++) mean += x[i] / C;
    for (i = 0; i < C; i++) var += (x[i] - mean) * (x[i] - mean) / C;
    for (i = 0; i < C; i++) y[i] = w[i] * (x[i] - mean) / sqrt(var + 1e-5) + b[i];
}

/* Per-position losses of one sequence (tok: T + 1 ids) into out[T]; 1 when out of memory */
static int naive_losses(const model *m, const int *tok, double *out) {
    const gpt_dims *d = &m->d;
    int C = d->dim, T = d->seq, H = d->heads, V = d->vocab, hd = C / H, l, t, s, h, i, v;
    double *x = (double *)malloc((size_t)T * C * sizeof(double));   /* the stream, [T][C] */
    double *q = (double *)malloc((size_t)T * C * sizeof(double));
    double *k = (double *)malloc((size_t)T * C * sizeof(double));
    double *val = (double *)malloc((size_t)T * C * sizeof(double));
    double *a = (double *)malloc((size_t)4 * C * sizeof(double));   /* per-position scratch */
    double *y = (double *)malloc((size_t)4 * C * sizeof(double));
    double *w = (double *)malloc((size_t)T * sizeof(double));
    if (!x || !q || !k || !val || !a || !y || !w) {
        free(x), free(q), free(k), free(val), free(a), free(y), free(w);
        return 1;
    }
    for (t = 0; t < T; t++)
        for (i = 0; i < C; i++) x[t * C + i] = m->p[GPT_WTE][tok[t] * C + i] + m->p[GPT_WPE][t * C + i];
    for (l = 0; l < d->layers; l++) {
        double *const *P = m->p + gpt_block_tensor(l, 0);
        for (t = 0; t < T; t++) {
            row_layernorm(a, x + t * C, P[GPT_LN1_W], P[GPT_LN1_B], C);
            row_affine(q + t * C, a, P[GPT_QKV_W], P[GPT_QKV_B], C, C, 3 * C, 0);
            row_affine(k + t * C, a, P[GPT_QKV_W], P[GPT_QKV_B], C, C, 3 * C, C);
            row_affine(val + t * C, a, P[GPT_QKV_W], P[GPT_QKV_B], C, C, 3 * C, 2 * C);
        }
        /* q, k, v of every position came from the layer's input above; now each position's update */
        for (t = 0; t < T; t++) {
            for (h = 0; h < H; h++) {
                double z = 0;
                for (s = 0; s <= t; s++) {
                    double dot = 0;
                    for (i = h * hd; i < (h + 1) * hd; i++) dot += q[t * C + i] * k[s * C + i];
                    w[s] = exp(dot / sqrt((double)hd));
                    z += w[s];
                }
                for (i = h * hd; i < (h + 1) * hd; i++) {
                    a[i] = 0;
                    for (s = 0; s <= t; s++) a[i] += w[s] / z * val[s * C + i];
                }
            }
            row_affine(y, a, P[GPT_ATTN_PROJ_W], P[GPT_ATTN_PROJ_B], C, C, C, 0);
            for (i = 0; i < C; i++) x[t * C + i] += y[i];
            row_layernorm(a, x + t * C, P[GPT_LN2_W], P[GPT_LN2_B], C);
            row_affine(y, a, P[GPT_FC_W], P[GPT_FC_B], C, 4 * C, 4 * C, 0);
            for (i = 0; i < 4 * C; i++) /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
                y[i] = 0.5 * y[i] * (1 + tanh(sqrt(2 / 3.14159265358979323846) * (y[i] + 0.044715 * pow(y[i], 3))));
            row_affine(a, y, P[GPT_MLP_PROJ_W], P[GPT_MLP_PROJ_B], 4 * C, C, C, 0);
            for (i = 0; i < C; i++) x[t * C + i] += a[i];
        }
    }
    for (t = 0; t < T; t++) {
        double z = 0, zt = 0;
        row_layernorm(a, x + t * C, m->p[gpt_lnf_w(d)], m->p[gpt_lnf_b(d)], C);
        for (v = 0; v < V; v++) {
            double logit = 0;
            for (i = 0; i < C; i++) logit += a[i] * m->p[GPT_WTE][v * C + i];
            z += exp(logit);
            if (v == tok[t + 1]) zt = logit;
        }
        out[t] = log(z) - zt;
    }
    free(x), free(q), free(k), free(val), free(a), free(y), free(w);
    return 0;
}

static void test_forward_independent(void) {
    static const gpt_dims dims[] = {{2, 16, 2, 8, 32, 0}, {2, 16, 4, 8, 32, 0}, {1, 12, 1, 5, 19, 0}, {0, 8, 2, 4, 11, 0}};
    enum { B = 3 };
    double worst = 0;
    int c;
    for (c = 0; c < (int)(sizeof dims / sizeof dims[0]); c++) {
        gpt_dims d = dims[c];
        model m;
        int tok[B * 9], b, t;
        double per[8], sum = 0, ref, err;
        if (model_alloc(&m, d)) {
            CHECKF(0, "out of memory");
            return;
        }
        model_random(&m);
        random_tokens(tok, B * (d.seq + 1), d.vocab);
        ref = ref_loss(&m, &d, tok, B, 0);
        for (b = 0; b < B; b++) {
            CHECK(naive_losses(&m, tok + b * (d.seq + 1), per) == 0);
            for (t = 0; t < d.seq; t++) sum += per[t];
        }
        sum /= B * d.seq;
        err = fabs(ref - sum) / fabs(sum);
        if (err > worst) worst = err;
        CHECKF(err <= 1e-12, "L=%d C=%d H=%d T=%d V=%d: reference %.17g, position by position %.17g", d.layers, d.dim,
               d.heads, d.seq, d.vocab, ref, sum);
        model_free(&m);
    }
    printf("b. forward vs an independent position-by-position forward: max rel err %.3g (tol 1e-12)\n", worst);
}

/* ---------------------------------------------------------------------- */
/* c. causality                                                            */

/* With a causal mask, positions 0 .. T-2 see the same inputs in a model of
   context T and in one of context T-1 (the same weights; wpe's first T-1
   rows), so D(v) = T L_T(tokens, last target v) - (T-1) L_{T-1} is exactly
   position T-1's loss, -log p(v), and sum_v exp(-D(v)) = 1. If any earlier
   position saw input T-1, D would gain a term independent of v and the sum
   would move away from 1. */
static void test_causal(void) {
    static const gpt_dims dims[] = {{2, 16, 2, 8, 32, 0}, {1, 16, 4, 6, 16, 0}};
    int c;
    for (c = 0; c < (int)(sizeof dims / sizeof dims[0]); c++) {
        gpt_dims d = dims[c], d_short = dims[c];
        model m;
        int tok[9], v, T = d.seq;
        double l_short, sum = 0;
        d_short.seq = T - 1;
        d_short.positions = T; /* the same wpe, its last row unread */
        if (model_alloc(&m, d)) {
            CHECKF(0, "out of memory");
            return;
        }
        model_random(&m);
        random_tokens(tok, T + 1, d.vocab);
        l_short = ref_loss(&m, &d_short, tok, 1, 0); /* tokens 0 .. T-1: inputs 0 .. T-2 */
        for (v = 0; v < d.vocab; v++) {
            tok[T] = v;
            sum += exp(-(T * ref_loss(&m, &d, tok, 1, 0) - (T - 1) * l_short));
        }
        printf("c. causality, H=%d T=%d: sum over targets of exp(-(T L_T - (T-1) L_T-1)) = %.15f\n", d.heads, T, sum);
        CHECKF(fabs(sum - 1) <= 1e-10, "%.17g: an earlier position sees the last input", sum);
        model_free(&m);
    }
}

/* ---------------------------------------------------------------------- */
/* d. the loss at GPT-2's init, at the size the GPU test uses               */

/* At init the logits are about N(0, 0.02^2 C) (ln_f's output has unit
   variance), so the loss is log V + about 0.013 for C = 64; the mean over
   B T positions has a standard deviation of about 0.16 / sqrt(B T), so B = 32
   puts the 0.05 allowed some 7 standard deviations away */
static void test_init_loss(void) {
    gpt_dims d = {2, 64, 4, 32, 256, 0};
    enum { B = 32 };
    model m;
    int tok[B * 33], t, finite = 1, nonzero = 1;
    int64_t i;
    double with_grads, loss_only;
    clock_t c0;
    if (model_alloc(&m, d)) {
        CHECKF(0, "out of memory");
        return;
    }
    model_init(&m, zt_rand_u64());
    random_tokens(tok, B * (d.seq + 1), d.vocab);
    c0 = clock();
    with_grads = ref_loss(&m, &d, tok, B, 1);
    printf("d. L=2 C=64 H=4 T=32 V=256 B=32 at init: loss %.6f, log V %.6f (forward + backward %.3f s)\n", with_grads,
           log((double)d.vocab), (double)(clock() - c0) / CLOCKS_PER_SEC);
    CHECKF(fabs(with_grads - log((double)d.vocab)) < 0.05, "loss %.6f, log V %.6f", with_grads, log((double)d.vocab));
    loss_only = ref_loss(&m, &d, tok, B, 0);
    CHECKF(loss_only == with_grads, "loss alone %.17g, with the gradients %.17g", loss_only, with_grads);
    for (t = 0; t < m.n; t++) {
        double mx = 0;
        for (i = 0; i < gpt_tensor_numel(&d, t); i++) {
            if (!isfinite(m.g[t][i])) finite = 0;
            if (fabs(m.g[t][i]) > mx) mx = fabs(m.g[t][i]);
        }
        if (!(mx > 0)) nonzero = 0;
    }
    CHECK(finite);
    CHECK(nonzero); /* at init too, every tensor gets a gradient */
    model_free(&m);
}

/* ---------------------------------------------------------------------- */
/* e. wpe with more rows than the context                                  */

/* The same weights with wpe cut to its first T rows (positions 0) must give
   the same loss and gradients, bit for bit (the same arithmetic); the rows
   T .. P - 1 must get exactly zero gradient and change nothing. */
static void test_positions(void) {
    gpt_dims big = {2, 16, 2, 6, 24, 11}, cut = big;
    enum { B = 2 };
    model mb, mc;
    int tok[B * 7], t, same = 1, zero_rows = 1;
    int64_t i, rows_read = (int64_t)big.seq * big.dim;
    int64_t shape[2];
    double lb, lc, lb2;
    cut.positions = 0;
    CHECK(gpt_tensor_shape(&big, GPT_WPE, shape) == 2 && shape[0] == 11 && shape[1] == 16);
    CHECK(gpt_tensor_shape(&cut, GPT_WPE, shape) == 2 && shape[0] == 6);
    CHECK_EQ_INT(gpt_n_params(&big) - gpt_n_params(&cut), 5 * 16);
    if (model_alloc(&mb, big)) {
        CHECKF(0, "out of memory");
        return;
    }
    if (model_alloc(&mc, cut)) {
        CHECKF(0, "out of memory");
        model_free(&mb);
        return;
    }
    model_random(&mb);
    for (t = 0; t < mb.n; t++) /* wpe: its first T rows; every other tensor whole */
        memcpy(mc.p[t], mb.p[t], (size_t)gpt_tensor_numel(&cut, t) * sizeof(double));
    random_tokens(tok, B * (big.seq + 1), big.vocab);
    lb = ref_loss(&mb, &big, tok, B, 1);
    lc = ref_loss(&mc, &cut, tok, B, 1);
    CHECKF(lb == lc, "P = 11: %.17g, P = T: %.17g", lb, lc);
    for (t = 0; t < mb.n; t++)
        for (i = 0; i < gpt_tensor_numel(&cut, t); i++) same &= mb.g[t][i] == mc.g[t][i];
    for (i = rows_read; i < gpt_tensor_numel(&big, GPT_WPE); i++) zero_rows &= mb.g[GPT_WPE][i] == 0.0;
    CHECKF(same, "the gradients differ from the cut model's");
    CHECKF(zero_rows, "wpe rows >= T have a gradient");
    for (i = rows_read; i < gpt_tensor_numel(&big, GPT_WPE); i++) mb.p[GPT_WPE][i] += 1.0; /* unread rows */
    lb2 = ref_loss(&mb, &big, tok, B, 0);
    CHECKF(lb2 == lb, "changing wpe rows >= T moved the loss: %.17g -> %.17g", lb, lb2);
    printf("e. wpe of 11 rows, context 6: loss and gradients those of wpe cut to 6 rows; rows 6..10 zero gradient\n");
    model_free(&mb);
    model_free(&mc);
}

/* ---------------------------------------------------------------------- */
/* f. a Hugging Face GPT-2: config.json and tensor names                   */

/* a config as GPT2Config.save_pretrained writes it, with the nested keys of the hub's gpt2 */
static const char *const hf_config_ok =
    "{\n"
    "  \"_name_or_path\": \"a \\\"quoted\\\" \\\\ name {not an object}\",\n"
    "  \"activation_function\": \"gelu_new\",\n"
    "  \"architectures\": [\"GPT2LMHeadModel\"],\n"
    "  \"attn_pdrop\": 0.1,\n"
    "  \"bos_token_id\": 50256,\n"
    "  \"embd_pdrop\": 0.1,\n"
    "  \"initializer_range\": 0.02,\n"
    "  \"layer_norm_epsilon\": 1e-05,\n"
    "  \"model_type\": \"gpt2\",\n"
    "  \"n_ctx\": 1024,\n"
    "  \"n_embd\": 768,\n"
    "  \"n_head\": 12,\n"
    "  \"n_inner\": null,\n"
    "  \"n_layer\": 12,\n"
    "  \"task_specific_params\": {\"text-generation\": {\"do_sample\": true, \"max_length\": 50, \"n_layer\": 3}},\n"
    "  \"n_positions\": 1024,\n"
    "  \"reorder_and_upcast_attn\": false,\n"
    "  \"scale_attn_by_inverse_layer_idx\": false,\n"
    "  \"scale_attn_weights\": true,\n"
    "  \"torch_dtype\": \"float32\",\n"
    "  \"transformers_version\": \"4.40.0\",\n"
    "  \"use_cache\": true,\n"
    "  \"vocab_size\": 50257\n"
    "}\n";

/* hf_config_ok with the line of key replaced by line (NULL: removed) */
static void config_with(char *out, size_t cap, const char *key, const char *line) {
    const char *p = strstr(hf_config_ok, key), *bol, *eol;
    size_t n;
    if (!p) {
        snprintf(out, cap, "%s", hf_config_ok);
        return;
    }
    for (bol = p; bol > hf_config_ok && bol[-1] != '\n'; bol--) {
    }
    eol = strchr(p, '\n') + 1;
    n = (size_t)(bol - hf_config_ok);
    snprintf(out, cap, "%.*s%s%s", (int)n, hf_config_ok, line ? line : "", eol);
}

/* parse text; 0 ok, 1 error with msg holding every word of want (space separated) */
static int config_case(const char *text, const char *want, gpt_dims *d) {
    char msg[2048] = "", words[256], *w;
    int r;
    gpt_dims before = *d;
    r = gpt_hf_parse_config(text, strlen(text), "m/config.json", d, msg, sizeof msg);
    if (!want) {
        CHECKF(r == 0, "rejected: %s", msg);
        return r;
    }
    CHECKF(r == 1, "accepted a config that should fail with \"%s\"", want);
    CHECKF(!memcmp(&before, d, sizeof before), "a failed parse changed the dims");
    snprintf(words, sizeof words, "%s", want);
    for (w = strtok(words, " "); w; w = strtok(NULL, " ")) CHECK_STR_CONTAINS(msg, w);
    if (r) printf("    error: %s\n", msg);
    return r;
}

static void test_hf_config(void) {
    char text[4096], dir[] = "/tmp/zero_test_gpt_ref_XXXXXX", path[256], msg[2048];
    gpt_dims d = {0, 0, 0, 7, 0, 0};
    FILE *f;
    static const struct {
        const char *key, *line, *want;
    } bad[] = {
        {"\"n_layer\"", NULL, "m/config.json n_layer"},
        {"\"vocab_size\"", "  \"vocab_size\": \"50257\"\n", "vocab_size \"50257\""}, /* the last key */
        {"\"n_head\"", "  \"n_head\": 12.5,\n", "n_head 12.5 integer"},
        {"\"n_head\"", "  \"n_head\": -12,\n", "n_head -12"},
        {"\"n_embd\"", "  \"n_embd\": 770,\n", "n_embd 770 n_head 12"},
        {"\"n_positions\"", "  \"n_positions\": 99999999999999999999,\n", "n_positions"},
        {"\"activation_function\"", "  \"activation_function\": \"relu\",\n", "activation_function \"relu\""},
        {"\"n_inner\"", "  \"n_inner\": 1000,\n", "n_inner 1000 3072"},
        {"\"layer_norm_epsilon\"", "  \"layer_norm_epsilon\": 1e-06,\n", "layer_norm_epsilon 1e-06"},
        {"\"model_type\"", "  \"model_type\": \"llama\",\n", "model_type \"llama\""},
        {"\"scale_attn_by_inverse_layer_idx\"", "  \"scale_attn_by_inverse_layer_idx\": true,\n",
         "scale_attn_by_inverse_layer_idx"},
        {"\"use_cache\"", "  \"tie_word_embeddings\": false,\n", "tie_word_embeddings false"},
        {"\"use_cache\"", "  \"use_cache\": [1, {\"a\": 2},\n", "JSON"},                /* unbalanced */
        {"\"use_cache\"", "  \"use_cache\": true,, \n", "JSON"},                         /* two commas */
        {"\"use_cache\"", "  \"use_cache\": \"an unterminated string,\n", "JSON"},
    };
    size_t i;
    printf("f. Hugging Face config.json and names\n");
    CHECK(config_case(hf_config_ok, NULL, &d) == 0);
    CHECKF(d.layers == 12 && d.dim == 768 && d.heads == 12 && d.vocab == 50257 && d.positions == 1024 && d.seq == 7,
           "read %d %d %d %d %d (seq %d)", d.layers, d.dim, d.heads, d.vocab, d.positions, d.seq);
    /* the optional keys absent, n_inner 4C, a duplicate key (the last wins), an escaped quote in a key */
    config_with(text, sizeof text, "\"n_inner\"", "  \"n_inner\": 3072, \"n_la\\\"yer\": 5, \"n_layer\": 2,\n");
    memset(&d, 0, sizeof d);
    CHECK(config_case(text, NULL, &d) == 0 && d.layers == 12); /* n_layer: 12 comes after */
    config_with(text, sizeof text, "\"n_layer\"", "  \"n_layer\": 40,   \"n_layer\": 48,\n");
    CHECK(config_case(text, NULL, &d) == 0 && d.layers == 48);
    CHECK(config_case("{\"n_layer\": 2, \"n_embd\": 128, \"n_head\": 4, \"n_positions\": 256, \"vocab_size\": 50257}",
                      NULL, &d) == 0 &&
          d.layers == 2 && d.dim == 128 && d.heads == 4 && d.positions == 256);
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        config_with(text, sizeof text, bad[i].key, bad[i].line);
        config_case(text, bad[i].want, &d);
    }
    config_case("[1, 2]", "JSON", &d);
    config_case("{\"n_layer\": 2} trailing", "JSON", &d);
    config_case("", "JSON", &d);
    /* from a file */
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/config.json", dir);
    CHECK((f = fopen(path, "wb")) != NULL);
    if (f) {
        fputs(hf_config_ok, f);
        fclose(f);
    }
    memset(&d, 0, sizeof d);
    CHECK(gpt_hf_read_config(dir, &d, msg, sizeof msg) == 0 && d.layers == 12 && d.positions == 1024);
    remove(path);
    CHECK(gpt_hf_read_config(dir, &d, msg, sizeof msg) == 1);
    CHECK_STR_CONTAINS(msg, path);
    CHECK_STR_CONTAINS(msg, "cannot open");
    rmdir(dir);
    /* names: the engine's, "transformer." before them when the checkpoint has it */
    {
        gpt_dims g = {12, 768, 12, 1024, 50257, 1024};
        char buf[96];
        CHECK(!strcmp(gpt_hf_name(&g, GPT_WTE, 1, buf, sizeof buf), "transformer.wte.weight"));
        CHECK(!strcmp(gpt_hf_name(&g, GPT_WPE, 0, buf, sizeof buf), "wpe.weight"));
        CHECK(!strcmp(gpt_hf_name(&g, gpt_block_tensor(3, GPT_QKV_W), 1, buf, sizeof buf),
                      "transformer.h.3.attn.c_attn.weight"));
        CHECK(!strcmp(gpt_hf_name(&g, gpt_block_tensor(11, GPT_MLP_PROJ_B), 0, buf, sizeof buf),
                      "h.11.mlp.c_proj.bias"));
        CHECK(!strcmp(gpt_hf_name(&g, gpt_lnf_b(&g), 1, buf, sizeof buf), "transformer.ln_f.bias"));
        CHECK(gpt_hf_ignored("lm_head.weight"));
        CHECK(gpt_hf_ignored("h.0.attn.bias"));
        CHECK(gpt_hf_ignored("transformer.h.11.attn.masked_bias"));
        CHECK(!gpt_hf_ignored("h.0.attn.c_attn.bias"));
        CHECK(!gpt_hf_ignored("transformer.h.0.attn.c_proj.bias"));
        CHECK(!gpt_hf_ignored("transformer.wte.weight"));
        CHECK(!gpt_hf_ignored("lm_head.bias"));
    }
}

/* ---------------------------------------------------------------------- */
/* g. token files                                                          */

static void put_le32(unsigned char *b, uint32_t v) {
    b[0] = (unsigned char)v, b[1] = (unsigned char)(v >> 8), b[2] = (unsigned char)(v >> 16),
    b[3] = (unsigned char)(v >> 24);
}

/* an llm.c token file: header (magic, version, count as given), then ids (little-endian) */
static void write_llmc(const char *path, uint32_t magic, uint32_t version, uint32_t count, const uint16_t *ids,
                       size_t n) {
    unsigned char h[GPT_LLMC_HEADER_BYTES];
    FILE *f = fopen(path, "wb");
    size_t i;
    memset(h, 0, sizeof h);
    put_le32(h, magic);
    put_le32(h + 4, version);
    put_le32(h + 8, count);
    if (!f) return;
    fwrite(h, 1, sizeof h, f);
    for (i = 0; i < n; i++) {
        unsigned char b[2] = {(unsigned char)(ids[i] & 0xff), (unsigned char)(ids[i] >> 8)};
        fwrite(b, 1, 2, f);
    }
    fclose(f);
}

static void write_bytes(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return;
    fwrite(p, 1, n, f);
    fclose(f);
}

static int read_case(const char *path, int kind, gpt_tokens *t, const char *want) {
    char msg[2048] = "";
    size_t before = t->n;
    int r = gpt_read_tokens(path, kind, t, msg, sizeof msg);
    if (!want) {
        CHECKF(r == 0, "%s", msg);
        return r;
    }
    CHECKF(r == 1 && t->n == before, "%s: accepted (want an error with \"%s\")", path, want);
    CHECK_STR_CONTAINS(msg, path);
    CHECK_STR_CONTAINS(msg, want);
    printf("    error: %s\n", msg);
    return r;
}

static void test_token_files(void) {
    char dir[] = "/tmp/zero_test_gpt_tok_XXXXXX", llmc[128], u16[128], text[128], odd[128];
    uint16_t ids[1000];
    gpt_tokens t;
    unsigned char le[2000];
    size_t i, n = 1000;
    int ok = 1;
    printf("g. token files\n");
    memset(&t, 0, sizeof t);
    for (i = 0; i < n; i++) ids[i] = (uint16_t)zt_rand_int(0, 50256);
    ids[7] = 50256, ids[8] = 0;
    if (!mkdtemp(dir)) {
        CHECKF(0, "mkdtemp");
        return;
    }
    snprintf(llmc, sizeof llmc, "%s/train.bin", dir);
    snprintf(u16, sizeof u16, "%s/val.u16", dir);
    snprintf(text, sizeof text, "%s/notes.txt", dir);
    snprintf(odd, sizeof odd, "%s/odd.u16", dir);
    write_llmc(llmc, GPT_LLMC_MAGIC, 1, (uint32_t)n, ids, n);
    for (i = 0; i < n; i++) le[2 * i] = (unsigned char)(ids[i] & 0xff), le[2 * i + 1] = (unsigned char)(ids[i] >> 8);
    write_bytes(u16, le, 2 * n);
    write_bytes(text, "h\xe9llo\n", 6);
    write_bytes(odd, le, 7);
    CHECK_EQ_INT(gpt_data_kind(llmc), GPT_DATA_LLMC);
    CHECK_EQ_INT(gpt_data_kind(u16), GPT_DATA_U16);
    CHECK_EQ_INT(gpt_data_kind(text), GPT_DATA_TEXT);
    CHECK_EQ_INT(gpt_data_kind("/nonexistent/x.u16"), -1);
    /* llm.c's, then raw uint16, then text: appended in order */
    read_case(llmc, GPT_DATA_LLMC, &t, NULL);
    read_case(u16, GPT_DATA_U16, &t, NULL);
    read_case(text, GPT_DATA_TEXT, &t, NULL);
    CHECK_EQ_INT(t.n, 2 * n + 6);
    for (i = 0; i < n && t.n == 2 * n + 6; i++) ok &= t.tok[i] == ids[i] && t.tok[n + i] == ids[i];
    CHECKF(ok, "the ids read differ from those written");
    CHECK(t.n == 2 * n + 6 && t.tok[2 * n] == 'h' && t.tok[2 * n + 1] == 0xe9 && t.tok[2 * n + 5] == '\n');
    CHECK_EQ_INT(gpt_tokens_check(t.tok, t.n, 50257), t.n);
    CHECK_EQ_INT(gpt_tokens_check(t.tok, t.n, 50256), 7); /* the first id >= 50256 */
    /* errors: each names the file and why; the array keeps what it had */
    read_case(odd, GPT_DATA_U16, &t, "odd size");
    write_llmc(llmc, GPT_LLMC_MAGIC, 2, (uint32_t)n, ids, n);
    read_case(llmc, GPT_DATA_LLMC, &t, "version 2");
    write_llmc(llmc, GPT_LLMC_MAGIC, 1, (uint32_t)n + 1, ids, n);
    read_case(llmc, GPT_DATA_LLMC, &t, "1001 tokens");
    write_llmc(llmc, GPT_LLMC_MAGIC + 1, 1, (uint32_t)n, ids, n);
    read_case(llmc, GPT_DATA_LLMC, &t, "magic 20240521");
    write_bytes(llmc, le, 100);
    read_case(llmc, GPT_DATA_LLMC, &t, "header");
    read_case("/nonexistent/x.u16", GPT_DATA_U16, &t, "cannot open");
    CHECK_EQ_INT(t.n, 2 * n + 6);
    gpt_tokens_free(&t);
    remove(llmc), remove(u16), remove(text), remove(odd);
    rmdir(dir);
}

int main(void) {
    zt_seed("test_gpt_ref");
    test_gradcheck();
    test_forward_independent();
    test_causal();
    test_init_loss();
    test_positions();
    test_hf_config();
    test_token_files();
    CHECKF(ref_failures == 0, "gpt_ref_loss_grad failed %d times", ref_failures);
    return zt_finish();
}
