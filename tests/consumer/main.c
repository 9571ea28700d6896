/* main.c - a program that uses zero as another project would (tests/consumer):
   built by tests/consumer/run.sh with the flags of pkg-config, with CMake's
   find_package and with add_subdirectory. This file compiles zero's
   implementation; train.c holds the training loop. Trains a linear model on 2
   host ranks with ZeRO stage 2 and checks that it learned; ends with
   "N passed, N failed" like zero's own tests. */
#define ZERO_IMPLEMENTATION
#include "zero.h"
#include "train.h"

#include <stdio.h>
#include <string.h>

#define STR_(x) #x
#define STR(x) STR_(x)

static int passed, failed;

static void check(int ok, const char *what, const char *detail) {
    if (ok) {
        passed++;
        printf("ok    %s\n", what);
    } else {
        failed++;
        printf("FAIL  %s%s%s\n", what, detail[0] ? ": " : "", detail);
    }
}

int main(void) {
    static train_job job;
    zero_error err;
    char detail[2048] = "";
    zero_result r;
    int rank, i;

#ifdef ZERO_PKG_VERSION /* the version the build system reported (pkg-config, CMake) */
    {
        const char *want = STR(ZERO_VERSION_MAJOR) "." STR(ZERO_VERSION_MINOR) "." STR(ZERO_VERSION_PATCH);
        snprintf(detail, sizeof detail, "build system says %s, zero.h says %s", ZERO_PKG_VERSION, want);
        check(strcmp(ZERO_PKG_VERSION, want) == 0, "version", detail);
    }
#endif
    r = zero_host_run(TRAIN_WORLD, train_rank, &job, &err);
    check(r == ZERO_OK, "zero_host_run: 2 ranks, stage 2", r == ZERO_OK ? "" : err.msg);
    if (r != ZERO_OK) {
        for (rank = 0; rank < TRAIN_WORLD; rank++)
            if (job.err[rank][0]) printf("      rank %d: %s\n", rank, job.err[rank]);
        goto done;
    }

    for (rank = 0; rank < TRAIN_WORLD; rank++) {
        double first = job.loss[rank][0], last = job.loss[rank][TRAIN_STEPS - 1];
        int moved = 0;
        printf("rank %d: loss %.4f -> %.4f in %d steps\n", rank, first, last, TRAIN_STEPS);
        snprintf(detail, sizeof detail, "rank %d: %d of %d", rank, job.applied[rank], TRAIN_STEPS);
        check(job.applied[rank] == TRAIN_STEPS, "every step applied", detail);
        snprintf(detail, sizeof detail, "rank %d: %g -> %g", rank, first, last);
        check(last < 0.25 * first, "loss falls below a quarter", detail);
        for (i = 0; i <= TRAIN_DIM; i++) moved += job.params[rank][i] != 0.0f;
        snprintf(detail, sizeof detail, "rank %d: %d of %d parameters left zero", rank, TRAIN_DIM + 1 - moved,
                 TRAIN_DIM + 1);
        check(moved == TRAIN_DIM + 1, "weights changed", detail);
    }
    check(memcmp(job.params[0], job.params[1], sizeof job.params[0]) == 0,
          "ranks hold the same weights", "");
done:
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
