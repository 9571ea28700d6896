// gpu_vm.cu - the CUDA backend's vm_ operations (zero_cuda.cuh: vm_reserve,
// vm_back, vm_unback, vm_release; what zero_alloc and stage 3 behind the
// program's pointers stand on), on one GPU, one process (world 1, no launcher):
//   - a range of 3.5 granules is 4 granules, granule-aligned, device memory
//     every byte of which a kernel writes and cudaMemcpy reads back;
//   - granules unbacked and backed again take new contents while the others
//     keep theirs; a run backed in one call is one piece (one mapping), kept
//     mapped while any granule of it is backed; 200 cycles of random runs
//     unbacked and backed again (in other groupings) keep the physical memory
//     (mapped plus pooled) within the range's; the same runs again and again,
//     as a training loop asks them, create nothing after the first time;
//   - two and three ranges at once sharing the pool; vm_release gives the
//     memory back to the GPU (cudaMemGetInfo), as destroy does for what is
//     left; zero_alloc / zero_free on the CUDA backend;
//   - misuse: misaligned pointers and sizes, addresses outside every range,
//     backing what is backed and unbacking what is not, zero and huge sizes:
//     errors that change nothing, never a crash; (full mode) a range larger
//     than the GPU's memory fails with CUDA_ERROR_OUT_OF_MEMORY and leaves
//     nothing behind.
// ZERO_TEST_QUICK=1 (the compute-sanitizer runs): 40 cycles, no out-of-memory case.
// Run alone (GPU machine): make test-gpu T=gpu_vm
#define ZERO_IMPLEMENTATION
#include "zero.h"
#include "zero_cuda.cuh"
#include "zero_test.h"

#include <algorithm>
#include <vector>

static int quick;

// the value of element i (of the range) written with stamp s
static __host__ __device__ uint32_t pattern(uint32_t s, size_t i) {
    uint64_t x = ((uint64_t)s << 40) ^ (uint64_t)i ^ 0x9e3779b97f4a7c15ull;
    x ^= x >> 31, x *= 0xd6e8feb86659fd93ull, x ^= x >> 32;
    return (uint32_t)x;
}

// elements [first, first + n) of the range at p get pattern(s, index in the range)
static __global__ void fill(uint32_t *p, size_t first, size_t n, uint32_t s) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[first + i] = pattern(s, first + i);
}

// A range as the test sees it: where, how many granules, and per granule the
// stamp its contents were written with (0: unbacked, or never written).
struct range {
    char *base = nullptr;
    size_t reserved = 0, n = 0;
    std::vector<uint32_t> stamp;
    std::vector<int> backed;
};

static size_t G;           // the granule
static cudaStream_t S;     // the backend's compute stream
static const zero_backend *BE;

static size_t words(size_t granules) { return granules * G / sizeof(uint32_t); }

// Granules [i0, i1) of r written with stamp s by a kernel; 1 when it ran.
static int put(range &r, size_t i0, size_t i1, uint32_t s) {
    fill<<<256, 256, 0, S>>>((uint32_t *)r.base, words(i0), words(i1) - words(i0), s);
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaStreamSynchronize(S);
    CHECKF(e == cudaSuccess, "fill: %s", cudaGetErrorString(e));
    if (e != cudaSuccess) return 0;
    for (size_t i = i0; i < i1; i++) r.stamp[i] = s;
    return 1;
}

// Every backed granule of r read back (cudaMemcpy) and compared with its stamp;
// the mismatching elements, or -1 when the copy failed.
static long long verify(const range &r) {
    std::vector<uint32_t> h(words(1));
    long long bad = 0;
    for (size_t i = 0; i < r.n; i++) {
        if (!r.backed[i]) continue;
        cudaError_t e = cudaMemcpy(h.data(), r.base + i * G, G, cudaMemcpyDeviceToHost);
        if (e != cudaSuccess) {
            fprintf(stderr, "verify: cudaMemcpy of granule %zu: %s\n", i, cudaGetErrorString(e));
            return -1;
        }
        for (size_t k = 0; k < h.size(); k++) bad += h[k] != pattern(r.stamp[i], words(i) + k);
    }
    return bad;
}

