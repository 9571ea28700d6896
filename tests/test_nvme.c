/* test_nvme.c - zero_offload.h's NVMe tile store: round trips, rewrites, async
   ordering, corruption and truncation detection, argument and file-system
   errors, a throughput figure (printed, not checked), and
   zero_nvme_bandwidth (its rates positive, its files removed, its errors).

   Built like every test as strict C11 with no feature macro, so it uses only
   what -std=c11 shows of POSIX (mkdir/rmdir/unlink/chmod/getpid/geteuid, stdio
   for poking at the file), the same mode the header's own I/O code runs in.
   Its files live in a fresh directory under $TMPDIR (else /tmp), removed at
   the end.

   Run alone: make test T=test_nvme */
#define ZERO_IMPLEMENTATION
#define ZERO_NVME_TEST_HOOKS /* O_DIRECT refusals on demand */
#include "zero.h"
#include "zero_offload.h"
#include "zero_test.h"

#include <errno.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[512];
static char path[640]; /* the store file of prefix "t", rank 0 */

static void make_dir(void) {
    const char *t = getenv("TMPDIR");
    int i;
    if (!t || !*t) t = "/tmp";
    for (i = 0; i < 1000; i++) {
        snprintf(dir, sizeof dir, "%s/zero_nvme_test.%ld.%u", t, (long)getpid(), (unsigned)(zt_rand_u64() & 0xffffff));
        if (mkdir(dir, 0700) == 0) return;
        if (errno != EEXIST) break;
    }
    fprintf(stderr, "cannot make a temporary directory under %s: %s\n", t, strerror(errno));
    exit(1);
}

static void fill(unsigned char *p, size_t n) {
    size_t i;
    for (i = 0; i < n; i++) p[i] = (unsigned char)(zt_rand_u64() >> 56);
}

/* XOR one byte of the file at off (through stdio, under the store's back). */
static int flip_byte(long off) {
    FILE *f = fopen(path, "r+b");
    int c;
    if (!f) return 0;
    if (fseek(f, off, SEEK_SET) != 0 || (c = fgetc(f)) == EOF || fseek(f, off, SEEK_SET) != 0) {
        fclose(f);
        return 0;
    }
    fputc(c ^ 0x5a, f);
    return fclose(f) == 0;
}

/* Cut the file to `size` bytes (no ftruncate in strict C11: rewrite it in place). */
static int truncate_to(long size) {
    FILE *f = fopen(path, "rb");
    unsigned char *b = (unsigned char *)malloc((size_t)size + 1);
    int ok = 0;
    if (f && b && fread(b, 1, (size_t)size, f) == (size_t)size) {
        fclose(f);
        f = fopen(path, "wb"); /* same inode, O_TRUNC */
        ok = f && fwrite(b, 1, (size_t)size, f) == (size_t)size;
    }
    if (f) fclose(f);
    free(b);
    return ok;
}

static uint64_t file_u64(long off) {
    FILE *f = fopen(path, "rb");
    uint64_t v = 0;
    if (f) {
        if (fseek(f, off, SEEK_SET) != 0 || fread(&v, 8, 1, f) != 1) v = 0;
        fclose(f);
    }
    return v;
}

static int file_exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

#define TILE 10000 /* odd on purpose */
#define SLOT 12288 /* round_up(64 + TILE, 4096) */
#define NT 24

