// test_cuda_boot.cu - zero_cuda.cuh's host side; needs no GPU (make test links
// and runs it on the CI machine):
//   - zero_dist_env_read for torchrun, Slurm and Open MPI, and every malformed
//     or contradicting variable (an error naming it and its value);
//   - zero_bootstrap_exchange over TCP between threads: worlds 2, 3 and 8 with
//     random 128-byte ids, IPv6 ::1, a rank that never comes (rank 0 names
//     it), no rank 0 (the peer names the address), stray and garbage clients
//     next to real peers, a full table of silent clients, a duplicate rank, a
//     world that differs, a rank 0 that breaks off its reply;
//   - zero_cuda_launch_local with ZERO_LOCAL_GPUS faking the GPUs: forked
//     children with torchrun's variables that bootstrap among themselves, the
//     worst exit status, a killed child, the grace period after a failure,
//     nothing forked under a launcher; the GPU count of the probe process.
// Run alone: make test T=test_cuda_boot (linked against NCCL; no GPU needed)
#define ZERO_IMPLEMENTATION
#include "zero.h"
#include "zero_cuda.cuh"
#include "zero_test.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define BLOB 128

static double now_s() { return zero__boot_now(); }

/* ---- launcher environment ---- */

static const char *const launcher_vars[] = {
    "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "SLURM_PROCID",
    "SLURM_NTASKS", "SLURM_NPROCS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE", "SLURM_STEP_TASKS_PER_NODE",
    "SLURM_NODEID", "SLURM_LAUNCH_NODE_IPADDR", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", "ZERO_LOCAL_GPUS", "ZERO_TIMEOUT_S",
    "TORCHELASTIC_RUN_ID", "ZERO_BOOTSTRAP_PORT"};

static void env_clear() {
    for (size_t i = 0; i < sizeof launcher_vars / sizeof launcher_vars[0]; i++) unsetenv(launcher_vars[i]);
}

/* clear, then set "NAME=value" items up to a NULL */
static void env_apply(const char *const *kv) {
    env_clear();
    for (; *kv; kv++) {
        char name[64];
        const char *eq = strchr(*kv, '=');
        size_t n = (size_t)(eq - *kv);
        memcpy(name, *kv, n);
        name[n] = 0;
        setenv(name, eq + 1, 1);
    }
}

struct env_bad {
    int line;
    const char *kv[12];
    const char *key;  /* the variable the error must name (err.key) */
    const char *frag; /* and a piece of its text */
};

