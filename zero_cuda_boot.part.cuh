/* zero_cuda_boot.part.cuh: a part of zero_cuda.cuh in development (inlined before it lands)

   The launcher's environment (zero_dist_env_read), the exchange of rank 0's
   ncclUniqueId over TCP (zero_bootstrap_exchange) and the local launcher that
   forks one process per GPU (zero_cuda_launch_local). Host code only: POSIX
   sockets, poll, fork; no CUDA call except the GPU count, made in a child. */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#  include <sys/prctl.h>
#endif

/* strerror_r is the GNU one (char *) under g++, the POSIX one (int) elsewhere:
   the overload picks whichever this libc has. */
static ZERO__UNUSED const char *zero__boot_strerror_pick(int r, const char *buf) {
    return r == 0 ? buf : "unknown error";
}
static ZERO__UNUSED const char *zero__boot_strerror_pick(const char *s, const char *buf) {
    (void)buf;
    return s;
}
static const char *zero__boot_strerror(int e, char *buf, size_t cap) {
    buf[0] = 0;
    return zero__boot_strerror_pick(strerror_r(e, buf, cap), buf);
}

extern "C" {

/* ---- bootstrap: small helpers ---- */

static double zero__boot_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Milliseconds left before deadline for poll: 0 when past, at least 1 otherwise. */
static int zero__boot_ms_left(double deadline) {
    double left = deadline - zero__boot_now();
    if (left <= 0) return 0;
    if (left > 1e6) return 1000000000;
    return (int)(left * 1e3) + 1;
}

static void zero__boot_sleep(double s) {
    struct timespec ts;
    if (s <= 0) return;
    ts.tv_sec = (time_t)s;
    ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* "host:port", "[v6]:port" */
static void zero__boot_hostport(char *buf, size_t cap, const char *addr, int port) {
    if (strchr(addr, ':'))
        snprintf(buf, cap, "[%s]:%d", addr, port);
    else
        snprintf(buf, cap, "%s:%d", addr, port);
}

/* The whole string is decimal digits and its value lies in [lo, hi]:
   0 yes, 1 not digits (or empty), 2 out of range. */
static int zero__boot_parse_int(const char *s, long long lo, long long hi, long long *out) {
    long long v = 0;
    int big = 0;
    const char *p = s;
    if (!*p) return 1;
    for (; *p; p++) {
        if (*p < '0' || *p > '9') return 1;
        if (v <= (LLONG_MAX - 9) / 10)
            v = v * 10 + (*p - '0');
        else
            big = 1;
    }
    if (big || v < lo || v > hi) return 2;
    *out = v;
    return 0;
}

/* ---- launcher environment ---- */

/* An error about variable `name` (set into err->key too). */
static zero_result zero__boot_env_fail(zero_error *err, const char *name, const char *fmt, ...)
    ZERO__PRINTF(3, 4);
static zero_result zero__boot_env_fail(zero_error *err, const char *name, const char *fmt, ...) {
    char text[900];
    va_list ap;
    zero_result r;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    r = zero__fail(err, ZERO_MSG_BOOTSTRAP_ENV, NULL, 0, 0, "%s", text);
    if (err) snprintf(err->key, sizeof err->key, "%s", name);
    return r;
}

/* Integer variable `name` in [lo, hi]: *set = 0 when unset; error when set and
   malformed (empty, not all digits, out of range). */
static zero_result zero__boot_env_int(const char *launcher, const char *name, long long lo,
                                      long long hi, int *set, long long *out, zero_error *err) {
    const char *v = getenv(name);
    *set = v != NULL;
    if (!v) return ZERO_OK;
    switch (zero__boot_parse_int(v, lo, hi, out)) {
    case 0: return ZERO_OK;
    case 1:
        return zero__boot_env_fail(err, name, "%s=\"%s\": %s (launcher: %s)", name, v,
                                   *v ? "not a non-negative decimal integer" : "set but empty",
                                   launcher);
    default:
        return zero__boot_env_fail(err, name, "%s=\"%s\": out of range, expected %lld to %lld (launcher: %s)",
                                   name, v, lo, hi, launcher);
    }
}

/* Slurm's tasks per node: "4", "4(x2)", "2(x3),1". The count of node `node`
   (node < 0: the count when all nodes agree, -1 when they differ). 0 ok,
   1 malformed, 2 node not in the list. */
static int zero__boot_slurm_per_node(const char *s, long long node, long long *out) {
    long long first = -1, idx = 0;
    int differ = 0;
    const char *p = s;
    for (;;) {
        long long n = 0, rep = 1;
        int digits = 0;
        for (; *p >= '0' && *p <= '9'; p++, digits++)
            if (n < 1000000000LL) n = n * 10 + (*p - '0');
        if (!digits || n < 1 || n >= 1000000000LL) return 1;
        if (*p == '(') {
            if (p[1] != 'x') return 1;
            p += 2;
            rep = 0;
            digits = 0;
            for (; *p >= '0' && *p <= '9'; p++, digits++)
                if (rep < 1000000000LL) rep = rep * 10 + (*p - '0');
            if (!digits || rep < 1 || rep >= 1000000000LL || *p != ')') return 1;
            p++;
        }
        if (first < 0) first = n;
        if (n != first) differ = 1;
        if (node >= idx && node < idx + rep) {
            *out = n;
            /* still check the rest is well formed */
            node = -2;
        }
        idx += rep;
        if (*p == 0) break;
        if (*p != ',') return 1;
        p++;
    }
    if (node == -2) return 0;
    if (node >= 0) return 2;
    *out = differ ? -1 : first;
    return 0;
}

typedef struct zero__boot_launcher {
    const char *name;
    const char *detect[2];  /* any of these set: this launcher started us */
    const char *rank, *world, *world_alt, *local_rank, *local_world;
} zero__boot_launcher;

static const zero__boot_launcher zero__boot_launchers[] = {
    {"torchrun", {"RANK", "WORLD_SIZE"}, "RANK", "WORLD_SIZE", NULL, "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
    /* SLURM_NTASKS alone is also set in an salloc shell: only a task has SLURM_PROCID */
    {"slurm", {"SLURM_PROCID", NULL}, "SLURM_PROCID", "SLURM_NTASKS", "SLURM_NPROCS", "SLURM_LOCALID",
     "SLURM_NTASKS_PER_NODE"},
    {"openmpi", {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"}, "OMPI_COMM_WORLD_RANK",
     "OMPI_COMM_WORLD_SIZE", NULL, "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
};

/* The launcher whose variables are present (first match), NULL for none. */
static const zero__boot_launcher *zero__boot_detect(void) {
    size_t i, j;
    for (i = 0; i < sizeof zero__boot_launchers / sizeof zero__boot_launchers[0]; i++)
        for (j = 0; j < 2; j++)
            if (zero__boot_launchers[i].detect[j] && getenv(zero__boot_launchers[i].detect[j]))
                return &zero__boot_launchers[i];
    return NULL;
}

/* MASTER_ADDR / MASTER_PORT into env: each from the variable when set, else
   from the fallbacks (Slurm: its launch node and 29500). Required for world > 1. */
static zero_result zero__boot_env_master(zero_dist_env *env, const char *launcher,
                                         const char *addr_fallback_var, int port_fallback,
                                         zero_error *err) {
    const char *addr = getenv("MASTER_ADDR");
    const char *addr_var = "MASTER_ADDR";
    long long port = 0;
    int port_set = 0;
    zero_result r;
    if (!addr && addr_fallback_var && getenv(addr_fallback_var)) {
        addr = getenv(addr_fallback_var);
        addr_var = addr_fallback_var;
    }
    if (addr) {
        if (!*addr)
            return zero__boot_env_fail(err, addr_var, "%s=\"\": set but empty (launcher: %s)", addr_var, launcher);
        if (strlen(addr) >= sizeof env->master_addr)
            return zero__boot_env_fail(err, addr_var, "%s=\"%.40s...\": longer than %d characters (launcher: %s)",
                                       addr_var, addr, (int)sizeof env->master_addr - 1, launcher);
        snprintf(env->master_addr, sizeof env->master_addr, "%s", addr);
    } else if (env->world > 1) {
        return zero__boot_env_fail(err, "MASTER_ADDR",
                                   "MASTER_ADDR is not set, but the world has %d ranks (launcher: %s)\n"
                                   "HINT: export MASTER_ADDR (the host of rank 0) and MASTER_PORT on every rank%s",
                                   env->world, launcher,
                                   addr_fallback_var ? ", or run under srun, which sets SLURM_LAUNCH_NODE_IPADDR" : "");
    }
    if ((r = zero__boot_env_int(launcher, "MASTER_PORT", 1, 65535, &port_set, &port, err)) != ZERO_OK) return r;
    if (port_set)
        env->master_port = (int)port;
    else if (port_fallback > 0)
        env->master_port = port_fallback;
    else if (env->world > 1)
        return zero__boot_env_fail(err, "MASTER_PORT",
                                   "MASTER_PORT is not set, but the world has %d ranks (launcher: %s)\n"
                                   "HINT: export MASTER_PORT (a free TCP port on rank 0's host) on every rank",
                                   env->world, launcher);
    return ZERO_OK;
}

ZERO__DEF zero_result zero_dist_env_read(zero_dist_env *env, zero_error *err) {
    const zero__boot_launcher *L;
    long long rank = 0, world = 0, lrank = 0, lworld = -1;
    int rank_set, world_set, lrank_set, lworld_set = 0;
    const char *world_var;
    zero_result r;
    if (!env) return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "zero_dist_env_read: env is NULL");
    memset(env, 0, sizeof *env);
    L = zero__boot_detect();
    if (!L) {
        env->world = 1;
        env->local_world = 1;
        snprintf(env->source, sizeof env->source, "%s", "none");
        zero__ok(err);
        return ZERO_OK;
    }
    snprintf(env->source, sizeof env->source, "%s", L->name);
    world_var = L->world;
    if (L->world_alt && !getenv(L->world) && getenv(L->world_alt)) world_var = L->world_alt;

    if ((r = zero__boot_env_int(L->name, L->rank, 0, INT_MAX - 1, &rank_set, &rank, err)) != ZERO_OK) return r;
    if ((r = zero__boot_env_int(L->name, world_var, 1, INT_MAX, &world_set, &world, err)) != ZERO_OK) return r;
    if ((r = zero__boot_env_int(L->name, L->local_rank, 0, INT_MAX - 1, &lrank_set, &lrank, err)) != ZERO_OK)
        return r;
    if (!rank_set)
        return zero__boot_env_fail(err, L->rank, "%s is not set, but %s=\"%s\" is (launcher: %s sets both)",
                                   L->rank, world_var, getenv(world_var), L->name);
    if (!world_set)
        return zero__boot_env_fail(err, world_var, "%s is not set, but %s=\"%s\" is (launcher: %s sets both)",
                                   world_var, L->rank, getenv(L->rank), L->name);
    if (rank >= world)
        return zero__boot_env_fail(err, L->rank, "%s=\"%s\": not below %s=\"%s\" (launcher: %s)", L->rank,
                                   getenv(L->rank), world_var, getenv(world_var), L->name);
    if (!lrank_set && world > 1)
        return zero__boot_env_fail(err, L->local_rank,
                                   "%s is not set, but %s=\"%s\" is (launcher: %s); the local rank picks the GPU",
                                   L->local_rank, world_var, getenv(world_var), L->name);
    if (lrank_set && lrank >= world)
        return zero__boot_env_fail(err, L->local_rank, "%s=\"%s\": not below %s=\"%s\" (launcher: %s)",
                                   L->local_rank, getenv(L->local_rank), world_var, getenv(world_var), L->name);

    if (strcmp(L->name, "slurm") == 0) {
        /* "4", or Slurm's compressed per-node list "4(x2)", "2(x3),1" */
        const char *lw_var = getenv(L->local_world) ? L->local_world
                             : getenv("SLURM_STEP_TASKS_PER_NODE") ? "SLURM_STEP_TASKS_PER_NODE"
                                                                   : NULL;
        if (lw_var) {
            const char *v = getenv(lw_var);
            long long node = -1;
            int node_set = 0, pr;
            if ((pr = zero__boot_slurm_per_node(v, -1, &lworld)) == 0 && lworld < 0) {
                /* the nodes differ: this node's entry, by SLURM_NODEID */
                if ((r = zero__boot_env_int(L->name, "SLURM_NODEID", 0, INT_MAX, &node_set, &node, err)) != ZERO_OK)
                    return r;
                lworld = -1;
                if (node_set) {
                    pr = zero__boot_slurm_per_node(v, node, &lworld);
                    if (pr == 2)
                        return zero__boot_env_fail(err, "SLURM_NODEID",
                                                   "SLURM_NODEID=\"%s\": %s=\"%s\" has no entry for it "
                                                   "(launcher: slurm)",
                                                   getenv("SLURM_NODEID"), lw_var, v);
                }
            }
            if (pr == 1)
                return zero__boot_env_fail(err, lw_var,
                                           "%s=\"%s\": not a count of tasks per node such as \"4\" or "
                                           "\"4(x2)\" (launcher: slurm)",
                                           lw_var, v);
            lworld_set = lworld > 0;
            if (lworld_set && lworld > world)
                return zero__boot_env_fail(err, lw_var,
                                           "%s=\"%s\": more tasks per node (%lld) than %s=\"%s\" (launcher: slurm)",
                                           lw_var, v, lworld, world_var, getenv(world_var));
            if (lworld_set && lrank_set && lrank >= lworld)
                return zero__boot_env_fail(err, L->local_rank,
                                           "%s=\"%s\": not below the %lld tasks of this node (%s=\"%s\") "
                                           "(launcher: slurm)",
                                           L->local_rank, getenv(L->local_rank), lworld, lw_var, v);
        }
    } else {
        if ((r = zero__boot_env_int(L->name, L->local_world, 1, INT_MAX, &lworld_set, &lworld, err)) != ZERO_OK)
            return r;
        if (lworld_set && lworld > world)
            return zero__boot_env_fail(err, L->local_world, "%s=\"%s\": above %s=\"%s\" (launcher: %s)", L->local_world,
                                       getenv(L->local_world), world_var, getenv(world_var), L->name);
        if (lworld_set && lrank_set && lrank >= lworld)
            return zero__boot_env_fail(err, L->local_rank, "%s=\"%s\": not below %s=\"%s\" (launcher: %s)",
                                       L->local_rank, getenv(L->local_rank), L->local_world,
                                       getenv(L->local_world), L->name);
        if (!lworld_set) lworld = -1;
    }
    env->rank = (int)rank;
    env->world = (int)world;
    env->local_rank = lrank_set ? (int)lrank : 0;
    env->local_world = (int)lworld;
    if (strcmp(L->name, "slurm") == 0)
        r = zero__boot_env_master(env, L->name, "SLURM_LAUNCH_NODE_IPADDR", 29500, err);
    else
        r = zero__boot_env_master(env, L->name, NULL, 0, err);
    if (r != ZERO_OK) return r;
    zero__ok(err);
    return ZERO_OK;
}

/* ---- bootstrap exchange over TCP ----

   The protocol, all integers big-endian:
     request (peer -> rank 0), 32 bytes:
       "zero" | u32 version | u32 rank | u32 world | u64 bytes | u64 nonce
     reply (rank 0 -> peer), 32 bytes, then the blob when status is 0:
       "zero" | u32 version | u32 status | u32 world | u64 bytes | u64 0
   The nonce is random per call: the same process retrying after a broken
   connection is served again; a second process claiming a served rank is
   refused. Rank 0 serves many connections at once through poll, so a client
   that connects and stays silent, or stops half-way through its request,
   holds up nobody; such a client is dropped when the table of connections
   is full (its oldest unfinished entry goes first), at the latest when rank
   0 has served everyone. Every socket is non-blocking; every wait is a poll
   bounded by the deadline. */

#define ZERO__BOOT_VERSION 1u
#define ZERO__BOOT_HDR 32

enum {
    ZERO__BOOT_ST_OK = 0,
    ZERO__BOOT_ST_VERSION = 1,
    ZERO__BOOT_ST_WORLD = 2,
    ZERO__BOOT_ST_BYTES = 3,
    ZERO__BOOT_ST_RANK = 4,
    ZERO__BOOT_ST_TAKEN = 5
};

#ifdef MSG_NOSIGNAL
#  define ZERO__BOOT_SEND_FLAGS MSG_NOSIGNAL
#else
#  define ZERO__BOOT_SEND_FLAGS 0
#endif

/* read-side end of stream, as an error code of zero__boot_io */
#define ZERO__BOOT_EOF (-1)

static void zero__boot_put32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16), p[2] = (unsigned char)(v >> 8),
    p[3] = (unsigned char)v;
}
static void zero__boot_put64(unsigned char *p, uint64_t v) {
    zero__boot_put32(p, (uint32_t)(v >> 32));
    zero__boot_put32(p + 4, (uint32_t)v);
}
static uint32_t zero__boot_get32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}
static uint64_t zero__boot_get64(const unsigned char *p) {
    return (uint64_t)zero__boot_get32(p) << 32 | zero__boot_get32(p + 4);
}

static void zero__boot_header(unsigned char *h, uint32_t a, uint32_t b, uint64_t c, uint64_t d) {
    memcpy(h, "zero", 4);
    zero__boot_put32(h + 4, ZERO__BOOT_VERSION);
    zero__boot_put32(h + 8, a);
    zero__boot_put32(h + 12, b);
    zero__boot_put64(h + 16, c);
    zero__boot_put64(h + 24, d);
}

/* Non-blocking, close-on-exec, no SIGPIPE, no Nagle delay. */
static void zero__boot_prepare(int fd) {
    int one = 1, fl = fcntl(fd, F_GETFL, 0);
    if (fl >= 0) fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    fcntl(fd, F_SETFD, FD_CLOEXEC);
#ifdef SO_NOSIGPIPE
    setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, sizeof one);
#endif
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* 0 when fd is ready for ev (or has an error the next call will report), ETIMEDOUT
   at the deadline, else poll's errno. */
static int zero__boot_wait(int fd, short ev, double deadline) {
    for (;;) {
        struct pollfd p;
        int k, ms = zero__boot_ms_left(deadline);
        if (ms <= 0) return ETIMEDOUT;
        p.fd = fd;
        p.events = ev;
        p.revents = 0;
        k = poll(&p, 1, ms);
        if (k > 0) return 0;
        if (k < 0 && errno != EINTR) return errno;
    }
}

/* All n bytes through the non-blocking fd before the deadline (partial
   transfers and EINTR continue): 0, ZERO__BOOT_EOF, ETIMEDOUT or an errno. */
static int zero__boot_io(int fd, void *buf, size_t n, int writing, double deadline) {
    unsigned char *p = (unsigned char *)buf;
    size_t done = 0;
    while (done < n) {
        ssize_t k = writing ? send(fd, p + done, n - done, ZERO__BOOT_SEND_FLAGS) : recv(fd, p + done, n - done, 0);
        int e;
        if (k > 0) {
            done += (size_t)k;
            continue;
        }
        if (k == 0 && !writing) return ZERO__BOOT_EOF;
        if (k < 0 && errno == EINTR) continue;
        if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return errno;
        if ((e = zero__boot_wait(fd, writing ? POLLOUT : POLLIN, deadline)) != 0) return e;
    }
    return 0;
}

/* Connect to one address before the deadline: 0 and *out, or an errno. */
static int zero__boot_connect(const struct addrinfo *ai, double deadline, int *out) {
    int fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol), e, soerr = 0;
    socklen_t len = sizeof soerr;
    if (fd < 0) return errno;
    zero__boot_prepare(fd);
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        if (errno != EINPROGRESS && errno != EINTR) {
            e = errno;
            close(fd);
            return e;
        }
        if ((e = zero__boot_wait(fd, POLLOUT, deadline)) != 0) {
            close(fd);
            return e;
        }
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0) soerr = errno;
        if (soerr) {
            close(fd);
            return soerr;
        }
    }
    *out = fd;
    return 0;
}