static zero_result reserve(range &r, size_t bytes, zero_error *err, int backed = 1) {
    void *b = nullptr;
    size_t g = 0;
    zero_result res = BE->vm_reserve(BE->ctx, bytes, backed, &b, &r.reserved, &g, err);
    if (res != ZERO_OK) return res;
    r.base = (char *)b;
    r.n = r.reserved / G;
    r.stamp.assign(r.n, 0);
    r.backed.assign(r.n, (unsigned char)backed);
    CHECK_EQ_INT(g, G);
    return ZERO_OK;
}

static zero_result back(range &r, size_t i0, size_t i1, zero_error *err) {
    zero_result res = BE->vm_back(BE->ctx, r.base + i0 * G, (i1 - i0) * G, err);
    if (res == ZERO_OK)
        for (size_t i = i0; i < i1; i++) r.backed[i] = 1, r.stamp[i] = 0;
    return res;
}

static zero_result unback(range &r, size_t i0, size_t i1, zero_error *err) {
    zero_result res = BE->vm_unback(BE->ctx, r.base + i0 * G, (i1 - i0) * G, err);
    if (res == ZERO_OK)
        for (size_t i = i0; i < i1; i++) r.backed[i] = 0;
    return res;
}

static size_t free_bytes(void) {
    size_t fr = 0, total = 0;
    if (cudaMemGetInfo(&fr, &total) != cudaSuccess) return 0;
    return fr;
}

