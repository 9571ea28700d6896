/* gpt_wire.h - examples/gpt's wiring to the engine, in one place: the
   tensors it registers (gpt_wire_tensors) and the order of the engine calls
   of one micro-batch (gpt_wire_step, gpt_wire_forward) around the model's
   compute pieces. The GPU model (gpt_cuda.cuh: gpt.cu, tests/gpu_gpt.cu)
   runs its kernels through it; tests/test_gpt_wire.c runs gpt_ref.h's
   float64 model through it on host ranks with a real engine, so that
   `make test`, with no GPU, sees a change of call order, flags or groups.

       gpt_wire_name names[n];  zero_tensor ts[n];          n = gpt_n_tensors(&d)
       gpt_wire_tensors(&d, 0, names, ts, init, init_user); then zero_engine_create(.., ts, n, ..)

       gpt_wire w = {e, &d, recompute, &pieces, user};
       gpt_wire_step(&w, &err);      the forward, the loss, every gradient handed over

   One micro-batch, as gpt_wire_step calls the engine (gpt_wire_forward is
   its first half, up to the head, with no gradient asked for):
     1. embeddings: fetch wte, wpe; read both; embed; release both;
     2. blocks 0 .. L-1: fetch the block's 12 tensors; read them; block
        forward; release them;
     3. ln_f: fetch, read, forward; the tied head: fetch wte, read it, ask
        for its gradient (the head adds its share first), head; release wte;
     4. ln_f's backward: its gradients asked for, written, handed over;
        release ln_f;
     5. blocks L-1 .. 0: fetch; with recompute, read and run the block's
        forward again; read again; the backward in pieces, each asking for
        the gradients it writes and handing them over at once (the order the
        unit reductions start in); release;
     6. wpe's gradient asked for; the embeddings' backward (wpe's rows, and
        wte's on top of the head's share); wpe's and wte's handed over.
   Each is the engine's call by name where it happens (zero_fetch(e, t),
   zero_param, zero_grad(e, t) before a piece writes a gradient,
   zero_grad_ready(e, t) as soon as it is written, zero_release), as in
   examples/minimal.c. (The engine-less tests, tests/gpu_gpt.cu and
   tests/test_gpt_wire_plain.c, point those names at plain buffers with
   macros of their own before including this file.)

   The compute pieces are a gpt_wire_compute's hooks: each runs (or, on a
   GPU, queues) the model's work between two engine calls, on the pointers
   the wiring hands it: parameters valid until the next release of their
   tensors, gradient buffers until they are handed over.

   Host code, C11 and C++ (and CUDA C++ host code). Include after zero.h;
   every function is static inline. */
#ifndef GPT_WIRE_H
#define GPT_WIRE_H

#ifndef ZERO_H
#error "include zero.h before examples/gpt/gpt_wire.h"
#endif

#include "gpt_model.h"

/* ---- tensors ---- */

/* Storage of one tensor's name: zero_tensor.name points into it (the engine
   copies it at create) */
#define GPT_WIRE_NAME_CAP 48
typedef struct gpt_wire_name {
    char s[GPT_WIRE_NAME_CAP];
} gpt_wire_name;

/* gpt_wire_tensors' options */
enum {
    /* ZERO_TENSOR_GRAD_ANY_ORDER on wte: the engine finds the tied
       embedding's gradient written at both ends of the backward by itself
       (stages 2-3, in the first micro-batch); the hint plans its buffer at
       create instead (gpt --grad-any-order, to compare the two) */
    GPT_WIRE_WTE_ANY_ORDER = 1 << 0
};

/* The engine's view of the model: gpt_n_tensors(d) tensors in
   registration order (gpt_model.h), HF GPT-2's names and shapes, one group
   per block (stage 3 gathers a block at a time), no weight decay on biases
   and LayerNorms, every gradient but wte's written whole by the backward
   (GRAD_WRITE: stages 2-3 skip clearing it), while wte's is added to twice
   (the tied head, then the embedding). Every tensor's initial values from
   init(init_user, ...). opts: GPT_WIRE_*. */