static uint64_t zero__boot_nonce(void) {
    static volatile unsigned counter;
    struct timespec a, b;
    uint64_t x;
    int local;
    clock_gettime(CLOCK_REALTIME, &a);
    clock_gettime(CLOCK_MONOTONIC, &b);
    x = (uint64_t)a.tv_sec * 1000000007ull ^ (uint64_t)a.tv_nsec ^ (uint64_t)b.tv_nsec << 21 ^
        (uint64_t)getpid() << 40 ^ (uint64_t)(uintptr_t)&local ^ (uint64_t)__sync_add_and_fetch(&counter, 1) << 52;
    /* splitmix64 finaliser */
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static const char *zero__boot_status_text(uint32_t st) {
    switch (st) {
    case ZERO__BOOT_ST_VERSION: return "a different version of zero's bootstrap protocol";
    case ZERO__BOOT_ST_WORLD: return "a different world size";
    case ZERO__BOOT_ST_BYTES: return "a different id size";
    case ZERO__BOOT_ST_RANK: return "a rank outside 1 .. world - 1";
    case ZERO__BOOT_ST_TAKEN: return "a rank another process already claimed";
    default: return "an unknown refusal";
    }
}

/* A peer: connect to rank 0 (retrying while it is not up), send the request,
   read the reply and the blob. */
static zero_result zero__boot_peer(const zero_dist_env *env, void *id, size_t bytes, double timeout_s,
                                   double deadline, const char *where, zero_error *err) {
    unsigned char req[ZERO__BOOT_HDR], rep[ZERO__BOOT_HDR];
    char last[320], ebuf[128], port[16];
    double pause = 0.005;
    int attempts = 0;
    snprintf(last, sizeof last, "%s", "no attempt was made");
    snprintf(port, sizeof port, "%d", env->master_port);
    zero__boot_header(req, (uint32_t)env->rank, (uint32_t)env->world, (uint64_t)bytes, zero__boot_nonce());
    while (zero__boot_now() < deadline) {
        struct addrinfo hints, *res = NULL, *ai;
        int g;
        memset(&hints, 0, sizeof hints);
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        hints.ai_protocol = IPPROTO_TCP;
        hints.ai_flags = AI_NUMERICSERV;
        attempts++;
        g = getaddrinfo(env->master_addr, port, &hints, &res);
        if (g != 0) {
            snprintf(last, sizeof last, "cannot resolve \"%s\": %s", env->master_addr,
                     g == EAI_SYSTEM ? zero__boot_strerror(errno, ebuf, sizeof ebuf) : gai_strerror(g));
            res = NULL;
        }
        for (ai = res; ai; ai = ai->ai_next) {
            int fd = -1, e;
            /* a silently dropped SYN must not keep the other addresses from a try */
            double until = zero__boot_now() + 5.0;
            uint32_t st;
            if (until > deadline) until = deadline;
            if ((e = zero__boot_connect(ai, until, &fd)) != 0) {
                snprintf(last, sizeof last, "connect: %s", zero__boot_strerror(e, ebuf, sizeof ebuf));
                continue;
            }
            e = zero__boot_io(fd, req, sizeof req, 1, deadline);
            if (e == 0) e = zero__boot_io(fd, rep, sizeof rep, 0, deadline);
            if (e != 0) {
                close(fd);
                if (e == ZERO__BOOT_EOF)
                    snprintf(last, sizeof last, "%s", "rank 0 closed the connection before replying");
                else if (e == ETIMEDOUT)
                    snprintf(last, sizeof last, "%s", "connected, but no reply came");
                else
                    snprintf(last, sizeof last, "%s", zero__boot_strerror(e, ebuf, sizeof ebuf));
                continue;
            }
            if (memcmp(rep, "zero", 4) != 0) {
                close(fd);
                freeaddrinfo(res);
                return zero__fail(err, ZERO_MSG_BOOTSTRAP_PROTOCOL, NULL, 0, 0,
                                  "zero_bootstrap_exchange: rank %d of %d: what answers at %s is not zero's "
                                  "bootstrap (another program holds MASTER_PORT)\nHINT: pick a free MASTER_PORT, the "
                                  "same on every rank",
                                  env->rank, env->world, where);
            }
            st = zero__boot_get32(rep + 8);
            if (st != ZERO__BOOT_ST_OK) {
                close(fd);
                freeaddrinfo(res);
                return zero__fail(err, ZERO_MSG_BOOTSTRAP_MISMATCH, NULL, 0, 0,
                                  "zero_bootstrap_exchange: rank %d of %d: rank 0 at %s (protocol version %u, "
                                  "world %u, id of %llu bytes) refused this rank (version %u, world %d, id of %zu "
                                  "bytes): %s\nHINT: every rank needs the same WORLD_SIZE and build; each RANK "
                                  "once; another job may be using MASTER_PORT",
                                  env->rank, env->world, where, (unsigned)zero__boot_get32(rep + 4),
                                  (unsigned)zero__boot_get32(rep + 12), (unsigned long long)zero__boot_get64(rep + 16),
                                  ZERO__BOOT_VERSION, env->world, bytes, zero__boot_status_text(st));
            }
            e = zero__boot_io(fd, id, bytes, 0, deadline);
            close(fd);
            if (e != 0) {
                snprintf(last, sizeof last, "reading the id: %s",
                         e == ZERO__BOOT_EOF ? "rank 0 closed the connection"
                         : e == ETIMEDOUT   ? "timed out"
                                            : zero__boot_strerror(e, ebuf, sizeof ebuf));
                continue;
            }
            freeaddrinfo(res);
            zero__ok(err);
            return ZERO_OK;
        }
        if (res) freeaddrinfo(res);
        {
            double left = deadline - zero__boot_now();
            zero__boot_sleep(pause < left ? pause : left);
            pause = pause * 2 < 0.2 ? pause * 2 : 0.2;
        }
    }
    return zero__fail(err, ZERO_MSG_BOOTSTRAP_TIMEOUT, NULL, 0, 0,
                      "zero_bootstrap_exchange: rank %d of %d could not reach rank 0 at %s within %.3g s "
                      "(%d attempts; last: %s)\nHINT: check that rank 0 runs and reaches the bootstrap, that "
                      "MASTER_ADDR and MASTER_PORT are the same on every rank and reachable from this host "
                      "(firewall); ZERO_TIMEOUT_S sets the deadline",
                      env->rank, env->world, where, timeout_s, attempts, last);
}

typedef struct zero__boot_conn {
    int fd;
    int writing;            /* 0: reading the request; 1: writing the reply */
    int ok;                 /* the reply is the shared one with the blob */
    int rank;
    size_t got, sent;
    double since;
    unsigned char req[ZERO__BOOT_HDR];
    unsigned char rep[ZERO__BOOT_HDR]; /* a refusal */
} zero__boot_conn;

#define ZERO__BOOT_MAX_LISTEN 8

/* Bind and listen on every address master_addr resolves to. */
static zero_result zero__boot_listen(const zero_dist_env *env, const char *where, int *fds, int *n,
                                     zero_error *err) {
    struct addrinfo hints, *res = NULL, *ai, *bj;
    char port[16], ebuf[128];
    int g, e = 0, inuse = 0;
    *n = 0;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_protocol = IPPROTO_TCP;
    hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE;
    snprintf(port, sizeof port, "%d", env->master_port);
    g = getaddrinfo(env->master_addr, port, &hints, &res);
    if (g != 0)
        return zero__fail(err, ZERO_MSG_BOOTSTRAP_LISTEN, NULL, 0, 0,
                          "zero_bootstrap_exchange: rank 0 cannot resolve MASTER_ADDR \"%s\": %s\nHINT: "
                          "MASTER_ADDR must name rank 0's host (an address or a resolvable name)",
                          env->master_addr,
                          g == EAI_SYSTEM ? zero__boot_strerror(errno, ebuf, sizeof ebuf) : gai_strerror(g));
    for (ai = res; ai && *n < ZERO__BOOT_MAX_LISTEN; ai = ai->ai_next) {
        int fd, one = 1, dup = 0;
        for (bj = res; bj != ai; bj = bj->ai_next)
            if (bj->ai_addrlen == ai->ai_addrlen && memcmp(bj->ai_addr, ai->ai_addr, ai->ai_addrlen) == 0) dup = 1;
        if (dup) continue;
        fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
        if (fd < 0) {
            e = errno;
            continue;
        }
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 128) != 0) {
            e = errno;
            if (e == EADDRINUSE) inuse = 1;
            close(fd);
            continue;
        }
        zero__boot_prepare(fd);
        fds[(*n)++] = fd;
    }
    freeaddrinfo(res);
    /* one address taken by someone else: peers that try it would meet them */
    if (inuse || *n == 0) {
        int i;
        for (i = 0; i < *n; i++) close(fds[i]);
        *n = 0;
        if (inuse) e = EADDRINUSE;
        return zero__fail(err, ZERO_MSG_BOOTSTRAP_LISTEN, NULL, 0, 0,
                          "zero_bootstrap_exchange: rank 0 cannot listen on %s: %s\nHINT: %s", where,
                          zero__boot_strerror(e, ebuf, sizeof ebuf),
                          e == EADDRINUSE ? "another process holds MASTER_PORT (an earlier run still alive, or "
                                            "another job): set another MASTER_PORT on every rank"
                          : e == EADDRNOTAVAIL ? "MASTER_ADDR is not an address of this host: rank 0 must run on "
                                                 "the host MASTER_ADDR names (with Slurm, set MASTER_ADDR to the "
                                                 "first node of the job)"
                                               : "check MASTER_ADDR and MASTER_PORT");
    }
    return ZERO_OK;
}