// One range: reserve, write, unback / back, the cycles with the pool.
static void test_one(zero_cuda *cu) {
    zero_error err;
    range a;
    uint32_t stamp = 1;
    int64_t c0 = zero_cuda_vm_created(cu);
    CHECKF(reserve(a, 3 * G + G / 2, &err) == ZERO_OK, "%s", err.msg);
    if (!a.base) return;
    CHECK_EQ_INT(a.reserved, 4 * G);
    CHECK_EQ_INT(a.n, 4);
    CHECK((uintptr_t)a.base % G == 0);
    CHECK_EQ_INT(zero_cuda_vm_created(cu) - c0, 4);
    CHECK_EQ_INT(BE->mem_kind_of(BE->ctx, a.base), ZERO_MEM_DEVICE);
    printf("range of 3.5 granules: %zu bytes at %p; mem_extent(base) says %lld\n", a.reserved, (void *)a.base,
           (long long)BE->mem_extent(BE->ctx, a.base));

    // every byte written by a kernel, read back equal
    put(a, 0, 4, stamp++);
    CHECK_EQ_INT(verify(a), 0);
    // and by cudaMemcpy from the host across a granule boundary
    {
        std::vector<uint32_t> h(words(1));
        for (size_t k = 0; k < h.size(); k++) h[k] = pattern(stamp, words(1) + G / 8 + k);
        CHECK(cudaMemcpy(a.base + G + G / 2, h.data(), G, cudaMemcpyHostToDevice) == cudaSuccess);
        std::vector<uint32_t> back_(words(1));
        CHECK(cudaMemcpy(back_.data(), a.base + G + G / 2, G, cudaMemcpyDeviceToHost) == cudaSuccess);
        CHECK(back_ == h);
        put(a, 1, 3, stamp++);
    }

    // granules 1-2 unbacked and backed again: new contents there, the others kept
    CHECKF(unback(a, 1, 3, &err) == ZERO_OK, "%s", err.msg);
    CHECK_EQ_INT(verify(a), 0); // granules 0 and 3
    CHECK_EQ_INT(cu->vm_mapped, 2);
    CHECKF(back(a, 1, 3, &err) == ZERO_OK, "%s", err.msg);
    // one piece of two granules, made after the pool's two single ones were released
    CHECK_EQ_INT(zero_cuda_vm_created(cu) - c0, 5);
    CHECK_EQ_INT(cu->vm_mapped, 4);
    CHECK_EQ_INT(cu->vm_pooled, 0);
    put(a, 1, 3, stamp++);
    CHECK_EQ_INT(verify(a), 0);
    // a piece stays mapped while one of its granules is backed, and is reused whole
    CHECKF(unback(a, 1, 2, &err) == ZERO_OK, "%s", err.msg);
    CHECK_EQ_INT(cu->vm_mapped, 4);
    CHECK_EQ_INT(verify(a), 0);
    CHECKF(unback(a, 2, 3, &err) == ZERO_OK, "%s", err.msg);
    CHECK_EQ_INT(cu->vm_mapped, 2);
    CHECK_EQ_INT(cu->vm_pooled, 2);
    CHECKF(back(a, 1, 3, &err) == ZERO_OK, "%s", err.msg);
    CHECK_EQ_INT(zero_cuda_vm_created(cu) - c0, 5); // the pooled piece
    put(a, 1, 3, stamp++);
    CHECK_EQ_INT(verify(a), 0);
    // a granule unbacked while its piece stays mapped, backed again: as it was, no call to the driver
    CHECKF(unback(a, 2, 3, &err) == ZERO_OK, "%s", err.msg);
    CHECKF(back(a, 2, 3, &err) == ZERO_OK, "%s", err.msg);
    CHECK_EQ_INT(cu->vm_mapped, 4);
    put(a, 2, 3, stamp++);
    CHECK_EQ_INT(verify(a), 0);

    // cycles: random granules unbacked in runs, backed again in other runs (one
    // granule at a time, or as one run over what was unbacked in several)
    int cycles = quick ? 40 : 200;
    long long bad_total = 0;
    int failures = 0, over = 0;
    for (int cy = 0; cy < cycles; cy++) {
        int mask = (int)zt_rand_int(1, 15), how = (int)zt_rand_int(0, 2);
        for (size_t i = 0; i < 4;) { // unback each run of set bits in one call
            if (!((mask >> i) & 1)) {
                i++;
                continue;
            }
            size_t j = i;
            while (j < 4 && ((mask >> j) & 1)) j++;
            if (unback(a, i, j, &err) != ZERO_OK) failures++, fprintf(stderr, "cycle %d: %s\n", cy, err.msg);
            i = j;
        }
        if (how == 0) { // granule by granule, last first
            for (int i = 3; i >= 0; i--)
                if (((mask >> i) & 1) && back(a, (size_t)i, (size_t)i + 1, &err) != ZERO_OK)
                    failures++, fprintf(stderr, "cycle %d: %s\n", cy, err.msg);
        } else { // the same runs, or (how 2) the runs again in reverse order
            std::vector<std::pair<size_t, size_t>> runs;
            for (size_t i = 0; i < 4;) {
                if (!((mask >> i) & 1)) {
                    i++;
                    continue;
                }
                size_t j = i;
                while (j < 4 && ((mask >> j) & 1)) j++;
                runs.push_back({i, j});
                i = j;
            }
            if (how == 2) std::reverse(runs.begin(), runs.end());
            for (auto &rn : runs)
                if (back(a, rn.first, rn.second, &err) != ZERO_OK) failures++, fprintf(stderr, "cycle %d: %s\n", cy, err.msg);
        }
        for (size_t i = 0; i < 4; i++)
            if ((mask >> i) & 1) put(a, i, i + 1, stamp++);
        if (cy % 10 == 9 || cy == cycles - 1) {
            long long b = verify(a);
            bad_total += b < 0 ? 1 : b;
        }
        over += cu->vm_mapped + cu->vm_pooled > cu->vm_total || cu->vm_mapped > 4;
    }
    CHECK_EQ_INT(failures, 0);
    CHECK_EQ_INT(bad_total, 0);
    CHECK_EQ_INT(over, 0);
    printf("%d cycles: %lld pieces created in all, mapped plus pooled never over the range's 4 granules\n", cycles,
           (long long)(zero_cuda_vm_created(cu) - c0));
    // one fixed set of runs, unbacked and backed again as the steps of a training loop do: nothing created after the first
    {
        const size_t runs[3][2] = {{0, 2}, {2, 3}, {3, 4}};
        int64_t first = -1;
        for (int rep = 0; rep < 10; rep++) {
            for (auto &rn : runs)
                if (unback(a, rn[0], rn[1], &err) != ZERO_OK) failures++, fprintf(stderr, "%s\n", err.msg);
            for (auto &rn : runs)
                if (back(a, rn[0], rn[1], &err) != ZERO_OK) failures++, fprintf(stderr, "%s\n", err.msg);
            put(a, 0, 4, stamp++);
            if (rep == 0) first = zero_cuda_vm_created(cu);
        }
        CHECK_EQ_INT(failures, 0);
        CHECK_EQ_INT(zero_cuda_vm_created(cu), first);
        CHECK_EQ_INT(cu->vm_mapped, 4);
        CHECK_EQ_INT(verify(a), 0);
    }
    int64_t c_misuse = zero_cuda_vm_created(cu);

    // misuse: errors that change nothing
    {
        void *dev = nullptr;
        CHECK(cudaMalloc(&dev, G) == cudaSuccess);
        struct {
            void *p;
            size_t bytes;
            int unb; // 1: vm_unback, 0: vm_back
            const char *says;
        } bad[] = {
            {a.base + 1, G, 0, "not whole granules"},         // misaligned pointer
            {a.base + G / 2, G, 1, "not whole granules"},     // misaligned pointer
            {a.base, G + 4096, 1, "not whole granules"},      // misaligned size
            {a.base, 0, 0, "not whole granules"},             // nothing
            {a.base + 4 * G, G, 0, "not inside"},             // just past the range
            {a.base + 3 * G, 2 * G, 0, "not inside"},         // half past it
            {a.base - G, G, 0, "not inside"},                 // just before it
            {dev, G, 0, "not inside"},                        // cudaMalloc memory
            {nullptr, G, 1, "not inside"},                    // NULL
            {a.base + G, G, 0, "backed already"},             // backed
        };
        for (auto &b : bad) {
            zero_result r = b.unb ? BE->vm_unback(BE->ctx, b.p, b.bytes, &err) : BE->vm_back(BE->ctx, b.p, b.bytes, &err);
            CHECKF(r == ZERO_ERR_INVALID_ARG && strstr(err.msg, b.says), "%s(%p, %zu): %s: %s", b.unb ? "vm_unback" : "vm_back",
                   b.p, b.bytes, zero_result_string(r), err.msg);
        }
        // unbacking what is partly unbacked changes nothing either
        CHECKF(unback(a, 2, 3, &err) == ZERO_OK, "%s", err.msg);
        zero_result r = BE->vm_unback(BE->ctx, a.base + G, 2 * G, &err);
        CHECKF(r == ZERO_ERR_INVALID_ARG && strstr(err.msg, "not backed"), "%s", err.msg);
        r = BE->vm_back(BE->ctx, a.base + G, 2 * G, &err); // granule 1 is backed
        CHECKF(r == ZERO_ERR_INVALID_ARG && strstr(err.msg, "backed already"), "%s", err.msg);
        CHECK(a.backed[1] && !a.backed[2]);
        CHECK_EQ_INT(verify(a), 0); // 0, 1, 3 as they were
        CHECKF(back(a, 2, 3, &err) == ZERO_OK, "%s", err.msg);
        put(a, 2, 3, stamp++);
        CHECK_EQ_INT(verify(a), 0);
        // reserve: nothing, or more than any size
        void *b = (void *)1;
        size_t res = 1, g = 1;
        CHECK_EQ_INT(BE->vm_reserve(BE->ctx, 0, 1, &b, &res, &g, &err), ZERO_ERR_INVALID_ARG);
        CHECK(b == nullptr && res == 0);
        CHECK_EQ_INT(BE->vm_reserve(BE->ctx, SIZE_MAX, 1, &b, &res, &g, &err), ZERO_ERR_INVALID_ARG);
        CHECK_EQ_INT(BE->vm_reserve(BE->ctx, G, 1, nullptr, &res, &g, &err), ZERO_ERR_INVALID_ARG);
        // release of what is no range: logged, nothing else
        printf("(two errors about vm_release are expected next)\n");
        fflush(stdout);
        BE->vm_release(BE->ctx, dev, G);
        BE->vm_release(BE->ctx, a.base + G, G);
        CHECK_EQ_INT(verify(a), 0);
        cudaFree(dev);
    }
    CHECK_EQ_INT(zero_cuda_vm_created(cu), c_misuse);
    BE->vm_release(BE->ctx, a.base, a.reserved);
}

