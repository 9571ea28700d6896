/* gpt_ref.h - the GPT-2 of gpt_model.h in float64 on the CPU: the forward
   and the hand-written backward the GPU model (gpt_cuda.cuh) is checked
   against. Plain loops, clarity over speed; tests/test_gpt_ref.c checks the
   backward against central differences of the forward.

       const double *p[n_tensors];   double *g[n_tensors];   double loss;
       if (gpt_ref_loss_grad(&d, p, tokens, B, &loss, g)) -> out of memory

   The model also comes in the pieces examples/gpt/gpt_wire.h runs between
   its engine calls (gpt_ref_acts, gpt_ref_embed ... gpt_ref_embed_bwd):
   tests/test_gpt_wire.c trains it through that wiring with an engine on
   host ranks; gpt_ref_loss_grad runs the same pieces in the same order.

   Every intermediate is kept, about (15 L + 12) N C + L B H T^2 + N V
   doubles (N = B T), the backward's scratch included: meant for small
   models. Compiles as C11 and as CUDA C++ (host code). Every function is
   static inline; no global state. */
#ifndef GPT_REF_H
#define GPT_REF_H

#include "gpt_model.h"

/* ---- layers ---- */

/* out = LayerNorm(x) row by row; mean and rstd (1 / sqrt(var + eps)) kept for the backward */
static inline void gpt_ref__layernorm(double *out, double *mean, double *rstd, const double *x, const double *w,
                                      const double *b, int N, int C) {
    int n, i;
    for (n = 0; n < N; n++) {
        const double *xn = x + (size_t)n * C;
        double *on = out + (size_t)n * C;
        double m = 0, v = 0, r;
        for (i = 0; i < C; i++) m += xn[i];
        m /= C;
        for (i = 0; i < C; i++) v += (xn[i] - m) * (xn[i] - m);
        v /= C; /* biased, as PyTorch's LayerNorm */
        r = 1.0 / sqrt(v + GPT_LN_EPS);
        for (i = 0; i < C; i++) on[i] = (xn[i] - m) * r * w[i] + b[i];
        mean[n] = m;
        rstd[n] = r;
    }
}

/* dx += d/dx (the residual stream's gradient flows on through dx); dw, db += */
static inline void gpt_ref__layernorm_back(double *dx, double *dw, double *db, const double *dout, const double *x,
                                           const double *mean, const double *rstd, const double *w, int N, int C) {
    int n, i;
    for (n = 0; n < N; n++) {
        const double *xn = x + (size_t)n * C, *dn = dout + (size_t)n * C;
        double *dxn = dx + (size_t)n * C;
        double m = mean[n], r = rstd[n], mean_dxh = 0, mean_dxh_xh = 0;
        for (i = 0; i < C; i++) {
            double xh = (xn[i] - m) * r, dxh = dn[i] * w[i];
            mean_dxh += dxh;
            mean_dxh_xh += dxh * xh;
            dw[i] += dn[i] * xh;
            db[i] += dn[i];
        }
        mean_dxh /= C;
        mean_dxh_xh /= C;
        for (i = 0; i < C; i++) {
            double xh = (xn[i] - m) * r, dxh = dn[i] * w[i];
            dxn[i] += r * (dxh - mean_dxh - xh * mean_dxh_xh);
        }
    }
}

/* out[N, O] = in[N, I] w[I, O] + b[O] */
static inline void gpt_ref__linear(double *out, const double *in, const double *w, const double *b, int N, int I,
                                   int O) {
    int n, i, o;
    for (n = 0; n < N; n++) {
        double *on = out + (size_t)n * O;
        for (o = 0; o < O; o++) on[o] = b[o];
        for (i = 0; i < I; i++) {
            double a = in[(size_t)n * I + i];
            const double *wi = w + (size_t)i * O;
            for (o = 0; o < O; o++) on[o] += a * wi[o];
        }
    }
}

/* The three gradients of a linear layer, each alone (the backward hands
   them over at different points): din = dout w^T (overwritten) */