#define TR "LOCAL_RANK=0", "MASTER_ADDR=node0", "MASTER_PORT=29500"
static const env_bad bad_cases[] = {
    {__LINE__, {"RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=1", "MASTER_ADDR=h", "MASTER_PORT=5", "ZERO_BOOTSTRAP_PORT=70000"},
     "ZERO_BOOTSTRAP_PORT", "70000"},
    {__LINE__, {"RANK=", "WORLD_SIZE=2", TR}, "RANK", "RANK=\"\": set but empty"},
    {__LINE__, {"RANK=abc", "WORLD_SIZE=2", TR}, "RANK", "RANK=\"abc\": not a non-negative decimal integer"},
    {__LINE__, {"RANK=-1", "WORLD_SIZE=2", TR}, "RANK", "\"-1\""},
    {__LINE__, {"RANK=+1", "WORLD_SIZE=2", TR}, "RANK", "\"+1\""},
    {__LINE__, {"RANK= 1", "WORLD_SIZE=2", TR}, "RANK", "\" 1\""},
    {__LINE__, {"RANK=1 ", "WORLD_SIZE=2", TR}, "RANK", "\"1 \""},
    {__LINE__, {"RANK=0x1", "WORLD_SIZE=2", TR}, "RANK", "\"0x1\""},
    {__LINE__, {"RANK=1.0", "WORLD_SIZE=2", TR}, "RANK", "\"1.0\""},
    {__LINE__, {"RANK=99999999999999999999999", "WORLD_SIZE=2", TR}, "RANK", "out of range"},
    {__LINE__, {"RANK=2", "WORLD_SIZE=2", TR}, "RANK", "RANK=\"2\": not below WORLD_SIZE=\"2\""},
    {__LINE__, {"RANK=0", "WORLD_SIZE=0", TR}, "WORLD_SIZE", "WORLD_SIZE=\"0\": out of range"},
    {__LINE__, {"RANK=0", "WORLD_SIZE=3000000000", TR}, "WORLD_SIZE", "out of range"},
    {__LINE__, {"RANK=1", TR}, "WORLD_SIZE", "WORLD_SIZE is not set, but RANK=\"1\" is"},
    {__LINE__, {"WORLD_SIZE=2", TR}, "RANK", "RANK is not set, but WORLD_SIZE=\"2\" is"},
    {__LINE__, {"RANK=1", "WORLD_SIZE=2", "MASTER_ADDR=h", "MASTER_PORT=1"}, "LOCAL_RANK", "LOCAL_RANK is not set"},
    {__LINE__, {"RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=2", "MASTER_ADDR=h", "MASTER_PORT=1"}, "LOCAL_RANK",
     "LOCAL_RANK=\"2\": not below WORLD_SIZE=\"2\""},
    {__LINE__, {"RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=q", "MASTER_ADDR=h", "MASTER_PORT=1"}, "LOCAL_RANK", "\"q\""},
    {__LINE__, {"RANK=1", "WORLD_SIZE=2", "LOCAL_WORLD_SIZE=3", TR}, "LOCAL_WORLD_SIZE",
     "LOCAL_WORLD_SIZE=\"3\": above WORLD_SIZE=\"2\""},
    {__LINE__, {"RANK=1", "WORLD_SIZE=2", "LOCAL_WORLD_SIZE=0", TR}, "LOCAL_WORLD_SIZE", "out of range"},
    {__LINE__, {"RANK=1", "WORLD_SIZE=4", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=1", "MASTER_ADDR=h", "MASTER_PORT=1"},
     "LOCAL_RANK", "LOCAL_RANK=\"1\": not below LOCAL_WORLD_SIZE=\"1\""},
    {__LINE__, {"RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=1", "MASTER_PORT=1"}, "MASTER_ADDR",
     "MASTER_ADDR is not set, but the world has 2 ranks"},
    {__LINE__, {"RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=1", "MASTER_ADDR=", "MASTER_PORT=1"}, "MASTER_ADDR",
     "MASTER_ADDR=\"\": set but empty"},
    {__LINE__, {"RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=1", "MASTER_ADDR=h"}, "MASTER_PORT",
     "MASTER_PORT is not set, but the world has 2 ranks"},
    {__LINE__, {"RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=1", "MASTER_ADDR=h", "MASTER_PORT=0"}, "MASTER_PORT",
     "MASTER_PORT=\"0\": out of range, expected 1 to 65535"},
    {__LINE__, {"RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=1", "MASTER_ADDR=h", "MASTER_PORT=65536"}, "MASTER_PORT",
     "\"65536\": out of range"},
    {__LINE__, {"RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=1", "MASTER_ADDR=h", "MASTER_PORT=http"}, "MASTER_PORT",
     "\"http\""},
    /* set and malformed is an error even where it is not needed */
    {__LINE__, {"RANK=0", "WORLD_SIZE=1", "MASTER_PORT=x"}, "MASTER_PORT", "\"x\""},
    /* Slurm */
    {__LINE__, {"SLURM_PROCID=0"}, "SLURM_NTASKS", "SLURM_NTASKS is not set, but SLURM_PROCID=\"0\" is"},
    {__LINE__, {"SLURM_PROCID=4", "SLURM_NTASKS=4", "SLURM_LOCALID=0", "SLURM_LAUNCH_NODE_IPADDR=10.0.0.1"},
     "SLURM_PROCID", "SLURM_PROCID=\"4\": not below SLURM_NTASKS=\"4\""},
    {__LINE__, {"SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_LAUNCH_NODE_IPADDR=10.0.0.1"}, "SLURM_LOCALID",
     "SLURM_LOCALID is not set"},
    {__LINE__, {"SLURM_PROCID=1", "SLURM_NTASKS=z", "SLURM_LOCALID=0"}, "SLURM_NTASKS", "\"z\""},
    {__LINE__, {"SLURM_PROCID=1", "SLURM_NTASKS=8", "SLURM_LOCALID=1", "SLURM_NTASKS_PER_NODE=4(x"}, "SLURM_NTASKS_PER_NODE",
     "SLURM_NTASKS_PER_NODE=\"4(x\": not a count of tasks per node"},
    {__LINE__, {"SLURM_PROCID=1", "SLURM_NTASKS=8", "SLURM_LOCALID=1", "SLURM_NTASKS_PER_NODE=(x2)"}, "SLURM_NTASKS_PER_NODE", "\"(x2)\""},
    {__LINE__, {"SLURM_PROCID=1", "SLURM_NTASKS=8", "SLURM_LOCALID=1", "SLURM_NTASKS_PER_NODE=4,"}, "SLURM_NTASKS_PER_NODE", "\"4,\""},
    {__LINE__, {"SLURM_PROCID=1", "SLURM_NTASKS=8", "SLURM_LOCALID=1", "SLURM_NTASKS_PER_NODE=4(y2)"}, "SLURM_NTASKS_PER_NODE", "\"4(y2)\""},
    {__LINE__, {"SLURM_PROCID=1", "SLURM_NTASKS=8", "SLURM_LOCALID=1", "SLURM_NTASKS_PER_NODE=0"}, "SLURM_NTASKS_PER_NODE", "\"0\""},
    {__LINE__, {"SLURM_PROCID=1", "SLURM_NTASKS=8", "SLURM_LOCALID=1", "SLURM_NTASKS_PER_NODE="}, "SLURM_NTASKS_PER_NODE", "\"\""},
    {__LINE__, {"SLURM_PROCID=1", "SLURM_NTASKS=8", "SLURM_LOCALID=1", "SLURM_NTASKS_PER_NODE=4(x2"}, "SLURM_NTASKS_PER_NODE", "\"4(x2\""},
    {__LINE__, {"SLURM_PROCID=1", "SLURM_NTASKS=8", "SLURM_LOCALID=2", "SLURM_NTASKS_PER_NODE=2(x4)"}, "SLURM_LOCALID",
     "SLURM_LOCALID=\"2\": not below the 2 tasks of this node"},
    {__LINE__, {"SLURM_PROCID=1", "SLURM_NTASKS=4", "SLURM_LOCALID=1", "SLURM_NTASKS_PER_NODE=8"}, "SLURM_NTASKS_PER_NODE",
     "more tasks per node (8) than SLURM_NTASKS=\"4\""},
    {__LINE__, {"SLURM_PROCID=1", "SLURM_NTASKS=7", "SLURM_LOCALID=0", "SLURM_NTASKS_PER_NODE=2(x3),1", "SLURM_NODEID=4"},
     "SLURM_NODEID", "SLURM_NODEID=\"4\": SLURM_NTASKS_PER_NODE=\"2(x3),1\" has no entry for it"},
    {__LINE__, {"SLURM_PROCID=1", "SLURM_NTASKS=7", "SLURM_LOCALID=0", "SLURM_NTASKS_PER_NODE=2(x3),1", "SLURM_NODEID=n1"},
     "SLURM_NODEID", "\"n1\""},
    {__LINE__, {"SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_LOCALID=1"}, "MASTER_ADDR", "SLURM_LAUNCH_NODE_IPADDR"},
    {__LINE__, {"SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_LOCALID=1", "SLURM_LAUNCH_NODE_IPADDR="},
     "SLURM_LAUNCH_NODE_IPADDR", "set but empty"},
    {__LINE__, {"SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_LOCALID=1", "SLURM_LAUNCH_NODE_IPADDR=h", "MASTER_PORT=70000"},
     "MASTER_PORT", "\"70000\""},
    /* Open MPI */
    {__LINE__, {"OMPI_COMM_WORLD_SIZE=2"}, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_RANK is not set"},
    {__LINE__, {"OMPI_COMM_WORLD_RANK=2", "OMPI_COMM_WORLD_SIZE=2", "OMPI_COMM_WORLD_LOCAL_RANK=0", "MASTER_ADDR=h", "MASTER_PORT=1"},
     "OMPI_COMM_WORLD_RANK", "not below OMPI_COMM_WORLD_SIZE=\"2\""},
    {__LINE__, {"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2", "OMPI_COMM_WORLD_LOCAL_RANK=1",
                "OMPI_COMM_WORLD_LOCAL_SIZE=1", "MASTER_ADDR=h", "MASTER_PORT=1"},
     "OMPI_COMM_WORLD_LOCAL_RANK", "not below OMPI_COMM_WORLD_LOCAL_SIZE=\"1\""},
    {__LINE__, {"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2", "OMPI_COMM_WORLD_LOCAL_RANK=1",
                "OMPI_COMM_WORLD_LOCAL_SIZE=2"},
     "MASTER_ADDR", "MASTER_ADDR is not set"},
    {__LINE__, {"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2", "OMPI_COMM_WORLD_LOCAL_RANK=1",
                "OMPI_COMM_WORLD_LOCAL_SIZE=two", "MASTER_ADDR=h", "MASTER_PORT=1"},
     "OMPI_COMM_WORLD_LOCAL_SIZE", "\"two\""},
};

static void check_env_bad(const env_bad *c) {
    zero_dist_env e;
    zero_error err;
    zero_result r;
    env_apply(c->kv);
    r = zero_dist_env_read(&e, &err);
    CHECKF(r == ZERO_ERR_BOOTSTRAP, "case of line %d: result %d", c->line, (int)r);
    CHECKF(err.code == r && err.item == ZERO_MSG_BOOTSTRAP_ENV, "case of line %d: item %s", c->line,
           zero_msg_name(err.item));
    CHECKF(strcmp(err.key, c->key) == 0, "case of line %d: key \"%s\", want \"%s\" (%s)", c->line, err.key, c->key,
           err.msg);
    CHECKF(strstr(err.msg, c->frag) != NULL, "case of line %d: \"%s\" lacks \"%s\"", c->line, err.msg, c->frag);
}

struct env_good {
    int line;
    const char *kv[12];
    int rank, world, local_rank, local_world;
    const char *addr;
    int port;
    const char *source;
};

static const env_good good_cases[] = {
    {__LINE__, {NULL}, 0, 1, 0, 1, "", 0, "none"},
    /* MASTER_* alone is no launcher */
    {__LINE__, {"MASTER_ADDR=h", "MASTER_PORT=5", "LOCAL_RANK=3"}, 0, 1, 0, 1, "", 0, "none"},
    {__LINE__, {"RANK=5", "WORLD_SIZE=8", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=4", "MASTER_ADDR=node0", "MASTER_PORT=29501"},
     5, 8, 1, 4, "node0", 29501, "torchrun"},
    {__LINE__, {"RANK=0", "WORLD_SIZE=2", "LOCAL_RANK=0", "MASTER_ADDR=::1", "MASTER_PORT=1"}, 0, 2, 0, -1, "::1", 1,
     "torchrun"},
    {__LINE__, {"RANK=0", "WORLD_SIZE=1"}, 0, 1, 0, -1, "", 0, "torchrun"},
    {__LINE__, {"RANK=0", "WORLD_SIZE=1", "MASTER_ADDR=a", "MASTER_PORT=65535"}, 0, 1, 0, -1, "a", 65535, "torchrun"},
    /* under torchrun itself its store holds MASTER_PORT: zero takes the next one */
    {__LINE__, {"RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=1", "MASTER_ADDR=h", "MASTER_PORT=29500", "TORCHELASTIC_RUN_ID=none"},
     1, 2, 1, -1, "h", 29501, "torchrun"},
    {__LINE__, {"RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=1", "MASTER_ADDR=h", "MASTER_PORT=65535", "TORCHELASTIC_RUN_ID=x"},
     1, 2, 1, -1, "h", 65534, "torchrun"},
    {__LINE__, {"RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=1", "MASTER_ADDR=h", "MASTER_PORT=29500", "TORCHELASTIC_RUN_ID=x",
                "ZERO_BOOTSTRAP_PORT=40001"},
     1, 2, 1, -1, "h", 40001, "torchrun"},
    {__LINE__, {"SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_LOCALID=0", "MASTER_ADDR=n1", "ZERO_BOOTSTRAP_PORT=123"},
     1, 2, 0, -1, "n1", 123, "slurm"},
    /* torchrun wins over Slurm (torchrun inside an srun step) */
    {__LINE__, {"RANK=3", "WORLD_SIZE=4", "LOCAL_RANK=3", "MASTER_ADDR=h", "MASTER_PORT=7", "SLURM_PROCID=0", "SLURM_NTASKS=1"},
     3, 4, 3, -1, "h", 7, "torchrun"},
    {__LINE__, {"SLURM_PROCID=5", "SLURM_NTASKS=8", "SLURM_LOCALID=1", "SLURM_NTASKS_PER_NODE=4(x2)",
                "SLURM_LAUNCH_NODE_IPADDR=10.1.2.3"},
     5, 8, 1, 4, "10.1.2.3", 29500, "slurm"},
    {__LINE__, {"SLURM_PROCID=5", "SLURM_NTASKS=8", "SLURM_LOCALID=1", "SLURM_NTASKS_PER_NODE=4",
                "SLURM_LAUNCH_NODE_IPADDR=10.1.2.3", "MASTER_ADDR=n1", "MASTER_PORT=1234"},
     5, 8, 1, 4, "n1", 1234, "slurm"},
    {__LINE__, {"SLURM_PROCID=1", "SLURM_NPROCS=2", "SLURM_LOCALID=0", "MASTER_ADDR=n1"}, 1, 2, 0, -1, "n1", 29500, "slurm"},
    {__LINE__, {"SLURM_PROCID=6", "SLURM_NTASKS=7", "SLURM_LOCALID=0", "SLURM_NTASKS_PER_NODE=2(x3),1", "SLURM_NODEID=3",
                "MASTER_ADDR=n1"},
     6, 7, 0, 1, "n1", 29500, "slurm"},
    {__LINE__, {"SLURM_PROCID=3", "SLURM_NTASKS=7", "SLURM_LOCALID=1", "SLURM_NTASKS_PER_NODE=2(x3),1", "SLURM_NODEID=1",
                "MASTER_ADDR=n1"},
     3, 7, 1, 2, "n1", 29500, "slurm"},
    {__LINE__, {"SLURM_PROCID=3", "SLURM_NTASKS=7", "SLURM_LOCALID=1", "SLURM_NTASKS_PER_NODE=2(x3),1", "MASTER_ADDR=n1"},
     3, 7, 1, -1, "n1", 29500, "slurm"},
    {__LINE__, {"SLURM_PROCID=3", "SLURM_NTASKS=8", "SLURM_LOCALID=3", "SLURM_STEP_TASKS_PER_NODE=4(x2)", "MASTER_ADDR=n1"},
     3, 8, 3, 4, "n1", 29500, "slurm"},
    {__LINE__, {"SLURM_PROCID=0", "SLURM_NTASKS=1"}, 0, 1, 0, -1, "", 29500, "slurm"},
    {__LINE__, {"OMPI_COMM_WORLD_RANK=3", "OMPI_COMM_WORLD_SIZE=4", "OMPI_COMM_WORLD_LOCAL_RANK=1",
                "OMPI_COMM_WORLD_LOCAL_SIZE=2", "MASTER_ADDR=fe80::1%eth0", "MASTER_PORT=2"},
     3, 4, 1, 2, "fe80::1%eth0", 2, "openmpi"},
};

static void test_env() {
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) check_env_bad(&bad_cases[i]);
    for (size_t i = 0; i < sizeof good_cases / sizeof good_cases[0]; i++) {
        const env_good *c = &good_cases[i];
        zero_dist_env e;
        zero_error err;
        zero_result r;
        env_apply(c->kv);
        memset(&e, 0x5a, sizeof e);
        r = zero_dist_env_read(&e, &err);
        CHECKF(r == ZERO_OK && err.code == ZERO_OK, "case of line %d: %s", c->line, err.msg);
        CHECKF(e.rank == c->rank && e.world == c->world && e.local_rank == c->local_rank &&
                   e.local_world == c->local_world,
               "case of line %d: rank %d world %d local %d of %d", c->line, e.rank, e.world, e.local_rank,
               e.local_world);
        CHECKF(strcmp(e.master_addr, c->addr) == 0 && e.master_port == c->port && strcmp(e.source, c->source) == 0,
               "case of line %d: \"%s\" %d %s", c->line, e.master_addr, e.master_port, e.source);
    }
    {   /* an address longer than the struct holds */
        char addr[320];
        zero_dist_env e;
        zero_error err;
        memset(addr, 'a', sizeof addr - 1);
        addr[sizeof addr - 1] = 0;
        env_clear();
        setenv("RANK", "0", 1), setenv("WORLD_SIZE", "2", 1), setenv("LOCAL_RANK", "0", 1);
        setenv("MASTER_ADDR", addr, 1), setenv("MASTER_PORT", "9", 1);
        CHECK(zero_dist_env_read(&e, &err) == ZERO_ERR_BOOTSTRAP && strcmp(err.key, "MASTER_ADDR") == 0);
        CHECK_STR_CONTAINS(err.msg, "longer than 255 characters");
        CHECK(zero_dist_env_read(NULL, &err) == ZERO_ERR_INVALID_ARG && err.item == ZERO_MSG_NULL_ARG);
        env_clear();
        CHECK(zero_dist_env_read(&e, NULL) == ZERO_OK); /* err may be NULL */
    }
    env_clear();
}

/* ---- exchange between threads ---- */

struct xarg {
    zero_dist_env env;
    unsigned char id[BLOB];
    size_t bytes;
    double timeout, delay, elapsed;
    zero_result r;
    zero_error err;
    pthread_t th;
};

static void *xthread(void *p) {
    xarg *a = (xarg *)p;
    double t0;
    zero__boot_sleep(a->delay);
    t0 = now_s();
    a->r = zero_bootstrap_exchange(&a->env, a->id, a->bytes, a->timeout, &a->err);
    a->elapsed = now_s() - t0;
    return NULL;
}

static void xsetup(xarg *a, const char *addr, int port, int rank, int world, double timeout) {
    memset(a, 0, sizeof *a);
    a->env.rank = rank;
    a->env.world = world;
    a->env.local_rank = rank;
    a->env.local_world = world;
    snprintf(a->env.master_addr, sizeof a->env.master_addr, "%s", addr);
    a->env.master_port = port;
    snprintf(a->env.source, sizeof a->env.source, "test");
    a->bytes = BLOB;
    a->timeout = timeout;
    if (rank == 0)
        for (int i = 0; i < BLOB; i++) a->id[i] = (unsigned char)zt_rand_u64();
}

static void xstart(xarg *a) { pthread_create(&a->th, NULL, xthread, a); }
static void xjoin(xarg *a) { pthread_join(a->th, NULL); }

static int free_port(int family) {
    if (family == AF_INET) return zero__boot_free_port();
    struct sockaddr_in6 a;
    socklen_t len = sizeof a;
    int fd = socket(AF_INET6, SOCK_STREAM, 0), port = -1;
    if (fd < 0) return -1;
    memset(&a, 0, sizeof a);
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_loopback;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin6_port);
    close(fd);
    return port;
}

/* world ranks on addr (all present), rank 0 after root_delay: every id equal */
static void exchange_world(const char *addr, int family, int world, double root_delay) {
    xarg *a = (xarg *)calloc((size_t)world, sizeof *a);
    int port = free_port(family), ok = 1;
    double t0 = now_s();
    for (int r = 0; r < world; r++) {
        xsetup(&a[r], addr, port, r, world, 10.0);
        if (r == 0) a[r].delay = root_delay;
    }
    for (int r = world - 1; r >= 0; r--) xstart(&a[r]);
    for (int r = 0; r < world; r++) xjoin(&a[r]);
    for (int r = 0; r < world; r++) {
        CHECKF(a[r].r == ZERO_OK, "%s world %d rank %d: %s", addr, world, r, a[r].err.msg);
        if (memcmp(a[r].id, a[0].id, BLOB) != 0) ok = 0;
    }
    CHECKF(ok, "%s world %d: a rank's id differs from rank 0's", addr, world);
    CHECKF(now_s() - t0 < 3.0, "%s world %d took %.2f s", addr, world, now_s() - t0);
    free(a);
}

static int connect_to(const char *ip, int port) {
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    inet_pton(AF_INET, ip, &a.sin_addr);
    for (double t0 = now_s(); now_s() - t0 < 3.0; zero__boot_sleep(0.005)) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) return fd;
        close(fd);
    }
    return -1;
}