// A range reserved unbacked (the engine's derived stage-3 pool): no memory
// until vm_back, which maps each run it is asked for as one piece.
static void test_unbacked(zero_cuda *cu) {
    zero_error err;
    range a;
    size_t free0 = free_bytes();
    int64_t c0 = zero_cuda_vm_created(cu), m0 = cu->vm_mapped;
    CHECKF(reserve(a, 64 * G, &err, 0) == ZERO_OK, "%s", err.msg);
    if (!a.base) return;
    CHECK_EQ_INT(a.n, 64);
    CHECK_EQ_INT(cu->vm_mapped, m0); // nothing mapped
    CHECKF(free_bytes() + 8 * G >= free0, "free %zu before, %zu after reserving 64 granules unbacked", free0,
           free_bytes());
    CHECKF(unback(a, 0, 1, &err) == ZERO_ERR_INVALID_ARG && strstr(err.msg, "not backed"), "%s", err.msg);
    CHECKF(back(a, 0, 3, &err) == ZERO_OK, "%s", err.msg);
    CHECK_EQ_INT(cu->vm_mapped - m0, 3);
    CHECKF(back(a, 2, 4, &err) == ZERO_ERR_INVALID_ARG && strstr(err.msg, "backed already"), "%s", err.msg);
    CHECKF(back(a, 3, 5, &err) == ZERO_OK, "%s", err.msg); // grows at its end, as the pool does
    put(a, 0, 5, 77);
    CHECK_EQ_INT(verify(a), 0);
    CHECK(zero_cuda_vm_created(cu) - c0 <= 5);
    CHECKF(unback(a, 0, 3, &err) == ZERO_OK, "%s", err.msg);
    CHECK_EQ_INT(verify(a), 0); // 3 and 4 kept
    BE->vm_release(BE->ctx, a.base, a.reserved);
    CHECK_EQ_INT(cu->vm_mapped, m0);
    // a backed range of 256 granules unbacked whole: the pool keeps sixteen of the largest piece at most, the
    // rest is freed (stage 3 unbacks every layer it drops)
    range b;
    CHECKF(reserve(b, 256 * G, &err) == ZERO_OK, "%s", err.msg);
    if (!b.base) return;
    size_t free1 = free_bytes();
    CHECKF(unback(b, 0, 256, &err) == ZERO_OK, "%s", err.msg);
    CHECKF(cu->vm_pooled <= 16 * (size_t)cu->vm_piece_max && cu->vm_piece_max <= 6, "pooled %zu, largest piece %u",
           cu->vm_pooled, cu->vm_piece_max);
    CHECKF(free_bytes() >= free1 + 150 * G, "free %zu with 256 granules backed, %zu after unbacking them", free1,
           free_bytes());
    BE->vm_release(BE->ctx, b.base, b.reserved);
}

