/* port_main.c - runs tests/llmc/train_gpt2_zero.c (llm.c's shape ported onto
   zero) on WORLD host ranks, the threads of this process: each rank runs the
   port's main, which finds its rank's backend with llmc_backend(). A CUDA
   program runs one process per GPU and gets its backend from
   zero_cuda_backend_init and zero_cuda_backend at that line instead.

       WORLD=N port grad_accum_steps params_out ds_config.json

   Exit 0 when every rank's main returned 0 (the port's fail() exits the
   process on any error, naming it). */
#define _POSIX_C_SOURCE 200809L
struct zero_backend;
static _Thread_local const struct zero_backend *llmc_rank_backend;
static const struct zero_backend *llmc_backend(void) { return llmc_rank_backend; }

#define main llmc_main
#include "train_gpt2_zero.c"
#undef main

typedef struct llmc_run {
    int argc;
    char **argv;
    int rc[1024];
} llmc_run;

static zero_result llmc_rank(const zero_backend *be, void *arg) {
    llmc_run *r = (llmc_run *)arg;
    llmc_rank_backend = be;
    r->rc[be->rank] = llmc_main(r->argc, r->argv);
    return r->rc[be->rank] == 0 ? ZERO_OK : ZERO_ERR_STATE;
}

int main(int argc, char **argv) {
    static llmc_run run;
    zero_error err;
    const char *w = getenv("WORLD");
    int world = w ? atoi(w) : 1;
    if (argc < 4 || world < 1 || world > 4 || 4 % world) {
        fprintf(stderr, "usage: WORLD=1|2|4 %s grad_accum_steps params_out ds_config.json\n", argv[0]);
        return 2;
    }
    run.argc = argc, run.argv = argv;
    if (zero_host_run(world, llmc_rank, &run, &err) != ZERO_OK) {
        fprintf(stderr, "port: %s\n", err.msg);
        return 1;
    }
    return 0;
}