static void send_all(int fd, const void *p, size_t n) {
    CHECK(zero__boot_io(fd, (void *)p, n, 1, now_s() + 3.0) == 0);
}

/* seconds until the other side closes fd (or error), at most cap */
static double until_closed(int fd, double cap) {
    double t0 = now_s();
    char buf[256];
    for (;;) {
        int e = zero__boot_wait(fd, POLLIN, t0 + cap);
        if (e) return cap;
        ssize_t k = recv(fd, buf, sizeof buf, 0);
        if (k <= 0 && !(k < 0 && errno == EINTR)) return now_s() - t0;
    }
}

struct garbage {
    int kind, port, world;
    double closed_after;
    uint32_t status; /* the refusal rank 0 sent, for the kinds that speak the protocol */
    pthread_t th;
};

static void *garbage_thread(void *p) {
    garbage *g = (garbage *)p;
    unsigned char h[ZERO__BOOT_HDR], rep[ZERO__BOOT_HDR];
    int fd = connect_to("127.0.0.1", g->port);
    g->status = 99;
    if (fd < 0) return NULL;
    switch (g->kind) {
    case 0: /* random bytes */
        for (int i = 0; i < 64; i++) h[i % ZERO__BOOT_HDR] = (unsigned char)(zt_rand_u64() | 1);
        h[0] = 'X';
        send_all(fd, h, sizeof h);
        break;
    case 1: /* nothing */ break;
    case 2: /* half a valid header, then silence */
        zero__boot_header(h, 1, (uint32_t)g->world, BLOB, 77);
        send_all(fd, h, 16);
        break;
    case 3: /* a prefix of the magic, then garbage: dropped at once */
        send_all(fd, "zeX", 3);
        break;
    case 4: /* the protocol, another world */
    case 5: /* the protocol, rank out of range */
    case 6: /* the protocol, another id size */
        zero__boot_header(h, g->kind == 5 ? (uint32_t)g->world : 1, (uint32_t)(g->kind == 4 ? g->world + 1 : g->world),
                          g->kind == 6 ? BLOB / 2 : BLOB, 78);
        send_all(fd, h, sizeof h);
        if (zero__boot_io(fd, rep, sizeof rep, 0, now_s() + 3.0) == 0 && memcmp(rep, "zero", 4) == 0)
            g->status = zero__boot_get32(rep + 8);
        break;
    case 7: /* connect and go */
        close(fd);
        g->closed_after = 0;
        return NULL;
    }
    g->closed_after = until_closed(fd, 8.0);
    close(fd);
    return NULL;
}