// Ranges at once: the pool shared, memory given back on release.
static void test_many(zero_cuda *cu) {
    zero_error err;
    range a, b, c;
    uint32_t stamp = 1000;
    size_t free0 = free_bytes();
    int64_t c0 = zero_cuda_vm_created(cu);
    CHECKF(reserve(a, 4 * G, &err) == ZERO_OK, "%s", err.msg);
    CHECKF(reserve(b, 1, &err) == ZERO_OK, "%s", err.msg);
    CHECKF(reserve(c, 2 * G, &err) == ZERO_OK, "%s", err.msg);
    if (!a.base || !b.base || !c.base) return;
    CHECK_EQ_INT(a.n, 4);
    CHECK_EQ_INT(b.n, 1);
    CHECK_EQ_INT(c.n, 2);
    CHECK(b.base >= a.base + a.reserved || b.base + b.reserved <= a.base);
    CHECK_EQ_INT(zero_cuda_vm_created(cu) - c0, 7);
    put(a, 0, 4, stamp++);
    put(b, 0, 1, stamp++);
    put(c, 0, 2, stamp++);
    CHECK_EQ_INT(verify(a) + verify(b) + verify(c), 0);
    // a granule of b's backs one of a's, and the other way round
    CHECKF(unback(b, 0, 1, &err) == ZERO_OK, "%s", err.msg);
    CHECKF(unback(a, 0, 2, &err) == ZERO_OK, "%s", err.msg);
    CHECKF(back(a, 1, 2, &err) == ZERO_OK, "%s", err.msg);
    CHECKF(back(b, 0, 1, &err) == ZERO_OK, "%s", err.msg);
    CHECKF(back(a, 0, 1, &err) == ZERO_OK, "%s", err.msg);
    CHECK_EQ_INT(zero_cuda_vm_created(cu) - c0, 7);
    put(a, 0, 2, stamp++);
    put(b, 0, 1, stamp++);
    CHECK_EQ_INT(verify(a) + verify(b) + verify(c), 0);
    // runs of other sizes than were unbacked, across ranges: still all from the pool
    CHECKF(unback(c, 0, 2, &err) == ZERO_OK, "%s", err.msg);
    CHECKF(unback(a, 1, 4, &err) == ZERO_OK, "%s", err.msg);
    CHECKF(back(c, 0, 2, &err) == ZERO_OK, "%s", err.msg);
    CHECKF(back(a, 1, 4, &err) == ZERO_OK, "%s", err.msg);
    // one piece each (2 and 3 granules): the pool's five single ones released to make room
    CHECK_EQ_INT(zero_cuda_vm_created(cu) - c0, 9);
    CHECK_EQ_INT(cu->vm_pooled, 0);
    CHECK_EQ_INT(cu->vm_mapped, 7);
    put(a, 1, 4, stamp++);
    put(c, 0, 2, stamp++);
    CHECK_EQ_INT(verify(a) + verify(b) + verify(c), 0);
    // b released while a and c live on untouched
    BE->vm_release(BE->ctx, b.base, b.reserved);
    CHECK_EQ_INT(verify(a) + verify(c), 0);
    CHECK_EQ_INT(BE->vm_back(BE->ctx, b.base, G, &err), ZERO_ERR_INVALID_ARG); // gone
    // a's memory, unbacked first, then released: the pool keeps no more than c could use
    CHECKF(unback(a, 0, 4, &err) == ZERO_OK, "%s", err.msg);
    BE->vm_release(BE->ctx, a.base, a.reserved);
    CHECK_EQ_INT(verify(c), 0);
    BE->vm_release(BE->ctx, c.base, c.reserved);
    int64_t c1 = zero_cuda_vm_created(cu);
    // a large range: the GPU's free memory goes down by it, and back up on release, within 32 granules: the
    // driver keeps some memory released by cuMemRelease for its next cuMemCreate (on an H200, after the 256
    // granules test_unbacked frees, 16 granules created took no free memory at all)
    {
        size_t before = free_bytes(), n = 256;
        range big;
        CHECKF(reserve(big, n * G, &err) == ZERO_OK, "%s", err.msg);
        if (big.base) {
            size_t during = free_bytes();
            CHECK_EQ_INT(zero_cuda_vm_created(cu) - c1, (long long)n); // the pool was empty: all released before
            CHECKF(before >= during + (n - 32) * G, "free %zu before, %zu with %zu granules backed", before, during, n);
            put(big, 0, n, stamp++);
            CHECK_EQ_INT(verify(big), 0);
            CHECKF(unback(big, 1, n - 1, &err) == ZERO_OK, "%s", err.msg); // into the pool: still held
            BE->vm_release(BE->ctx, big.base, big.reserved);
            size_t after = free_bytes();
            CHECKF(after + 32 * G >= before, "free %zu before, %zu after release", before, after);
            printf("%zu granules: free %.1f MiB -> %.1f MiB -> %.1f MiB\n", n, before / 1048576.0, during / 1048576.0,
                   after / 1048576.0);
        }
    }
    size_t free1 = free_bytes();
    CHECKF(free1 + 32 * G >= free0, "free %zu at the start, %zu after every release", free0, free1);
}