/* Rank 0: serve the blob to world - 1 peers. */
static zero_result zero__boot_root(const zero_dist_env *env, const void *id, size_t bytes, double timeout_s,
                                   double deadline, const char *where, zero_error *err) {
    int lfd[ZERO__BOOT_MAX_LISTEN], nl = 0, i, world = env->world;
    int cap = (world - 1 < 1000 ? world - 1 : 1000) + 16, nconn = 0, nserved = 0, refused = 0;
    unsigned char *served = NULL, *claimed = NULL, *okbuf = NULL;
    uint64_t *nonces = NULL;
    zero__boot_conn *conns = NULL;
    struct pollfd *pfd = NULL;
    char refusal[200] = "";
    zero_result r = zero__boot_listen(env, where, lfd, &nl, err);
    if (r != ZERO_OK) return r;
    served = (unsigned char *)calloc((size_t)world, 1);
    claimed = (unsigned char *)calloc((size_t)world, 1);
    nonces = (uint64_t *)calloc((size_t)world, sizeof *nonces);
    okbuf = (unsigned char *)malloc(ZERO__BOOT_HDR + bytes);
    conns = (zero__boot_conn *)calloc((size_t)cap, sizeof *conns);
    pfd = (struct pollfd *)calloc((size_t)(cap + nl), sizeof *pfd);
    if (!served || !claimed || !nonces || !okbuf || !conns || !pfd) {
        r = zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0,
                       "zero_bootstrap_exchange: rank 0: no memory for the table of %d ranks", world);
        goto done;
    }
    zero__boot_header(okbuf, ZERO__BOOT_ST_OK, (uint32_t)world, (uint64_t)bytes, 0);
    if (bytes) memcpy(okbuf + ZERO__BOOT_HDR, id, bytes);

    while (nserved < world - 1) {
        int ms = zero__boot_ms_left(deadline), k, np = 0;
        if (ms <= 0) {
            char list[512];
            size_t n = 0;
            int missing = 0, shown = 0;
            list[0] = 0;
            for (i = 1; i < world; i++) {
                if (served[i]) continue;
                missing++;
                if (shown < 24 && n < sizeof list) {
                    n += (size_t)snprintf(list + n, sizeof list - n, "%s%d", shown ? ", " : "", i);
                    shown++;
                }
            }
            if (missing > shown && n < sizeof list)
                snprintf(list + n, sizeof list - n, " and %d more", missing - shown);
            r = zero__fail(err, ZERO_MSG_BOOTSTRAP_TIMEOUT, NULL, 0, 0,
                           "zero_bootstrap_exchange: rank 0 of %d listened on %s for %.3g s: %s %s never "
                           "connected%s%s%s"
                           "\nHINT: start every rank with the same MASTER_ADDR, MASTER_PORT and world size; a rank "
                           "that failed earlier logged its own error%s; ZERO_TIMEOUT_S sets the deadline",
                           world, where, timeout_s, missing == 1 ? "rank" : "ranks", list,
                           refused ? " (refused: " : "", refused ? refusal : "", refused ? ")" : "",
                           strcmp(env->source, "slurm") == 0 ? "; under Slurm start the tasks with srun (a batch "
                                                               "script alone is one task)"
                                                             : "");
            goto done;
        }
        for (i = 0; i < nl; i++) {
            pfd[np].fd = lfd[i];
            pfd[np].events = POLLIN;
            pfd[np++].revents = 0;
        }
        for (i = 0; i < nconn; i++) {
            pfd[np].fd = conns[i].fd;
            pfd[np].events = conns[i].writing ? POLLOUT : POLLIN;
            pfd[np++].revents = 0;
        }
        k = poll(pfd, (nfds_t)np, ms);
        if (k < 0) {
            char ebuf[128];
            if (errno == EINTR) continue;
            r = zero__fail(err, ZERO_MSG_BOOTSTRAP_LISTEN, NULL, 0, 0, "zero_bootstrap_exchange: rank 0: poll: %s",
                           zero__boot_strerror(errno, ebuf, sizeof ebuf));
            goto done;
        }
        if (k == 0) continue;

        /* connections first: pfd[nl + i] belongs to conns[i] */
        for (i = 0; i < nconn; i++) {
            zero__boot_conn *c = &conns[i];
            short re = pfd[nl + i].revents;
            ssize_t t = 0;
            if (!re) continue;
            if (!c->writing) {
                t = recv(c->fd, c->req + c->got, ZERO__BOOT_HDR - c->got, 0);
                if (t < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
                if (t <= 0) goto drop;
                c->got += (size_t)t;
                /* garbage is dropped as soon as it shows */
                if (memcmp(c->req, "zero", c->got < 4 ? c->got : 4) != 0) goto drop;
                if (c->got < ZERO__BOOT_HDR) continue;
                {
                    uint32_t ver = zero__boot_get32(c->req + 4), rk = zero__boot_get32(c->req + 8);
                    uint32_t w = zero__boot_get32(c->req + 12);
                    uint64_t b = zero__boot_get64(c->req + 16), nonce = zero__boot_get64(c->req + 24);
                    uint32_t st = ZERO__BOOT_ST_OK;
                    if (ver != ZERO__BOOT_VERSION)
                        st = ZERO__BOOT_ST_VERSION;
                    else if (w != (uint32_t)world)
                        st = ZERO__BOOT_ST_WORLD;
                    else if (b != (uint64_t)bytes)
                        st = ZERO__BOOT_ST_BYTES;
                    else if (rk == 0 || rk >= (uint32_t)world)
                        st = ZERO__BOOT_ST_RANK;
                    else if (claimed[rk] && nonces[rk] != nonce)
                        st = ZERO__BOOT_ST_TAKEN;
                    c->writing = 1;
                    c->rank = (int)rk;
                    if (st == ZERO__BOOT_ST_OK) {
                        claimed[rk] = 1;
                        nonces[rk] = nonce;
                        c->ok = 1;
                    } else {
                        refused++;
                        snprintf(refusal, sizeof refusal,
                                 "%d connection%s speaking zero's protocol, the last with rank %u, world %u, "
                                 "id of %llu bytes, version %u",
                                 refused, refused == 1 ? "" : "s", (unsigned)rk, (unsigned)w,
                                 (unsigned long long)b, (unsigned)ver);
                        zero__boot_header(c->rep, st, (uint32_t)world, (uint64_t)bytes, 0);
                    }
                }
                /* fall through to the write: the socket is very likely writable */
            }
            {
                const unsigned char *buf = c->ok ? okbuf : c->rep;
                size_t total = c->ok ? ZERO__BOOT_HDR + bytes : ZERO__BOOT_HDR;
                while (c->sent < total) {
                    t = send(c->fd, buf + c->sent, total - c->sent, ZERO__BOOT_SEND_FLAGS);
                    if (t > 0) {
                        c->sent += (size_t)t;
                        continue;
                    }
                    if (t < 0 && errno == EINTR) continue;
                    break;
                }
                if (c->sent < total) {
                    if (t < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) continue;
                    goto drop;
                }
                if (c->ok && !served[c->rank]) {
                    served[c->rank] = 1;
                    nserved++;
                }
            }
        drop:
            close(c->fd);
            c->fd = -1;
        }
        /* compact (the pollfd indexes are no longer needed) */
        {
            int j = 0;
            for (i = 0; i < nconn; i++)
                if (conns[i].fd >= 0) conns[j++] = conns[i];
            nconn = j;
        }
        if (nserved >= world - 1) break;

        for (i = 0; i < nl; i++) {
            int burst;
            if (!(pfd[i].revents & POLLIN)) continue;
            for (burst = 0; burst < 64; burst++) {
                int fd = accept(lfd[i], NULL, NULL);
                if (fd < 0) {
                    if (errno == EINTR || errno == ECONNABORTED) continue;
                    break; /* EAGAIN: no more; EMFILE and others: try again after the next poll */
                }
                if (nconn == cap) {
                    /* full: drop the oldest client still sending its request */
                    int j, old = -1;
                    for (j = 0; j < nconn; j++)
                        if (!conns[j].writing && (old < 0 || conns[j].since < conns[old].since)) old = j;
                    if (old < 0) {
                        close(fd);
                        continue;
                    }
                    close(conns[old].fd);
                    conns[old] = conns[--nconn];
                }
                zero__boot_prepare(fd);
                memset(&conns[nconn], 0, sizeof conns[nconn]);
                conns[nconn].fd = fd;
                conns[nconn].since = zero__boot_now();
                nconn++;
            }
        }
    }
    zero__ok(err);
    r = ZERO_OK;
done:
    for (i = 0; i < nconn; i++) close(conns[i].fd);
    for (i = 0; i < nl; i++) close(lfd[i]);
    free(served);
    free(claimed);
    free(nonces);
    free(okbuf);
    free(conns);
    free(pfd);
    return r;
}

