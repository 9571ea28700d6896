/* tests/fuzz_ckpt.c - libFuzzer target for the checkpoint metadata reader
   (zero.h: the header checks and the parser of meta.zck).

   Fuzz (from the repository root; `make fuzz-ckpt` does this):
       clang -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -I. -o fz tests/fuzz_ckpt.c -lm -lpthread
       ./fz -max_total_time=600 build/fuzz_ckpt_corpus tests/fuzz_ckpt_corpus
   Replay without libFuzzer (what `make test` does with the seed corpus):
       clang ... -DZERO_FUZZ_REPLAY ... && ./fr tests/fuzz_ckpt_corpus/[a-z]*

   Inputs whose first byte is odd get their header and body checksums
   recomputed first, so the fuzzer reaches the parser behind them. On
   success every tensor name is a NUL-terminated string inside the reader's
   buffer, counts and sizes are in range; a failure must come with an error
   item and message. A broken invariant aborts. */
#define ZERO_IMPLEMENTATION
#include "zero.h"
#include "fuzz_common.h"

static int fz_one(const unsigned char *data, size_t size) {
    unsigned char *b = (unsigned char *)malloc(size ? size : 1);
    zero__ck_meta m;
    zero_error err;
    zero_result r;
    int ok = 1;
    if (!b) return 1;
    memcpy(b, data, size);
    if (size >= ZERO__CK_HDR && (b[0] & 1)) { /* make the checksums right: reach the parser */
        memcpy(b, ZERO__CK_MAGIC, 8);
        zero__ck_put32(b + 8, 1);
        zero__ck_put32(b + 12, 1);
        zero__ck_put64(b + 16, size - ZERO__CK_HDR);
        zero__ck_put32(b + 24, zero__crc32c(0, b + ZERO__CK_HDR, size - ZERO__CK_HDR));
        zero__ck_put32(b + 60, zero__crc32c(0, b, 60));
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
