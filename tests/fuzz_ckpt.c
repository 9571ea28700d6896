/* tests/fuzz_ckpt.c - libFuzzer target for the checkpoint metadata reader
   (zero.h: the header checks and the parser of meta.zck).

   Fuzz (from the repository root; `make fuzz-ckpt` does this):
       clang -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -I. -o fz tests/fuzz_ckpt.c -lm -lpthread
       ./fz -max_total_time=600 build/fuzz_ckpt_corpus tests/fuzz_ckpt_corpus
   Replay without libFuzzer (what `make test` does with the seed corpus):
       clang ... -DZERO_FUZZ_REPLAY ... && ./fr tests/fuzz_ckpt_corpus/[a-z]*

   Inputs whose header says kind 3 are client files (zero__client_read), the
   others meta.zck. Inputs whose first byte is odd get their header and body
   checksums recomputed first (version 2 where the input says 2, else 1), so
   the fuzzer reaches the parser behind them. On
   success every tensor name is a NUL-terminated string inside the reader's
   buffer, counts and sizes are in range; a failure must come with an error
   item and message. A broken invariant aborts. */
#define ZERO_IMPLEMENTATION
#include "zero.h"
#include "fuzz_common.h"

/* A client file (kind 3 in the input's header): on success every key is a short printable string, the sizes add
   up within the limits. */
static int fz_client(const unsigned char *b, size_t size) {
    zero__client *c = NULL;
    zero_error err;
    int ok = 1, i;
    size_t total = 0;
    zero__ok(&err);
    if (zero__client_read(b, size, "fuzz/client00000.zck", &c, &err) == ZERO_OK) {
        for (i = 0; c && i < c->n; i++) {
            size_t kl = strlen(c->ent[i].key);
            if (kl < 1 || kl > ZERO_CLIENT_KEY_MAX || c->ent[i].bytes < 1 || !c->ent[i].data) ok = 0;
            total += c->ent[i].bytes;
        }
        if (c && (total != c->bytes || total > ZERO_CLIENT_MAX_BYTES || c->n > ZERO_CLIENT_MAX_KEYS)) ok = 0;
        zero__client_free(c);
    } else if (err.item == ZERO_MSG_NONE || !err.msg[0] || strlen(err.msg) >= sizeof err.msg || c) {
        ok = 0;
    }
    return ok;
}

static int fz_one(const unsigned char *data, size_t size) {
    unsigned char *b = (unsigned char *)malloc(size ? size : 1);
    zero__ck_meta m;
    zero_error err;
    zero_result r;
    int ok = 1;
    uint32_t kind = size >= ZERO__CK_HDR && zero__ck_get32(data + 12) == ZERO__CK_CLIENT ? ZERO__CK_CLIENT : ZERO__CK_META;
    if (!b) return 1;
    memcpy(b, data, size);
    if (size >= ZERO__CK_HDR && (b[0] & 1)) { /* make the checksums right: reach the parser */
        uint32_t version = zero__ck_get32(b + 8) == 2 ? 2 : 1; /* (version 2: a meta.zck ends with its client files) */
        memcpy(b, ZERO__CK_MAGIC, 8);
        zero__ck_put32(b + 8, version);
        zero__ck_put32(b + 12, kind);
        zero__ck_put64(b + 16, size - ZERO__CK_HDR);
        zero__ck_put32(b + 24, zero__crc32c(0, b + ZERO__CK_HDR, size - ZERO__CK_HDR));
        zero__ck_put32(b + 60, zero__crc32c(0, b, 60));
    }
    if (kind == ZERO__CK_CLIENT) {
        ok = fz_client(b, size);
        free(b);
        return ok;
    }
    zero__ok(&err);
    r = zero__ck_meta_read(b, size, "fuzz/meta.zck", &m, &err);
    if (r == ZERO_OK) {
        int64_t t;
        if (m.n_tensors < 1 || !m.tensors || m.world < 1 || m.stage < 0 || m.stage > 3) ok = 0;
        for (t = 0; ok && t < m.n_tensors; t++) {
            const zero_tensor *x = &m.tensors[t];
            if (!x->name || strlen(x->name) == 0 || strlen(x->name) > size || x->numel < 1 || x->ndim < 0 ||
                x->ndim > ZERO_MAX_DIMS)
                ok = 0;
        }
        zero__ck_meta_free(&m);
    } else if (err.item == ZERO_MSG_NONE || !err.msg[0] || strlen(err.msg) >= sizeof err.msg) {
        ok = 0;
    }
    free(b);
    return ok;
}
