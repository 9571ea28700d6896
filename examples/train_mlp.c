/* train_mlp - a small character-level language model trained through zero's
   engine: the training loop a C program with hand-written forward and
   backward passes writes around zero (DESIGN.md section 5).

   The model predicts the next byte of text from the K bytes before it:
   embedding table wte [V, C], the K embeddings concatenated, hidden layers
   (Linear + bias + GELU), an output Linear [H, V] + bias, and softmax cross
   entropy averaged over the micro-batch. V is the number of distinct bytes
   of the training text: by default our own README.md and the .md files of
   docs/.

       train_mlp [--world 4] [--stage 2] [--dtype fp32|fp16|bf16] [--steps 200] ...
       train_mlp --compare-stages     stages 0-3 one after another: memory and loss
       train_mlp --gradcheck          the hand-written backward against finite differences
       train_mlp --config ds_config.json [flags override its keys]

   Without a GPU the ranks are threads of this process (zero_host_run).
   Build: cc -std=c11 -O2 -I. -o build/train_mlp examples/train_mlp.c -lm -lpthread
   (make run builds and runs it). --help lists every option. */
#define _POSIX_C_SOURCE 200809L /* glob(), for the default text files */
#define ZERO_IMPLEMENTATION
#include "zero.h"

#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char usage[] =
    "usage: train_mlp [options]\n"
    "\n"
    "Trains a character-level MLP language model with ZeRO on host ranks (threads).\n"
    "\n"
    "  --world N            host ranks (default 4)\n"
    "  --stage S            ZeRO stage 0..3 (default 2)\n"
    "  --dtype T            compute dtype fp32 (default), fp16 (dynamic loss scaling) or bf16\n"
    "  --steps N            optimizer steps (default 200)\n"
    "  --mbs N              train_micro_batch_size_per_gpu (default 16)\n"
    "  --gas N              gradient_accumulation_steps (default 1)\n"
    "  --lr X               Adam learning rate (default 3e-3)\n"
    "  --wd X               weight decay, AdamW style; biases are exempt (default 0.01)\n"
    "  --clip X             gradient_clipping (default 1.0; 0 disables)\n"
    "  --bucket N           reduce_bucket_size in elements (default 16384: about one unit per layer)\n"
    "  --seed N             seed of the initial weights and of the data sampling (default 1)\n"
    "  --config FILE        a DeepSpeed ds_config.json; the flags above override its keys\n"
    "  --data FILE[,FILE]   training text, repeatable (default README.md and docs/*.md)\n"
    "  --context K          bytes of context (default 8)\n"
    "  --embd C             embedding width (default 20)\n"
    "  --hidden H           hidden width (default 180)\n"
    "  --layers L           hidden layers, 1..4 (default 4)\n"
    "  --freeze-embedding   train everything but wte (fine-tuning: wte is ZERO_TENSOR_FROZEN)\n"
    "  --print-every N      progress line every N steps (default steps / 10)\n"
    "  --compare-stages     train with stages 0, 1, 2 and 3 in turn; print memory and final loss\n"
    "  --gradcheck          check the backward against central differences in double; no engine\n"
    "  --quiet              no progress lines\n"
    "\n"
    "The loss printed is the mean over the whole global batch (every rank, every micro-batch).\n"
    "The global batch of a step depends only on world x gas x mbs, so runs with different\n"
    "world sizes and the same product train on the same samples.\n";

#define MAX_LAYERS 4                       /* hidden layers */
#define MAX_TENSORS (1 + 2 * (MAX_LAYERS + 1))
#define MAX_FILES 64
#define MAX_WORLD 256

/* ---- deterministic randomness ---- */

/* splitmix64's finaliser: every output bit depends on every input bit, so
   hashing (seed, a, b) gives independent-looking streams without state. */
static uint64_t mix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static uint64_t hash3(uint64_t seed, uint64_t a, uint64_t b) {
    return mix64(mix64(mix64(seed) ^ a) ^ b);
}

/* uniform in [-1, 1) with 24 bits, exact in float */
static float hash_uniform(uint64_t h) {
    return (float)((double)(h >> 40) * (1.0 / 8388608.0) - 1.0);
}

/* ---- training text ---- */

typedef struct corpus {
    unsigned char *tok; /* the text as vocabulary ids */
    size_t n;
    int vocab;
    unsigned char byte_of[256]; /* id -> byte */
} corpus;

static void corpus_free(corpus *c) {
    free(c->tok);
    memset(c, 0, sizeof *c);
}

/* Reads and concatenates the files; ids are the distinct bytes in byte
   order, so the vocabulary and the model's shape follow from the text alone. */
static int corpus_load(corpus *c, const char *const *files, int n_files, char *msg, size_t cap) {
    size_t total = 0, i;
    int f, id_of[256], v = 0;
    memset(c, 0, sizeof *c);
    for (f = 0; f < n_files; f++) {
        FILE *fp = fopen(files[f], "rb");
        long len;
        unsigned char *grown;
        if (!fp) {
            snprintf(msg, cap, "%s: cannot open\nHINT: run from the repository root, or pass --data FILE", files[f]);
            corpus_free(c);
            return 1;
        }
        if (fseek(fp, 0, SEEK_END) != 0 || (len = ftell(fp)) < 0 || fseek(fp, 0, SEEK_SET) != 0) {
            snprintf(msg, cap, "%s: cannot read its size", files[f]);
            fclose(fp);
            corpus_free(c);
            return 1;
        }
        grown = (unsigned char *)realloc(c->tok, total + (size_t)len + 1);
        if (!grown) {
            snprintf(msg, cap, "%s: out of memory", files[f]);
            fclose(fp);
            corpus_free(c);
            return 1;
        }
        c->tok = grown;
        if (fread(c->tok + total, 1, (size_t)len, fp) != (size_t)len) {
            snprintf(msg, cap, "%s: read error", files[f]);
            fclose(fp);
            corpus_free(c);
            return 1;
        }
        fclose(fp);
        total += (size_t)len;
    }
    c->n = total;
    for (i = 0; i < 256; i++) id_of[i] = -1;
    for (i = 0; i < total; i++) id_of[c->tok[i]] = 0;
    for (i = 0; i < 256; i++)
        if (id_of[i] == 0) {
            id_of[i] = v;
            c->byte_of[v++] = (unsigned char)i;
        }
    for (i = 0; i < total; i++) c->tok[i] = (unsigned char)id_of[c->tok[i]];
    c->vocab = v;
    return 0;
}

/* ---- the model ---- */

typedef struct mlp_dims {
    int vocab, context, embd, hidden, layers; /* V, K, C, H, hidden layers L */
} mlp_dims;

/* Tensors in forward order: wte, then W and b of linear layers 1..L+1 (the
   last one is the output layer). Layer l (0 = embedding) is engine group l. */
#define T_WTE 0
static int t_weight(int l) { return 2 * l - 1; }
static int t_bias(int l) { return 2 * l; }
static int n_tensors_of(const mlp_dims *d) { return 1 + 2 * (d->layers + 1); }
static int fan_in(const mlp_dims *d, int l) { return l == 1 ? d->context * d->embd : d->hidden; }
static int fan_out(const mlp_dims *d, int l) { return l == d->layers + 1 ? d->vocab : d->hidden; }