static void test_exchange_basic() {
    exchange_world("127.0.0.1", AF_INET, 2, 0);
    exchange_world("127.0.0.1", AF_INET, 3, 0.3); /* peers retry until rank 0 listens */
    exchange_world("127.0.0.1", AF_INET, 8, 0);
    exchange_world("localhost", AF_INET, 3, 0); /* may resolve to ::1 and 127.0.0.1: rank 0 listens on both */
    {
        int fd = socket(AF_INET6, SOCK_STREAM, 0);
        struct sockaddr_in6 a;
        memset(&a, 0, sizeof a);
        a.sin6_family = AF_INET6;
        a.sin6_addr = in6addr_loopback;
        int v6 = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
        if (fd >= 0) close(fd);
        if (v6)
            exchange_world("::1", AF_INET6, 3, 0.1);
        else
            printf("IPv6 ::1 not available: skipped\n");
    }
}

static void test_exchange_args() {
    xarg a;
    zero_error err;
    xsetup(&a, "127.0.0.1", 1, 0, 1, 1.0);
    memset(a.id, 7, BLOB);
    CHECK(zero_bootstrap_exchange(&a.env, a.id, BLOB, 1.0, &err) == ZERO_OK && a.id[5] == 7); /* world 1 */
    CHECK(zero_bootstrap_exchange(NULL, a.id, BLOB, 1.0, &err) == ZERO_ERR_INVALID_ARG && err.item == ZERO_MSG_NULL_ARG);
    xsetup(&a, "127.0.0.1", 1, 1, 2, 1.0);
    CHECK(zero_bootstrap_exchange(&a.env, NULL, BLOB, 1.0, &err) == ZERO_ERR_INVALID_ARG && err.item == ZERO_MSG_NULL_ARG);
    CHECK(zero_bootstrap_exchange(&a.env, a.id, BLOB, 0.0, &err) == ZERO_ERR_INVALID_ARG && err.item == ZERO_MSG_BAD_ARG);
    CHECK(zero_bootstrap_exchange(&a.env, a.id, BLOB, -1.0, &err) == ZERO_ERR_INVALID_ARG);
    a.env.rank = 2;
    CHECK(zero_bootstrap_exchange(&a.env, a.id, BLOB, 1.0, &err) == ZERO_ERR_INVALID_ARG && err.item == ZERO_MSG_BAD_ARG);
    a.env.rank = 1;
    a.env.master_addr[0] = 0;
    CHECK(zero_bootstrap_exchange(&a.env, a.id, BLOB, 1.0, &err) == ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "master_addr");
    xsetup(&a, "127.0.0.1", 0, 1, 2, 1.0);
    CHECK(zero_bootstrap_exchange(&a.env, a.id, BLOB, 1.0, &err) == ZERO_ERR_INVALID_ARG);
}