static inline void gpt_ref__linear_back_x(double *din, const double *dout, const double *w, int N, int I, int O) {
    int n, i, o;
    for (n = 0; n < N; n++) {
        const double *dn = dout + (size_t)n * O;
        for (i = 0; i < I; i++) {
            const double *wi = w + (size_t)i * O;
            double s = 0;
            for (o = 0; o < O; o++) s += dn[o] * wi[o];
            din[(size_t)n * I + i] = s;
        }
    }
}

/* dw += in^T dout */
static inline void gpt_ref__linear_back_w(double *dw, const double *dout, const double *in, int N, int I, int O) {
    int n, i, o;
    for (n = 0; n < N; n++) {
        const double *dn = dout + (size_t)n * O;
        for (i = 0; i < I; i++) {
            double *dwi = dw + (size_t)i * O, a = in[(size_t)n * I + i];
            for (o = 0; o < O; o++) dwi[o] += a * dn[o];
        }
    }
}

/* db += the column sums of dout */
static inline void gpt_ref__bias_back(double *db, const double *dout, int N, int O) {
    int n, o;
    for (n = 0; n < N; n++)
        for (o = 0; o < O; o++) db[o] += dout[(size_t)n * O + o];
}

static inline double gpt_ref__gelu(double x) {
    return 0.5 * x * (1.0 + tanh(GPT_GELU_A * (x + GPT_GELU_B * x * x * x)));
}

static inline double gpt_ref__gelu_grad(double x) {
    double th = tanh(GPT_GELU_A * (x + GPT_GELU_B * x * x * x));
    return 0.5 * (1.0 + th) + 0.5 * x * (1.0 - th * th) * GPT_GELU_A * (1.0 + 3.0 * GPT_GELU_B * x * x);
}

/* Causal self-attention of qkv [B T, 3C] into out [B T, C] (the heads side by
   side, before c_proj). att [B, H, T, T]: row (b, h, t) holds the softmax
   over the keys s <= t, zeros beyond. */
static inline void gpt_ref__attention(double *out, double *att, const double *qkv, int B, int T, int C, int H) {
    int hd = C / H, b, h, t, s, i;
    double scale = 1.0 / sqrt((double)hd);
    for (b = 0; b < B; b++)
        for (h = 0; h < H; h++)
            for (t = 0; t < T; t++) {
                const double *q = qkv + (size_t)(b * T + t) * 3 * C + (size_t)h * hd;
                double *p = att + ((size_t)(b * H + h) * T + t) * T, *o = out + (size_t)(b * T + t) * C + (size_t)h * hd;
                double mx = -HUGE_VAL, sum = 0;
                for (s = 0; s <= t; s++) {
                    const double *k = qkv + (size_t)(b * T + s) * 3 * C + C + (size_t)h * hd;
                    double dot = 0;
                    for (i = 0; i < hd; i++) dot += q[i] * k[i];
                    p[s] = dot * scale;
                    if (p[s] > mx) mx = p[s];
                }
                for (s = 0; s <= t; s++) {
                    p[s] = exp(p[s] - mx);
                    sum += p[s];
                }
                for (s = 0; s <= t; s++) p[s] /= sum;
                for (s = t + 1; s < T; s++) p[s] = 0;
                for (i = 0; i < hd; i++) o[i] = 0;
                for (s = 0; s <= t; s++) {
                    const double *v = qkv + (size_t)(b * T + s) * 3 * C + 2 * (size_t)C + (size_t)h * hd;
                    for (i = 0; i < hd; i++) o[i] += p[s] * v[i];
                }
            }
}

