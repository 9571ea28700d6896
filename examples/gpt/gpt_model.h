/* gpt_model.h - what examples/gpt's programs share about the model: its
   shapes, the tensor list (HF GPT-2 names and layouts), the initial weights,
   the model-FLOP count, the data (text, token files) and its sampling, and
   the reading of a Hugging Face GPT-2's config.json. The forward and
   backward live in gpt_cuda.cuh (GPUs) and gpt_ref.h (float64 on the CPU,
   the reference the GPU is checked against).

   The model: GPT-2 (Radford et al. 2019), byte-level tokens or GPT-2's.
       x0      = wte[tok] + wpe[pos]                            [N, C], N = B T, pos < T
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
    int layers;    /* L */
    int dim;       /* C, a multiple of heads */
    int heads;     /* H */
    int seq;       /* T: the context */
    int vocab;     /* V: 256 for byte-level text, 50257 for GPT-2's tokens */
    int positions; /* P: wpe's rows, >= T (a checkpoint's n_positions); 0: T.
                      Only rows < T are read; the others get zero gradient. */
} gpt_dims;

/* wpe's rows */
static inline int gpt_positions(const gpt_dims *d) { return d->positions > 0 ? d->positions : d->seq; }

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
    if (t == GPT_WPE) return shape[0] = gpt_positions(d), shape[1] = C, 2;
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

/* Training data is a stream of token ids, uint16 (GPT-2's 50257 fit), read
   from files of three kinds:
     - raw little-endian uint16 ids: a file named *.u16;
     - llm.c's token files (what its data scripts write, *.bin): a header
       of 256 little-endian int32 (magic 20240520, version 1, the token
       count, the rest unused), then the count's uint16 ids;
     - anything else: text, one token per byte (V = 256).
   A *.u16 name decides first, then llm.c's magic in the first 4 bytes.
   Hosts are little-endian, as the files are. */
#define GPT_LLMC_MAGIC 20240520
#define GPT_LLMC_HEADER_BYTES 1024
enum { GPT_DATA_TEXT, GPT_DATA_LLMC, GPT_DATA_U16 };

static inline const char *gpt_data_kind_name(int kind) {
    return kind == GPT_DATA_LLMC ? "llm.c tokens" : kind == GPT_DATA_U16 ? "uint16 tokens" : "text";
}

static inline int gpt__ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