static int64_t tensor_numel(const mlp_dims *d, int t) {
    int l = (t + 1) / 2;
    if (t == T_WTE) return (int64_t)d->vocab * d->embd;
    return t == t_weight(l) ? (int64_t)fan_in(d, l) * fan_out(d, l) : fan_out(d, l);
}

/* wte, h1.weight, h1.bias, ..., out.weight, out.bias */
static const char *tensor_name(const mlp_dims *d, int t, char *buf, size_t cap) {
    int l = (t + 1) / 2;
    if (t == T_WTE) return "wte";
    if (l == d->layers + 1) snprintf(buf, cap, "out.%s", t == t_weight(l) ? "weight" : "bias");
    else snprintf(buf, cap, "h%d.%s", l, t == t_weight(l) ? "weight" : "bias");
    return buf;
}

typedef struct init_spec {
    uint64_t seed;
    mlp_dims d;
} init_spec;

/* Weights as a pure function of (seed, tensor, element), so every world size
   and every layout starts from the same model. Uniform with variance 1/fan_in
   keeps the pre-activations near unit scale; embeddings get variance 1. */
static void mlp_init(void *user, int tensor, int64_t offset, int64_t count, float *out) {
    const init_spec *s = (const init_spec *)user;
    float scale = tensor == T_WTE ? 1.7320508f : sqrtf(3.0f / (float)fan_in(&s->d, (tensor + 1) / 2));
    int64_t i;
    for (i = 0; i < count; i++) out[i] = scale * hash_uniform(hash3(s->seed, (uint64_t)tensor, (uint64_t)(offset + i)));
}

/* Parameters, gradients and activations as float arrays: the model knows
   nothing of the engine, which is what lets --gradcheck run without one. */
typedef struct mlp {
    mlp_dims d;
    int batch, n_tensors;
    int64_t numel[MAX_TENSORS];
    float *param[MAX_TENSORS], *grad[MAX_TENSORS];
    float *act[MAX_LAYERS + 2]; /* act[0]: concatenated embeddings; act[l]: gelu(z[l]) */
    float *z[MAX_LAYERS + 2];   /* pre-activations; z[L+1]: logits */
    float *dbuf[2];             /* backward ping-pong */
    int *ctx, *tgt;             /* the micro-batch: [batch, K] ids and [batch] targets */
} mlp;

static void mlp_free(mlp *m) {
    int i;
    for (i = 0; i < MAX_TENSORS; i++) {
        free(m->param[i]);
        free(m->grad[i]);
    }
    for (i = 0; i < MAX_LAYERS + 2; i++) {
        free(m->act[i]);
        free(m->z[i]);
    }
    free(m->dbuf[0]);
    free(m->dbuf[1]);
    free(m->ctx);
    free(m->tgt);
    memset(m, 0, sizeof *m);
}

static int mlp_alloc(mlp *m, const mlp_dims *d, int batch) {
    int t, l, widest = d->context * d->embd;
    memset(m, 0, sizeof *m);
    m->d = *d;
    m->batch = batch;
    m->n_tensors = n_tensors_of(d);
    if (d->hidden > widest) widest = d->hidden;
    if (d->vocab > widest) widest = d->vocab;
    for (t = 0; t < m->n_tensors; t++) {
        m->numel[t] = tensor_numel(d, t);
        m->param[t] = (float *)calloc((size_t)m->numel[t], sizeof(float));
        m->grad[t] = (float *)calloc((size_t)m->numel[t], sizeof(float));
        if (!m->param[t] || !m->grad[t]) goto oom;
    }
    m->act[0] = (float *)malloc(sizeof(float) * (size_t)batch * (size_t)(d->context * d->embd));
    if (!m->act[0]) goto oom;
    for (l = 1; l <= d->layers + 1; l++) {
        m->z[l] = (float *)malloc(sizeof(float) * (size_t)batch * (size_t)fan_out(d, l));
        m->act[l] = (float *)malloc(sizeof(float) * (size_t)batch * (size_t)fan_out(d, l));
        if (!m->z[l] || !m->act[l]) goto oom;
    }
    m->dbuf[0] = (float *)malloc(sizeof(float) * (size_t)batch * (size_t)widest);
    m->dbuf[1] = (float *)malloc(sizeof(float) * (size_t)batch * (size_t)widest);
    m->ctx = (int *)malloc(sizeof(int) * (size_t)batch * (size_t)d->context);
    m->tgt = (int *)malloc(sizeof(int) * (size_t)batch);
    if (!m->dbuf[0] || !m->dbuf[1] || !m->ctx || !m->tgt) goto oom;
    return 0;
oom:
    mlp_free(m);
    return 1;
}

/* Sample b of the batch is the window at a position hashed from (seed, step,
   slot * batch + b), where slot numbers the (micro-batch, rank) pairs of the
   step: the same global batch for any world and gas with the same product. */
static void mlp_sample(mlp *m, const corpus *c, uint64_t seed, int64_t step, int64_t slot, int batch) {
    int K = m->d.context, b, k;
    for (b = 0; b < batch; b++) {
        uint64_t pos = hash3(seed ^ 0x5EEDDA7Aull, (uint64_t)step, (uint64_t)(slot * batch + b)) % (c->n - (size_t)K);
        for (k = 0; k < K; k++) m->ctx[b * K + k] = c->tok[pos + (uint64_t)k];
        m->tgt[b] = c->tok[pos + (uint64_t)K];
    }
}

/* GELU, tanh form (GPT-2's); gelu_grad is its exact derivative, so the
   gradient check sees no approximation error from the activation. */
#define GELU_A 0.7978845608028654f /* sqrt(2/pi) */
#define GELU_B 0.044715f
static float gelu(float x) { return 0.5f * x * (1.0f + tanhf(GELU_A * (x + GELU_B * x * x * x))); }
static float gelu_grad(float x) {
    float t = tanhf(GELU_A * (x + GELU_B * x * x * x));
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * GELU_A * (1.0f + 3.0f * GELU_B * x * x);
}

static void mlp_embed_fwd(mlp *m, int batch) {
    int K = m->d.context, C = m->d.embd, b, k;
    for (b = 0; b < batch; b++)
        for (k = 0; k < K; k++)
            memcpy(m->act[0] + ((size_t)b * K + k) * C, m->param[T_WTE] + (size_t)m->ctx[b * K + k] * C, sizeof(float) * (size_t)C);
}

/* z[l] = act[l-1] W + b with W stored [in, out]: the inner loop runs along
   a row of W, contiguous, which the compiler vectorises. */
static void mlp_linear_fwd(mlp *m, int l, int batch) {
    int in = fan_in(&m->d, l), out = fan_out(&m->d, l), b, i, o;
    const float *W = m->param[t_weight(l)], *bias = m->param[t_bias(l)];
    for (b = 0; b < batch; b++) {
        const float *x = m->act[l - 1] + (size_t)b * in;
        float *z = m->z[l] + (size_t)b * out;
        memcpy(z, bias, sizeof(float) * (size_t)out);
        for (i = 0; i < in; i++) {
            const float xi = x[i], *w = W + (size_t)i * out;
            for (o = 0; o < out; o++) z[o] += xi * w[o];
        }
        if (l <= m->d.layers) {
            float *a = m->act[l] + (size_t)b * out;
            for (o = 0; o < out; o++) a[o] = gelu(z[o]);
        }
    }
}

/* Mean cross entropy of the logits; dz gets d(loss * seed)/dlogits, so the
   backward starts from the loss scale as fp16 training needs. */