/* ranks listed in `absent` never come: rank 0 times out naming them */
static void missing_ranks(int world, const int *absent, int nabsent, const char *want) {
    xarg *a = (xarg *)calloc((size_t)world, sizeof *a);
    int port = free_port(AF_INET);
    char where[64];
    snprintf(where, sizeof where, "127.0.0.1:%d", port);
    for (int r = 0; r < world; r++) {
        int skip = 0;
        for (int j = 0; j < nabsent; j++) skip |= absent[j] == r;
        xsetup(&a[r], "127.0.0.1", port, r, world, 0.6);
        if (!skip) xstart(&a[r]);
    }
    for (int r = 0; r < world; r++) {
        int skip = 0;
        for (int j = 0; j < nabsent; j++) skip |= absent[j] == r;
        if (!skip) xjoin(&a[r]);
    }
    CHECK_EQ_INT(a[0].r, ZERO_ERR_TIMEOUT);
    CHECK_EQ_INT(a[0].err.item, ZERO_MSG_BOOTSTRAP_TIMEOUT);
    CHECK_STR_CONTAINS(a[0].err.msg, want);
    CHECK_STR_CONTAINS(a[0].err.msg, where);
    CHECK_STR_CONTAINS(a[0].err.msg, "HINT: ");
    CHECKF(a[0].elapsed >= 0.6 && a[0].elapsed < 1.6, "rank 0 waited %.3f s for a 0.6 s deadline", a[0].elapsed);
    for (int r = 1; r < world; r++) {
        int skip = 0;
        for (int j = 0; j < nabsent; j++) skip |= absent[j] == r;
        if (!skip) CHECKF(a[r].r == ZERO_OK && memcmp(a[r].id, a[0].id, BLOB) == 0, "rank %d: %s", r, a[r].err.msg);
    }
    free(a);
}

static void test_exchange_timeouts() {
    {
        int absent[] = {2};
        missing_ranks(3, absent, 1, "rank 2 never connected");
    }
    {
        int absent[] = {2, 5};
        missing_ranks(6, absent, 2, "ranks 2, 5 never connected");
    }
    {   /* a peer and no rank 0 */
        xarg a;
        int port = free_port(AF_INET);
        char where[64];
        snprintf(where, sizeof where, "127.0.0.1:%d", port);
        xsetup(&a, "127.0.0.1", port, 1, 2, 0.5);
        xthread(&a);
        CHECK_EQ_INT(a.r, ZERO_ERR_TIMEOUT);
        CHECK_EQ_INT(a.err.item, ZERO_MSG_BOOTSTRAP_TIMEOUT);
        CHECK_STR_CONTAINS(a.err.msg, "rank 1 of 2 could not reach rank 0 at ");
        CHECK_STR_CONTAINS(a.err.msg, where);
        CHECK_STR_CONTAINS(a.err.msg, "Connection refused");
        CHECKF(a.elapsed >= 0.5 && a.elapsed < 1.5, "the peer waited %.3f s for a 0.5 s deadline", a.elapsed);
    }
    {   /* IPv6 form of the address in the message */
        xarg a;
        int p6 = free_port(AF_INET6);
        xsetup(&a, "::1", p6 > 0 ? p6 : 9, 1, 2, 0.2);
        xthread(&a);
        CHECK_EQ_INT(a.r, ZERO_ERR_TIMEOUT);
        CHECK_STR_CONTAINS(a.err.msg, "at [::1]:");
    }
}

static void test_exchange_listen_errors() {
    xarg a;
    int port = free_port(AF_INET);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 && listen(fd, 4) == 0);
    xsetup(&a, "127.0.0.1", port, 0, 2, 1.0);
    xthread(&a);
    CHECK_EQ_INT(a.r, ZERO_ERR_BOOTSTRAP);
    CHECK_EQ_INT(a.err.item, ZERO_MSG_BOOTSTRAP_LISTEN);
    CHECK_STR_CONTAINS(a.err.msg, "cannot listen on 127.0.0.1:");
    CHECK_STR_CONTAINS(a.err.msg, "another process holds MASTER_PORT");
    CHECK(a.elapsed < 0.5);
    close(fd);
    /* an address of another host (TEST-NET-1) */
    xsetup(&a, "192.0.2.1", port, 0, 2, 1.0);
    xthread(&a);
    CHECK_EQ_INT(a.err.item, ZERO_MSG_BOOTSTRAP_LISTEN);
    CHECK_STR_CONTAINS(a.err.msg, "MASTER_ADDR is not an address of this host");
}