static void test_args(void) {
    zero_nvme *s = NULL;
    zero_error err;
    zero_aio_config aio = {1048576, 8, 1, 0, 1, 0};
    char missing[700], file[700];
    CHECK_EQ_INT(zero_nvme_open(NULL, dir, "t", 0, TILE, NULL, &err), ZERO_ERR_INVALID_ARG);
    CHECK_EQ_INT(zero_nvme_open(&s, NULL, "t", 0, TILE, NULL, &err), ZERO_ERR_INVALID_ARG);
    CHECK_EQ_INT(zero_nvme_open(&s, dir, "t", -1, TILE, NULL, &err), ZERO_ERR_INVALID_ARG);
    CHECK_EQ_INT(zero_nvme_open(&s, dir, "t", 0, 0, NULL, &err), ZERO_ERR_INVALID_ARG);
    aio.queue_depth = 0;
    CHECK_EQ_INT(zero_nvme_open(&s, dir, "t", 0, TILE, &aio, &err), ZERO_ERR_INVALID_ARG);
    CHECK(s == NULL);
    snprintf(missing, sizeof missing, "%s/no/such/dir", dir);
    CHECK_EQ_INT(zero_nvme_open(&s, missing, "t", 0, TILE, NULL, &err), ZERO_ERR_IO);
    CHECK_STR_CONTAINS(err.msg, missing);
    CHECK_STR_CONTAINS(err.msg, "No such file or directory");
    { /* a FIFO where the tile file goes: refused, never opened (a read from it would block forever) */
        char fifo[700], cmd[800];
        snprintf(fifo, sizeof fifo, "%s/f.rank0.tiles", dir);
        snprintf(cmd, sizeof cmd, "mkfifo '%s'", fifo);
        CHECK(system(cmd) == 0);
        CHECK_EQ_INT(zero_nvme_open(&s, dir, "f", 0, TILE, NULL, &err), ZERO_ERR_IO);
        CHECK(s == NULL);
        CHECK_STR_CONTAINS(err.msg, fifo);
        CHECK_STR_CONTAINS(err.msg, "not a regular file");
        CHECK(unlink(fifo) == 0);
    }
    snprintf(file, sizeof file, "%s/plain", dir);
    {
        FILE *f = fopen(file, "wb");
        if (f) fclose(f);
    }
    CHECK_EQ_INT(zero_nvme_open(&s, file, "t", 0, TILE, NULL, &err), ZERO_ERR_IO);
    CHECK_STR_CONTAINS(err.msg, "not a directory");
    unlink(file);
    /* unwritable directory: root bypasses the permission check */
    if (geteuid() == 0) {
        printf("note: running as root, the unwritable-directory check is skipped (root writes anywhere)\n");
    } else {
        char ro[700];
        snprintf(ro, sizeof ro, "%s/ro", dir);
        CHECK(mkdir(ro, 0500) == 0);
        CHECK_EQ_INT(zero_nvme_open(&s, ro, "t", 0, TILE, NULL, &err), ZERO_ERR_IO);
        CHECK_STR_CONTAINS(err.msg, ro);
        CHECK_STR_CONTAINS(err.msg, "Permission denied");
        chmod(ro, 0700);
        rmdir(ro);
    }
}