static inline void gpt_wire_tensors(const gpt_dims *d, int opts, gpt_wire_name *names, zero_tensor *ts,
                                    zero_init_fn init, void *init_user) {
    int t;
    for (t = 0; t < gpt_n_tensors(d); t++) {
        zero_tensor *z = &ts[t];
        memset(z, 0, sizeof *z);
        z->name = gpt_tensor_name(d, t, names[t].s, sizeof names[t].s);
        z->numel = gpt_tensor_numel(d, t);
        z->ndim = gpt_tensor_shape(d, t, z->shape);
        z->group = gpt_tensor_group(d, t);
        z->flags = (gpt_tensor_no_decay(d, t) ? ZERO_TENSOR_NO_DECAY : 0) |
                   (t != GPT_WTE ? ZERO_TENSOR_GRAD_WRITE
                                 : (opts & GPT_WIRE_WTE_ANY_ORDER) ? ZERO_TENSOR_GRAD_ANY_ORDER : 0);
        z->init = init;
        z->init_user = init_user;
    }
}

/* The pieces of a block's backward between two hand-overs of gradients, in
   the order they run (GPT_WIRE_LNF, ln_f's, runs before the blocks). Each
   hands over the tensors gpt_wire_piece_tensors names. */
typedef enum gpt_wire_piece {
    GPT_WIRE_LNF,       /* ln_f: d of its input (into the residual's gradient); its weight and bias */
    GPT_WIRE_MLP_PROJ,  /* mlp.c_proj's weight and bias (first: the MLP's GELU output again, where not kept) */
    GPT_WIRE_FC_B,      /* d of the MLP's pre-activation through the GELU, with mlp.c_fc's bias */
    GPT_WIRE_FC_W,      /* mlp.c_fc's weight */
    GPT_WIRE_LN2,       /* first d ln_2's input (added to the residual's); ln_2's weight and bias */
    GPT_WIRE_ATTN_PROJ, /* attn.c_proj's weight and bias */
    GPT_WIRE_QKV,       /* first d of the heads' output and attention's backward; attn.c_attn's weight and bias */
    GPT_WIRE_LN1,       /* first d ln_1's input (the residual's gradient at the block's input); ln_1's */
    GPT_WIRE_PIECE_COUNT
} gpt_wire_piece;

/* The tensors piece hands over in block l (ln_f for GPT_WIRE_LNF), in the
   order asked for and handed over: writes t[0], t[1]; returns how many (1 or 2) */
static inline int gpt_wire_piece_tensors(const gpt_dims *d, gpt_wire_piece piece, int l, int t[2]) {
    static const int k[GPT_WIRE_PIECE_COUNT][2] = {
        {0, 1}, /* ln_f: weight, bias */
        {GPT_MLP_PROJ_W, GPT_MLP_PROJ_B}, {GPT_FC_B, -1}, {GPT_FC_W, -1}, {GPT_LN2_W, GPT_LN2_B},
        {GPT_ATTN_PROJ_W, GPT_ATTN_PROJ_B}, {GPT_QKV_W, GPT_QKV_B}, {GPT_LN1_W, GPT_LN1_B}};
    int i, n = k[piece][1] < 0 ? 1 : 2;
    for (i = 0; i < n; i++) t[i] = piece == GPT_WIRE_LNF ? gpt_lnf_w(d) + k[piece][i] : gpt_block_tensor(l, k[piece][i]);
    return n;
}

/* The model's compute between the engine calls. Every hook gets
   gpt_wire.user first and returns ZERO_OK or fills err. Parameters are
   in the compute dtype; p of a block holds its GPT_PER_BLOCK tensors in
   gpt_model.h's order, p of GPT_WIRE_LNF ln_f's weight and bias. slot: the
   block's activations (l, or 0 with recompute: one slot reused). */
typedef struct gpt_wire_compute {
    zero_result (*embed)(void *user, const void *wte, const void *wpe, zero_error *err);
    /* block l from the residual stream at l to l + 1 (out_resid 0: a
       recompute, only what the backward reads, the output being kept) */
    zero_result (*block_fwd)(void *user, int l, int slot, int out_resid, const void *const *p, zero_error *err);
    zero_result (*lnf_fwd)(void *user, const void *w, const void *b, zero_error *err);
    /* logits = ln_f(x) wte^T and the loss; with gwte (training) also d ln_f
       and the head's share of wte's gradient added into gwte */
    zero_result (*head)(void *user, const void *wte, void *gwte, zero_error *err);
    /* piece's work before its gradients are asked for, then its writing of
       them: g[i] is the gradient of gpt_wire_piece_tensors' t[i] */
    zero_result (*piece_before)(void *user, gpt_wire_piece piece, int l, int slot, const void *const *p,
                                zero_error *err);
    zero_result (*piece_write)(void *user, gpt_wire_piece piece, int l, int slot, const void *const *p,
                               void *const *g, zero_error *err);
    /* the embeddings' backward: wpe's gradient written whole, wte's rows added into gwte */
    zero_result (*embed_bwd)(void *user, void *gwte, void *gwpe, zero_error *err);
} gpt_wire_compute;

