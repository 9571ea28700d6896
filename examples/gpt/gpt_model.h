/* gpt_model.h - what examples/gpt's programs share about the model: its
   shapes, the tensor list (HF GPT-2 names and layouts), the initial weights,
   the model-FLOP count, the training text and the data sampling. The
   forward and backward live in gpt_cuda.cuh (GPUs) and gpt_ref.h (float64 on
   the CPU, the reference the GPU is checked against).

   The model: GPT-2 (Radford et al. 2019) with byte-level tokens.
       x0      = wte[tok] + wpe[pos]                            [N, C], N = B T
       block l = x += attn(ln_1(x)); x += mlp(ln_2(x))          l = 0 .. L-1
       attn(a) = c_proj(softmax(causal(q k^T / sqrt(hd))) v)    per head, hd = C / H,
                 q, k, v = columns [0,C), [C,2C), [2C,3C) of a c_attn.weight + c_attn.bias,
                 head h = columns [h hd, (h+1) hd) of each
       mlp(a)  = c_proj(gelu(a c_fc.weight + c_fc.bias))        gelu: tanh form
       logits  = ln_f(x) wte^T                                  the head is tied to wte
       loss    = mean over the N positions of -log softmax(logits)[next token]
   LayerNorm: (x - mean) / sqrt(var + 1e-5) * weight + bias, var the biased
   variance. A linear layer's weight is stored [in, out] row-major (HF's
   Conv1D), so y = a W + b.

   Compiles as C11 and as CUDA C++. Every function is static inline. */
#ifndef GPT_MODEL_H
#define GPT_MODEL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../example_hash.h"

#define GPT_LN_EPS 1e-5
#define GPT_GELU_A 0.7978845608028654 /* sqrt(2/pi) */
#define GPT_GELU_B 0.044715
#define GPT_INIT_STD 0.02

typedef struct gpt_dims {
    int layers; /* L */
    int dim;    /* C, a multiple of heads */
    int heads;  /* H */
    int seq;    /* T: the context, and wpe's rows */
    int vocab;  /* V: 256 for byte-level text */
} gpt_dims;

/* GPT-2's sizes (the names count GPT-2's 50257-token vocabulary; with bytes
   the embedding is smaller, so 124M has 85.8M parameters here) */
typedef struct gpt_preset {
    const char *name;
    int layers, dim, heads;
} gpt_preset;

/* Preset i (0 .. GPT_N_PRESETS - 1), or NULL */
#define GPT_N_PRESETS 4
static inline const gpt_preset *gpt_preset_at(int i) {
    static const gpt_preset p[GPT_N_PRESETS] = {
        {"124M", 12, 768, 12}, {"350M", 24, 1024, 16}, {"774M", 36, 1280, 20}, {"1.5B", 48, 1600, 25}};
    return i >= 0 && i < GPT_N_PRESETS ? &p[i] : NULL;
}

/* ---- tensors ---- */

/* Per block, in forward order */
enum {
    GPT_LN1_W, GPT_LN1_B, GPT_QKV_W, GPT_QKV_B, GPT_ATTN_PROJ_W, GPT_ATTN_PROJ_B,
    GPT_LN2_W, GPT_LN2_B, GPT_FC_W, GPT_FC_B, GPT_MLP_PROJ_W, GPT_MLP_PROJ_B,
    GPT_PER_BLOCK
};

/* Registration order: wte, wpe, the blocks' tensors, ln_f.weight, ln_f.bias.
   Engine groups: 0 for wte and wpe, l + 1 for block l, L + 1 for ln_f. */
#define GPT_WTE 0
#define GPT_WPE 1
static inline int gpt_block_tensor(int l, int k) { return 2 + GPT_PER_BLOCK * l + k; }
static inline int gpt_lnf_w(const gpt_dims *d) { return 2 + GPT_PER_BLOCK * d->layers; }
static inline int gpt_lnf_b(const gpt_dims *d) { return 3 + GPT_PER_BLOCK * d->layers; }
static inline int gpt_n_tensors(const gpt_dims *d) { return 4 + GPT_PER_BLOCK * d->layers; }

/* Block of tensor t (-1: wte/wpe, L: ln_f) and its place in the block */
static inline int gpt_tensor_block(const gpt_dims *d, int t, int *k) {
    *k = 0;
    if (t < 2) return -1;
    if (t >= gpt_lnf_w(d)) {
        *k = t - gpt_lnf_w(d);
        return d->layers;
    }
    *k = (t - 2) % GPT_PER_BLOCK;
    return (t - 2) / GPT_PER_BLOCK;
}

/* Shape of tensor t: returns ndim (1 or 2) */
static inline int gpt_tensor_shape(const gpt_dims *d, int t, int64_t shape[2]) {
    int k, l = gpt_tensor_block(d, t, &k);
    int64_t C = d->dim;
    shape[1] = 1;
    if (t == GPT_WTE) return shape[0] = d->vocab, shape[1] = C, 2;
    if (t == GPT_WPE) return shape[0] = d->seq, shape[1] = C, 2;
    if (l == d->layers) return shape[0] = C, 1;
    switch (k) {
    case GPT_QKV_W: return shape[0] = C, shape[1] = 3 * C, 2;
    case GPT_QKV_B: return shape[0] = 3 * C, 1;
    case GPT_ATTN_PROJ_W: return shape[0] = C, shape[1] = C, 2;
    case GPT_FC_W: return shape[0] = C, shape[1] = 4 * C, 2;
    case GPT_FC_B: return shape[0] = 4 * C, 1;
    case GPT_MLP_PROJ_W: return shape[0] = 4 * C, shape[1] = C, 2;
    default: return shape[0] = C, 1; /* LN weights and biases, the C-wide biases */
    }
}