// zero.h's zero_alloc / zero_free over the CUDA backend.
static void test_zero_alloc(void) {
    zero_error err;
    void *p = nullptr;
    CHECKF(zero_alloc(BE, 3 * G + 5, &p, &err) == ZERO_OK, "%s", err.msg);
    if (!p) return;
    range r;
    r.base = (char *)p, r.n = 4, r.reserved = 4 * G, r.stamp.assign(4, 0), r.backed.assign(4, 1);
    put(r, 0, 4, 77);
    CHECK_EQ_INT(verify(r), 0);
    zero_free(BE, p);
    CHECK_EQ_INT(BE->vm_back(BE->ctx, p, G, &err), ZERO_ERR_INVALID_ARG); // released
}

// More than the GPU holds: cuMemCreate (or cuMemMap) runs out part of the way;
// the error says so and whatever was created is freed again.
static void test_oom(zero_cuda *cu) {
    zero_error err;
    size_t fr = 0, total = 0;
    if (cudaMemGetInfo(&fr, &total) != cudaSuccess) return;
    range r;
    int64_t c0 = zero_cuda_vm_created(cu);
    double t0 = zt_now_s();
    zero_result res = reserve(r, total + 64 * G, &err);
    CHECKF(res == ZERO_ERR_OUT_OF_MEMORY && strstr(err.msg, "CUDA_ERROR_OUT_OF_MEMORY") &&
               (strstr(err.msg, "cuMemCreate") || strstr(err.msg, "cuMemMap")),
           "%s: %s", zero_result_string(res), err.msg);
    printf("a range of %.1f GiB: %s after %lld granules in %.1f s: %s\n", (double)(total + 64 * G) / (1 << 30),
           zero_result_string(res), (long long)(zero_cuda_vm_created(cu) - c0), zt_now_s() - t0, err.msg);
    if (res == ZERO_OK) BE->vm_release(BE->ctx, r.base, r.reserved);
    size_t after = free_bytes();
    CHECKF(after + 2 * G >= fr, "free %zu before, %zu after the failed reserve", fr, after);
    // and the backend works on
    range s;
    CHECKF(reserve(s, G, &err) == ZERO_OK, "%s", err.msg);
    if (s.base) {
        put(s, 0, 1, 5);
        CHECK_EQ_INT(verify(s), 0);
        BE->vm_release(BE->ctx, s.base, s.reserved);
    }
}