/* stray and garbage clients connect first; the real peers still get served at once */
static void test_exchange_garbage() {
    const int world = 4, ngarbage = 8;
    xarg a[world];
    garbage g[ngarbage];
    int port = free_port(AF_INET);
    double t0 = now_s();
    for (int r = 0; r < world; r++) {
        xsetup(&a[r], "127.0.0.1", port, r, world, 5.0);
        if (r > 0) a[r].delay = 0.5; /* after the garbage */
    }
    xstart(&a[0]);
    for (int i = 0; i < ngarbage; i++) {
        memset(&g[i], 0, sizeof g[i]);
        g[i].kind = i;
        g[i].port = port;
        g[i].world = world;
        pthread_create(&g[i].th, NULL, garbage_thread, &g[i]);
    }
    for (int r = 1; r < world; r++) xstart(&a[r]);
    for (int r = 0; r < world; r++) xjoin(&a[r]);
    for (int i = 0; i < ngarbage; i++) pthread_join(g[i].th, NULL);
    for (int r = 0; r < world; r++)
        CHECKF(a[r].r == ZERO_OK && memcmp(a[r].id, a[0].id, BLOB) == 0, "rank %d: %s", r, a[r].err.msg);
    CHECKF(a[0].elapsed < 2.0, "rank 0 took %.2f s with garbage clients around", a[0].elapsed);
    /* dropped at once, before the peers come */
    CHECKF(g[0].closed_after < 0.45, "random bytes: closed after %.2f s", g[0].closed_after);
    CHECKF(g[3].closed_after < 0.45, "a wrong magic prefix: closed after %.2f s", g[3].closed_after);
    /* silent and half-header clients: closed when rank 0 is done, not left hanging */
    CHECKF(g[1].closed_after < 3.0 && g[2].closed_after < 3.0, "silent %.2f s, half header %.2f s", g[1].closed_after,
           g[2].closed_after);
    CHECK_EQ_INT(g[4].status, ZERO__BOOT_ST_WORLD);
    CHECK_EQ_INT(g[5].status, ZERO__BOOT_ST_RANK);
    CHECK_EQ_INT(g[6].status, ZERO__BOOT_ST_BYTES);
    CHECKF(now_s() - t0 < 3.0, "%.2f s", now_s() - t0);
}

/* more silent clients than rank 0's table holds: the oldest are dropped, the peer gets through */
static void test_exchange_table_full() {
    const int nsilent = 40;
    xarg a[2];
    garbage g[nsilent];
    int port = free_port(AF_INET);
    xsetup(&a[0], "127.0.0.1", port, 0, 2, 5.0);
    xsetup(&a[1], "127.0.0.1", port, 1, 2, 5.0);
    a[1].delay = 0.4;
    xstart(&a[0]);
    for (int i = 0; i < nsilent; i++) {
        memset(&g[i], 0, sizeof g[i]);
        g[i].kind = 1;
        g[i].port = port;
        g[i].world = 2;
        pthread_create(&g[i].th, NULL, garbage_thread, &g[i]);
    }
    xstart(&a[1]);
    xjoin(&a[0]);
    xjoin(&a[1]);
    for (int i = 0; i < nsilent; i++) pthread_join(g[i].th, NULL);
    CHECKF(a[0].r == ZERO_OK && a[1].r == ZERO_OK && memcmp(a[0].id, a[1].id, BLOB) == 0, "%s / %s", a[0].err.msg,
           a[1].err.msg);
    CHECKF(a[0].elapsed < 1.5, "rank 0 took %.2f s behind %d silent clients", a[0].elapsed, nsilent);
}

/* a rank claimed twice, a world that differs; the same process retrying is served again */
static void test_exchange_mismatch() {
    {
        xarg a[4];
        int port = free_port(AF_INET);
        xsetup(&a[0], "127.0.0.1", port, 0, 3, 3.0);
        xsetup(&a[1], "127.0.0.1", port, 1, 3, 3.0);
        xsetup(&a[2], "127.0.0.1", port, 1, 3, 3.0); /* a second rank 1 */
        xsetup(&a[3], "127.0.0.1", port, 2, 3, 3.0);
        a[2].delay = 0.15;
        a[3].delay = 0.5;
        for (int i = 0; i < 4; i++) xstart(&a[i]);
        for (int i = 0; i < 4; i++) xjoin(&a[i]);
        CHECKF(a[0].r == ZERO_OK && a[1].r == ZERO_OK && a[3].r == ZERO_OK, "%s / %s / %s", a[0].err.msg,
               a[1].err.msg, a[3].err.msg);
        CHECK_EQ_INT(a[2].r, ZERO_ERR_BOOTSTRAP);
        CHECK_EQ_INT(a[2].err.item, ZERO_MSG_BOOTSTRAP_MISMATCH);
        CHECK_STR_CONTAINS(a[2].err.msg, "a rank another process already claimed");
        CHECK(a[2].elapsed < 1.0);
    }
    {
        xarg a[4];
        int port = free_port(AF_INET);
        xsetup(&a[0], "127.0.0.1", port, 0, 2, 3.0);
        xsetup(&a[1], "127.0.0.1", port, 1, 4, 3.0); /* another world */
        xsetup(&a[2], "127.0.0.1", port, 1, 2, 3.0); /* another id size */
        a[2].bytes = BLOB / 2;
        xsetup(&a[3], "127.0.0.1", port, 1, 2, 3.0);
        a[3].delay = 0.4;
        for (int i = 0; i < 4; i++) xstart(&a[i]);
        for (int i = 0; i < 4; i++) xjoin(&a[i]);
        CHECKF(a[0].r == ZERO_OK && a[3].r == ZERO_OK && memcmp(a[0].id, a[3].id, BLOB) == 0, "%s / %s", a[0].err.msg,
               a[3].err.msg);
        CHECK_EQ_INT(a[1].err.item, ZERO_MSG_BOOTSTRAP_MISMATCH);
        CHECK_STR_CONTAINS(a[1].err.msg, "world 2");
        CHECK_STR_CONTAINS(a[1].err.msg, "a different world size");
        CHECK_EQ_INT(a[2].err.item, ZERO_MSG_BOOTSTRAP_MISMATCH);
        CHECK_STR_CONTAINS(a[2].err.msg, "a different id size");
        CHECK(a[1].elapsed < 1.0 && a[2].elapsed < 1.0);
    }
    {   /* by hand: nonce 42 twice is served twice, nonce 43 for the same rank is refused */
        xarg a[2];
        int port = free_port(AF_INET);
        unsigned char h[ZERO__BOOT_HDR], rep[ZERO__BOOT_HDR + BLOB];
        uint32_t st[3] = {9, 9, 9};
        xsetup(&a[0], "127.0.0.1", port, 0, 3, 3.0);
        xsetup(&a[1], "127.0.0.1", port, 2, 3, 3.0);
        xstart(&a[0]);
        for (int k = 0; k < 3; k++) {
            int fd = connect_to("127.0.0.1", port);
            zero__boot_header(h, 1, 3, BLOB, k < 2 ? 42 : 43);
            send_all(fd, h, sizeof h);
            if (zero__boot_io(fd, rep, ZERO__BOOT_HDR, 0, now_s() + 2) == 0) st[k] = zero__boot_get32(rep + 8);
            if (st[k] == 0)
                CHECK(zero__boot_io(fd, rep + ZERO__BOOT_HDR, BLOB, 0, now_s() + 2) == 0 &&
                      memcmp(rep + ZERO__BOOT_HDR, a[0].id, BLOB) == 0);
            close(fd);
        }
        CHECK(st[0] == 0 && st[1] == 0 && st[2] == ZERO__BOOT_ST_TAKEN);
        xstart(&a[1]);
        xjoin(&a[0]);
        xjoin(&a[1]);
        CHECKF(a[0].r == ZERO_OK && a[1].r == ZERO_OK, "%s / %s", a[0].err.msg, a[1].err.msg);
    }
}

/* a fake rank 0 that breaks off twice, then answers: the peer retries with the same nonce */
struct fake {
    int lfd, mode;
    unsigned char id[BLOB];
    uint64_t nonces[3];
    int requests_ok;
    pthread_t th;
};

