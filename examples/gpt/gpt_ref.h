/* gpt_ref.h - the GPT-2 of gpt_model.h in float64 on the CPU: the forward
   and the hand-written backward the GPU model (gpt_cuda.cuh) is checked
   against. Plain loops, clarity over speed; tests/test_gpt_ref.c checks the
   backward against central differences of the forward.

       const double *p[n_tensors];   double *g[n_tensors];   double loss;
       if (gpt_ref_loss_grad(&d, p, tokens, B, &loss, g)) -> out of memory

   Every intermediate is kept, about (15 L + 2) N C + L B H T^2 + N V
   doubles (N = B T), and the backward takes 10 N C more: meant for small
   models. Compiles as C11 and as CUDA C++ (host
   code). Every function is static inline; no global state. */
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

/* din = dout w^T (overwritten); dw += in^T dout; db += the column sums of dout */
static inline void gpt_ref__linear_back(double *din, double *dw, double *db, const double *dout, const double *in,
                                        const double *w, int N, int I, int O) {
    int n, i, o;
    for (n = 0; n < N; n++) {
        const double *dn = dout + (size_t)n * O;
        for (o = 0; o < O; o++) db[o] += dn[o];
        for (i = 0; i < I; i++) {
            const double *wi = w + (size_t)i * O;
            double *dwi = dw + (size_t)i * O, a = in[(size_t)n * I + i], s = 0;
            for (o = 0; o < O; o++) {
                s += dn[o] * wi[o];
                dwi[o] += a * dn[o];
            }
            din[(size_t)n * I + i] = s;
        }
    }
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

/* ---- the model ---- */

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

/* Forward and backward of the mean loss over B sequences, in double.
   params[t]: tensor t's gpt_tensor_numel(d, t) values, layouts as gpt_model.h.
   tokens: B rows of d->seq + 1 ids; inputs are ids [0, T), targets ids [1, T].
   grads: NULL for the loss only; else grads[t] is overwritten with
   d loss / d params[t]. Returns 0, or 1 when memory runs out (nothing written to *loss then).
   Needs B >= 1, ids in [0, vocab), dim a multiple of heads, seq <= wpe's rows
   (gpt_positions): rows seq.. of wpe are not read and get zero gradient. */
static inline int gpt_ref_loss_grad(const gpt_dims *d, const double *const *params, const int *tokens, int B,
                                    double *loss, double *const *grads) {
    const int L = d->layers, C = d->dim, H = d->heads, T = d->seq, V = d->vocab, N = B * T;
    const size_t nc = (size_t)N * C, natt = (size_t)B * H * T * T;
    const size_t per_block = 15 * nc + 4 * (size_t)N + natt;
    const size_t n_fwd = (size_t)L * per_block + (size_t)(L + 2) * nc + 2 * (size_t)N + (size_t)N * V;
    const size_t n_bwd = grads ? 10 * nc + (size_t)T : 0;
    const double *wte = params[GPT_WTE], *wpe = params[GPT_WPE];
    const double *lnf_w = params[gpt_lnf_w(d)], *lnf_b = params[gpt_lnf_b(d)];
    double *buf, *cur, *res, *lnf, *lnf_mean, *lnf_rstd, *probs, total = 0;
    gpt_ref__block *blk;
    int l, n, b, t, v, i;

    if ((size_t)-1 / sizeof(double) - n_bwd < n_fwd) return 1;
    buf = (double *)malloc((n_fwd + n_bwd) * sizeof(double));
    blk = (gpt_ref__block *)malloc((size_t)(L + 1) * sizeof *blk); /* L + 1: never malloc(0) */
    if (!buf || !blk) {
        free(buf);
        free(blk);
        return 1;
    }
    cur = buf;
#define GPT_REF__TAKE(count) (cur += (count), cur - (count))
    res = GPT_REF__TAKE((size_t)(L + 1) * nc); /* res + l nc: block l's input; res + L nc: ln_f's */
    for (l = 0; l < L; l++) {
        gpt_ref__block *k = &blk[l];
        k->ln1 = GPT_REF__TAKE(nc);
        k->ln1_mean = GPT_REF__TAKE((size_t)N);
        k->ln1_rstd = GPT_REF__TAKE((size_t)N);
        k->qkv = GPT_REF__TAKE(3 * nc);
        k->att = GPT_REF__TAKE(natt);
        k->atty = GPT_REF__TAKE(nc);
        k->mid = GPT_REF__TAKE(nc);
        k->ln2 = GPT_REF__TAKE(nc);
        k->ln2_mean = GPT_REF__TAKE((size_t)N);
        k->ln2_rstd = GPT_REF__TAKE((size_t)N);
        k->fc = GPT_REF__TAKE(4 * nc);
        k->fcg = GPT_REF__TAKE(4 * nc);
    }
    lnf = GPT_REF__TAKE(nc);
    lnf_mean = GPT_REF__TAKE((size_t)N);
    lnf_rstd = GPT_REF__TAKE((size_t)N);
    probs = GPT_REF__TAKE((size_t)N * V);

    /* forward: embeddings */
    for (b = 0; b < B; b++)
        for (t = 0; t < T; t++) {
            int tok = tokens[(size_t)b * (T + 1) + t];
            double *x = res + (size_t)(b * T + t) * C;
            for (i = 0; i < C; i++) x[i] = wte[(size_t)tok * C + i] + wpe[(size_t)t * C + i];
        }
    /* blocks */
    for (l = 0; l < L; l++) {
        const double *const *P = params + gpt_block_tensor(l, 0);
        gpt_ref__block *k = &blk[l];
        const double *x = res + (size_t)l * nc;
        double *y = res + (size_t)(l + 1) * nc;
        size_t j;
        gpt_ref__layernorm(k->ln1, k->ln1_mean, k->ln1_rstd, x, P[GPT_LN1_W], P[GPT_LN1_B], N, C);
        gpt_ref__linear(k->qkv, k->ln1, P[GPT_QKV_W], P[GPT_QKV_B], N, C, 3 * C);
        gpt_ref__attention(k->atty, k->att, k->qkv, B, T, C, H);
        gpt_ref__linear(k->mid, k->atty, P[GPT_ATTN_PROJ_W], P[GPT_ATTN_PROJ_B], N, C, C);
        for (j = 0; j < nc; j++) k->mid[j] += x[j];
        gpt_ref__layernorm(k->ln2, k->ln2_mean, k->ln2_rstd, k->mid, P[GPT_LN2_W], P[GPT_LN2_B], N, C);
        gpt_ref__linear(k->fc, k->ln2, P[GPT_FC_W], P[GPT_FC_B], N, C, 4 * C);
        for (j = 0; j < 4 * nc; j++) k->fcg[j] = gpt_ref__gelu(k->fc[j]);
        gpt_ref__linear(y, k->fcg, P[GPT_MLP_PROJ_W], P[GPT_MLP_PROJ_B], N, 4 * C, C);
        for (j = 0; j < nc; j++) y[j] += k->mid[j];
    }
    /* ln_f, the tied head, softmax cross-entropy; probs keeps the softmax */
    gpt_ref__layernorm(lnf, lnf_mean, lnf_rstd, res + (size_t)L * nc, lnf_w, lnf_b, N, C);
    for (n = 0; n < N; n++) {
        double *pn = probs + (size_t)n * V, mx = -HUGE_VAL, sum = 0;
        int target = tokens[(size_t)(n / T) * (T + 1) + n % T + 1];
        for (v = 0; v < V; v++) {
            double z = 0;
            for (i = 0; i < C; i++) z += lnf[(size_t)n * C + i] * wte[(size_t)v * C + i];
            pn[v] = z;
            if (z > mx) mx = z;
        }
        for (v = 0; v < V; v++) sum += exp(pn[v] - mx);
        total += mx + log(sum) - pn[target]; /* -log softmax[target] */
        for (v = 0; v < V; v++) pn[v] = exp(pn[v] - mx) / sum;
    }

    if (grads) {
        double *dres = GPT_REF__TAKE(nc), *dln = GPT_REF__TAKE(nc), *dqkv = GPT_REF__TAKE(3 * nc);
        double *datty = GPT_REF__TAKE(nc), *dfc = GPT_REF__TAKE(4 * nc), *dp = GPT_REF__TAKE((size_t)T);
        for (t = 0; t < gpt_n_tensors(d); t++) memset(grads[t], 0, (size_t)gpt_tensor_numel(d, t) * sizeof(double));
        /* d loss / d logits = (softmax - onehot) / N, in place */
        for (n = 0; n < N; n++) {
            double *pn = probs + (size_t)n * V;
            pn[tokens[(size_t)(n / T) * (T + 1) + n % T + 1]] -= 1.0;
            for (v = 0; v < V; v++) pn[v] /= N;
        }
        /* the head: logits = lnf wte^T, so dlnf = dlogits wte and dwte += dlogits^T lnf */
        for (n = 0; n < N; n++) {
            const double *pn = probs + (size_t)n * V, *xn = lnf + (size_t)n * C;
            double *dn = dln + (size_t)n * C;
            for (i = 0; i < C; i++) dn[i] = 0;
            for (v = 0; v < V; v++) {
                const double *wv = wte + (size_t)v * C;
                double *gv = grads[GPT_WTE] + (size_t)v * C;
                for (i = 0; i < C; i++) {
                    dn[i] += pn[v] * wv[i];
                    gv[i] += pn[v] * xn[i];
                }
            }
        }
        memset(dres, 0, nc * sizeof(double));
        gpt_ref__layernorm_back(dres, grads[gpt_lnf_w(d)], grads[gpt_lnf_b(d)], dln, res + (size_t)L * nc,
                                lnf_mean, lnf_rstd, lnf_w, N, C);
        /* blocks, last first; dres is d loss / d (the stream at that point) */
        for (l = L - 1; l >= 0; l--) {
            const double *const *P = params + gpt_block_tensor(l, 0);
            double *const *G = grads + gpt_block_tensor(l, 0);
            gpt_ref__block *k = &blk[l];
            size_t j;
            /* y = mid + mlp.c_proj(gelu(c_fc(ln_2(mid)))) */
            gpt_ref__linear_back(dfc, G[GPT_MLP_PROJ_W], G[GPT_MLP_PROJ_B], dres, k->fcg, P[GPT_MLP_PROJ_W], N,
                                 4 * C, C);
            for (j = 0; j < 4 * nc; j++) dfc[j] *= gpt_ref__gelu_grad(k->fc[j]);
            gpt_ref__linear_back(dln, G[GPT_FC_W], G[GPT_FC_B], dfc, k->ln2, P[GPT_FC_W], N, C, 4 * C);
            gpt_ref__layernorm_back(dres, G[GPT_LN2_W], G[GPT_LN2_B], dln, k->mid, k->ln2_mean, k->ln2_rstd,
                                    P[GPT_LN2_W], N, C);
            /* mid = x + attn.c_proj(attention(c_attn(ln_1(x)))) */
            gpt_ref__linear_back(datty, G[GPT_ATTN_PROJ_W], G[GPT_ATTN_PROJ_B], dres, k->atty, P[GPT_ATTN_PROJ_W],
                                 N, C, C);
            gpt_ref__attention_back(dqkv, dp, datty, k->qkv, k->att, B, T, C, H);
            gpt_ref__linear_back(dln, G[GPT_QKV_W], G[GPT_QKV_B], dqkv, k->ln1, P[GPT_QKV_W], N, C, 3 * C);
            gpt_ref__layernorm_back(dres, G[GPT_LN1_W], G[GPT_LN1_B], dln, res + (size_t)l * nc, k->ln1_mean,
                                    k->ln1_rstd, P[GPT_LN1_W], N, C);
        }
        /* the embeddings: wte's rows of the input ids (on top of the head's share), wpe's of the positions */
        for (b = 0; b < B; b++)
            for (t = 0; t < T; t++) {
                int tok = tokens[(size_t)b * (T + 1) + t];
                const double *dn = dres + (size_t)(b * T + t) * C;
                for (i = 0; i < C; i++) {
                    grads[GPT_WTE][(size_t)tok * C + i] += dn[i];
                    grads[GPT_WPE][(size_t)t * C + i] += dn[i];
                }
            }
    }
#undef GPT_REF__TAKE
    *loss = total / N;
    free(buf);
    free(blk);
    return 0;
}

#endif /* GPT_REF_H */