/* dqkv [B T, 3C] (overwritten) from dout [B T, C]; dp: T doubles of scratch */
static inline void gpt_ref__attention_back(double *dqkv, double *dp, const double *dout, const double *qkv,
                                           const double *att, int B, int T, int C, int H) {
    int hd = C / H, b, h, t, s, i;
    double scale = 1.0 / sqrt((double)hd);
    memset(dqkv, 0, (size_t)B * T * 3 * C * sizeof(double));
    for (b = 0; b < B; b++)
        for (h = 0; h < H; h++)
            for (t = 0; t < T; t++) {
                size_t qoff = (size_t)(b * T + t) * 3 * C + (size_t)h * hd;
                const double *p = att + ((size_t)(b * H + h) * T + t) * T;
                const double *dout_t = dout + (size_t)(b * T + t) * C + (size_t)h * hd;
                double pdp = 0; /* sum_s p[s] dp[s]: the softmax's backward */
                for (s = 0; s <= t; s++) {
                    size_t voff = (size_t)(b * T + s) * 3 * C + 2 * (size_t)C + (size_t)h * hd;
                    dp[s] = 0;
                    for (i = 0; i < hd; i++) {
                        dp[s] += dout_t[i] * qkv[voff + i];
                        dqkv[voff + i] += p[s] * dout_t[i];
                    }
                    pdp += p[s] * dp[s];
                }
                for (s = 0; s <= t; s++) {
                    size_t koff = (size_t)(b * T + s) * 3 * C + C + (size_t)h * hd;
                    double ds = p[s] * (dp[s] - pdp) * scale; /* d score[t][s] */
                    for (i = 0; i < hd; i++) {
                        dqkv[qoff + i] += ds * qkv[koff + i];
                        dqkv[koff + i] += ds * qkv[qoff + i];
                    }
                }
            }
}

/* ---- the model, in pieces ---- */

/* What one block keeps for the backward (all [N, width] row-major) */
typedef struct gpt_ref__block {
    double *ln1, *ln1_mean, *ln1_rstd; /* ln_1 of the block's input */
    double *qkv;                       /* [N, 3C] */
    double *att;                       /* [B, H, T, T] */
    double *atty;                      /* [N, C] the heads' outputs, c_proj's input */
    double *mid;                       /* [N, C] the stream after attention's residual add */
    double *ln2, *ln2_mean, *ln2_rstd;
    double *fc;   /* [N, 4C] c_fc's output */
    double *fcg;  /* [N, 4C] gelu of it, mlp.c_proj's input */
} gpt_ref__block;

/* One micro-batch of B sequences: every intermediate of the forward and the
   backward's scratch. The pieces below run the model on it in the order of
   examples/gpt/gpt_wire.h (tests/test_gpt_wire.c drives them through it
   with an engine); gpt_ref_loss_grad runs them in the same order on plain
   arrays. Parameters and gradients of a block are its GPT_PER_BLOCK
   tensors (gpt_model.h's order), gradients added to (+=). */
typedef struct gpt_ref_acts {
    gpt_dims d;
    int B, N, slots;   /* slots: blocks whose intermediates are kept (L, or 1 with a recompute) */
    double *res;       /* [L + 1][N, C]: block l's input at l, ln_f's at L */
    gpt_ref__block *blk; /* [slots] */
    double *lnf, *lnf_mean, *lnf_rstd;
    double *probs;     /* [N, V] the softmax; d loss / d logits after a head with gradients */
    double *dres;      /* [N, C] d loss / d (the residual stream where the backward is) */
    double *dln, *dqkv, *datty, *dfc, *dp; /* the backward's: [N, C | 3C | C | 4C], [T] */
    double *buf;
} gpt_ref_acts;