static double mlp_loss(mlp *m, int batch, float seed, float *dz) {
    int V = m->d.vocab, b, v;
    double total = 0;
    for (b = 0; b < batch; b++) {
        const float *z = m->z[m->d.layers + 1] + (size_t)b * V;
        float *d = dz + (size_t)b * V, mx = z[0], sum = 0;
        for (v = 1; v < V; v++) mx = z[v] > mx ? z[v] : mx;
        for (v = 0; v < V; v++) sum += (d[v] = expf(z[v] - mx));
        total += log((double)sum) - (double)(z[m->tgt[b]] - mx);
        for (v = 0; v < V; v++) d[v] = d[v] / sum * seed / (float)batch;
        d[m->tgt[b]] -= seed / (float)batch;
    }
    return total / batch;
}

/* Sum with eight accumulators: the backward's dot products are otherwise
   one long dependent chain (and stay deterministic, unlike -ffast-math). */
static float dot(const float *a, const float *b, int n) {
    float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int i, j;
    for (i = 0; i + 8 <= n; i += 8)
        for (j = 0; j < 8; j++) s[j] += a[i + j] * b[i + j];
    for (; i < n; i++) s[0] += a[i] * b[i];
    return ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
}

/* From dz = dL/dz[l]: the gradients of W and b (overwritten) and, when dx is
   not NULL, dx = dL/dact[l-1] = dz W^T. */
static void mlp_linear_bwd(mlp *m, int l, int batch, const float *dz, float *dx) {
    int in = fan_in(&m->d, l), out = fan_out(&m->d, l), b, i, o;
    const float *W = m->param[t_weight(l)];
    float *gW = m->grad[t_weight(l)], *gb = m->grad[t_bias(l)];
    memset(gW, 0, sizeof(float) * (size_t)in * (size_t)out);
    memset(gb, 0, sizeof(float) * (size_t)out);
    for (b = 0; b < batch; b++) {
        const float *x = m->act[l - 1] + (size_t)b * in, *d = dz + (size_t)b * out;
        for (o = 0; o < out; o++) gb[o] += d[o];
        for (i = 0; i < in; i++) {
            const float xi = x[i];
            float *g = gW + (size_t)i * out;
            for (o = 0; o < out; o++) g[o] += xi * d[o];
        }
        if (dx)
            for (i = 0; i < in; i++) dx[(size_t)b * in + i] = dot(d, W + (size_t)i * out, out);
    }
}

/* dact[l] -> dz[l] in place */
static void mlp_gelu_bwd(mlp *m, int l, int batch, float *d) {
    size_t i, n = (size_t)batch * (size_t)m->d.hidden;
    for (i = 0; i < n; i++) d[i] *= gelu_grad(m->z[l][i]);
}

static void mlp_embed_bwd(mlp *m, int batch, const float *dx) {
    int K = m->d.context, C = m->d.embd, b, k, c;
    float *g = m->grad[T_WTE];
    memset(g, 0, sizeof(float) * (size_t)m->numel[T_WTE]);
    for (b = 0; b < batch; b++)
        for (k = 0; k < K; k++) {
            float *row = g + (size_t)m->ctx[b * K + k] * C;
            const float *d = dx + ((size_t)b * K + k) * C;
            for (c = 0; c < C; c++) row[c] += d[c];
        }
}

/* ---- gradient check (no engine) ---- */

/* The loss again, in double and written independently of the float path:
   the finite differences are taken of this, so they check the float
   forward as well as the backward. p[t] are the parameters in double. */
static double ref_loss(const mlp *m, double *const *p, int batch, double *work) {
    const mlp_dims *d = &m->d;
    int K = d->context, C = d->embd, L = d->layers, b, l, i, o, v;
    double total = 0;
    for (b = 0; b < batch; b++) {
        double *x = work, *y = work + 1024, mx, sum = 0;
        int n = K * C;
        for (i = 0; i < K; i++)
            for (o = 0; o < C; o++) x[i * C + o] = p[T_WTE][m->ctx[b * K + i] * C + o];
        for (l = 1; l <= L + 1; l++) {
            int out = fan_out(d, l);
            for (o = 0; o < out; o++) {
                double s = p[t_bias(l)][o];
                for (i = 0; i < n; i++) s += x[i] * p[t_weight(l)][(size_t)i * out + o];
                if (l <= L) s = 0.5 * s * (1.0 + tanh(0.7978845608028654 * (s + 0.044715 * s * s * s)));
                y[o] = s;
            }
            memcpy(x, y, sizeof(double) * (size_t)out);
            n = out;
        }
        mx = x[0];
        for (v = 1; v < d->vocab; v++) mx = x[v] > mx ? x[v] : mx;
        for (v = 0; v < d->vocab; v++) sum += exp(x[v] - mx);
        total += log(sum) + mx - x[m->tgt[b]];
    }
    return total / batch;
}

/* Analytic gradients (float) against central differences of ref_loss on a
   few random elements of every tensor. Relative error |a - n| / max(|a|,
   |n|, floor): the floor (a small fraction of the tensor's largest gradient)
   keeps elements whose gradient is nearly zero from dominating through float
   rounding. Prints one line per tensor and "N passed, N failed". */