static void *fake_thread(void *p) {
    fake *f = (fake *)p;
    unsigned char req[ZERO__BOOT_HDR], rep[ZERO__BOOT_HDR + BLOB];
    zero__boot_header(rep, 0, 2, BLOB, 0);
    memcpy(rep + ZERO__BOOT_HDR, f->id, BLOB);
    for (int k = 0; k < 3; k++) {
        int fd = accept(f->lfd, NULL, NULL);
        if (fd < 0) return NULL;
        if (zero__boot_io(fd, req, sizeof req, 0, now_s() + 2) == 0 && memcmp(req, "zero", 4) == 0 &&
            zero__boot_get32(req + 4) == ZERO__BOOT_VERSION && zero__boot_get32(req + 8) == 1 &&
            zero__boot_get32(req + 12) == 2 && zero__boot_get64(req + 16) == BLOB) {
            f->requests_ok++;
            f->nonces[k] = zero__boot_get64(req + 24);
        }
        if (f->mode == 1) { /* not zero: an HTTP server */
            const char *http = "HTTP/1.1 400 Bad Request\r\n\r\n0123456789";
            zero__boot_io(fd, (void *)http, strlen(http), 1, now_s() + 2);
            close(fd);
            return NULL;
        }
        if (f->mode == 2) { /* accepts, never answers */
            until_closed(fd, 3.0);
            close(fd);
            return NULL;
        }
        /* 10 bytes of the reply; then the header and half the id; then all */
        zero__boot_io(fd, rep, k == 0 ? 10 : k == 1 ? ZERO__BOOT_HDR + BLOB / 2 : sizeof rep, 1, now_s() + 2);
        close(fd);
    }
    return NULL;
}