/* 0, or 1 when memory runs out (nothing to free then) */
static inline int gpt_ref_acts_alloc(gpt_ref_acts *A, const gpt_dims *d, int B, int slots) {
    const int L = d->layers, C = d->dim, H = d->heads, T = d->seq, V = d->vocab, N = B * T;
    const size_t nc = (size_t)N * C, natt = (size_t)B * H * T * T;
    const size_t per_block = 15 * nc + 4 * (size_t)N + natt;
    const size_t n_all = (size_t)slots * per_block + (size_t)(L + 2) * nc + 2 * (size_t)N + (size_t)N * V +
                         10 * nc + (size_t)T;
    double *cur;
    int k;
    memset(A, 0, sizeof *A);
    if ((size_t)-1 / sizeof(double) < n_all) return 1;
    A->d = *d, A->B = B, A->N = N, A->slots = slots;
    A->buf = (double *)malloc(n_all * sizeof(double));
    A->blk = (gpt_ref__block *)malloc((size_t)(slots + 1) * sizeof *A->blk); /* + 1: never malloc(0) */
    if (!A->buf || !A->blk) {
        free(A->buf);
        free(A->blk);
        memset(A, 0, sizeof *A);
        return 1;
    }
    cur = A->buf;
#define GPT_REF__TAKE(count) (cur += (count), cur - (count))
    A->res = GPT_REF__TAKE((size_t)(L + 1) * nc);
    for (k = 0; k < slots; k++) {
        gpt_ref__block *b = &A->blk[k];
        b->ln1 = GPT_REF__TAKE(nc);
        b->ln1_mean = GPT_REF__TAKE((size_t)N);
        b->ln1_rstd = GPT_REF__TAKE((size_t)N);
        b->qkv = GPT_REF__TAKE(3 * nc);
        b->att = GPT_REF__TAKE(natt);
        b->atty = GPT_REF__TAKE(nc);
        b->mid = GPT_REF__TAKE(nc);
        b->ln2 = GPT_REF__TAKE(nc);
        b->ln2_mean = GPT_REF__TAKE((size_t)N);
        b->ln2_rstd = GPT_REF__TAKE((size_t)N);
        b->fc = GPT_REF__TAKE(4 * nc);
        b->fcg = GPT_REF__TAKE(4 * nc);
    }
    A->lnf = GPT_REF__TAKE(nc);
    A->lnf_mean = GPT_REF__TAKE((size_t)N);
    A->lnf_rstd = GPT_REF__TAKE((size_t)N);
    A->probs = GPT_REF__TAKE((size_t)N * V);
    A->dres = GPT_REF__TAKE(nc);
    A->dln = GPT_REF__TAKE(nc);
    A->dqkv = GPT_REF__TAKE(3 * nc);
    A->datty = GPT_REF__TAKE(nc);
    A->dfc = GPT_REF__TAKE(4 * nc);
    A->dp = GPT_REF__TAKE((size_t)T);
#undef GPT_REF__TAKE
    return 0;
}

static inline void gpt_ref_acts_free(gpt_ref_acts *A) {
    free(A->buf);
    free(A->blk);
    memset(A, 0, sizeof *A);
}

/* The residual stream's start: tokens holds B rows of d->seq + 1 ids (inputs [0, T)) */
static inline void gpt_ref_embed(gpt_ref_acts *A, const int *tokens, const double *wte, const double *wpe) {
    const int C = A->d.dim, T = A->d.seq;
    int b, t, i;
    for (b = 0; b < A->B; b++)
        for (t = 0; t < T; t++) {
            int tok = tokens[(size_t)b * (T + 1) + t];
            double *x = A->res + (size_t)(b * T + t) * C;
            for (i = 0; i < C; i++) x[i] = wte[(size_t)tok * C + i] + wpe[(size_t)t * C + i];
        }
}

/* Block l into slot k: from res[l] to res[l + 1] (out_resid 0: a recompute,
   everything the backward reads but the output, which is kept) */
static inline void gpt_ref_block_fwd(gpt_ref_acts *A, int l, int k, const double *const *P, int out_resid) {
    const int C = A->d.dim, H = A->d.heads, T = A->d.seq, N = A->N;
    const size_t nc = (size_t)N * C;
    gpt_ref__block *b = &A->blk[k];
    const double *x = A->res + (size_t)l * nc;
    double *y = A->res + (size_t)(l + 1) * nc;
    size_t j;
    gpt_ref__layernorm(b->ln1, b->ln1_mean, b->ln1_rstd, x, P[GPT_LN1_W], P[GPT_LN1_B], N, C);
    gpt_ref__linear(b->qkv, b->ln1, P[GPT_QKV_W], P[GPT_QKV_B], N, C, 3 * C);
    gpt_ref__attention(b->atty, b->att, b->qkv, A->B, T, C, H);
    gpt_ref__linear(b->mid, b->atty, P[GPT_ATTN_PROJ_W], P[GPT_ATTN_PROJ_B], N, C, C);
    for (j = 0; j < nc; j++) b->mid[j] += x[j];
    gpt_ref__layernorm(b->ln2, b->ln2_mean, b->ln2_rstd, b->mid, P[GPT_LN2_W], P[GPT_LN2_B], N, C);
    gpt_ref__linear(b->fc, b->ln2, P[GPT_FC_W], P[GPT_FC_B], N, C, 4 * C);
    for (j = 0; j < 4 * nc; j++) b->fcg[j] = gpt_ref__gelu(b->fc[j]);
    if (!out_resid) return;
    gpt_ref__linear(y, b->fcg, P[GPT_MLP_PROJ_W], P[GPT_MLP_PROJ_B], N, 4 * C, C);
    for (j = 0; j < nc; j++) y[j] += b->mid[j];
}