/* One micro-batch's wiring */
typedef struct gpt_wire {
    zero_engine *e;               /* whose calls the wiring makes */
    const gpt_dims *d;
    int recompute;                /* the blocks' forward again before their backward (one activation slot) */
    const gpt_wire_compute *c;
    void *user;                   /* the hooks' first argument */
} gpt_wire;

#define GPT_WIRE__TRY(call)                                                                                            \
    do {                                                                                                               \
        zero_result r_ = (call);                                                                                       \
        if (r_ != ZERO_OK) return r_;                                                                                  \
    } while (0)
/* an engine call of result r: on failure the engine's error to err, and out */
#define GPT_WIRE__Z(call)                                                                                              \
    do {                                                                                                               \
        zero_result r_ = (call);                                                                                       \
        if (r_ != ZERO_OK) {                                                                                           \
            *err = *zero_engine_error(e);                                                                              \
            return r_;                                                                                                 \
        }                                                                                                              \
    } while (0)
/* an engine call that returns a pointer into dst: NULL is a failure */
#define GPT_WIRE__P(dst, call)                                                                                         \
    do {                                                                                                               \
        if (!((dst) = (call))) {                                                                                       \
            *err = *zero_engine_error(e);                                                                              \
            return err->code ? err->code : ZERO_ERR_STATE;                                                             \
        }                                                                                                              \
    } while (0)

/* ---- one micro-batch ---- */

/* a block's tensors, one engine group: stage 3 gathers the block at once */
static inline zero_result gpt_wire__fetch_block(zero_engine *e, int l, zero_error *err) {
    int k;
    for (k = 0; k < GPT_PER_BLOCK; k++) GPT_WIRE__Z(zero_fetch(e, gpt_block_tensor(l, k)));
    return ZERO_OK;
}
static inline zero_result gpt_wire__release_block(zero_engine *e, int l, zero_error *err) {
    int k;
    for (k = 0; k < GPT_PER_BLOCK; k++) GPT_WIRE__Z(zero_release(e, gpt_block_tensor(l, k)));
    return ZERO_OK;
}
static inline zero_result gpt_wire__block_params(zero_engine *e, int l, const void **p, zero_error *err) {
    int k;
    for (k = 0; k < GPT_PER_BLOCK; k++) GPT_WIRE__P(p[k], zero_param(e, gpt_block_tensor(l, k)));
    return ZERO_OK;
}

/* one piece: its work, its gradients asked for, written, handed over */
static inline zero_result gpt_wire__piece(const gpt_wire *w, gpt_wire_piece piece, int l, int slot,
                                          const void *const *p, zero_error *err) {
    zero_engine *e = w->e;
    int t[2], i, n = gpt_wire_piece_tensors(w->d, piece, l, t);
    void *g[2] = {NULL, NULL};
    GPT_WIRE__TRY(w->c->piece_before(w->user, piece, l, slot, p, err));
    for (i = 0; i < n; i++) GPT_WIRE__P(g[i], zero_grad(e, t[i]));
    GPT_WIRE__TRY(w->c->piece_write(w->user, piece, l, slot, p, g, err));
    for (i = 0; i < n; i++) GPT_WIRE__Z(zero_grad_ready(e, t[i]));
    return ZERO_OK;
}

/* Steps 1-2 and ln_f's forward; *lnf_p: ln_f's weight and bias, fetched
   (released by the caller after the head) */
static inline zero_result gpt_wire__to_lnf(const gpt_wire *w, const void **lnf_p, zero_error *err) {
    zero_engine *e = w->e;
    int l, tf = gpt_lnf_w(w->d);
    const void *wte, *wpe, *p[GPT_PER_BLOCK];
    GPT_WIRE__Z(zero_fetch(e, GPT_WTE));
    GPT_WIRE__Z(zero_fetch(e, GPT_WPE));
    GPT_WIRE__P(wte, zero_param(e, GPT_WTE));
    GPT_WIRE__P(wpe, zero_param(e, GPT_WPE));
    GPT_WIRE__TRY(w->c->embed(w->user, wte, wpe, err));
    GPT_WIRE__Z(zero_release(e, GPT_WTE));
    GPT_WIRE__Z(zero_release(e, GPT_WPE));
    for (l = 0; l < w->d->layers; l++) {
        GPT_WIRE__TRY(gpt_wire__fetch_block(e, l, err));
        GPT_WIRE__TRY(gpt_wire__block_params(e, l, p, err));
        GPT_WIRE__TRY(w->c->block_fwd(w->user, l, w->recompute ? 0 : l, 1, p, err));
        GPT_WIRE__TRY(gpt_wire__release_block(e, l, err));
    }
    GPT_WIRE__Z(zero_fetch(e, tf));
    GPT_WIRE__Z(zero_fetch(e, tf + 1));
    GPT_WIRE__P(lnf_p[0], zero_param(e, tf));
    GPT_WIRE__P(lnf_p[1], zero_param(e, tf + 1));
    return w->c->lnf_fwd(w->user, lnf_p[0], lnf_p[1], err);
}