static void test_exchange_broken_root() {
    for (int mode = 0; mode < 3; mode++) {
        fake f;
        xarg a;
        struct sockaddr_in sa;
        socklen_t len = sizeof sa;
        int one = 1;
        memset(&f, 0, sizeof f);
        f.mode = mode;
        for (int i = 0; i < BLOB; i++) f.id[i] = (unsigned char)zt_rand_u64();
        f.lfd = socket(AF_INET, SOCK_STREAM, 0);
        setsockopt(f.lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        memset(&sa, 0, sizeof sa);
        sa.sin_family = AF_INET;
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        CHECK(bind(f.lfd, (struct sockaddr *)&sa, sizeof sa) == 0 && listen(f.lfd, 8) == 0 &&
              getsockname(f.lfd, (struct sockaddr *)&sa, &len) == 0);
        pthread_create(&f.th, NULL, fake_thread, &f);
        xsetup(&a, "127.0.0.1", ntohs(sa.sin_port), 1, 2, mode == 0 ? 3.0 : 0.5);
        xthread(&a);
        if (mode == 0) {
            CHECKF(a.r == ZERO_OK && memcmp(a.id, f.id, BLOB) == 0, "%s", a.err.msg);
            CHECK_EQ_INT(f.requests_ok, 3);
            CHECK(f.nonces[0] == f.nonces[1] && f.nonces[1] == f.nonces[2]);
        } else if (mode == 1) {
            CHECK_EQ_INT(a.err.item, ZERO_MSG_BOOTSTRAP_PROTOCOL);
            CHECK_STR_CONTAINS(a.err.msg, "is not zero's bootstrap");
            CHECK(a.elapsed < 0.4);
        } else {
            CHECK_EQ_INT(a.err.item, ZERO_MSG_BOOTSTRAP_TIMEOUT);
            CHECK_STR_CONTAINS(a.err.msg, "connected, but no reply came");
        }
        shutdown(f.lfd, SHUT_RDWR);
        pthread_join(f.th, NULL);
        close(f.lfd);
    }
}

/* ---- zero_cuda_launch_local ---- */

static int no_children() {
    int st;
    return waitpid(-1, &st, WNOHANG) < 0 && errno == ECHILD;
}

/* In a child of launch_local: its variables, then a bootstrap among the
   children; exit 3 + rank when all is right, 100 otherwise. */
static void launched_child(int n) {
    zero_dist_env e;
    zero_error err;
    unsigned char id[BLOB];
    int ok = 1;
    const char *mp = getenv("MASTER_PORT");
    ok &= zero_dist_env_read(&e, &err) == ZERO_OK;
    ok &= strcmp(e.source, "torchrun") == 0 && e.world == n && e.local_world == n && e.local_rank == e.rank;
    ok &= e.rank >= 0 && e.rank < n && strcmp(getenv("MASTER_ADDR"), "127.0.0.1") == 0;
    ok &= mp && atoi(mp) == e.master_port && e.master_port > 0;
    for (int i = 0; i < BLOB; i++) id[i] = e.rank == 0 ? (unsigned char)(i * 7 + e.master_port) : 0;
    ok &= zero_bootstrap_exchange(&e, id, BLOB, 5.0, &err) == ZERO_OK;
    for (int i = 0; i < BLOB; i++) ok &= id[i] == (unsigned char)(i * 7 + e.master_port);
    if (!ok) fprintf(stderr, "launched child rank %d: a check failed (%s)\n", e.rank, err.msg);
    _exit(ok ? 3 + e.rank : 100);
}

static void test_launch_local() {
    zero_error err;
    int code = 7;
    pid_t parent = getpid();
    double t0;

    CHECK(zero_cuda_launch_local(NULL, &err) == ZERO_ERR_INVALID_ARG && err.item == ZERO_MSG_NULL_ARG);

    /* a launcher's variables: nothing forked */
    {
        const char *kv[] = {"RANK=0", "WORLD_SIZE=1", "ZERO_LOCAL_GPUS=4", NULL};
        env_apply(kv);
        CHECK(zero_cuda_launch_local(&code, &err) == ZERO_OK && code == -1);
        if (getpid() != parent) _exit(99);
        CHECK(no_children());
    }
    {
        const char *kv[] = {"SLURM_PROCID=0", "SLURM_NTASKS=1", "ZERO_LOCAL_GPUS=4", NULL};
        env_apply(kv);
        code = 7;
        CHECK(zero_cuda_launch_local(&code, &err) == ZERO_OK && code == -1);
        if (getpid() != parent) _exit(99);
        CHECK(no_children());
    }
    {   /* wrong launcher variables are reported, not ignored */
        const char *kv[] = {"RANK=one", "WORLD_SIZE=2", "ZERO_LOCAL_GPUS=4", NULL};
        env_apply(kv);
        code = 7;
        CHECK(zero_cuda_launch_local(&code, &err) == ZERO_ERR_BOOTSTRAP && code == -1 && strcmp(err.key, "RANK") == 0);
        if (getpid() != parent) _exit(99);
    }
    {   /* 0 or 1 GPU: nothing forked; a malformed count is an error */
        const char *one[] = {"ZERO_LOCAL_GPUS=1", NULL}, *zero[] = {"ZERO_LOCAL_GPUS=0", NULL};
        const char *bad[] = {"ZERO_LOCAL_GPUS=two", NULL};
        env_apply(one);
        CHECK(zero_cuda_launch_local(&code, &err) == ZERO_OK && code == -1);
        if (getpid() != parent) _exit(99);
        env_apply(zero);
        CHECK(zero_cuda_launch_local(&code, &err) == ZERO_OK && code == -1);
        if (getpid() != parent) _exit(99);
        env_apply(bad);
        CHECK(zero_cuda_launch_local(&code, &err) == ZERO_ERR_BOOTSTRAP && err.item == ZERO_MSG_BOOTSTRAP_ENV &&
              strcmp(err.key, "ZERO_LOCAL_GPUS") == 0);
        CHECK_STR_CONTAINS(err.msg, "\"two\"");
        if (getpid() != parent) _exit(99);
        CHECK(no_children());
    }
    {   /* three children with torchrun's variables bootstrap among themselves; worst status 3 + 2 */
        const char *kv[] = {"ZERO_LOCAL_GPUS=3", NULL};
        env_apply(kv);
        code = 7;
        t0 = now_s();
        zero_result r = zero_cuda_launch_local(&code, &err);
        if (getpid() != parent) {
            if (r != ZERO_OK || code != -1) _exit(101);
            launched_child(3);
        }
        CHECKF(r == ZERO_OK && code == 5, "result %d, exit code %d (%s)", (int)r, code, err.msg);
        CHECK(no_children());
        CHECK(getenv("RANK") == NULL); /* the parent's environment is untouched */
        CHECKF(now_s() - t0 < 3.0, "%.2f s", now_s() - t0);
    }
    {   /* a child killed by a signal: 128 + 9 */
        const char *kv[] = {"ZERO_LOCAL_GPUS=2", NULL};
        env_apply(kv);
        zero_result r = zero_cuda_launch_local(&code, &err);
        if (getpid() != parent) {
            if (atoi(getenv("RANK")) == 1) kill(getpid(), SIGKILL);
            _exit(0);
        }
        CHECKF(r == ZERO_OK && code == 128 + SIGKILL, "result %d, exit code %d", (int)r, code);
        CHECK(no_children());
    }
    {   /* one fails, the other hangs: stopped ZERO_TIMEOUT_S after the failure; 128 + SIGTERM */
        const char *kv[] = {"ZERO_LOCAL_GPUS=2", "ZERO_TIMEOUT_S=0.4", NULL};
        env_apply(kv);
        t0 = now_s();
        zero_result r = zero_cuda_launch_local(&code, &err);
        if (getpid() != parent) {
            if (atoi(getenv("RANK")) == 0) _exit(3);
            zero__boot_sleep(30);
            _exit(0);
        }
        double dt = now_s() - t0;
        CHECKF(r == ZERO_OK && code == 128 + SIGTERM, "result %d, exit code %d", (int)r, code);
        CHECKF(dt >= 0.4 && dt < 2.0, "stopped after %.2f s", dt);
        CHECK(no_children());
    }
    env_clear();
}

/* The probe process counts what CUDA here counts (0 without a GPU or driver). */
static void test_gpu_probe() {
    int probe = zero__boot_gpu_count(), here = 0;
    CHECK(no_children());
    if (cudaGetDeviceCount(&here) != cudaSuccess) here = 0;
    CHECKF(probe == here, "probe %d, cudaGetDeviceCount %d", probe, here);
    printf("GPUs counted by the probe process: %d\n", probe);
}

/* open file descriptors of this process (-1 where /proc is missing) */
static int count_fds() {
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    if (!d) return -1;
    while (readdir(d)) n++;
    closedir(d);
    return n;
}

/* the CUDA header's public functions with each pointer argument NULL: a NULL-argument error naming it (no GPU needed) */
static void test_api_null() {
    zero_error err;
    zero_dist_env env;
    zero_cuda *c = NULL;
    unsigned char id[8] = {0};
    memset(&env, 0, sizeof env);
    env.world = 1;
    CHECK(zero_dist_env_read(NULL, &err) == ZERO_ERR_INVALID_ARG && err.item == ZERO_MSG_NULL_ARG);
    CHECK_STR_CONTAINS(err.msg, "zero_dist_env_read: env is NULL");
    CHECK(zero_bootstrap_exchange(NULL, id, sizeof id, 1.0, &err) == ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "zero_bootstrap_exchange: env is NULL");
    CHECK(zero_bootstrap_exchange(&env, NULL, sizeof id, 1.0, &err) == ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "zero_bootstrap_exchange: id is NULL");
    CHECK(zero_cuda_launch_local(NULL, &err) == ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "zero_cuda_launch_local: exit_code is NULL");
    CHECK(zero_cuda_device_query(0, NULL, &err) == ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "zero_cuda_device_query: info is NULL");
    CHECK(zero_cuda_pcie_bandwidth((size_t)1 << 20, 1, NULL, &err) == ZERO_ERR_INVALID_ARG && err.item == ZERO_MSG_NULL_ARG);
    CHECK_STR_CONTAINS(err.msg, "zero_cuda_pcie_bandwidth: bw is NULL");
    {
        zero_bandwidths bw = {0, 0, 0, 0, 0, 0};
        /* arguments are checked before any CUDA call: these fail the same with or without a GPU */
        CHECK(zero_cuda_pcie_bandwidth(1000, 1, &bw, &err) == ZERO_ERR_INVALID_ARG && err.item == ZERO_MSG_BAD_ARG);
        CHECK(zero_cuda_pcie_bandwidth((size_t)1 << 20, 0, &bw, &err) == ZERO_ERR_INVALID_ARG);
        CHECK(zero_cuda_pcie_bandwidth((size_t)1 << 20, 1001, &bw, &err) == ZERO_ERR_INVALID_ARG);
        CHECK(zero_cuda_pcie_bandwidth_ready(1000, 1, NULL, NULL, &bw, &err) == ZERO_ERR_INVALID_ARG && err.item == ZERO_MSG_BAD_ARG);
        CHECK(zero_cuda_pcie_bandwidth_ready((size_t)1 << 20, 1, NULL, NULL, NULL, &err) == ZERO_ERR_INVALID_ARG &&
              err.item == ZERO_MSG_NULL_ARG);
        CHECK(bw.h2d == 0 && bw.d2h == 0 && bw.duplex == 0);
    }
    CHECK(zero_cuda_backend_init(NULL, NULL, &err) == ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "zero_cuda_backend_init: out is NULL");
    CHECK(zero_cuda_backend(c) == NULL && zero_cuda_stream(c) == NULL && zero_cuda_comm_stream(c) == NULL &&
          zero_cuda_env(c) == NULL);
    zero_cuda_backend_destroy(c);
}

int main() {
    double t0 = now_s();
    int fds;
    zt_seed("test_cuda_boot");
    fds = count_fds();
    test_api_null();
    test_env();
    test_exchange_args();
    test_exchange_basic();
    test_exchange_timeouts();
    test_exchange_listen_errors();
    test_exchange_garbage();
    test_exchange_table_full();
    test_exchange_mismatch();
    test_exchange_broken_root();
    CHECKF(count_fds() == fds, "%d file descriptors open after the exchanges, %d before", count_fds(), fds);
    test_launch_local();
    test_gpu_probe(); /* last: it initialises CUDA in this process */
    printf("%.2f s\n", now_s() - t0);
    return zt_finish();
}