static inline void gpt_ref_lnf_fwd(gpt_ref_acts *A, const double *w, const double *b) {
    gpt_ref__layernorm(A->lnf, A->lnf_mean, A->lnf_rstd, A->res + (size_t)A->d.layers * A->N * A->d.dim, w, b, A->N,
                       A->d.dim);
}

/* The tied head and the loss: returns the sum over the N positions of
   -log softmax(logits)[target] (targets: ids [1, T] of each row). With dwte,
   also its backward, d loss_sum / d logits taken times gscale: d ln_f into
   A->dln, the head's share of wte's gradient added into dwte. */
static inline double gpt_ref_head(gpt_ref_acts *A, const int *tokens, const double *wte, double gscale, double *dwte) {
    const int C = A->d.dim, T = A->d.seq, V = A->d.vocab, N = A->N;
    double total = 0;
    int n, v, i;
    for (n = 0; n < N; n++) {
        double *pn = A->probs + (size_t)n * V, mx = -HUGE_VAL, sum = 0;
        const double *xn = A->lnf + (size_t)n * C;
        int target = tokens[(size_t)(n / T) * (T + 1) + n % T + 1];
        for (v = 0; v < V; v++) {
            double z = 0;
            for (i = 0; i < C; i++) z += xn[i] * wte[(size_t)v * C + i];
            pn[v] = z;
            if (z > mx) mx = z;
        }
        for (v = 0; v < V; v++) sum += exp(pn[v] - mx);
        total += mx + log(sum) - pn[target]; /* -log softmax[target] */
        for (v = 0; v < V; v++) pn[v] = exp(pn[v] - mx) / sum;
    }
    if (!dwte) return total;
    /* d logits = (softmax - onehot) gscale, in place; logits = lnf wte^T, so
       dlnf = dlogits wte and dwte += dlogits^T lnf */
    for (n = 0; n < N; n++) {
        double *pn = A->probs + (size_t)n * V, *dn = A->dln + (size_t)n * C;
        const double *xn = A->lnf + (size_t)n * C;
        pn[tokens[(size_t)(n / T) * (T + 1) + n % T + 1]] -= 1.0;
        for (v = 0; v < V; v++) pn[v] *= gscale;
        for (i = 0; i < C; i++) dn[i] = 0;
        for (v = 0; v < V; v++) {
            const double *wv = wte + (size_t)v * C;
            double *gv = dwte + (size_t)v * C;
            for (i = 0; i < C; i++) {
                dn[i] += pn[v] * wv[i];
                gv[i] += pn[v] * xn[i];
            }
        }
    }
    return total;
}

/* The backward between two hand-overs of gradients, one function per piece
   of gpt_wire.h (gpt_wire_piece), each with the same arguments: block l's
   slot k, its parameters P and gradients G (ln_f's for gpt_ref_bwd_lnf:
   P[0] its weight, G[0], G[1] its weight's and bias's). A->dres is
   d loss / d res[l + 1] before gpt_ref_bwd_mlp_proj and d loss / d res[l]
   after gpt_ref_bwd_ln1. */
typedef void (*gpt_ref_bwd_fn)(gpt_ref_acts *A, int l, int k, const double *const *P, double *const *G);