static inline int64_t gpt_tensor_numel(const gpt_dims *d, int t) {
    int64_t s[2];
    return gpt_tensor_shape(d, t, s) == 2 ? s[0] * s[1] : s[0];
}

/* HF GPT-2's names: wte.weight, h.3.attn.c_attn.weight, ln_f.bias, ... */
static inline const char *gpt_tensor_name(const gpt_dims *d, int t, char *buf, size_t cap) {
    static const char *const part[GPT_PER_BLOCK] = {
        "ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight",
        "attn.c_proj.bias", "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight", "mlp.c_fc.bias",
        "mlp.c_proj.weight", "mlp.c_proj.bias"};
    int k, l = gpt_tensor_block(d, t, &k);
    if (t == GPT_WTE) snprintf(buf, cap, "wte.weight");
    else if (t == GPT_WPE) snprintf(buf, cap, "wpe.weight");
    else if (l == d->layers) snprintf(buf, cap, "ln_f.%s", k == 0 ? "weight" : "bias");
    else snprintf(buf, cap, "h.%d.%s", l, part[k]);
    return buf;
}

/* Biases and LayerNorm parameters: no weight decay (GPT-2's and nanoGPT's practice) */
static inline int gpt_tensor_no_decay(const gpt_dims *d, int t) {
    int64_t s[2];
    return gpt_tensor_shape(d, t, s) == 1;
}

/* Engine group: 0 embeddings, l + 1 block l, L + 1 ln_f */
static inline int gpt_tensor_group(const gpt_dims *d, int t) {
    int k, l = gpt_tensor_block(d, t, &k);
    return l + 1;
}

/* Trainable parameters */
static inline int64_t gpt_n_params(const gpt_dims *d) {
    int64_t n = 0;
    int t;
    for (t = 0; t < gpt_n_tensors(d); t++) n += gpt_tensor_numel(d, t);
    return n;
}

/* ---- initial weights ---- */

/* GPT-2's: every weight matrix and both embeddings N(0, 0.02), the two
   residual projections (attn.c_proj, mlp.c_proj) N(0, 0.02 / sqrt(2 L)),
   biases 0, LayerNorm weights 1. A pure function of (seed, tensor, element):
   the same model on every world size and layout. */
static inline double gpt_normal(uint64_t seed, int t, int64_t i) {
    uint64_t h = hash3(seed, (uint64_t)t, (uint64_t)i);
    double u1 = ((double)(h >> 11) + 1.0) * (1.0 / 9007199254740992.0); /* (0, 1] */
    double u2 = (double)(mix64(h) >> 11) * (1.0 / 9007199254740992.0);  /* [0, 1) */
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

static inline double gpt_init_value(const gpt_dims *d, uint64_t seed, int t, int64_t i) {
    int k, l = gpt_tensor_block(d, t, &k);
    if (t == GPT_WTE || t == GPT_WPE) return GPT_INIT_STD * gpt_normal(seed, t, i);
    if (l == d->layers) return k == 0 ? 1.0 : 0.0;
    switch (k) {
    case GPT_LN1_W: case GPT_LN2_W: return 1.0;
    case GPT_QKV_W: case GPT_FC_W: return GPT_INIT_STD * gpt_normal(seed, t, i);
    case GPT_ATTN_PROJ_W: case GPT_MLP_PROJ_W: return GPT_INIT_STD / sqrt(2.0 * d->layers) * gpt_normal(seed, t, i);
    default: return 0.0;
    }
}

/* ---- FLOPs ---- */

/* Model FLOPs of one token's forward and backward, the count of the PaLM
   paper (appendix B) that nanoGPT and llm.c use: 6 per parameter of every
   matrix product (12 C^2 per block, and V C for the tied head) plus
   12 L C T for attention's two T-long products (counted whole, as a
   non-causal attention would: what most MFU figures use). Biases,
   LayerNorms and softmax are left out; recomputation is not counted (this
   is MFU, not HFU). */
static inline double gpt_flops_per_token(const gpt_dims *d) {
    double L = d->layers, C = d->dim, T = d->seq, V = d->vocab;
    return 6.0 * (12.0 * L * C * C + V * C) + 12.0 * L * C * T;
}

/* attention's share of gpt_flops_per_token */
static inline double gpt_attention_flop_share(const gpt_dims *d) {
    return 12.0 * d->layers * (double)d->dim * d->seq / gpt_flops_per_token(d);
}

/* ---- data ---- */

/* The tokens of sample b of (step, micro-batch, rank): T + 1 consecutive
   tokens of the text, at a position hashed from (seed, step, index) with
   index = (micro * world + rank) * batch + b, so the global batch of a step
   depends only on world x gas x batch. Synthetic data (text == NULL):
   tokens hashed from (seed, position), uniform over the vocabulary. */
static inline void gpt_sample(const unsigned char *text, uint64_t n, const gpt_dims *d, uint64_t seed, int64_t step,
                              int64_t index, int *out) {
    int i;
    if (text) {
        uint64_t p = sample_pos(seed, step, index, n, d->seq);
        for (i = 0; i <= d->seq; i++) out[i] = text[p + (uint64_t)i];
    } else {
        for (i = 0; i <= d->seq; i++)
            out[i] = (int)(hash3(seed ^ 0x7E57ull, (uint64_t)step, (uint64_t)index * 65536u + (uint64_t)i) %
                           (uint64_t)d->vocab);
    }
}

#endif /* GPT_MODEL_H */