static void test_round_trip(void) {
    zero_nvme *s = NULL;
    zero_error err;
    static unsigned char want[NT][TILE], got[TILE + 1];
    size_t sizes[NT];
    int i, bad = 0;
    zero_result rc;
    CHECK_EQ_INT(zero_nvme_open(&s, dir, "t", 0, TILE, NULL, &err), ZERO_OK);
    if (!s) return;
    CHECK(file_exists(path));
    for (i = 0; i < NT; i++) {
        sizes[i] = i == 0 ? 1 : i == 1 ? TILE : (size_t)zt_rand_int(1, TILE);
        fill(want[i], sizes[i]);
    }
    for (i = 0; i < NT; i++) {
        /* odd tile order, unaligned source */
        int t = (i * 7) % NT;
        memcpy(got + 1, want[t], sizes[t]);
        rc = zero_nvme_write(s, t, got + 1, sizes[t], &err);
        if (rc != ZERO_OK) bad++, fprintf(stderr, "write %d: %s\n", t, err.msg);
    }
    CHECK_EQ_INT(bad, 0);
    for (i = NT - 1; i >= 0; i--) {
        memset(got, 0xee, sizeof got);
        rc = zero_nvme_read(s, i, got + 1, sizes[i], &err);
        if (rc != ZERO_OK || memcmp(got + 1, want[i], sizes[i]) != 0 || got[0] != 0xee ||
            (sizes[i] < TILE && got[1 + sizes[i]] != 0xee))
            bad++, fprintf(stderr, "read %d (%zu bytes): rc %d %s\n", i, sizes[i], (int)rc, err.msg);
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(file_u64(4096 + 5L * SLOT + 32), 1); /* generation of a first write */

    /* rewrite: new data and size, the generation counts up */
    sizes[5] = 777;
    fill(want[5], sizes[5]);
    CHECK_EQ_INT(zero_nvme_write(s, 5, want[5], sizes[5], &err), ZERO_OK);
    fill(want[5], sizes[5]);
    CHECK_EQ_INT(zero_nvme_write(s, 5, want[5], sizes[5], &err), ZERO_OK);
    CHECK_EQ_INT(zero_nvme_read(s, 5, got, sizes[5], &err), ZERO_OK);
    CHECK(memcmp(got, want[5], sizes[5]) == 0);
    CHECK_EQ_INT(file_u64(4096 + 5L * SLOT + 32), 3);
    CHECK_EQ_INT(file_u64(4096 + 5L * SLOT + 24), 777);
    /* the old size is now a mismatch */
    CHECK_EQ_INT(zero_nvme_read(s, 5, got, 778, &err), ZERO_ERR_CORRUPT);
    CHECK_STR_CONTAINS(err.msg, "byte count mismatch");

    /* out of range */
    CHECK_EQ_INT(zero_nvme_write(s, -1, got, 10, &err), ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "out of range");
    CHECK_EQ_INT(zero_nvme_read(s, ZERO_NVME_MAX_TILES, got, 10, &err), ZERO_ERR_INVALID_ARG);
    CHECK_EQ_INT(zero_nvme_write(s, 0, got, TILE + 1, &err), ZERO_ERR_INVALID_ARG);
    CHECK_EQ_INT(zero_nvme_read(s, 0, got, TILE + 1, &err), ZERO_ERR_INVALID_ARG);
    CHECK_EQ_INT(zero_nvme_read(s, 0, NULL, 10, &err), ZERO_ERR_INVALID_ARG);
    CHECK_EQ_INT(zero_nvme_read(s, NT + 100, got, 10, &err), ZERO_ERR_INVALID_ARG); /* never written */
    CHECK_STR_CONTAINS(err.msg, "never written");
    CHECK_EQ_INT(zero_nvme_wait(s, NULL, &err), ZERO_ERR_INVALID_ARG);

    /* keep = 1: the file stays and a reopened store reads the tiles */
    zero_nvme_close(s, 1);
    CHECK(file_exists(path));
    s = NULL;
    CHECK_EQ_INT(zero_nvme_open(&s, dir, "t", 0, TILE + 1, NULL, &err), ZERO_ERR_INVALID_ARG); /* other size */
    CHECK_STR_CONTAINS(err.msg, path);
    CHECK_EQ_INT(zero_nvme_open(&s, dir, "t", 0, TILE, NULL, &err), ZERO_OK);
    if (!s) return;
    for (i = 0; i < NT; i++) {
        rc = zero_nvme_read(s, i, got, sizes[i], &err);
        if (rc != ZERO_OK || memcmp(got, want[i], sizes[i]) != 0) bad++;
    }
    CHECK_EQ_INT(bad, 0);

    /* a byte of data changed on disk */
    CHECK(flip_byte(4096 + 2L * SLOT + 64 + (long)sizes[2] / 2));
    CHECK_EQ_INT(zero_nvme_read(s, 2, got, sizes[2], &err), ZERO_ERR_CORRUPT);
    CHECK_EQ_INT(err.code, ZERO_ERR_CORRUPT);
    CHECK_STR_CONTAINS(err.msg, path);
    CHECK_STR_CONTAINS(err.msg, "tile 2");
    CHECK_STR_CONTAINS(err.msg, "data checksum mismatch");
    CHECK_STR_CONTAINS(err.msg, "written by a crash or changed underneath");
    /* rewriting the tile heals it */
    CHECK_EQ_INT(zero_nvme_write(s, 2, want[2], sizes[2], &err), ZERO_OK);
    CHECK_EQ_INT(zero_nvme_read(s, 2, got, sizes[2], &err), ZERO_OK);
    /* a byte of the header changed: the byte count, the tile id, the magic */
    CHECK(flip_byte(4096 + 3L * SLOT + 24));
    CHECK_EQ_INT(zero_nvme_read(s, 3, got, sizes[3], &err), ZERO_ERR_CORRUPT);
    CHECK_STR_CONTAINS(err.msg, "header checksum mismatch");
    CHECK_STR_CONTAINS(err.msg, path);
    CHECK(flip_byte(4096 + 4L * SLOT + 16));
    CHECK_EQ_INT(zero_nvme_read(s, 4, got, sizes[4], &err), ZERO_ERR_CORRUPT);
    CHECK(flip_byte(4096 + 6L * SLOT + 0));
    CHECK_EQ_INT(zero_nvme_read(s, 6, got, sizes[6], &err), ZERO_ERR_CORRUPT);
    CHECK_STR_CONTAINS(err.msg, "magic");
    /* a tile moved: the header of tile 8 copied over tile 7 (valid header, wrong id) */
    {
        FILE *f = fopen(path, "r+b");
        unsigned char h[64];
        int ok = f && fseek(f, 4096 + 8L * SLOT, SEEK_SET) == 0 && fread(h, 1, 64, f) == 64 &&
                 fseek(f, 4096 + 7L * SLOT, SEEK_SET) == 0 && fwrite(h, 1, 64, f) == 64;
        if (f) ok &= fclose(f) == 0;
        CHECK(ok);
        CHECK_EQ_INT(zero_nvme_read(s, 7, got, sizes[8], &err), ZERO_ERR_CORRUPT);
        CHECK_STR_CONTAINS(err.msg, "names tile 8");
    }
    /* the file truncated underneath, in the middle of the last tile, then before it */
    CHECK(truncate_to(4096 + (long)(NT - 1) * SLOT + 100));
    CHECK_EQ_INT(zero_nvme_read(s, NT - 1, got, sizes[NT - 1], &err), ZERO_ERR_IO);
    CHECK_STR_CONTAINS(err.msg, "truncated");
    CHECK_STR_CONTAINS(err.msg, path);
    CHECK(truncate_to(4096 + 10L * SLOT));
    CHECK_EQ_INT(zero_nvme_read(s, 12, got, sizes[12], &err), ZERO_ERR_IO);
    CHECK_STR_CONTAINS(err.msg, "truncated");
    CHECK_EQ_INT(zero_nvme_read(s, 9, got, sizes[9], &err), ZERO_OK); /* before the cut: fine */
    CHECK(memcmp(got, want[9], sizes[9]) == 0);
    /* the file removed underneath */
    CHECK(unlink(path) == 0);
    CHECK_EQ_INT(zero_nvme_write(s, 0, want[0], sizes[0], &err), ZERO_ERR_IO);
    CHECK_STR_CONTAINS(err.msg, "removed underneath");
    CHECK_STR_CONTAINS(err.msg, path);
    zero_nvme_close(s, 0);
    CHECK(!file_exists(path));

    /* keep = 0 removes the file */
    CHECK_EQ_INT(zero_nvme_open(&s, dir, "t", 0, TILE, NULL, &err), ZERO_OK);
    if (!s) return;
    CHECK_EQ_INT(zero_nvme_write(s, 1, want[1], sizes[1], &err), ZERO_OK);
    CHECK(file_exists(path));
    zero_nvme_close(s, 0);
    CHECK(!file_exists(path));
}

/* Random interleavings of async writes and reads, waited for in random order,
   equal to the same operations done in order on a model. */
static void test_async(void) {
    enum { OPS = 400, TILES = 6, T = 3001 };
    zero_nvme *s = NULL;
    zero_error err;
    zero_aio_config aio = {8192, 4, 1, 0, 1, 0}; /* small chunks and queue: more interleaving */
    static unsigned char model[TILES][T], buf[OPS][T];
    size_t msize[TILES], bytes[OPS];
    int kind[OPS], tile[OPS], waited[OPS];
    zero_nvme_request *req[OPS];
    static unsigned char expect[OPS][T];
    int i, bad = 0, pending = 0;
    CHECK_EQ_INT(zero_nvme_open(&s, dir, "a", 3, T, &aio, &err), ZERO_OK);
    if (!s) return;
    for (i = 0; i < TILES; i++) { /* every tile written once first */
        msize[i] = (size_t)zt_rand_int(1, T);
        fill(model[i], msize[i]);
        CHECK_EQ_INT(zero_nvme_write(s, i, model[i], msize[i], &err), ZERO_OK);
    }
    for (i = 0; i < OPS; i++) {
        int t = (int)zt_rand_int(0, TILES - 1);
        zero_result rc;
        tile[i] = t;
        waited[i] = 0;
        kind[i] = (int)zt_rand_int(0, 1);
        if (kind[i]) { /* write */
            bytes[i] = (size_t)zt_rand_int(1, T);
            fill(buf[i], bytes[i]);
            memcpy(model[t], buf[i], bytes[i]);
            msize[t] = bytes[i];
            rc = zero_nvme_write_async(s, t, buf[i], bytes[i], &req[i], &err);
        } else {
            bytes[i] = msize[t];
            memcpy(expect[i], model[t], bytes[i]);
            rc = zero_nvme_read_async(s, t, buf[i], bytes[i], &req[i], &err);
        }
        if (rc != ZERO_OK) {
            bad++;
            req[i] = NULL;
        } else {
            pending++;
        }
        /* wait for a random pending one now and then */
        while (pending > (int)zt_rand_int(0, 12)) {
            int j = (int)zt_rand_int(0, i);
            if (!req[j] || waited[j]) continue;
            rc = zero_nvme_wait(s, req[j], &err);
            waited[j] = 1;
            pending--;
            if (rc != ZERO_OK || (!kind[j] && memcmp(buf[j], expect[j], bytes[j]) != 0)) {
                bad++;
                fprintf(stderr, "op %d (%s tile %d): rc %d %s\n", j, kind[j] ? "write" : "read", tile[j], (int)rc, err.msg);
            }
        }
    }
    for (i = 0; i < OPS; i++) {
        if (req[i] && !waited[i]) {
            zero_result rc = zero_nvme_wait(s, req[i], &err);
            if (rc != ZERO_OK || (!kind[i] && memcmp(buf[i], expect[i], bytes[i]) != 0)) bad++;
        }
    }
    CHECK_EQ_INT(bad, 0);
    /* the final state equals the model, read synchronously */
    for (i = 0; i < TILES; i++) {
        unsigned char got[T];
        CHECK_EQ_INT(zero_nvme_read(s, i, got, msize[i], &err), ZERO_OK);
        CHECK(memcmp(got, model[i], msize[i]) == 0);
    }
    /* requests left unwaited are freed by close, which first waits for them */
    for (i = 0; i < 8; i++) CHECK_EQ_INT(zero_nvme_write_async(s, i % TILES, model[i % TILES], msize[i % TILES], &req[i], &err), ZERO_OK);
    zero_nvme_close(s, 0);
}

/* O_DIRECT refused at open, or at the first I/O: buffered, same results. */
static void test_fallback(void) {
    int mode;
    for (mode = 1; mode <= 2; mode++) {
        zero_nvme *s = NULL;
        zero_error err;
        unsigned char a[5000], b[5000];
        zero__nvme_hook_einval = mode;
        CHECK_EQ_INT(zero_nvme_open(&s, dir, "fb", 0, sizeof a, NULL, &err), ZERO_OK);
        if (!s) continue;
        CHECK_EQ_INT(s->direct, 0);
        fill(a, sizeof a);
        CHECK_EQ_INT(zero_nvme_write(s, 2, a, sizeof a, &err), ZERO_OK);
        CHECK_EQ_INT(zero_nvme_read(s, 2, b, sizeof b, &err), ZERO_OK);
        CHECK(memcmp(a, b, sizeof a) == 0);
        zero_nvme_close(s, 0);
    }
    zero__nvme_hook_einval = 0;
    /* disk full, and a write that writes nothing: clear errors naming the file */
    {
        zero_nvme *s = NULL;
        zero_error err;
        unsigned char a[100] = {1};
        char fb[700];
        snprintf(fb, sizeof fb, "%s/fb.rank0.tiles", dir);
        CHECK_EQ_INT(zero_nvme_open(&s, dir, "fb", 0, sizeof a, NULL, &err), ZERO_OK);
        if (!s) return;
        zero__nvme_hook_einval = 3;
        CHECK_EQ_INT(zero_nvme_write(s, 0, a, sizeof a, &err), ZERO_ERR_IO);
        CHECK_STR_CONTAINS(err.msg, fb);
        CHECK_STR_CONTAINS(err.msg, "No space left on device");
        CHECK_STR_CONTAINS(err.msg, "disk full");
        zero__nvme_hook_einval = 4;
        CHECK_EQ_INT(zero_nvme_write(s, 0, a, sizeof a, &err), ZERO_ERR_IO);
        CHECK_STR_CONTAINS(err.msg, "short write");
        zero__nvme_hook_einval = 0;
        CHECK_EQ_INT(zero_nvme_read(s, 0, a, sizeof a, &err), ZERO_ERR_INVALID_ARG); /* never written */
        CHECK_EQ_INT(zero_nvme_write(s, 0, a, sizeof a, &err), ZERO_OK);
        CHECK_EQ_INT(zero_nvme_read(s, 0, a, sizeof a, &err), ZERO_OK);
        zero_nvme_close(s, 0);
    }
}

/* 256 MB in 8 MB tiles (64 MB under ZERO_TEST_QUICK): write-behind and
   read-ahead two deep, the figure printed, the data checked. */
static void test_throughput(void) {
    const size_t tb = (size_t)8 << 20;
    int ntiles = getenv("ZERO_TEST_QUICK") ? 8 : 32, i, bad = 0;
    zero_nvme *s = NULL;
    zero_error err;
    unsigned char *b[2];
    zero_nvme_request *req[2] = {NULL, NULL};
    double t0, tw, tr;
    CHECK_EQ_INT(zero_nvme_open(&s, dir, "bw", 0, tb, NULL, &err), ZERO_OK);
    b[0] = (unsigned char *)malloc(tb);
    b[1] = (unsigned char *)malloc(tb);
    if (!s || !b[0] || !b[1]) {
        free(b[0]);
        free(b[1]);
        zero_nvme_close(s, 0);
        return;
    }
    t0 = zt_now_s();
    for (i = 0; i < ntiles; i++) {
        unsigned char *p = b[i & 1];
        if (req[i & 1] && zero_nvme_wait(s, req[i & 1], &err) != ZERO_OK) bad++;
        memset(p, i + 1, tb);
        if (zero_nvme_write_async(s, i, p, tb, &req[i & 1], &err) != ZERO_OK) bad++;
    }
    for (i = 0; i < 2; i++)
        if (req[i] && zero_nvme_wait(s, req[i], &err) != ZERO_OK) bad++;
    tw = zt_now_s() - t0;
    t0 = zt_now_s();
    req[0] = req[1] = NULL;
    if (zero_nvme_read_async(s, 0, b[0], tb, &req[0], &err) != ZERO_OK) bad++;
    for (i = 0; i < ntiles; i++) {
        unsigned char *p = b[i & 1];
        if (i + 1 < ntiles && zero_nvme_read_async(s, i + 1, b[(i + 1) & 1], tb, &req[(i + 1) & 1], &err) != ZERO_OK)
            bad++;
        if (zero_nvme_wait(s, req[i & 1], &err) != ZERO_OK) bad++;
        if (p[0] != (unsigned char)(i + 1) || p[tb - 1] != (unsigned char)(i + 1)) bad++;
    }
    tr = zt_now_s() - t0;
    CHECK_EQ_INT(bad, 0);
    printf("nvme store throughput (%s, %d x 8 MB tiles = %d MB): write %.0f MB/s, read %.0f MB/s "
           "(page cache may serve the reads; not a check)\n",
           dir, ntiles, ntiles * 8, ntiles * 8 / tw, ntiles * 8 / tr);
    free(b[0]);
    free(b[1]);
    zero_nvme_close(s, 0);
}

/* r must be ZERO_ERR_INVALID_ARG of `item`, its message holding `text`, the
   rates given (NULL: the argument under test) set to 0 */
static void bw_refused(zero_result r, const zero_error *e, zero_msg item, const char *text, const double *rd,
                       const double *wr) {
    CHECK_EQ_INT(r, ZERO_ERR_INVALID_ARG);
    CHECK_EQ_INT(e->item, item);
    CHECK_STR_CONTAINS(e->msg, text);
    CHECK((!rd || *rd == 0) && (!wr || *wr == 0));
}

typedef struct bw_run {
    const char *dir;
    zero_result rc;
    double rd, wr;
} bw_run;

static void *bw_thread(void *arg) {
    bw_run *b = (bw_run *)arg;
    zero_error err;
    b->rc = zero_nvme_bandwidth(b->dir, (size_t)1 << 18, 16, NULL, &b->rd, &b->wr, &err);
    if (b->rc != ZERO_OK) fprintf(stderr, "zero_nvme_bandwidth in a thread: %s\n", err.msg);
    return NULL;
}

/* zero_nvme_bandwidth in a directory of its own, which must be empty
   afterwards (rmdir succeeds): every store file removed, on success and on
   error. */
static void test_bandwidth(void) {
    const size_t mib = (size_t)1 << 20;
    char sub[700], missing[720];
    double rd = -1, wr = -1;
    zero_error err;
    zero_aio_config aio = {8192, 3, 1, 0, 1, 0};
    snprintf(sub, sizeof sub, "%s/bw", dir);
    CHECK(mkdir(sub, 0700) == 0);
    CHECK_EQ_INT(zero_nvme_bandwidth(sub, mib, 8, NULL, &rd, &wr, &err), ZERO_OK);
    CHECKF(isfinite(rd) && rd > 0 && isfinite(wr) && wr > 0, "read %g, write %g bytes/s", rd, wr);
    printf("zero_nvme_bandwidth (%s, 8 x 1 MiB tiles): write %.0f MB/s, read %.0f MB/s\n", sub, wr / 1e6, rd / 1e6);
    /* a queue depth that does not divide the tile count, an odd tile size, small I/O calls */
    rd = wr = -1;
    CHECK_EQ_INT(zero_nvme_bandwidth(sub, 10000, 7, &aio, &rd, &wr, &err), ZERO_OK);
    CHECK(rd > 0 && wr > 0);
    /* a tile smaller than its id stamp, one tile; a queue_depth of 0 means 8 */
    aio.queue_depth = 0;
    CHECK_EQ_INT(zero_nvme_bandwidth(sub, 3, 1, &aio, &rd, &wr, &err), ZERO_OK);
    CHECK_EQ_INT(zero_nvme_bandwidth(sub, 4096, 4096, NULL, &rd, &wr, &err), ZERO_OK); /* the most tiles */
    /* O_DIRECT refused: buffered, still measured */
    zero__nvme_hook_einval = 1;
    CHECK_EQ_INT(zero_nvme_bandwidth(sub, mib, 2, NULL, &rd, &wr, &err), ZERO_OK);
    /* the disk full at the first write: the store's error, the file removed all the same */
    zero__nvme_hook_einval = 3;
    rd = wr = -1;
    CHECK_EQ_INT(zero_nvme_bandwidth(sub, mib, 8, NULL, &rd, &wr, &err), ZERO_ERR_IO);
    CHECK_STR_CONTAINS(err.msg, "No space left on device");
    CHECK_STR_CONTAINS(err.msg, sub);
    CHECK(rd == 0 && wr == 0);
    zero__nvme_hook_einval = 0;
    { /* two at once in the same directory (ranks of one host): separate files */
        bw_run b[2];
        pthread_t th[2];
        int i;
        for (i = 0; i < 2; i++) {
            b[i].dir = sub;
            b[i].rc = ZERO_ERR_STATE;
            CHECK(pthread_create(&th[i], NULL, bw_thread, &b[i]) == 0);
        }
        for (i = 0; i < 2; i++) {
            pthread_join(th[i], NULL);
            CHECK_EQ_INT(b[i].rc, ZERO_OK);
            CHECK(b[i].rd > 0 && b[i].wr > 0);
        }
    }
    CHECKF(rmdir(sub) == 0, "%s not empty after zero_nvme_bandwidth: %s", sub, strerror(errno));

    /* argument errors, the message naming the argument */
    rd = wr = -1;
    bw_refused(zero_nvme_bandwidth(NULL, mib, 8, NULL, &rd, &wr, &err), &err, ZERO_MSG_NULL_ARG,
               "zero_nvme_bandwidth: dir is NULL", &rd, &wr);
    wr = -1;
    bw_refused(zero_nvme_bandwidth(dir, mib, 8, NULL, NULL, &wr, &err), &err, ZERO_MSG_NULL_ARG,
               "zero_nvme_bandwidth: read_bytes_per_s is NULL", NULL, &wr);
    rd = -1;
    bw_refused(zero_nvme_bandwidth(dir, mib, 8, NULL, &rd, NULL, &err), &err, ZERO_MSG_NULL_ARG,
               "zero_nvme_bandwidth: write_bytes_per_s is NULL", &rd, NULL);
    rd = wr = -1;
    bw_refused(zero_nvme_bandwidth(dir, 0, 8, NULL, &rd, &wr, &err), &err, ZERO_MSG_BAD_ARG,
               "zero_nvme_bandwidth: tile_bytes = 0", &rd, &wr);
    rd = wr = -1;
    bw_refused(zero_nvme_bandwidth(dir, ((size_t)1 << 40) + 1, 8, NULL, &rd, &wr, &err), &err, ZERO_MSG_BAD_ARG,
               "zero_nvme_bandwidth: tile_bytes = 1099511627777", &rd, &wr);
    rd = wr = -1;
    bw_refused(zero_nvme_bandwidth(dir, mib, 0, NULL, &rd, &wr, &err), &err, ZERO_MSG_BAD_ARG,
               "zero_nvme_bandwidth: tiles = 0", &rd, &wr);
    bw_refused(zero_nvme_bandwidth(dir, mib, -3, NULL, &rd, &wr, &err), &err, ZERO_MSG_BAD_ARG,
               "zero_nvme_bandwidth: tiles = -3", &rd, &wr);
    bw_refused(zero_nvme_bandwidth(dir, mib, 4097, NULL, &rd, &wr, &err), &err, ZERO_MSG_BAD_ARG,
               "zero_nvme_bandwidth: tiles = 4097", &rd, &wr);
    /* a directory that does not exist: zero_nvme_open's error */
    snprintf(missing, sizeof missing, "%s/no/such/dir", dir);
    rd = wr = -1;
    CHECK_EQ_INT(zero_nvme_bandwidth(missing, mib, 8, NULL, &rd, &wr, &err), ZERO_ERR_IO);
    CHECK_EQ_INT(err.item, ZERO_MSG_FILE_OPEN);
    CHECK_STR_CONTAINS(err.msg, missing);
    CHECK_STR_CONTAINS(err.msg, "No such file or directory");
    CHECK(rd == 0 && wr == 0);
}

int main(void) {
    zt_seed("test_nvme");
    make_dir();
    snprintf(path, sizeof path, "%s/t.rank0.tiles", dir);
    test_args();
    test_round_trip();
    test_async();
    test_fallback();
    test_throughput();
    test_bandwidth();
    if (rmdir(dir) != 0) {
        CHECKF(0, "temporary directory %s left non-empty: %s", dir, strerror(errno));
    }
    return zt_finish();
}
