/* train.h - what main.c and train.c of the consumer project share (tests/consumer). */
#ifndef TRAIN_H
#define TRAIN_H

#include "zero.h"

#define TRAIN_WORLD 2  /* host ranks */
#define TRAIN_STEPS 30
#define TRAIN_DIM 8    /* inputs of the linear model; parameters: TRAIN_DIM weights and a bias */
#define TRAIN_BATCH 16 /* samples per rank and step */

/* One training run: what each rank saw, for main.c to check. */
typedef struct train_job {
    double loss[TRAIN_WORLD][TRAIN_STEPS]; /* each rank's loss on its own batch, before the step */
    int applied[TRAIN_WORLD];              /* steps whose update zero_step applied */
    float params[TRAIN_WORLD][TRAIN_DIM + 1]; /* weights then bias after the last step */
    char err[TRAIN_WORLD][1024];           /* a rank's failure, when it had one */
} train_job;

/* One rank of a data-parallel job (zero_host_fn): fits y = w.x + b to a fixed
   teacher with ZeRO stage 2 and Adam, each rank on its own samples. */
zero_result train_rank(const zero_backend *backend, void *arg);

#endif