/* One micro-batch: forward, loss, backward, every gradient handed over as
   soon as it is written (steps 1-6 above) */
static inline zero_result gpt_wire_step(const gpt_wire *w, zero_error *err) {
    zero_engine *e = w->e;
    int l, tf = gpt_lnf_w(w->d);
    const void *wte, *lnf_p[2], *p[GPT_PER_BLOCK];
    void *gwte, *gwpe;
    GPT_WIRE__TRY(gpt_wire__to_lnf(w, lnf_p, err));
    GPT_WIRE__Z(zero_fetch(e, GPT_WTE));
    GPT_WIRE__P(wte, zero_param(e, GPT_WTE));
    GPT_WIRE__P(gwte, zero_grad(e, GPT_WTE)); /* the head adds its share first */
    GPT_WIRE__TRY(w->c->head(w->user, wte, gwte, err));
    GPT_WIRE__Z(zero_release(e, GPT_WTE));
    GPT_WIRE__TRY(gpt_wire__piece(w, GPT_WIRE_LNF, w->d->layers, 0, lnf_p, err));
    GPT_WIRE__Z(zero_release(e, tf));
    GPT_WIRE__Z(zero_release(e, tf + 1));
    for (l = w->d->layers - 1; l >= 0; l--) {
        int slot = w->recompute ? 0 : l, piece;
        GPT_WIRE__TRY(gpt_wire__fetch_block(e, l, err));
        if (w->recompute) {
            GPT_WIRE__TRY(gpt_wire__block_params(e, l, p, err));
            GPT_WIRE__TRY(w->c->block_fwd(w->user, l, 0, 0, p, err));
        }
        GPT_WIRE__TRY(gpt_wire__block_params(e, l, p, err));
        for (piece = GPT_WIRE_MLP_PROJ; piece < GPT_WIRE_PIECE_COUNT; piece++)
            GPT_WIRE__TRY(gpt_wire__piece(w, (gpt_wire_piece)piece, l, slot, p, err));
        GPT_WIRE__TRY(gpt_wire__release_block(e, l, err));
    }
    /* the embeddings' backward reads no parameter */
    GPT_WIRE__P(gwpe, zero_grad(e, GPT_WPE));
    GPT_WIRE__TRY(w->c->embed_bwd(w->user, gwte, gwpe, err));
    GPT_WIRE__Z(zero_grad_ready(e, GPT_WPE));
    GPT_WIRE__Z(zero_grad_ready(e, GPT_WTE));
    return ZERO_OK;
}

/* One micro-batch's forward and loss alone (an evaluation): the fetches
   and releases of gpt_wire_step's forward, no gradient asked for (head
   gets gwte NULL), so the engine's state is untouched */
static inline zero_result gpt_wire_forward(const gpt_wire *w, zero_error *err) {
    zero_engine *e = w->e;
    int tf = gpt_lnf_w(w->d);
    const void *wte, *lnf_p[2];
    GPT_WIRE__TRY(gpt_wire__to_lnf(w, lnf_p, err));
    GPT_WIRE__Z(zero_fetch(e, GPT_WTE));
    GPT_WIRE__P(wte, zero_param(e, GPT_WTE));
    GPT_WIRE__TRY(w->c->head(w->user, wte, NULL, err));
    GPT_WIRE__Z(zero_release(e, GPT_WTE));
    GPT_WIRE__Z(zero_release(e, tf));
    GPT_WIRE__Z(zero_release(e, tf + 1));
    return ZERO_OK;
}

#undef GPT_WIRE__TRY
#undef GPT_WIRE__Z
#undef GPT_WIRE__P

#endif /* GPT_WIRE_H */