/* ln_f, from the head's d ln_f: A->dres starts here */
static inline void gpt_ref_bwd_lnf(gpt_ref_acts *A, int l, int k, const double *const *P, double *const *G) {
    const size_t nc = (size_t)A->N * A->d.dim;
    (void)l, (void)k;
    memset(A->dres, 0, nc * sizeof(double));
    gpt_ref__layernorm_back(A->dres, G[0], G[1], A->dln, A->res + (size_t)A->d.layers * nc, A->lnf_mean, A->lnf_rstd,
                            P[0], A->N, A->d.dim);
}
/* y = mid + mlp.c_proj(gelu(c_fc(ln_2(mid)))): c_proj's weight and bias */
static inline void gpt_ref_bwd_mlp_proj(gpt_ref_acts *A, int l, int k, const double *const *P, double *const *G) {
    const int C = A->d.dim, N = A->N;
    (void)l, (void)P;
    gpt_ref__linear_back_w(G[GPT_MLP_PROJ_W], A->dres, A->blk[k].fcg, N, 4 * C, C);
    gpt_ref__bias_back(G[GPT_MLP_PROJ_B], A->dres, N, C);
}
/* d c_fc's output through the GELU, and c_fc's bias */
static inline void gpt_ref_bwd_fc_b(gpt_ref_acts *A, int l, int k, const double *const *P, double *const *G) {
    const int C = A->d.dim, N = A->N;
    size_t j;
    (void)l;
    gpt_ref__linear_back_x(A->dfc, A->dres, P[GPT_MLP_PROJ_W], N, 4 * C, C);
    for (j = 0; j < 4 * (size_t)N * C; j++) A->dfc[j] *= gpt_ref__gelu_grad(A->blk[k].fc[j]);
    gpt_ref__bias_back(G[GPT_FC_B], A->dfc, N, 4 * C);
}
static inline void gpt_ref_bwd_fc_w(gpt_ref_acts *A, int l, int k, const double *const *P, double *const *G) {
    (void)l, (void)P;
    gpt_ref__linear_back_w(G[GPT_FC_W], A->dfc, A->blk[k].ln2, A->N, A->d.dim, 4 * A->d.dim);
}
/* ln_2: A->dres becomes d mid */
static inline void gpt_ref_bwd_ln2(gpt_ref_acts *A, int l, int k, const double *const *P, double *const *G) {
    const int C = A->d.dim, N = A->N;
    const gpt_ref__block *b = &A->blk[k];
    (void)l;
    gpt_ref__linear_back_x(A->dln, A->dfc, P[GPT_FC_W], N, C, 4 * C);
    gpt_ref__layernorm_back(A->dres, G[GPT_LN2_W], G[GPT_LN2_B], A->dln, b->mid, b->ln2_mean, b->ln2_rstd,
                            P[GPT_LN2_W], N, C);
}
/* mid = x + attn.c_proj(attention(c_attn(ln_1(x)))): c_proj's weight and bias */
static inline void gpt_ref_bwd_attn_proj(gpt_ref_acts *A, int l, int k, const double *const *P, double *const *G) {
    const int C = A->d.dim, N = A->N;
    (void)l, (void)P;
    gpt_ref__linear_back_w(G[GPT_ATTN_PROJ_W], A->dres, A->blk[k].atty, N, C, C);
    gpt_ref__bias_back(G[GPT_ATTN_PROJ_B], A->dres, N, C);
}
/* attention's backward, and c_attn's weight and bias */
static inline void gpt_ref_bwd_qkv(gpt_ref_acts *A, int l, int k, const double *const *P, double *const *G) {
    const int C = A->d.dim, N = A->N;
    const gpt_ref__block *b = &A->blk[k];
    (void)l;
    gpt_ref__linear_back_x(A->datty, A->dres, P[GPT_ATTN_PROJ_W], N, C, C);
    gpt_ref__attention_back(A->dqkv, A->dp, A->datty, b->qkv, b->att, A->B, A->d.seq, C, A->d.heads);
    gpt_ref__linear_back_w(G[GPT_QKV_W], A->dqkv, b->ln1, N, C, 3 * C);
    gpt_ref__bias_back(G[GPT_QKV_B], A->dqkv, N, 3 * C);
}
/* ln_1: A->dres becomes d x, the block's input */
static inline void gpt_ref_bwd_ln1(gpt_ref_acts *A, int l, int k, const double *const *P, double *const *G) {
    const int C = A->d.dim, N = A->N;
    const gpt_ref__block *b = &A->blk[k];
    gpt_ref__linear_back_x(A->dln, A->dqkv, P[GPT_QKV_W], N, C, 3 * C);
    gpt_ref__layernorm_back(A->dres, G[GPT_LN1_W], G[GPT_LN1_B], A->dln, A->res + (size_t)l * N * C, b->ln1_mean,
                            b->ln1_rstd, P[GPT_LN1_W], N, C);
}