static int gradcheck(const mlp_dims *d, const corpus *text, uint64_t seed) {
    enum { BATCH = 6, PER_TENSOR = 12 };
    const double h = 1e-4, tol = 1e-3;
    mlp m;
    init_spec spec;
    double *p[MAX_TENSORS] = {0}, *work = NULL, loss_d;
    float *dz, *dx;
    int t, l, k, pass = 0, fail = 0, rc = 1;
    double worst = 0;
    char name[32];
    if (d->context * d->embd > 1024 || d->hidden > 1024 || d->vocab > 1024) {
        fprintf(stderr, "train_mlp: --gradcheck needs widths of at most 1024\n");
        return 1;
    }
    if (mlp_alloc(&m, d, BATCH)) {
        fprintf(stderr, "train_mlp: out of memory\n");
        return 1;
    }
    spec.seed = seed;
    spec.d = *d;
    work = (double *)malloc(sizeof(double) * 2048);
    if (!work) goto done;
    for (t = 0; t < m.n_tensors; t++) {
        int64_t i;
        p[t] = (double *)malloc(sizeof(double) * (size_t)m.numel[t]);
        if (!p[t]) goto done;
        if (t == T_WTE || t == t_weight((t + 1) / 2)) mlp_init(&spec, t, 0, m.numel[t], m.param[t]);
        else /* biases start at zero in training; nonzero here so their path is exercised */
            for (i = 0; i < m.numel[t]; i++) m.param[t][i] = 0.1f * hash_uniform(hash3(seed + 7, (uint64_t)t, (uint64_t)i));
        for (i = 0; i < m.numel[t]; i++) p[t][i] = m.param[t][i];
    }
    mlp_sample(&m, text, seed, 1, 0, BATCH);

    /* the float path, as the training loop runs it */
    mlp_embed_fwd(&m, BATCH);
    for (l = 1; l <= d->layers + 1; l++) mlp_linear_fwd(&m, l, BATCH);
    dz = m.dbuf[0];
    dx = m.dbuf[1];
    {
        double loss_f = mlp_loss(&m, BATCH, 1.0f, dz);
        loss_d = ref_loss(&m, p, BATCH, work);
        printf("gradcheck: %d samples, loss float %.9f double %.9f (rel diff %.2e)\n", BATCH, loss_f, loss_d,
               fabs(loss_f - loss_d) / loss_d);
        if (fabs(loss_f - loss_d) > 1e-5 * loss_d) {
            printf("FAIL  forward: float and double losses differ\n");
            fail++;
        } else pass++;
    }
    for (l = d->layers + 1; l >= 1; l--) {
        float *tmp;
        mlp_linear_bwd(&m, l, BATCH, dz, dx);
        if (l > 1) mlp_gelu_bwd(&m, l - 1, BATCH, dx);
        tmp = dz, dz = dx, dx = tmp;
    }
    mlp_embed_bwd(&m, BATCH, dz);

    for (t = 0; t < m.n_tensors; t++) {
        double gmax = 0, tworst = 0;
        int64_t i;
        for (i = 0; i < m.numel[t]; i++) gmax = fmax(gmax, fabs(m.grad[t][i]));
        for (k = 0; k < PER_TENSOR; k++) {
            /* wte: only rows of ids in the batch have a gradient; pick those
               half the time so the check is not all zeros */
            int64_t e = (int64_t)(hash3(seed + 11, (uint64_t)t, (uint64_t)k) % (uint64_t)m.numel[t]);
            double keep, lp, lm, num, ana, err;
            if (t == T_WTE && k % 2 == 0) e = (int64_t)m.ctx[k % (BATCH * d->context)] * d->embd + k % d->embd;
            keep = p[t][e];
            p[t][e] = keep + h;
            lp = ref_loss(&m, p, BATCH, work);
            p[t][e] = keep - h;
            lm = ref_loss(&m, p, BATCH, work);
            p[t][e] = keep;
            num = (lp - lm) / (2 * h);
            ana = m.grad[t][e];
            err = fabs(ana - num) / fmax(fmax(fabs(ana), fabs(num)), fmax(1e-3 * gmax, 1e-12));
            tworst = fmax(tworst, err);
        }
        worst = fmax(worst, tworst);
        if (tworst <= tol) pass++;
        else fail++;
        printf("%s %-12s %8lld elements, %d checked, max rel err %.2e\n", tworst <= tol ? "ok  " : "FAIL",
               tensor_name(d, t, name, sizeof name), (long long)m.numel[t], PER_TENSOR, tworst);
    }
    printf("gradcheck: max rel err %.2e (tolerance %.0e)\n", worst, tol);
    printf("%d passed, %d failed\n", pass, fail);
    rc = fail != 0;
done:
    if (!work) fprintf(stderr, "train_mlp: out of memory\n");
    for (t = 0; t < MAX_TENSORS; t++) free(p[t]);
    free(work);
    mlp_free(&m);
    return rc;
}

/* ---- training through the engine ---- */

typedef struct options {
    int world, stage, steps, mbs, gas, print_every, freeze, compare, check, quiet;
    zero_dtype dtype;
    double lr, wd, clip;
    int64_t bucket;
    uint64_t seed;
    const char *config;
    mlp_dims d;
    /* which flags were given: they override the config file */
    int has_stage, has_dtype, has_lr, has_wd, has_clip, has_mbs, has_gas, has_bucket;
} options;

/* What one training run shares between its rank threads. Ranks write only
   their own slots; rank 0 reads the others' after zero_step, a collective
   every rank has entered by then. */
typedef struct run {
    const options *o;
    const corpus *text;
    const zero_config *cfg;
    const zero_tensor *tensors;
    int n_tensors;
    zero_dtype dtype;
    double (*loss)[MAX_WORLD]; /* [2][world]: by step parity, so a rank already in the
                                  next step never overwrites what rank 0 still reads */
    double *step_loss;         /* [steps]: global mean loss per step (rank 0) */
    zero_step_info last;       /* rank 0 */
    double seconds;            /* rank 0, the training loop only */
    zero_memory_stats *mem;    /* [world] */
    float *weights;            /* final master weights, all tensors back to back (rank 0) */
    char (*err)[1100];         /* [world] */
} run;

static double now_s(void) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* tensor t of the engine (compute dtype) -> m->param[t] */
static void load_param(float *dst, const void *src, int64_t n, zero_dtype dt) {
    int64_t i;
    if (dt == ZERO_DTYPE_FP16)
        for (i = 0; i < n; i++) dst[i] = zero_f16_to_f32(((const zero_f16 *)src)[i]);
    else if (dt == ZERO_DTYPE_BF16)
        for (i = 0; i < n; i++) dst[i] = zero_bf16_to_f32(((const zero_bf16 *)src)[i]);
    else memcpy(dst, src, sizeof(float) * (size_t)n);
}

static void store_grad(void *dst, const float *src, int64_t n, zero_dtype dt) {
    int64_t i;
    if (dt == ZERO_DTYPE_FP16)
        for (i = 0; i < n; i++) ((zero_f16 *)dst)[i] = zero_f32_to_f16(src[i]);
    else if (dt == ZERO_DTYPE_BF16)
        for (i = 0; i < n; i++) ((zero_bf16 *)dst)[i] = zero_f32_to_bf16(src[i]);
    else memcpy(dst, src, sizeof(float) * (size_t)n);
}

/* The tensors of layer l (the engine's group l) */
static int layer_tensors(const mlp_dims *d, int l, int *ts) {
    (void)d;
    if (l == 0) {
        ts[0] = T_WTE;
        return 1;
    }
    ts[0] = t_weight(l);
    ts[1] = t_bias(l);
    return 2;
}

/* Stage 3 gathers layer l here; stages 0-2 make these calls no-ops. */
static zero_result fetch_layer(zero_engine *e, mlp *m, int l, zero_dtype dt) {
    int ts[2], n = layer_tensors(&m->d, l, ts), i;
    zero_result r;
    for (i = 0; i < n; i++) {
        const void *p;
        if ((r = zero_fetch(e, ts[i])) != ZERO_OK) return r;
        if (!(p = zero_param(e, ts[i]))) return zero_engine_error(e)->code ? zero_engine_error(e)->code : ZERO_ERR_STATE;
        load_param(m->param[ts[i]], p, m->numel[ts[i]], dt);
    }
    return ZERO_OK;
}

static zero_result release_layer(zero_engine *e, const mlp *m, int l) {
    int ts[2], n = layer_tensors(&m->d, l, ts), i;
    zero_result r;
    for (i = 0; i < n; i++)
        if ((r = zero_release(e, ts[i])) != ZERO_OK) return r;
    return ZERO_OK;
}

/* Hands layer l's gradients to the engine in backward order (bias, then
   weight: the reverse of registration), each as soon as it is complete. */
static zero_result give_grads(zero_engine *e, const mlp *m, int l, zero_dtype dt) {
    int ts[2], n = layer_tensors(&m->d, l, ts), i;
    zero_result r;
    for (i = n - 1; i >= 0; i--) {
        void *g = zero_grad(e, ts[i]);
        if (!g) return zero_engine_error(e)->code ? zero_engine_error(e)->code : ZERO_ERR_STATE;
        store_grad(g, m->grad[ts[i]], m->numel[ts[i]], dt);
        if ((r = zero_grad_ready(e, ts[i])) != ZERO_OK) return r;
    }
    return ZERO_OK;
}

