/* tests/fuzz_safetensors.c - libFuzzer target for the safetensors reader
   (zero.h: zero_safetensors_open and zero_safetensors_read).

   Fuzz (from the repository root; `make fuzz-safetensors` does this):
       clang -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -I. -o fz tests/fuzz_safetensors.c -lm -lpthread
       ./fz -max_total_time=600 build/fuzz_safetensors_corpus tests/fuzz_safetensors_corpus
   Replay without libFuzzer (what `make test` does with the seed corpus):
       clang ... -DZERO_FUZZ_REPLAY ... && ./fr tests/fuzz_safetensors_corpus/[a-z]*
   The seed corpus comes from `test_safetensors --corpus DIR`.

   Each input is written to a file in a scratch directory and opened. An
   input that starts with '{' is model.safetensors.index.json beside two
   fixed shards (a.safetensors: tensors a and b; b.safetensors: tensor c),
   opened by its path or by the directory. Any other input whose first byte
   is odd gets its 8-byte header length rewritten to the end of the JSON
   object behind it (and the spaces after that), so the fuzzer gets past
   the length to the header and the data checks.

   On success: each tensor's data lies inside its file; numel is the
   product of the shape and bytes is numel times the dtype's size; names
   are NUL-terminated, in name order, and find(get(i)->name) == i; every
   F32, F16 and BF16 tensor reads whole into fp32 with the file's values
   (2-D: transposed too), F64 reads; other dtypes are refused with a
   message. On failure the error has an item and a message. A broken
   invariant aborts (under replay: counts as a failed file). */
#define _POSIX_C_SOURCE 200809L /* mkdtemp, pread */
#define ZERO_IMPLEMENTATION
#include "zero.h"
#include "fuzz_common.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>


static char fz_dir[64];
static char fz_input[128], fz_index[128];

static void fz_cleanup(void) {
    static const char *const names[] = {"a.safetensors", "b.safetensors", "input.safetensors",
                                        "model.safetensors.index.json"};
    char p[128];
    size_t i;
    for (i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", fz_dir, names[i]);
        unlink(p);
    }
    rmdir(fz_dir);
}