static inline int32_t gpt__le32(const unsigned char *b) {
    return (int32_t)((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24);
}

/* The kind of file path; -1 when it cannot be opened */
static inline int gpt_data_kind(const char *path) {
    unsigned char h[4];
    size_t got;
    FILE *f;
    if (gpt__ends_with(path, ".u16")) {
        if (!(f = fopen(path, "rb"))) return -1;
        fclose(f);
        return GPT_DATA_U16;
    }
    if (!(f = fopen(path, "rb"))) return -1;
    got = fread(h, 1, sizeof h, f);
    fclose(f);
    return got == sizeof h && gpt__le32(h) == GPT_LLMC_MAGIC ? GPT_DATA_LLMC : GPT_DATA_TEXT;
}

/* A growing array of token ids */
typedef struct gpt_tokens {
    uint16_t *tok;
    size_t n, cap;
} gpt_tokens;

static inline void gpt_tokens_free(gpt_tokens *t) {
    free(t->tok);
    memset(t, 0, sizeof *t);
}

/* Appends the tokens of file path, read as kind (GPT_DATA_*), to *t.
   0, or 1 with the reason (naming the file) in msg; *t keeps what it had. */
static inline int gpt_read_tokens(const char *path, int kind, gpt_tokens *t, char *msg, size_t cap) {
    FILE *f = fopen(path, "rb");
    long size = -1;
    uint64_t count;
    size_t got = 0;
    if (!f) return snprintf(msg, cap, "%s: cannot open", path), 1;
    if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    if (size < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return snprintf(msg, cap, "%s: cannot tell its size", path), 1;
    }
    if (kind == GPT_DATA_LLMC) {
        unsigned char h[GPT_LLMC_HEADER_BYTES];
        int32_t magic, version, n;
        if (size < GPT_LLMC_HEADER_BYTES || fread(h, 1, sizeof h, f) != sizeof h) {
            fclose(f);
            return snprintf(msg, cap, "%s: %ld bytes, shorter than llm.c's %d-byte header", path, size,
                            GPT_LLMC_HEADER_BYTES), 1;
        }
        magic = gpt__le32(h), version = gpt__le32(h + 4), n = gpt__le32(h + 8);
        if (magic != GPT_LLMC_MAGIC || version != 1 || n < 0 ||
            (uint64_t)(size - GPT_LLMC_HEADER_BYTES) != 2 * (uint64_t)n) {
            fclose(f);
            if (magic != GPT_LLMC_MAGIC)
                return snprintf(msg, cap, "%s: magic %ld, not llm.c's %d", path, (long)magic, GPT_LLMC_MAGIC), 1;
            if (version != 1)
                return snprintf(msg, cap, "%s: llm.c token file version %ld: only version 1 (uint16 ids) is read",
                                path, (long)version), 1;
            return snprintf(msg, cap, "%s: the header says %ld tokens, the file has %ld bytes after the header "
                            "(%ld tokens)", path, (long)n, size - GPT_LLMC_HEADER_BYTES,
                            (size - GPT_LLMC_HEADER_BYTES) / 2), 1;
        }
        count = (uint64_t)n;
    } else if (kind == GPT_DATA_U16) {
        if (size % 2) {
            fclose(f);
            return snprintf(msg, cap, "%s: %ld bytes, an odd size for uint16 tokens", path, size), 1;
        }
        count = (uint64_t)size / 2;
    } else
        count = (uint64_t)size;
    if (t->n + count > t->cap) {
        size_t want = t->cap * 2 > t->n + count ? t->cap * 2 : (size_t)(t->n + count);
        uint16_t *p = (uint16_t *)realloc(t->tok, (want ? want : 1) * sizeof(uint16_t));
        if (!p) {
            fclose(f);
            return snprintf(msg, cap, "%s: no memory for %llu tokens", path, (unsigned long long)count), 1;
        }
        t->tok = p, t->cap = want;
    }
    if (kind == GPT_DATA_TEXT) { /* bytes, widened */
        unsigned char buf[1 << 16];
        size_t k, r;
        while (got < count && (r = fread(buf, 1, sizeof buf, f)) > 0) {
            if (r > count - got) r = (size_t)(count - got);
            for (k = 0; k < r; k++) t->tok[t->n + got + k] = buf[k];
            got += r;
        }
    } else
        got = fread(t->tok + t->n, sizeof(uint16_t), (size_t)count, f);
    fclose(f);
    if (got != count)
        return snprintf(msg, cap, "%s: read %llu of %llu tokens", path, (unsigned long long)got,
                        (unsigned long long)count), 1;
    t->n += count;
    return 0;
}

/* The index of the first id >= vocab, or n when every one is below */
static inline size_t gpt_tokens_check(const uint16_t *tok, size_t n, int vocab) {
    size_t i;
    for (i = 0; i < n; i++)
        if (tok[i] >= vocab) return i;
    return n;
}

/* The tokens of sample b of (step, micro-batch, rank): T + 1 consecutive
   tokens of the data, at a position hashed from (seed, step, index) with
   index = (micro * world + rank) * batch + b, so the global batch of a step
   depends only on world x gas x batch. Synthetic data (tokens == NULL):
   ids hashed from (seed, position), uniform over the vocabulary. */
static inline void gpt_sample(const uint16_t *tokens, uint64_t n, const gpt_dims *d, uint64_t seed, int64_t step,
                              int64_t index, int *out) {
    int i;
    if (tokens) {
        uint64_t p = sample_pos(seed, step, index, n, d->seq);
        for (i = 0; i <= d->seq; i++) out[i] = tokens[p + (uint64_t)i];
    } else {
        for (i = 0; i <= d->seq; i++)
            out[i] = (int)(hash3(seed ^ 0x7E57ull, (uint64_t)step, (uint64_t)index * 65536u + (uint64_t)i) %
                           (uint64_t)d->vocab);
    }
}

/* ---- Hugging Face GPT-2 checkpoints ---- */

/* A GPT2LMHeadModel directory (save_pretrained): config.json, and
   model.safetensors or model.safetensors.index.json with its shards. The
   tensors are this model's by the same names after "transformer." (older
   checkpoints, the hub's gpt2 among them, have no prefix), Conv1D weights
   [in, out] as here. lm_head.weight, where a checkpoint has it, is wte
   again (the head is tied); h.N.attn.bias and h.N.attn.masked_bias are the
   attention-mask buffers of older versions. Neither is a parameter. */

/* Tensor t's name in a checkpoint: gpt_tensor_name's, after "transformer." when prefixed */
static inline const char *gpt_hf_name(const gpt_dims *d, int t, int prefixed, char *buf, size_t cap) {
    char name[64];
    gpt_tensor_name(d, t, name, sizeof name);
    snprintf(buf, cap, "%s%s", prefixed ? "transformer." : "", name);
    return buf;
}

/* 1 for the checkpoint tensors that are no parameter of the model (above) */
static inline int gpt_hf_ignored(const char *name) {
    return !strcmp(name, "lm_head.weight") || gpt__ends_with(name, ".attn.bias") ||
           gpt__ends_with(name, ".attn.masked_bias");
}

/* config.json: the values of top-level keys. Nested objects and arrays
   are skipped (checked for balance, not parsed); strings may hold escapes. */
static inline const char *gpt_json__ws(const char *p, const char *e) {
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

/* The end of the value at p, or NULL when there is none */
static inline const char *gpt_json__skip(const char *p, const char *e, int depth) {
    const char *s;
    p = gpt_json__ws(p, e);
    if (p >= e || depth > 64) return NULL;
    if (*p == '"') {
        for (p++; p < e; p++) {
            if (*p == '\\') p++;
            else if (*p == '"') return p + 1;
        }
        return NULL;
    }
    if (*p == '{' || *p == '[') {
        char close = *p == '{' ? '}' : ']';
        int object = *p == '{';
        p = gpt_json__ws(p + 1, e);
        if (p < e && *p == close) return p + 1;
        for (;;) {
            if (object) {
                if (p >= e || *p != '"' || !(p = gpt_json__skip(p, e, depth + 1))) return NULL;
                p = gpt_json__ws(p, e);
                if (p >= e || *p != ':') return NULL;
                p++;
            }
            if (!(p = gpt_json__skip(p, e, depth + 1))) return NULL;
            p = gpt_json__ws(p, e);
            if (p < e && *p == ',') {
                p = gpt_json__ws(p + 1, e);
                continue;
            }
            return p < e && *p == close ? p + 1 : NULL;
        }
    }
    for (s = p; p < e && ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                          *p == '+' || *p == '-' || *p == '.');
         p++) {
    }
    return p > s ? p : NULL; /* a number, true, false or null (checked by whoever reads it) */
}

/* Top-level key's value in [*v, *v + *n) (a string's with its quotes): 1;
   0 when the object has no such key; -1 when text is not one JSON object. */
static inline int gpt_json_top(const char *text, size_t len, const char *key, const char **v, size_t *n) {
    const char *p = gpt_json__ws(text, text + len), *e = text + len, *end;
    size_t klen = strlen(key);
    int found = 0;
    if (!(end = gpt_json__skip(p, e, 0)) || *p != '{' || gpt_json__ws(end, e) != e) return -1;
    p = gpt_json__ws(p + 1, e);
    while (p < e && *p == '"') {
        const char *k = p + 1, *ke = gpt_json__skip(p, e, 1), *val;
        p = gpt_json__ws(ke, e) + 1; /* past ':' (the whole object was checked above) */
        val = gpt_json__ws(p, e);
        p = gpt_json__skip(val, e, 1);
        if ((size_t)(ke - 1 - k) == klen && !memcmp(k, key, klen)) { /* the last one wins, as Python's json */
            *v = val, *n = (size_t)(p - val);
            found = 1;
        }
        p = gpt_json__ws(p, e);
        if (p < e && *p == ',') p = gpt_json__ws(p + 1, e);
    }
    return found;
}

/* key's value as an integer in [lo, hi] into *out: 0, else 1 and msg */
static inline int gpt_hf__int(const char *text, size_t len, const char *path, const char *key, long lo, long hi,
                              int *out, char *msg, size_t cap) {
    const char *v = NULL;
    size_t n = 0, i;
    char buf[32];
    long long x = 0;
    int found = gpt_json_top(text, len, key, &v, &n), ok = found == 1 && n > 0 && n < sizeof buf;
    if (found == 0) return snprintf(msg, cap, "%s: no \"%s\" (every GPT-2 config.json has it)", path, key), 1;
    for (i = 0; ok && i < n; i++) ok = (v[i] >= '0' && v[i] <= '9') || (i == 0 && v[i] == '-' && n > 1);
    if (ok) {
        memcpy(buf, v, n);
        buf[n] = 0;
        x = strtoll(buf, NULL, 10);
        ok = x >= lo && x <= hi;
    }
    if (!ok)
        return snprintf(msg, cap, "%s: \"%s\" is %.*s: expected an integer in [%ld, %ld]", path, key,
                        (int)(n < 40 ? n : 40), v ? v : "", lo, hi), 1;
    *out = (int)x;
    return 0;
}

/* An optional key whose value (its JSON text) must be one of ok[] */
static inline int gpt_hf__only(const char *text, size_t len, const char *path, const char *key,
                               const char *const *ok, int n_ok, const char *why, char *msg, size_t cap) {
    const char *v;
    size_t n;
    int i;
    if (gpt_json_top(text, len, key, &v, &n) != 1) return 0;
    for (i = 0; i < n_ok; i++)
        if (strlen(ok[i]) == n && !memcmp(ok[i], v, n)) return 0;
    return snprintf(msg, cap, "%s: \"%s\" is %.*s: %s", path, key, (int)(n < 60 ? n : 60), v, why), 1;
}

/* The model's shape from the text of a GPT-2 config.json (path names it in
   errors): layers, dim, heads, vocab and positions into *d (seq is left
   alone). The keys this model depends on are checked too: GELU's tanh
   form, LayerNorm's epsilon 1e-5, an MLP of width 4C, a tied head, no
   cross-attention, attention scaled by 1/sqrt(hd) alone. 0, else 1 with
   the file, the key and the reason in msg; *d unchanged then. */
static inline int gpt_hf_parse_config(const char *text, size_t len, const char *path, gpt_dims *d, char *msg,
                                      size_t cap) {
    static const char *const gelu[] = {"\"gelu_new\"", "\"gelu_pytorch_tanh\""}, *const yes[] = {"true"},
                             *const no[] = {"false"}, *const gpt2[] = {"\"gpt2\""};
    gpt_dims c;
    const char *v;
    size_t n;
    char buf[40];
    memset(&c, 0, sizeof c);
    if (gpt_json_top(text, len, "n_layer", &v, &n) < 0)
        return snprintf(msg, cap, "%s: not a JSON object (a Hugging Face config.json is one)", path), 1;
    if (gpt_hf__int(text, len, path, "n_layer", 1, 100000, &c.layers, msg, cap) ||
        gpt_hf__int(text, len, path, "n_embd", 1, 1 << 20, &c.dim, msg, cap) ||
        gpt_hf__int(text, len, path, "n_head", 1, 4096, &c.heads, msg, cap) ||
        gpt_hf__int(text, len, path, "n_positions", 2, 1 << 20, &c.positions, msg, cap) ||
        gpt_hf__int(text, len, path, "vocab_size", 2, 65536, &c.vocab, msg, cap) ||
        gpt_hf__only(text, len, path, "model_type", gpt2, 1, "not GPT-2", msg, cap) ||
        gpt_hf__only(text, len, path, "activation_function", gelu, 2,
                     "this model's GELU is the tanh form (gelu_new)", msg, cap) ||
        gpt_hf__only(text, len, path, "tie_word_embeddings", yes, 1, "this model's head is tied to wte", msg, cap) ||
        gpt_hf__only(text, len, path, "add_cross_attention", no, 1, "this model has no cross-attention", msg, cap) ||
        gpt_hf__only(text, len, path, "scale_attn_weights", yes, 1, "this model scales scores by 1/sqrt(hd)", msg,
                     cap) ||
        gpt_hf__only(text, len, path, "scale_attn_by_inverse_layer_idx", no, 1,
                     "this model scales scores by 1/sqrt(hd) alone", msg, cap))
        return 1;
    if (c.dim % c.heads)
        return snprintf(msg, cap, "%s: n_embd %d is not a multiple of n_head %d", path, c.dim, c.heads), 1;
    if (gpt_json_top(text, len, "n_inner", &v, &n) == 1 && !(n == 4 && !memcmp(v, "null", 4))) {
        int inner = 0;
        if (gpt_hf__int(text, len, path, "n_inner", 1, 1 << 30, &inner, msg, cap)) return 1;
        if (inner != 4 * c.dim)
            return snprintf(msg, cap, "%s: \"n_inner\" is %d: this model's MLP is 4 n_embd = %d wide", path, inner,
                            4 * c.dim), 1;
    }
    if (gpt_json_top(text, len, "layer_norm_epsilon", &v, &n) == 1) {
        double eps = -1;
        char *end = NULL;
        if (n < sizeof buf) {
            memcpy(buf, v, n);
            buf[n] = 0;
            eps = strtod(buf, &end);
        }
        if (!end || *end || !(fabs(eps - GPT_LN_EPS) <= 1e-6 * GPT_LN_EPS))
            return snprintf(msg, cap, "%s: \"layer_norm_epsilon\" is %.*s: this model's is 1e-5", path,
                            (int)(n < 40 ? n : 40), v), 1;
    }
    d->layers = c.layers, d->dim = c.dim, d->heads = c.heads, d->vocab = c.vocab, d->positions = c.positions;
    return 0;
}

/* The same from the file dir/config.json (msg: 2048 bytes hold any message) */
static inline int gpt_hf_read_config(const char *dir, gpt_dims *d, char *msg, size_t cap) {
    char path[1024];
    FILE *f;
    long size = -1;
    char *text;
    int r;
    if (strlen(dir) + sizeof "/config.json" > sizeof path)
        return snprintf(msg, cap, "%.64s...: a directory name longer than %d bytes", dir, (int)sizeof path - 13), 1;
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (!(f = fopen(path, "rb"))) return snprintf(msg, cap, "%s: cannot open (a Hugging Face model directory has it)", path), 1;
    if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    if (size < 0 || size > (16 << 20) || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return snprintf(msg, cap, "%s: cannot read (or larger than 16 MiB)", path), 1;
    }
    if (!(text = (char *)malloc((size_t)size + 1)) || fread(text, 1, (size_t)size, f) != (size_t)size) {
        free(text);
        fclose(f);
        return snprintf(msg, cap, "%s: cannot read", path), 1;
    }
    fclose(f);
    r = gpt_hf_parse_config(text, (size_t)size, path, d, msg, cap);
    free(text);
    return r;
}

#endif /* GPT_MODEL_H */