/* One micro-batch: forward, loss, backward; returns the mean loss in *loss. */
static zero_result micro_batch(zero_engine *e, mlp *m, int batch, zero_dtype dt, int frozen_wte, double *loss) {
    int L = m->d.layers, l;
    float *dz = m->dbuf[0], *dx = m->dbuf[1], *tmp;
    zero_result r;
    for (l = 0; l <= L + 1; l++) {
        if ((r = fetch_layer(e, m, l, dt)) != ZERO_OK) return r;
        if (l == 0) mlp_embed_fwd(m, batch);
        else mlp_linear_fwd(m, l, batch);
        if ((r = release_layer(e, m, l)) != ZERO_OK) return r;
    }
    *loss = mlp_loss(m, batch, (float)zero_loss_scale(e), dz);
    for (l = L + 1; l >= 1; l--) {
        if ((r = fetch_layer(e, m, l, dt)) != ZERO_OK) return r;
        mlp_linear_bwd(m, l, batch, dz, l == 1 && frozen_wte ? NULL : dx);
        if ((r = release_layer(e, m, l)) != ZERO_OK) return r;
        if ((r = give_grads(e, m, l, dt)) != ZERO_OK) return r;
        if (l > 1) mlp_gelu_bwd(m, l - 1, batch, dx);
        tmp = dz, dz = dx, dx = tmp;
    }
    if (!frozen_wte) { /* the embedding's backward reads no parameters: no fetch */
        mlp_embed_bwd(m, batch, dz);
        if ((r = give_grads(e, m, 0, dt)) != ZERO_OK) return r;
    }
    return ZERO_OK;
}

static zero_result rank_main(const zero_backend *be, void *arg) {
    run *R = (run *)arg;
    const options *o = R->o;
    int rank = be->rank, world = be->world, mbs = (int)R->cfg->train_micro_batch_size_per_gpu;
    int gas = (int)R->cfg->gradient_accumulation_steps, step, micro, t;
    zero_engine *e = NULL;
    zero_error err;
    zero_result r = ZERO_OK;
    mlp m;
    float *scratch = NULL;
    double t0 = 0, window = 0; /* rank 0: loss summed since the last progress line */
    int n_window = 0;
    const char *where = "zero_engine_create";

    memset(&err, 0, sizeof err);
    if (mlp_alloc(&m, &o->d, mbs)) {
        snprintf(R->err[rank], sizeof R->err[rank], "rank %d: out of memory for the model", rank);
        return ZERO_ERR_OUT_OF_MEMORY;
    }
    if ((r = zero_engine_create(&e, R->cfg, R->tensors, R->n_tensors, be, &err)) != ZERO_OK) {
        snprintf(R->err[rank], sizeof R->err[rank], "rank %d: %s: %s", rank, where, err.msg);
        mlp_free(&m);
        return r;
    }
    t0 = now_s();
    for (step = 1; step <= o->steps; step++) {
        zero_step_info info;
        double sum = 0;
        for (micro = 0; micro < gas; micro++) {
            double loss;
            mlp_sample(&m, R->text, o->seed, step, (int64_t)micro * world + rank, mbs);
            where = "micro-batch";
            if ((r = micro_batch(e, &m, mbs, R->dtype, o->freeze, &loss)) != ZERO_OK) goto fail;
            sum += loss;
        }
        R->loss[step & 1][rank] = sum / gas;
        where = "zero_step";
        if ((r = zero_step(e, &info)) != ZERO_OK) goto fail;
        if (rank == 0) {
            double mean = 0;
            int i;
            for (i = 0; i < world; i++) mean += R->loss[step & 1][i];
            mean /= world;
            R->step_loss[step - 1] = mean;
            R->last = info;
            window += mean, n_window++;
            if (!o->quiet && !o->compare && (step == 1 || step == o->steps || step % o->print_every == 0)) {
                printf("step %5d/%d  loss %.4f (mean of %3d: %.4f)  lr %.2e  grad norm %7.4f  loss scale %-6g  "
                       "skipped %lld%s\n",
                       step, o->steps, mean, n_window, window / n_window, info.lr, info.grad_norm, info.loss_scale,
                       (long long)info.skipped_steps, info.applied ? "" : "  (this step: inf/nan gradients)");
                window = 0, n_window = 0;
            }
        }
    }
    if (rank == 0) R->seconds = now_s() - t0;

    where = "zero_memory_report";
    if ((r = zero_memory_report(e, &R->mem[rank])) != ZERO_OK) goto fail;
    /* zero_read_state is a collective: every rank asks, rank 0 keeps the answer */
    {
        int64_t most = 0, at = 0;
        for (t = 0; t < R->n_tensors; t++) most = R->tensors[t].numel > most ? R->tensors[t].numel : most;
        if (rank != 0 && !(scratch = (float *)malloc(sizeof(float) * (size_t)most))) {
            r = ZERO_ERR_OUT_OF_MEMORY;
            goto fail;
        }
        where = "zero_read_state";
        for (t = 0; t < R->n_tensors; t++) {
            float *out = rank == 0 ? R->weights + at : scratch;
            if ((r = zero_read_state(e, t, ZERO_STATE_MASTER, 0, R->tensors[t].numel, out)) != ZERO_OK) goto fail;
            at += R->tensors[t].numel;
        }
    }
    free(scratch);
    zero_engine_destroy(e);
    mlp_free(&m);
    return ZERO_OK;
fail:
    snprintf(R->err[rank], sizeof R->err[rank], "rank %d: %s: %s", rank, where,
             zero_engine_error(e)->code != ZERO_OK ? zero_engine_error(e)->msg : zero_result_string(r));
    free(scratch);
    zero_engine_destroy(e);
    mlp_free(&m);
    return r;
}

/* ---- configuration ---- */

/* The example's own defaults, then the config file over them, then the
   flags: a config file changes only the keys it names. */