ZERO__DEF zero_result zero_bootstrap_exchange(const zero_dist_env *env, void *id, size_t bytes,
                                              double timeout_s, zero_error *err) {
    char where[300];
    double deadline;
    if (!env) return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "zero_bootstrap_exchange: env is NULL");
    if (!id && bytes)
        return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "zero_bootstrap_exchange: id is NULL");
    if (env->world < 1 || env->rank < 0 || env->rank >= env->world)
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0,
                          "zero_bootstrap_exchange: rank %d of world %d is out of range", env->rank, env->world);
    if (env->world == 1) {
        zero__ok(err);
        return ZERO_OK;
    }
    if (!(timeout_s > 0) || timeout_s > 1e9)
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0,
                          "zero_bootstrap_exchange: timeout_s %g is not a positive number of seconds", timeout_s);
    if (bytes > ((size_t)1 << 30))
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0,
                          "zero_bootstrap_exchange: %zu bytes to exchange; at most 1 GiB", bytes);
    if (!memchr(env->master_addr, 0, sizeof env->master_addr) || !env->master_addr[0] || env->master_port < 1 ||
        env->master_port > 65535)
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0,
                          "zero_bootstrap_exchange: world %d needs master_addr and master_port (got \"%.64s\" "
                          "and %d)",
                          env->world, memchr(env->master_addr, 0, sizeof env->master_addr) ? env->master_addr : "",
                          env->master_port);
    zero__boot_hostport(where, sizeof where, env->master_addr, env->master_port);
    deadline = zero__boot_now() + timeout_s;
    if (env->rank == 0) return zero__boot_root(env, id, bytes, timeout_s, deadline, where, err);
    return zero__boot_peer(env, id, bytes, timeout_s, deadline, where, err);
}