/* The embeddings: wte's rows of the input ids added into dwte (on top of the
   head's share), wpe's of the positions into dwpe */
static inline void gpt_ref_embed_bwd(gpt_ref_acts *A, const int *tokens, double *dwte, double *dwpe) {
    const int C = A->d.dim, T = A->d.seq;
    int b, t, i;
    for (b = 0; b < A->B; b++)
        for (t = 0; t < T; t++) {
            int tok = tokens[(size_t)b * (T + 1) + t];
            const double *dn = A->dres + (size_t)(b * T + t) * C;
            for (i = 0; i < C; i++) {
                dwte[(size_t)tok * C + i] += dn[i];
                dwpe[(size_t)t * C + i] += dn[i];
            }
        }
}

/* ---- the loss and its gradients ---- */

/* Forward and backward of the mean loss over B sequences, in double.
   params[t]: tensor t's gpt_tensor_numel(d, t) values, layouts as gpt_model.h.
   tokens: B rows of d->seq + 1 ids; inputs are ids [0, T), targets ids [1, T].
   grads: NULL for the loss only; else grads[t] is overwritten with
   d loss / d params[t]. Returns 0, or 1 when memory runs out (nothing written to *loss then).
   Needs B >= 1, ids in [0, vocab), dim a multiple of heads, seq <= wpe's rows
   (gpt_positions): rows seq.. of wpe are not read and get zero gradient. */
static inline int gpt_ref_loss_grad(const gpt_dims *d, const double *const *params, const int *tokens, int B,
                                    double *loss, double *const *grads) {
    static const gpt_ref_bwd_fn block_bwd[] = {gpt_ref_bwd_mlp_proj, gpt_ref_bwd_fc_b,      gpt_ref_bwd_fc_w,
                                               gpt_ref_bwd_ln2,      gpt_ref_bwd_attn_proj, gpt_ref_bwd_qkv,
                                               gpt_ref_bwd_ln1};
    const int L = d->layers, N = B * d->seq;
    gpt_ref_acts A;
    double total;
    int l, t;
    size_t i;
    if (gpt_ref_acts_alloc(&A, d, B, L)) return 1;
    gpt_ref_embed(&A, tokens, params[GPT_WTE], params[GPT_WPE]);
    for (l = 0; l < L; l++) gpt_ref_block_fwd(&A, l, l, params + gpt_block_tensor(l, 0), 1);
    gpt_ref_lnf_fwd(&A, params[gpt_lnf_w(d)], params[gpt_lnf_b(d)]);
    if (grads)
        for (t = 0; t < gpt_n_tensors(d); t++) memset(grads[t], 0, (size_t)gpt_tensor_numel(d, t) * sizeof(double));
    total = gpt_ref_head(&A, tokens, params[GPT_WTE], 1.0 / N, grads ? grads[GPT_WTE] : NULL);
    if (grads) {
        gpt_ref_bwd_lnf(&A, L, 0, params + gpt_lnf_w(d), grads + gpt_lnf_w(d));
        for (l = L - 1; l >= 0; l--)
            for (i = 0; i < sizeof block_bwd / sizeof block_bwd[0]; i++)
                block_bwd[i](&A, l, l, params + gpt_block_tensor(l, 0), grads + gpt_block_tensor(l, 0));
        gpt_ref_embed_bwd(&A, tokens, grads[GPT_WTE], grads[GPT_WPE]);
    }
    *loss = total / N;
    gpt_ref_acts_free(&A);
    return 0;
}

#endif /* GPT_REF_H */