static zero_result make_config(const options *o, int stage, zero_config *cfg, zero_error *err) {
    zero_zero_config *z = &cfg->zero_optimization;
    *cfg = zero_config_default();
    cfg->optimizer.lr = 3e-3;
    cfg->optimizer.weight_decay = 0.01;
    cfg->gradient_clipping = 1.0;
    z->stage = 2;
    /* small buckets: units are about a layer, so the stages differ in memory
       even for this small model */
    z->reduce_bucket_size = 16384;
    z->allgather_bucket_size = 16384;
    /* stage 3: biases stay gathered, as DeepSpeed keeps small tensors (its
       default 1e5 would keep this whole model); the weights are sharded and
       at most two layers are gathered at once */
    z->stage3_param_persistence_threshold = 1000;
    z->stage3_prefetch_bucket_size = 16384;
    z->stage3_max_live_parameters = 16384;
    if (o->config) {
        zero_result r = zero_config_load(cfg, o->config, err);
        if (r != ZERO_OK) return r;
    }
    /* "auto" is the program's to answer (HF Transformers configs are full of
       it): the example's settings, as the HF Trainer fills its own */
    if (cfg->optimizer.lr == ZERO_AUTO) cfg->optimizer.lr = 3e-3;
    if (cfg->optimizer.beta1 == ZERO_AUTO) cfg->optimizer.beta1 = 0.9;
    if (cfg->optimizer.beta2 == ZERO_AUTO) cfg->optimizer.beta2 = 0.999;
    if (cfg->optimizer.eps == ZERO_AUTO) cfg->optimizer.eps = 1e-8;
    if (cfg->optimizer.weight_decay == ZERO_AUTO) cfg->optimizer.weight_decay = 0.01;
    if (cfg->gradient_clipping == ZERO_AUTO) cfg->gradient_clipping = 1.0;
    if (cfg->fp16.enabled == ZERO_AUTO) cfg->fp16.enabled = o->has_dtype && o->dtype == ZERO_DTYPE_FP16;
    if (cfg->bf16.enabled == ZERO_AUTO) cfg->bf16.enabled = o->has_dtype && o->dtype == ZERO_DTYPE_BF16;
    if (cfg->scheduler.warmup_num_steps == ZERO_AUTO) cfg->scheduler.warmup_num_steps = o->steps / 10;
    if (cfg->scheduler.total_num_steps == ZERO_AUTO) cfg->scheduler.total_num_steps = o->steps;
    if (cfg->train_batch_size == ZERO_AUTO) cfg->train_batch_size = ZERO_UNSET;
    if (cfg->gradient_accumulation_steps == ZERO_AUTO) cfg->gradient_accumulation_steps = 1;
    if (cfg->train_micro_batch_size_per_gpu == ZERO_AUTO) cfg->train_micro_batch_size_per_gpu = ZERO_UNSET;
    cfg->hidden_size = o->d.hidden; /* "auto" bucket sizes, by the HF rule */
    if (cfg->train_batch_size == ZERO_UNSET && cfg->train_micro_batch_size_per_gpu == ZERO_UNSET)
        cfg->train_micro_batch_size_per_gpu = 16;
    if (o->has_mbs || o->has_gas) cfg->train_batch_size = ZERO_UNSET; /* derived again from the flags */
    if (o->has_mbs) cfg->train_micro_batch_size_per_gpu = o->mbs;
    if (o->has_gas) cfg->gradient_accumulation_steps = o->gas;
    if (o->has_lr) cfg->optimizer.lr = o->lr;
    if (o->has_wd) cfg->optimizer.weight_decay = o->wd;
    if (o->has_clip) cfg->gradient_clipping = o->clip;
    if (o->has_bucket)
        z->reduce_bucket_size = z->allgather_bucket_size = z->stage3_prefetch_bucket_size =
            z->stage3_max_live_parameters = o->bucket;
    if (o->has_stage) z->stage = o->stage;
    if (stage >= 0) z->stage = stage;
    if (o->has_dtype) {
        cfg->fp16.enabled = o->dtype == ZERO_DTYPE_FP16;
        cfg->bf16.enabled = o->dtype == ZERO_DTYPE_BF16;
    }
    return zero_config_resolve(cfg, o->world, err);
}

static zero_dtype compute_dtype(const zero_config *cfg) {
    return cfg->fp16.enabled == 1 ? ZERO_DTYPE_FP16 : cfg->bf16.enabled == 1 ? ZERO_DTYPE_BF16 : ZERO_DTYPE_FP32;
}

/* ---- one training run ---- */

typedef struct result {
    double first_loss, last_loss; /* of step 1 and of the last step */
    double head_loss, tail_loss;  /* means of the first and of the last 10 steps */
    double seconds;
    zero_step_info last;
    zero_memory_stats mem0;
    int64_t tokens_per_step;
    float *weights;
    int64_t n_weights;
} result;

static int train(const options *o, const corpus *text, int stage, int verbose, result *res) {
    zero_config cfg;
    zero_error err;
    zero_tensor tensors[MAX_TENSORS];
    char names[MAX_TENSORS][32];
    init_spec spec;
    run R;
    int t, nt = n_tensors_of(&o->d), rc = 1, i;
    zero_result r;
    int64_t total = 0;

    memset(res, 0, sizeof *res);
    memset(&R, 0, sizeof R);
    memset(&err, 0, sizeof err);
    if ((r = make_config(o, stage, &cfg, &err)) != ZERO_OK) {
        fprintf(stderr, "train_mlp: %s\n", err.msg);
        return 1;
    }
    spec.seed = o->seed;
    spec.d = o->d;
    memset(tensors, 0, sizeof tensors);
    for (t = 0; t < nt; t++) {
        int l = (t + 1) / 2;
        zero_tensor *x = &tensors[t];
        x->name = tensor_name(&o->d, t, names[t], sizeof names[t]);
        x->numel = tensor_numel(&o->d, t);
        x->group = l;
        if (t == T_WTE) {
            x->ndim = 2, x->shape[0] = o->d.vocab, x->shape[1] = o->d.embd;
            x->flags = o->freeze ? ZERO_TENSOR_FROZEN : 0;
        } else if (t == t_weight(l)) {
            x->ndim = 2, x->shape[0] = fan_in(&o->d, l), x->shape[1] = fan_out(&o->d, l);
        } else {
            x->ndim = 1, x->shape[0] = x->numel;
            x->flags = ZERO_TENSOR_NO_DECAY;
        }
        if (t == T_WTE || t == t_weight(l)) { /* biases: NULL init = zeros */
            x->init = mlp_init;
            x->init_user = &spec;
        }
        total += x->numel;
    }

    R.o = o;
    R.text = text;
    R.cfg = &cfg;
    R.tensors = tensors;
    R.n_tensors = nt;
    R.dtype = compute_dtype(&cfg);
    R.loss = (double(*)[MAX_WORLD])calloc(2, sizeof *R.loss);
    R.step_loss = (double *)calloc((size_t)o->steps, sizeof(double));
    R.mem = (zero_memory_stats *)calloc((size_t)o->world, sizeof *R.mem);
    R.weights = (float *)calloc((size_t)total, sizeof(float));
    R.err = (char(*)[1100])calloc((size_t)o->world, sizeof *R.err);
    if (!R.loss || !R.step_loss || !R.mem || !R.weights || !R.err) {
        fprintf(stderr, "train_mlp: out of memory\n");
        goto done;
    }
    if (verbose) {
        char what[32];
        if (o->compare) snprintf(what, sizeof what, "ZeRO stages 0 to 3 in turn");
        else snprintf(what, sizeof what, "ZeRO stage %d", cfg.zero_optimization.stage);
        printf("train_mlp: %d host ranks, %s, %s, %lld parameters in %d tensors%s\n", o->world, what,
               zero_dtype_name(R.dtype), (long long)total, nt, o->freeze ? " (wte frozen)" : "");
        printf("batch: %lld per micro-batch x %lld micro-batches x %d ranks = %lld samples per step; "
               "Adam lr %g, weight decay %g, clip %g, bucket %lld\n",
               (long long)cfg.train_micro_batch_size_per_gpu, (long long)cfg.gradient_accumulation_steps, o->world,
               (long long)cfg.train_batch_size, cfg.optimizer.lr, cfg.optimizer.weight_decay, cfg.gradient_clipping,
               (long long)cfg.zero_optimization.reduce_bucket_size);
    }
    if ((r = zero_host_run(o->world, rank_main, &R, &err)) != ZERO_OK) {
        int shown = 0;
        for (i = 0; i < o->world; i++)
            if (R.err[i][0]) {
                fprintf(stderr, "train_mlp: %s\n", R.err[i]);
                shown = 1;
                break; /* the first; the others are usually its echo */
            }
        if (!shown) fprintf(stderr, "train_mlp: %s\n", err.msg[0] ? err.msg : zero_result_string(r));
        goto done;
    }
    res->first_loss = R.step_loss[0];
    res->last_loss = R.step_loss[o->steps - 1];
    for (i = 0; i < o->steps && i < 10; i++) {
        res->head_loss += R.step_loss[i] / (o->steps < 10 ? o->steps : 10);
        res->tail_loss += R.step_loss[o->steps - 1 - i] / (o->steps < 10 ? o->steps : 10);
    }
    res->seconds = R.seconds;
    res->last = R.last;
    res->mem0 = R.mem[0];
    res->tokens_per_step = cfg.train_batch_size;
    res->weights = R.weights;
    res->n_weights = total;
    R.weights = NULL;
    for (i = 1; i < o->world; i++)
        if (memcmp(R.mem[i].planned_total, R.mem[0].planned_total, sizeof R.mem[0].planned_total) != 0)
            printf("note: rank %d plans a different total than rank 0\n", i);
    rc = 0;
done:
    free(R.loss);
    free(R.step_loss);
    free(R.mem);
    free(R.weights);
    free(R.err);
    return rc;
}