/* ---- local launcher ---- */

/* GPUs visible to a fresh process, counted in a child so that this process
   never initialises CUDA (which does not survive fork). -1 when the count
   could not be had. */
static int zero__boot_gpu_count(void) {
    int fds[2], n = -1, st;
    pid_t pid;
    if (pipe(fds) != 0) return -1;
    fflush(NULL);
    pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        int count = 0;
        ssize_t w;
        close(fds[0]);
        if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
        w = write(fds[1], &count, sizeof count);
        _exit(w == (ssize_t)sizeof count ? 0 : 1);
    }
    close(fds[1]);
    {
        /* driver start-up on a large node takes seconds; a hung driver must not hang us */
        double deadline = zero__boot_now() + 120.0;
        size_t got = 0;
        while (got < sizeof n) {
            ssize_t k;
            if (zero__boot_wait(fds[0], POLLIN, deadline) != 0) break;
            k = read(fds[0], (char *)&n + got, sizeof n - got);
            if (k > 0)
                got += (size_t)k;
            else if (!(k < 0 && errno == EINTR))
                break;
        }
        if (got < sizeof n) {
            n = -1;
            kill(pid, SIGKILL);
        }
    }
    close(fds[0]);
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    return n;
}

/* A free TCP port on 127.0.0.1 (the kernel's pick), -errno on failure. */
static int zero__boot_free_port(void) {
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0), port, e;
    if (fd < 0) return -errno;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        e = errno;
        close(fd);
        return -e;
    }
    port = ntohs(a.sin_port);
    close(fd);
    return port;
}