int main() {
    int ndev = 0;
    zero_error err;
    zero_cuda *cu = nullptr;
    setvbuf(stdout, NULL, _IOLBF, 0); // progress survives a crash
    quick = getenv("ZERO_TEST_QUICK") && atoi(getenv("ZERO_TEST_QUICK"));
    zt_seed("gpu_vm");
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("no GPU: nothing to test\n");
        CHECK(0);
        return zt_finish();
    }
    if (zero_cuda_backend_init(&cu, NULL, &err) != ZERO_OK) {
        fprintf(stderr, "gpu_vm: backend: %s\n", err.msg);
        CHECK(0);
        return zt_finish();
    }
    BE = zero_cuda_backend(cu);
    S = zero_cuda_stream(cu);
    CHECK(BE->vm_reserve && BE->vm_back && BE->vm_unback && BE->vm_release);
    CHECK_EQ_INT(zero_cuda_vm_created(cu), 0);
    size_t free0 = free_bytes();
    {
        // the granule, from a first range of one byte
        void *b = nullptr;
        size_t res = 0;
        zero_result r = BE->vm_reserve(BE->ctx, 1, 1, &b, &res, &G, &err);
        CHECKF(r == ZERO_OK, "%s", err.msg);
        if (r != ZERO_OK) {
            zero_cuda_backend_destroy(cu);
            return zt_finish();
        }
        CHECK(G >= 4096 && (G & (G - 1)) == 0 && res == G);
        printf("granule %zu bytes (%.1f MiB)\n", G, G / 1048576.0);
        BE->vm_release(BE->ctx, b, res);
    }
    test_one(cu);
    test_unbacked(cu);
    test_many(cu);
    test_zero_alloc();
    if (!quick) test_oom(cu);
    {
        // destroy releases what is left: a range, and granules in the pool
        range a;
        CHECKF(reserve(a, 3 * G, &err) == ZERO_OK, "%s", err.msg);
        if (a.base) CHECKF(unback(a, 0, 2, &err) == ZERO_OK, "%s", err.msg);
        printf("created %lld physical granules in all\n", (long long)zero_cuda_vm_created(cu));
        zero_cuda_backend_destroy(cu);
        size_t free1 = free_bytes();
        CHECKF(free1 + 32 * G >= free0, "free %zu after init, %zu after destroy", free0, free1);
    }
    return zt_finish();
}