/* ---- reports ---- */

static size_t category_bytes(const zero_memory_stats *s, int c) {
    size_t sum = 0;
    int k;
    for (k = 0; k < ZERO_MEM_KIND_COUNT; k++) sum += s->planned[c][k];
    return sum;
}

static size_t total_bytes(const zero_memory_stats *s) {
    size_t sum = 0;
    int k;
    for (k = 0; k < ZERO_MEM_KIND_COUNT; k++) sum += s->planned_total[k];
    return sum;
}

static int print_memory(const zero_memory_stats *s) {
    char small[4096], *buf = small;
    size_t need = zero_memory_stats_format(s, small, sizeof small);
    if (need >= sizeof small) {
        if (!(buf = (char *)malloc(need + 1))) return 1;
        zero_memory_stats_format(s, buf, need + 1);
    }
    fputs(buf, stdout);
    if (need && buf[need - 1] != '\n') putchar('\n');
    if (buf != small) free(buf);
    return 0;
}

static int train_one(const options *o, const corpus *text) {
    result res;
    if (train(o, text, -1, 1, &res)) return 1;
    printf("loss: step 1 %.4f, step %d %.4f; mean of the first 10 steps %.4f, of the last 10 %.4f\n", res.first_loss,
           o->steps, res.last_loss, res.head_loss, res.tail_loss);
    printf("speed: %.1f steps/s, %.0f tokens/s (%lld predicted bytes per step), %.2f s for %d steps\n",
           o->steps / res.seconds, (double)o->steps * (double)res.tokens_per_step / res.seconds,
           (long long)res.tokens_per_step, res.seconds, o->steps);
    if (res.mem0.stage == 3)
        printf("stage 3, last step: %lld fetches of sharded tensors, %lld found their unit gathered, %lld unit gathers\n",
               (long long)res.last.fetches, (long long)res.last.fetch_hits, (long long)res.last.units_gathered);
    printf("memory of rank 0 of %d:\n", o->world);
    print_memory(&res.mem0);
    free(res.weights);
    return 0;
}

static int compare_stages(const options *o, const corpus *text) {
    static const char *rows[ZERO_MEM_CATEGORY_COUNT] = {"parameters", "gather pool (st. 3)", "gradients",
                                                        "gradient accumulation", "fp32 master weights",
                                                        "Adam moments", "scratch"};
    result res[4];
    int s, c, k, ref, rc = 1, decreasing = 1, agree = 1;
    double unit, worst_loss = 0, worst_w = 0, wmax = 0;
    const char *uname;
    int64_t i;
    memset(res, 0, sizeof res);
    for (s = 0; s < 4; s++) {
        if (train(o, text, s, s == 0, &res[s])) goto done;
        printf("stage %d: loss %.4f -> %.4f (means of the first and last 10 steps), %.2f s, %.1f steps/s, %lld skipped\n",
               s, res[s].head_loss, res[s].tail_loss, res[s].seconds, o->steps / res[s].seconds,
               (long long)res[s].last.skipped_steps);
    }
    unit = total_bytes(&res[0].mem0) >= 10.0 * 1048576 ? 1048576.0 : 1024.0;
    uname = unit > 1024 ? "MiB" : "KiB";
    printf("\nmemory of one rank of %d (%s), %s, %d steps\n", o->world, uname, zero_dtype_name(res[0].mem0.dtype),
           o->steps);
    printf("%-24s %12s %12s %12s %12s\n", "", "stage 0", "stage 1", "stage 2", "stage 3");
    for (c = 0; c < ZERO_MEM_CATEGORY_COUNT; c++) {
        printf("%-24s", rows[c]);
        for (s = 0; s < 4; s++) printf(" %12.2f", category_bytes(&res[s].mem0, c) / unit);
        printf("\n");
    }
    printf("%-24s", "total");
    for (s = 0; s < 4; s++) printf(" %12.2f", total_bytes(&res[s].mem0) / unit);
    printf("\n%-24s", "allocated by backend");
    for (s = 0; s < 4; s++) {
        size_t a = 0;
        for (k = 0; k < ZERO_MEM_KIND_COUNT; k++) a += res[s].mem0.allocated[k];
        printf(" %12.2f", a / unit);
    }
    for (k = 1; k < ZERO_MEM_KIND_COUNT; k++) { /* offload puts categories in host memory */
        int any = 0;
        for (s = 0; s < 4; s++) any |= res[s].mem0.planned_total[k] != 0;
        if (!any) continue;
        printf("\n%-24s", k == ZERO_MEM_PINNED ? "  of which pinned host" : "  of which host");
        for (s = 0; s < 4; s++) printf(" %12.2f", res[s].mem0.planned_total[k] / unit);
    }
    printf("\n%-24s", "unit gathers, last step");
    for (s = 0; s < 4; s++) printf(" %12lld", (long long)res[s].last.units_gathered);
    printf("\n%-24s", "final loss");
    for (s = 0; s < 4; s++) printf(" %12.6f", res[s].last_loss);
    /* fp16 on stage 0 follows FP16_Optimizer's loss scaler (no hysteresis)
       and stages 1-3 ZeRO's, as in DeepSpeed: when they skipped different
       steps, stage 0 is a different run, so stages 1-3 are held to stage 1 */
    ref = res[0].mem0.dtype == ZERO_DTYPE_FP16 && res[0].last.skipped_steps != res[1].last.skipped_steps ? 1 : 0;
    printf("\n%-24s", ref ? "max |w - w(stage 1)|" : "max |w - w(stage 0)|");
    for (i = 0; i < res[ref].n_weights; i++) wmax = fmax(wmax, fabs(res[ref].weights[i]));
    for (s = 0; s < 4; s++) {
        double d = 0;
        for (i = 0; s >= ref && i < res[ref].n_weights; i++)
            d = fmax(d, fabs((double)res[s].weights[i] - res[ref].weights[i]));
        if (s >= ref) worst_w = fmax(worst_w, d);
        if (s >= ref) printf(" %12.3g", d);
        else printf(" %12s", "-");
    }
    printf("\n");
    for (s = 1; s < 4; s++) {
        if (total_bytes(&res[s].mem0) >= total_bytes(&res[s - 1].mem0)) decreasing = 0;
        if (s > ref) worst_loss = fmax(worst_loss, fabs(res[s].last_loss - res[ref].last_loss) / res[ref].last_loss);
    }
    agree = worst_loss <= 1e-3;
    printf("check: totals decrease 0 > 1 > 2 > 3: %s\n",
           decreasing ? "ok"
           : o->world == 1 ? "NO (one rank has nothing to share)"
                           : "NO for this config: stages 2-3 keep an fp32 accumulator of the rank's shard and two gradient\n"
                             "       buffers the size of the largest tensor, which few ranks or one dominant tensor do not repay");
    if (ref)
        printf("note: stage 0 skipped %lld steps for fp16 overflow, stages 1-3 %lld: stage 0 uses FP16_Optimizer's loss\n"
               "      scaler (no hysteresis) as DeepSpeed does, so its run differs and stages 1-3 are compared to stage 1\n",
               (long long)res[0].last.skipped_steps, (long long)res[1].last.skipped_steps);
    printf("check: final losses agree: max rel diff %.2e (weights: max abs diff %.2e, max |w| %.3g): %s\n", worst_loss,
           worst_w, wmax, agree ? "ok" : "NO");
    rc = decreasing && agree ? 0 : 1;
done:
    for (s = 0; s < 4; s++) free(res[s].weights);
    return rc;
}