static int zero__boot_child_code(int st) {
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return 1;
}

ZERO__DEF zero_result zero_cuda_launch_local(int *exit_code, zero_error *err) {
    zero_dist_env env;
    zero_result r;
    long long ngpu = 0;
    int set = 0, port, i, n, left, worst = 0, termed = 0, killed = 0;
    double grace = 600, failed_at = -1, termed_at = 0;
    pid_t *pids, parent;
    int *done;
    const char *tv;
    char ebuf[128];
    if (!exit_code) return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "zero_cuda_launch_local: exit_code is NULL");
    *exit_code = -1;
    /* started by a launcher (or its variables are wrong: say so now) */
    if ((r = zero_dist_env_read(&env, err)) != ZERO_OK) return r;
    if (strcmp(env.source, "none") != 0) {
        zero__ok(err);
        return ZERO_OK;
    }
    if ((r = zero__boot_env_int("zero_cuda_launch_local", "ZERO_LOCAL_GPUS", 0, 4096, &set, &ngpu, err)) != ZERO_OK)
        return r;
    if (!set) {
        ngpu = zero__boot_gpu_count();
        if (ngpu < 0) {
            zero__log(NULL, ZERO_LOG_WARN, ZERO_MSG_LAUNCH_INFO,
                      "zero_cuda_launch_local: the GPUs could not be counted (the probe process failed); "
                      "going on as one process");
            ngpu = 0;
        }
    }
    if (ngpu <= 1) {
        zero__ok(err);
        return ZERO_OK;
    }
    n = (int)ngpu;
    if ((tv = getenv("ZERO_TIMEOUT_S")) && *tv) {
        char *end;
        double t = strtod(tv, &end);
        if (*end == 0 && t > 0 && t < 1e7) grace = t;
    }
    port = zero__boot_free_port();
    if (port < 0)
        return zero__fail(err, ZERO_MSG_LAUNCH_LOCAL, NULL, 0, 0,
                          "zero_cuda_launch_local: no free TCP port on 127.0.0.1: %s",
                          zero__boot_strerror(-port, ebuf, sizeof ebuf));
    pids = (pid_t *)calloc((size_t)n, sizeof *pids);
    done = (int *)calloc((size_t)n, sizeof *done);
    if (!pids || !done) {
        free(pids);
        free(done);
        return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "zero_cuda_launch_local");
    }
    /* an inherited SIG_IGN would make the children vanish unreaped, statuses lost */
    {
        struct sigaction sa;
        if (sigaction(SIGCHLD, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN) signal(SIGCHLD, SIG_DFL);
    }
    zero__log(NULL, ZERO_LOG_INFO, ZERO_MSG_LAUNCH_INFO,
              "zero_cuda_launch_local: %d GPUs: starting %d processes (MASTER_ADDR 127.0.0.1, MASTER_PORT %d)", n, n,
              port);
    parent = getpid();
    fflush(NULL);
    for (i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            char v[32];
            int ok = 1;
#ifdef __linux__
            /* the launcher killed (not by a terminal's ^C, which reaches all): end too */
            prctl(PR_SET_PDEATHSIG, SIGTERM);
            if (getppid() != parent) _exit(128 + SIGTERM);
#else
            (void)parent;
#endif
            free(pids);
            free(done);
            snprintf(v, sizeof v, "%d", i);
            ok &= setenv("RANK", v, 1) == 0;
            ok &= setenv("LOCAL_RANK", v, 1) == 0;
            snprintf(v, sizeof v, "%d", n);
            ok &= setenv("WORLD_SIZE", v, 1) == 0;
            ok &= setenv("LOCAL_WORLD_SIZE", v, 1) == 0;
            ok &= setenv("MASTER_ADDR", "127.0.0.1", 1) == 0;
            snprintf(v, sizeof v, "%d", port);
            ok &= setenv("MASTER_PORT", v, 1) == 0;
            *exit_code = -1;
            if (!ok)
                return zero__fail(err, ZERO_MSG_LAUNCH_LOCAL, NULL, 0, 0,
                                  "zero_cuda_launch_local: rank %d: setenv: %s", i,
                                  zero__boot_strerror(errno, ebuf, sizeof ebuf));
            zero__ok(err);
            return ZERO_OK;
        }
        if (pid < 0) {
            int e = errno, j, st;
            for (j = 0; j < i; j++) kill(pids[j], SIGTERM);
            for (j = 0; j < i; j++)
                while (waitpid(pids[j], &st, 0) < 0 && errno == EINTR) {
                }
            free(pids);
            free(done);
            return zero__fail(err, ZERO_MSG_LAUNCH_LOCAL, NULL, 0, 0,
                              "zero_cuda_launch_local: fork of process %d of %d: %s (the %d started were stopped)",
                              i, n, zero__boot_strerror(e, ebuf, sizeof ebuf), i);
        }
        pids[i] = pid;
    }

    /* wait for ours only (waitpid by pid): other children of the program are not ours to reap */
    left = n;
    while (left > 0) {
        int progress = 0;
        for (i = 0; i < n; i++) {
            int st = 0, code;
            pid_t w;
            if (done[i]) continue;
            w = waitpid(pids[i], &st, WNOHANG);
            if (w == 0 || (w < 0 && errno == EINTR)) continue;
            done[i] = 1;
            left--;
            progress = 1;
            code = w == pids[i] ? zero__boot_child_code(st) : 1; /* w < 0: reaped elsewhere, status lost */
            if (code > worst) worst = code;
            if (code != 0) {
                if (w == pids[i] && WIFSIGNALED(st))
                    zero__log(NULL, ZERO_LOG_WARN, ZERO_MSG_LAUNCH_INFO,
                              "zero_cuda_launch_local: rank %d (pid %d) was killed by signal %d", i, (int)pids[i],
                              WTERMSIG(st));
                else
                    zero__log(NULL, ZERO_LOG_WARN, ZERO_MSG_LAUNCH_INFO,
                              "zero_cuda_launch_local: rank %d (pid %d) exited with status %d", i, (int)pids[i], code);
                if (failed_at < 0) failed_at = zero__boot_now();
            }
        }
        if (left == 0) break;
        /* after a failure the others get one deadline to fail on their own, then are stopped */
        if (failed_at >= 0 && !termed && zero__boot_now() - failed_at > grace) {
            zero__log(NULL, ZERO_LOG_WARN, ZERO_MSG_LAUNCH_INFO,
                      "zero_cuda_launch_local: %d process%s still running %.3g s after the first failure: "
                      "sending SIGTERM",
                      left, left == 1 ? "" : "es", grace);
            for (i = 0; i < n; i++)
                if (!done[i]) kill(pids[i], SIGTERM);
            termed = 1;
            termed_at = zero__boot_now();
        }
        if (termed && !killed && zero__boot_now() - termed_at > 10.0) {
            for (i = 0; i < n; i++)
                if (!done[i]) kill(pids[i], SIGKILL);
            killed = 1;
        }
        if (!progress) zero__boot_sleep(0.01);
    }
    free(pids);
    free(done);
    *exit_code = worst;
    zero__ok(err);
    return ZERO_OK;
}

} /* extern "C" */
