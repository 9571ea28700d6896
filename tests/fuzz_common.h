/* fuzz_common.h - what the libFuzzer targets (tests/fuzz_*.c) share.

   A target includes zero.h (with the implementation), then this file, and
   defines fz_one(data, size): 1 when every invariant held on that input.
   FZ_ASSERT(c) counts a broken invariant in fz_bad and names it on stderr
   (the target goes on, so one input reports everything it breaks).

   Built with -fsanitize=fuzzer: LLVMFuzzerTestOneInput aborts when an
   input broke an invariant, so libFuzzer keeps it. Built with
   -DZERO_FUZZ_REPLAY (make test): main runs the target on each file named,
   and each file is one check of tests/zero_test.h. */
#ifndef ZERO_FUZZ_COMMON_H
#define ZERO_FUZZ_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#ifdef ZERO_FUZZ_REPLAY
#  include "zero_test.h"
#endif

static int fz_bad; /* invariants broken by this input */
#define FZ_ASSERT(c)                                                                  \
    do {                                                                              \
        if (!(c)) {                                                                   \
            fz_bad++;                                                                 \
            fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #c); \
        }                                                                             \
    } while (0)

static int fz_one(const unsigned char *data, size_t size);

/* the target on one input, fz_bad counted from zero */
static int fz_run(const unsigned char *data, size_t size) {
    int ok;
    fz_bad = 0;
    ok = fz_one(data, size);
    return ok && fz_bad == 0;
}

#ifdef ZERO_FUZZ_REPLAY
int main(int argc, char **argv) {
    int i;
    for (i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        unsigned char *buf = NULL;
        long n = -1;
        if (f && fseek(f, 0, SEEK_END) == 0) n = ftell(f);
        if (f && n >= 0 && fseek(f, 0, SEEK_SET) == 0) {
            buf = (unsigned char *)malloc((size_t)n + 1); /* exact size + 1: malloc(0) may be NULL */
            if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) n = -1;
        }
        if (f) fclose(f);
        CHECKF(buf && n >= 0, "%s: cannot read", argv[i]);
        if (buf && n >= 0) CHECKF(fz_run(buf, (size_t)n), "%s: %d invariants broke", argv[i], fz_bad);
        free(buf);
    }
    return zt_finish();
}
#else
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
    if (!fz_run(data, size)) abort();
    return 0;
}
#endif

#endif /* ZERO_FUZZ_COMMON_H */