/* ---- command line ---- */

static int parse_int(const char *s, long lo, long hi, long *out) {
    char *end;
    long v;
    if (!s) return 1;
    v = strtol(s, &end, 10);
    if (end == s || *end || v < lo || v > hi) return 1;
    *out = v;
    return 0;
}

static int parse_double(const char *s, double *out) {
    char *end;
    if (!s) return 1;
    *out = strtod(s, &end);
    return end == s || *end || !isfinite(*out) || *out < 0;
}

/* The default text: README.md and the .md files of docs/, our own prose. */
static int default_files(glob_t *g, const char **files, int *n) {
    size_t i;
    files[(*n)++] = "README.md";
    if (glob("docs/*.md", 0, NULL, g) == 0)
        for (i = 0; i < g->gl_pathc && *n < MAX_FILES; i++) files[(*n)++] = g->gl_pathv[i];
    return 0;
}

int main(int argc, char **argv) {
    options o;
    const char *files[MAX_FILES];
    char *lists[MAX_FILES];
    int n_files = 0, n_lists = 0, i, rc = 1, have_glob = 0;
    glob_t g;
    corpus text;
    char msg[512];

    setvbuf(stdout, NULL, _IOLBF, 0); /* progress lines as they happen, also through a pipe */
    memset(&o, 0, sizeof o);
    memset(&text, 0, sizeof text);
    memset(&g, 0, sizeof g);
    o.d.context = 8;
    o.d.embd = 20;
    o.d.hidden = 180;
    o.d.layers = 4;
    o.seed = 1;
    o.world = 4;
    o.steps = 200;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long n = 0;
        int bad = 0, used = 1;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            rc = 0;
            goto done;
        } else if (!strcmp(a, "--gradcheck")) o.check = 1, used = 0;
        else if (!strcmp(a, "--seed")) bad = parse_int(v, 0, 2147483647L, &n), o.seed = (uint64_t)n;
        else if (!strcmp(a, "--context")) bad = parse_int(v, 1, 64, &n), o.d.context = (int)n;
        else if (!strcmp(a, "--embd")) bad = parse_int(v, 1, 1024, &n), o.d.embd = (int)n;
        else if (!strcmp(a, "--hidden")) bad = parse_int(v, 1, 4096, &n), o.d.hidden = (int)n;
        else if (!strcmp(a, "--layers")) bad = parse_int(v, 1, MAX_LAYERS, &n), o.d.layers = (int)n;
        else if (!strcmp(a, "--data")) {
            /* FILE[,FILE...]; repeatable */
            char *copy, *tok;
            if (!v || n_lists == MAX_FILES || !(copy = (char *)malloc(strlen(v) + 1))) bad = 1;
            else {
                strcpy(copy, v);
                lists[n_lists++] = copy;
                for (tok = strtok(copy, ","); tok && n_files < MAX_FILES; tok = strtok(NULL, ","))
                    files[n_files++] = tok;
            }
        }
        else if (!strcmp(a, "--world")) bad = parse_int(v, 1, MAX_WORLD, &n), o.world = (int)n;
        else if (!strcmp(a, "--stage")) bad = parse_int(v, 0, 3, &n), o.stage = (int)n, o.has_stage = 1;
        else if (!strcmp(a, "--steps")) bad = parse_int(v, 1, 100000000L, &n), o.steps = (int)n;
        else if (!strcmp(a, "--mbs")) bad = parse_int(v, 1, 1 << 20, &n), o.mbs = (int)n, o.has_mbs = 1;
        else if (!strcmp(a, "--gas")) bad = parse_int(v, 1, 1 << 20, &n), o.gas = (int)n, o.has_gas = 1;
        else if (!strcmp(a, "--bucket")) bad = parse_int(v, 1, 2147483647L, &n), o.bucket = n, o.has_bucket = 1;
        else if (!strcmp(a, "--print-every")) bad = parse_int(v, 1, 100000000L, &n), o.print_every = (int)n;
        else if (!strcmp(a, "--lr")) bad = parse_double(v, &o.lr), o.has_lr = 1;
        else if (!strcmp(a, "--wd")) bad = parse_double(v, &o.wd), o.has_wd = 1;
        else if (!strcmp(a, "--clip")) bad = parse_double(v, &o.clip), o.has_clip = 1;
        else if (!strcmp(a, "--config")) bad = !v, o.config = v;
        else if (!strcmp(a, "--dtype")) {
            o.has_dtype = 1;
            if (v && !strcmp(v, "fp32")) o.dtype = ZERO_DTYPE_FP32;
            else if (v && !strcmp(v, "fp16")) o.dtype = ZERO_DTYPE_FP16;
            else if (v && !strcmp(v, "bf16")) o.dtype = ZERO_DTYPE_BF16;
            else bad = 1;
        } else if (!strcmp(a, "--freeze-embedding")) o.freeze = 1, used = 0;
        else if (!strcmp(a, "--compare-stages")) o.compare = 1, used = 0;
        else if (!strcmp(a, "--quiet")) o.quiet = 1, used = 0;
        else {
            fprintf(stderr, "train_mlp: unknown option %s (--help lists them)\n", a);
            goto done;
        }
        if (bad) {
            fprintf(stderr, "train_mlp: %s needs %s (got %s)\n", a,
                     !strcmp(a, "--dtype") ? "fp32, fp16 or bf16" : "a valid value", v ? v : "nothing");
            goto done;
        }
        i += used;
    }
    if (n_files == 0) {
        have_glob = 1;
        default_files(&g, files, &n_files);
    }
    if (corpus_load(&text, files, n_files, msg, sizeof msg)) {
        fprintf(stderr, "train_mlp: %s\n", msg);
        goto done;
    }
    if (text.n <= (size_t)o.d.context) {
        fprintf(stderr, "train_mlp: the text has %zu bytes; it needs more than --context %d\n", text.n, o.d.context);
        goto done;
    }
    o.d.vocab = text.vocab;
    printf("data: %d files, %zu bytes, %d distinct bytes (the vocabulary)\n", n_files, text.n, text.vocab);
    if (o.check) {
        rc = gradcheck(&o.d, &text, o.seed);
        goto done;
    }
    if (!o.print_every) o.print_every = o.steps >= 10 ? o.steps / 10 : 1;
    rc = o.compare ? compare_stages(&o, &text) : train_one(&o, &text);
done:
    corpus_free(&text);
    if (have_glob) globfree(&g);
    for (i = 0; i < n_lists; i++) free(lists[i]);
    return rc;
}
