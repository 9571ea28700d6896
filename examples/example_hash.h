/* example_hash.h - the stateless randomness the examples share
   (examples/train_mlp*, examples/gpt): initial weights and data sampling as
   pure functions of (seed, a, b), so every world size, layout and build
   (host, GPU) starts from the same model and sees the same batches.
   Compiles as C11 and as CUDA C++ (the sampling hash runs on the GPU too). */
#ifndef EXAMPLE_HASH_H
#define EXAMPLE_HASH_H

#include <stdint.h>

#ifdef __CUDACC__
#define EX_HD __host__ __device__
#else
#define EX_HD
#endif

/* splitmix64's finaliser: every output bit depends on every input bit, so
   hashing (seed, a, b) gives independent-looking streams without state. */
EX_HD static inline uint64_t mix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

EX_HD static inline uint64_t hash3(uint64_t seed, uint64_t a, uint64_t b) {
    return mix64(mix64(mix64(seed) ^ a) ^ b);
}

/* uniform in [-1, 1) with 24 bits, exact in float */
static inline float hash_uniform(uint64_t h) {
    return (float)((double)(h >> 40) * (1.0 / 8388608.0) - 1.0);
}

/* Sample `index` of a step is the window of context + 1 tokens at this
   position of a text of n tokens. index = slot * batch + b, where slot numbers
   the (micro-batch, rank) pairs of the step (micro * world + rank): the same
   global batch for any world and gas with the same product. */
EX_HD static inline uint64_t sample_pos(uint64_t seed, int64_t step, int64_t index, uint64_t n, int context) {
    return hash3(seed ^ 0x5EEDDA7Aull, (uint64_t)step, (uint64_t)index) % (n - (uint64_t)context);
}

#endif /* EXAMPLE_HASH_H */
