/* train_mlp - a small character-level language model trained through zero's
   engine: the training loop a C program with hand-written forward and
   backward passes writes around zero.

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
       train_mlp --steps 100 --save ckpt        then: train_mlp --steps 200 --resume ckpt

   Here the ranks are threads of this process (zero_host_run, no GPU needed);
   examples/train_mlp.cu trains the same model on GPUs, one process per GPU.
   What both share (flags, text, shapes, initial weights, configuration,
   reports) is in examples/train_mlp_common.h.
   Build: cc -std=c11 -O2 -I. -o build/train_mlp examples/train_mlp.c -lm -lpthread
   (make run builds and runs it). --help lists every option. */
#define _POSIX_C_SOURCE 200809L /* glob(), for the default text files */
#define ZERO_IMPLEMENTATION
#include "zero.h"
#include "train_mlp_common.h"

static void usage(void) {
    printf("usage: train_mlp [options]\n"
           "\n"
           "Trains a character-level MLP language model with ZeRO on host ranks (threads).\n"
           "\n"
           "  --world N            host ranks (default 4)\n"
           "%s"
           "  --save DIR           after the last step, zero_save into DIR (the model, Adam, the data position)\n"
           "  --resume DIR         zero_load DIR's latest checkpoint first and go on from its data position\n"
           "                       up to --steps (its seed's data order: --seed then sets nothing)\n"
           "  --gradcheck          check the backward against central differences in double; no engine\n"
           "  --quiet              no progress lines\n"
           "\n%s",
           train_mlp_options, train_mlp_batch_note);
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

/* The micro-batch's samples (train_mlp_common.h's sample_pos). */
static void mlp_sample(mlp *m, const corpus *c, uint64_t seed, int64_t step, int64_t slot, int batch) {
    int K = m->d.context, b, k;
    for (b = 0; b < batch; b++) {
        uint64_t pos = sample_pos(seed, step, slot * batch + b, c->n, K);
        for (k = 0; k < K; k++) m->ctx[b * K + k] = c->tok[pos + (uint64_t)k];
        m->tgt[b] = c->tok[pos + (uint64_t)K];
    }
}

/* GELU (train_mlp_common.h's constants); gelu_grad is its exact derivative,
   so the gradient check sees no approximation error from the activation. */
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

/* What one training run shares between its rank threads. Ranks write only
   their own slots; rank 0 reads the others' after zero_host_run returns. */
typedef struct run {
    const options *o;
    const corpus *text;
    const zero_config *cfg;
    const zero_tensor *tensors;
    int n_tensors;
    zero_dtype dtype;
    double *step_loss;         /* [steps]: global mean loss per step (rank 0) */
    int first_step;            /* the first step trained (after --resume: the checkpoint's next) */
    zero_step_info last;       /* rank 0 */
    double seconds;            /* rank 0, the training loop only */
    zero_memory_stats *mem;    /* [world] */
    float *weights;            /* final master weights, all tensors back to back (rank 0) */
    char (*err)[1100];         /* [world] */
} run;

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

/* Stage 3 gathers layer l here; stages 0-2 make these calls no-ops. */
static zero_result fetch_layer(zero_engine *e, mlp *m, int l, zero_dtype dt) {
    int ts[2], n = layer_tensors(l, ts), i;
    zero_result r;
    for (i = 0; i < n; i++) {
        const void *p;
        if ((r = zero_fetch(e, ts[i])) != ZERO_OK) return r;
        if (!(p = zero_param(e, ts[i]))) return zero_engine_error(e)->code ? zero_engine_error(e)->code : ZERO_ERR_STATE;
        load_param(m->param[ts[i]], p, m->numel[ts[i]], dt);
    }
    return ZERO_OK;
}

static zero_result release_layer(zero_engine *e, int l) {
    int ts[2], n = layer_tensors(l, ts), i;
    zero_result r;
    for (i = 0; i < n; i++)
        if ((r = zero_release(e, ts[i])) != ZERO_OK) return r;
    return ZERO_OK;
}

/* Hands layer l's gradients to the engine in backward order (bias, then
   weight: the reverse of registration), each as soon as it is complete. */
static zero_result give_grads(zero_engine *e, const mlp *m, int l, zero_dtype dt) {
    int ts[2], n = layer_tensors(l, ts), i;
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
        if ((r = release_layer(e, l)) != ZERO_OK) return r;
    }
    *loss = mlp_loss(m, batch, (float)zero_loss_scale(e), dz);
    for (l = L + 1; l >= 1; l--) {
        if ((r = fetch_layer(e, m, l, dt)) != ZERO_OK) return r;
        mlp_linear_bwd(m, l, batch, dz, l == 1 && frozen_wte ? NULL : dx);
        if ((r = release_layer(e, l)) != ZERO_OK) return r;
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

/* Where the data order stands: the sampler is a pure function of (seed,
   step, slot), so the seed and the next step are all a resumed run needs to
   draw the samples the uninterrupted run would have. Saved as the engine's
   client state (zero_client_put) beside the model; a loader that reads
   files would keep its shard and offset here. */
typedef struct data_pos {
    uint64_t seed;
    int64_t next_step;
} data_pos;

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
    data_pos pos;

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
    pos.seed = o->seed;
    pos.next_step = 1;
    if (o->resume_dir) { /* the model, Adam, the counters, and where the data order stands */
        where = "zero_load";
        if ((r = zero_load(e, o->resume_dir, &err)) != ZERO_OK) goto fail;
        where = "zero_client_get (the data position)";
        if ((r = zero_client_get(e, "data", &pos, sizeof pos, NULL)) != ZERO_OK) goto fail;
        if (rank == 0) R->first_step = (int)pos.next_step;
    }
    t0 = now_s();
    for (step = (int)pos.next_step; step <= o->steps; step++) {
        zero_step_info info;
        double sum = 0, mean;
        for (micro = 0; micro < gas; micro++) {
            double loss;
            mlp_sample(&m, R->text, pos.seed, step, (int64_t)micro * world + rank, mbs);
            where = "micro-batch";
            if ((r = micro_batch(e, &m, mbs, R->dtype, o->freeze, &loss)) != ZERO_OK) goto fail;
            sum += loss;
        }
        /* the step's mean loss over every rank, in double, the same value on every rank */
        where = "zero_all_reduce_scalars (the loss)";
        mean = sum / gas;
        if ((r = zero_all_reduce_scalars(e, &mean, 1, ZERO_OP_AVG)) != ZERO_OK) goto fail;
        /* the step's loss for the engine's metrics file (jsonl_monitor) and
           progress line (steps_per_print): the global mean this program prints */
        zero_report_loss(e, mean);
        where = "zero_step";
        if ((r = zero_step(e, &info)) != ZERO_OK) goto fail;
        if (rank == 0) {
            R->step_loss[step - 1] = mean;
            R->last = info;
            window += mean, n_window++;
            if (!o->quiet && !o->compare && (step == pos.next_step || step == o->steps || step % o->print_every == 0)) {
                print_progress(o, step, mean, n_window, window, &info);
                window = 0, n_window = 0;
            }
        }
    }
    if (rank == 0) R->seconds = now_s() - t0;
    if (o->save_dir) {
        pos.next_step = step;
        where = "zero_client_put (the data position)";
        if ((r = zero_client_put(e, "data", &pos, sizeof pos)) != ZERO_OK) goto fail;
        where = "zero_save";
        if ((r = zero_save(e, o->save_dir, &err)) != ZERO_OK) goto fail;
    }

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
    if (!R->err[rank][0]) /* else the backend's message is already there */
        snprintf(R->err[rank], sizeof R->err[rank], "rank %d: %s: %s", rank, where,
                 zero_engine_error(e)->code != ZERO_OK ? zero_engine_error(e)->msg : zero_result_string(r));
    free(scratch);
    zero_engine_destroy(e);
    mlp_free(&m);
    return r;
}
/* ---- one training run ---- */

static int train(const options *o, const corpus *text, int stage, int verbose, result *res, void *user) {
    zero_config cfg;
    zero_error err;
    zero_tensor tensors[MAX_TENSORS];
    char names[MAX_TENSORS][32], ranks[32];
    init_spec spec;
    run R;
    int nt, rc = 1, i;
    zero_result r;
    int64_t total = 0;

    (void)user;
    memset(res, 0, sizeof *res);
    memset(&R, 0, sizeof R);
    memset(&err, 0, sizeof err);
    if ((r = make_config(o, stage, &cfg, &err)) != ZERO_OK) {
        fprintf(stderr, "train_mlp: %s\n", err.msg);
        return 1;
    }
    nt = model_tensors(o, tensors, names, &spec, &total);

    R.o = o;
    R.text = text;
    R.cfg = &cfg;
    R.tensors = tensors;
    R.n_tensors = nt;
    R.dtype = compute_dtype(&cfg);
    R.first_step = 1;
    R.step_loss = (double *)calloc((size_t)o->steps, sizeof(double));
    R.mem = (zero_memory_stats *)calloc((size_t)o->world, sizeof *R.mem);
    R.weights = (float *)calloc((size_t)total, sizeof(float));
    R.err = (char(*)[1100])calloc((size_t)o->world, sizeof *R.err);
    if (!R.step_loss || !R.mem || !R.weights || !R.err) {
        fprintf(stderr, "train_mlp: out of memory\n");
        goto done;
    }
    if (verbose) {
        snprintf(ranks, sizeof ranks, "%d host ranks", o->world);
        print_header(o, &cfg, ranks, total, nt);
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
    res->first_step = R.first_step;
    if (R.first_step <= o->steps) result_losses(res, R.step_loss + R.first_step - 1, o->steps - R.first_step + 1);
    if (write_loss_file(o, stage, R.step_loss, R.first_step)) goto done;
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
    free(R.step_loss);
    free(R.mem);
    free(R.weights);
    free(R.err);
    return rc;
}

int main(int argc, char **argv) {
    options o;
    text_files files;
    corpus text;
    int rc = 1, parsed;

    setvbuf(stdout, NULL, _IOLBF, 0); /* progress lines as they happen, also through a pipe */
    memset(&text, 0, sizeof text);
    options_default(&o, "train_mlp");
    if ((parsed = parse_args(argc, argv, 0, &o, &files)) != 0) { /* 2: --help; 1: a bad flag, said */
        if (parsed == 2) usage();
        rc = parsed == 2 ? 0 : 2;
        goto done;
    }
    if (load_text(&o, &files, &text)) goto done;
    if (o.check) rc = gradcheck(&o.d, &text, o.seed);
    else rc = o.compare ? compare_stages(&o, &text, train, NULL) : train_one(&o, &text, train, NULL);
done:
    corpus_free(&text);
    text_files_free(&files);
    return rc;
}