static int fz_write(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    int ok;
    if (!f) return 0;
    ok = n == 0 || fwrite(p, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

/* a shard: json padded with spaces to a multiple of 8, its length in front, n bytes of data */
static void fz_shard(const char *name, const char *json, const unsigned char *data, size_t n) {
    unsigned char buf[512];
    size_t h = strlen(json), hp = (h + 7) / 8 * 8, i;
    char path[128];
    for (i = 0; i < 8; i++) buf[i] = (unsigned char)((uint64_t)hp >> (8 * i));
    memcpy(buf + 8, json, h);
    memset(buf + 8 + h, ' ', hp - h);
    memcpy(buf + 8 + hp, data, n);
    snprintf(path, sizeof path, "%s/%s", fz_dir, name);
    if (!fz_write(path, buf, 8 + hp + n)) abort();
}

static void fz_setup(void) {
    static const unsigned char da[14] = {0, 0, 0x80, 0x3F, 0, 0, 0, 0xC0, 0x80, 0x3F, 0x49, 0x40, 0x80, 0xFF};
    static const unsigned char db[16] = {0, 0, 0, 0, 0, 0, 0xF0, 0x3F, 0x9A, 0x99, 0x99, 0x99, 0x99, 0x99, 0xB9, 0x3F};
    if (fz_dir[0]) return;
    snprintf(fz_dir, sizeof fz_dir, "/tmp/zero_fuzz_st_XXXXXX");
    if (!mkdtemp(fz_dir)) abort();
    atexit(fz_cleanup);
    fz_shard("a.safetensors",
             "{\"__metadata__\":{\"format\":\"pt\"},\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
             "\"b\":{\"dtype\":\"BF16\",\"shape\":[3],\"data_offsets\":[8,14]}}",
             da, sizeof da);
    fz_shard("b.safetensors", "{\"c\":{\"dtype\":\"F64\",\"shape\":[2,1],\"data_offsets\":[0,16]}}", db, sizeof db);
    snprintf(fz_input, sizeof fz_input, "%s/input.safetensors", fz_dir);
    snprintf(fz_index, sizeof fz_index, "%s/model.safetensors.index.json", fz_dir);
}

/* one past the '}' that closes the JSON object at p (p[0] == '{'), or 0 */
static size_t fz_json_end(const unsigned char *p, size_t n) {
    size_t i;
    int depth = 0, str = 0, esc = 0;
    for (i = 0; i < n; i++) {
        unsigned char c = p[i];
        if (str) {
            if (esc) esc = 0;
            else if (c == '\\') esc = 1;
            else if (c == '"') str = 0;
        } else if (c == '"') {
            str = 1;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            if (--depth <= 0) return depth == 0 ? i + 1 : 0;
        }
    }
    return 0;
}

static size_t fz_dtype_size(const char *dt) {
    static const struct {
        const char *name;
        size_t size;
    } T[] = {{"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8}, {"I32", 4}, {"I16", 2}, {"I8", 1},
             {"U64", 8}, {"U32", 4}, {"U16", 2}, {"U8", 1},   {"BOOL", 1}};
    size_t i;
    for (i = 0; i < sizeof T / sizeof T[0]; i++)
        if (!strcmp(dt, T[i].name)) return T[i].size;
    return 0;
}

static float fz_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* the file's values of an F32 / F16 / BF16 tensor, read here, against what zero_safetensors_read gave */
static void fz_values(const zero_safetensors_tensor *t, const float *got) {
    size_t es = fz_dtype_size(t->dtype), i;
    unsigned char *raw = (unsigned char *)malloc(t->bytes ? t->bytes : 1);
    int fd = open(t->file, O_RDONLY);
    int is32 = !strcmp(t->dtype, "F32"), is16 = !strcmp(t->dtype, "F16");
    FZ_ASSERT(raw && fd >= 0);
    if (raw && fd >= 0 && pread(fd, raw, t->bytes, (off_t)t->offset) == (ssize_t)t->bytes) {
        for (i = 0; i < (size_t)t->numel; i++) {
            const unsigned char *p = raw + i * es;
            float want = is32   ? fz_f32((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24)
                         : is16 ? zero_f16_to_f32((zero_f16)(p[0] | p[1] << 8))
                                : zero_bf16_to_f32((zero_bf16)(p[0] | p[1] << 8));
            if (want != want) FZ_ASSERT(got[i] != got[i]);
            else FZ_ASSERT(memcmp(&got[i], &want, 4) == 0);
        }
    } else {
        FZ_ASSERT(0 && "pread of a tensor's data");
    }
    if (fd >= 0) close(fd);
    free(raw);
}

static void fz_check(zero_safetensors *st, size_t size) {
    int n = zero_safetensors_count(st), i, d;
    const char *v;
    FZ_ASSERT(n >= 0);
    FZ_ASSERT(zero_safetensors_get(st, -1) == NULL && zero_safetensors_get(st, n) == NULL);
    for (i = 0; i < n; i++) {
        const zero_safetensors_tensor *t = zero_safetensors_get(st, i);
        struct stat sb;
        int64_t numel = 1;
        size_t es;
        int shape_ok = 1;
        FZ_ASSERT(t && t->name && t->dtype && t->file);
        if (!t || !t->name || !t->dtype || !t->file) return;
        FZ_ASSERT(strlen(t->name) <= size && strlen(t->dtype) <= size);
        if (i) FZ_ASSERT(strcmp(zero_safetensors_get(st, i - 1)->name, t->name) < 0);
        FZ_ASSERT(zero_safetensors_find(st, t->name) == i);
        FZ_ASSERT(t->ndim >= 0 && t->ndim <= ZERO_MAX_DIMS);
        for (d = 0; d < t->ndim && d < ZERO_MAX_DIMS; d++) {
            if (t->shape[d] < 0 || (t->shape[d] > 0 && numel > INT64_MAX / t->shape[d])) shape_ok = 0;
            else numel *= t->shape[d];
        }
        FZ_ASSERT(shape_ok && numel == t->numel);
        FZ_ASSERT(stat(t->file, &sb) == 0 && S_ISREG(sb.st_mode));
        FZ_ASSERT(t->offset <= (uint64_t)sb.st_size && t->bytes <= (uint64_t)sb.st_size - t->offset);
        es = fz_dtype_size(t->dtype);
        if (es) FZ_ASSERT(t->numel >= 0 && (uint64_t)t->numel <= t->bytes / es && t->bytes == (uint64_t)t->numel * es);
        if (!shape_ok || numel != t->numel || fz_bad) return; /* nothing below is safe */
        if (!strcmp(t->dtype, "F32") || !strcmp(t->dtype, "F16") || !strcmp(t->dtype, "BF16") || !strcmp(t->dtype, "F64")) {
            float *out = (float *)malloc(sizeof(float) * (size_t)(t->numel + 1)), *tr;
            zero_error err;
            zero_result r;
            if (!out) return;
            r = zero_safetensors_read(st, i, 0, t->numel, 0, ZERO_DTYPE_FP32, out, &err);
            FZ_ASSERT(r == ZERO_OK);
            if (r == ZERO_OK && strcmp(t->dtype, "F64") != 0) fz_values(t, out);
            if (r == ZERO_OK && t->ndim == 2 && (tr = (float *)malloc(sizeof(float) * (size_t)(t->numel + 1)))) {
                int64_t k, R = t->shape[0], C = t->shape[1];
                r = zero_safetensors_read(st, i, 0, t->numel, 1, ZERO_DTYPE_FP32, tr, &err);
                FZ_ASSERT(r == ZERO_OK);
                for (k = 0; r == ZERO_OK && k < t->numel; k++) {
                    float a = tr[k], b = out[(k % R) * C + k / R];
                    FZ_ASSERT(memcmp(&a, &b, 4) == 0 || (a != a && b != b));
                }
                free(tr);
            }
            if (t->numel > 0) { /* one element into 16 bits */
                zero_bf16 h[2] = {0x5A5A, 0x5A5A};
                FZ_ASSERT(zero_safetensors_read(st, i, t->numel - 1, 1, 0, ZERO_DTYPE_BF16, h, &err) == ZERO_OK);
                FZ_ASSERT(h[1] == 0x5A5A);
            }
            free(out);
        } else if (t->numel > 0) {
            float out[1];
            zero_error err;
            FZ_ASSERT(zero_safetensors_read(st, i, 0, 1, 0, ZERO_DTYPE_FP32, out, &err) != ZERO_OK && err.msg[0]);
        }
    }
    FZ_ASSERT(zero_safetensors_find(st, "") < n);
    if ((v = zero_safetensors_metadata(st, "format"))) FZ_ASSERT(strlen(v) <= size);
}

static int fz_one(const unsigned char *data, size_t size) {
    unsigned char *b = (unsigned char *)malloc(size ? size : 1);
    int index = size > 0 && data[0] == '{';
    const char *file;
    zero_safetensors *st = NULL;
    zero_error err;
    zero_result r;
    if (!b) return 1;
    fz_setup();
    fz_bad = 0;
    memcpy(b, data, size);
    if (!index && size >= 9 && (b[0] & 1)) { /* the header length right: reach the JSON and the data */
        uint64_t len = fz_json_end(b + 8, size - 8);
        int i;
        if (!len) len = size - 8;
        while (8 + len < size && b[8 + len] == ' ') len++;
        for (i = 0; i < 8; i++) b[i] = (unsigned char)(len >> (8 * i));
    }
    file = index ? fz_index : fz_input;
    if (!fz_write(file, b, size)) abort();
    memset(&err, 0, sizeof err);
    r = zero_safetensors_open(&st, index && (size & 1) ? fz_dir : file, &err);
    FZ_ASSERT(r == err.code);
    if (r == ZERO_OK) {
        FZ_ASSERT(st != NULL && err.item == ZERO_MSG_NONE);
        if (st) fz_check(st, size > 64 ? size : 64);
        zero_safetensors_close(st);
    } else {
        FZ_ASSERT(err.item != ZERO_MSG_NONE && err.msg[0] != 0 && strlen(err.msg) < sizeof err.msg);
    }
    unlink(file);
    free(b);
    return fz_bad == 0;
}
