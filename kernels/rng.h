/* kernels/rng.h — the kernel layer's random numbers: Philox 4x32-10 keyed by
 * (seed, stream), the same bits on CPU and CUDA.
 *
 * A draw is named by a `struct gr_rng` {seed, stream}: the seed of the run
 * and a stream id that says what the numbers are for (for example
 * gr_rng_stream(epoch, window, purpose, layer)). The pair is hashed into a
 * 64-bit Philox key (gr_rng_key); element i of a draw uses word i of the
 * Philox stream of that key with its counter starting at 0
 * (core/random.h gr_philox_word_at). Because every function below is a pure
 * function of (key, index) marked GR_HOSTDEV, a CUDA thread computes the
 * same word as the CPU: dropout masks are bit-identical on both devices.
 * Initial weights are drawn on the host and copied (kernels/tensor.h
 * gr_tensor_rand_*), so they are bit-identical too.
 *
 * Pure functions, no state, no allocation; safe from any thread. Nothing
 * here fails.
 *
 *   struct gr_rng r = gr_rng_make(seed, gr_rng_stream(epoch, window, 3, 0));
 *   uint64_t key = gr_rng_key(r);
 *   float u = gr_rng_uniform(key, i);         // element i, in [0, 1)
 *   int kept = gr_rng_keep(key, i, 0.3f);     // dropout: kept with 1 - p
 */
#ifndef GROVE_KERNELS_RNG_H
#define GROVE_KERNELS_RNG_H

#include <stdint.h>

#include "core/random.h"

struct gr_rng {
    uint64_t seed;   /* the run's seed (--seed) */
    uint64_t stream; /* what the draw is for; see gr_rng_stream */
};

static inline struct gr_rng gr_rng_make(uint64_t seed, uint64_t stream)
{
    struct gr_rng r;
    r.seed = seed;
    r.stream = stream;
    return r;
}

/* A stream id from up to four small integers (unused ones 0), for example
 * (epoch, window, purpose, layer). Different tuples give unrelated ids. */
static inline uint64_t gr_rng_stream(uint64_t a, uint64_t b, uint64_t c,
                                     uint64_t d)
{
    uint64_t h = gr_mix64(a + 0x9E3779B97F4A7C15ull);
    h = gr_mix64(h ^ (b + 0x632BE59BD9B4E019ull));
    h = gr_mix64(h ^ (c + 0x85EBCA77C2B2AE63ull));
    return gr_mix64(h ^ (d + 0x27D4EB2F165667C5ull));
}

/* The Philox key of a draw: splitmix of the seed and the mixed stream. */
static inline GR_HOSTDEV uint64_t gr_rng_key_of(uint64_t seed,
                                                uint64_t stream)
{
    return gr_mix64(seed ^ gr_mix64(stream + 0x9E3779B97F4A7C15ull));
}

static inline uint64_t gr_rng_key(struct gr_rng r)
{
    return gr_rng_key_of(r.seed, r.stream);
}

/* Word i of the draw keyed by `key`. */
static inline GR_HOSTDEV uint32_t gr_rng_u32(uint64_t key, uint64_t i)
{
    return gr_philox_word_at(key, i);
}

/* Element i as a uniform in [0, 1) with 24 bits (exact in f32). */
static inline GR_HOSTDEV float gr_rng_uniform(uint64_t key, uint64_t i)
{
    return gr_u32_to_uniform(gr_philox_word_at(key, i));
}

/* Dropout decision for element i: 1 (kept) when its uniform is >= p, so an
 * element is kept with probability 1 - p (p in [0, 1); exact in f32). */
static inline GR_HOSTDEV int gr_rng_keep(uint64_t key, uint64_t i, float p)
{
    return gr_rng_uniform(key, i) >= p;
}

#endif
