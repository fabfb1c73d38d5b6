/* core/random.h — counter-based random numbers: Philox 4x32-10 and splitmix64.
 *
 * Philox 4x32-10 is the generator of Salmon, Moraes, Dror & Shaw (SC 2011);
 * gr_philox4x32_10 matches their published known-answer vectors. Because it
 * is a pure function of (counter, key), the same numbers come out on CPU and
 * on CUDA: this header is plain C that nvcc also compiles for the device
 * (GR_HOSTDEV), so kernels/ draws bit-identical dropout masks and weights.
 *
 * A stream (struct gr_philox_stream) is keyed by a 64-bit seed (key word 0 =
 * low 32 bits, word 1 = high 32 bits) with a 128-bit counter starting at an
 * offset; the four output words of counter c are used in order before c + 1
 * (craft.md §9). Streams are plain values: no allocation, no global state,
 * one per thread or per world.
 *
 *   struct gr_philox_stream s = gr_philox_stream_init(seed, 0);
 *   uint32_t r = gr_philox_next_u32(&s);
 *   float u = gr_philox_next_uniform(&s);        // in [0, 1)
 *   uint64_t episode_seed = gr_mix64(gr_mix64(base ^ world) ^ episode);
 */
#ifndef GROVE_CORE_RANDOM_H
#define GROVE_CORE_RANDOM_H

#include <stdint.h>

#if defined(__CUDACC__)
#define GR_HOSTDEV __host__ __device__
#else
#define GR_HOSTDEV
#endif

#define GR_PHILOX_M0 0xD2511F53u
#define GR_PHILOX_M1 0xCD9E8D57u
#define GR_PHILOX_W0 0x9E3779B9u
#define GR_PHILOX_W1 0xBB67AE85u

/* One Philox 4x32 block, 10 rounds: out = philox(ctr, key). */
static inline GR_HOSTDEV void gr_philox4x32_10(const uint32_t ctr[4],
                                               const uint32_t key[2],
                                               uint32_t out[4])
{
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)GR_PHILOX_M0 * c0;
        uint64_t p1 = (uint64_t)GR_PHILOX_M1 * c2;
        uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
        uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
        k0 += GR_PHILOX_W0;
        k1 += GR_PHILOX_W1;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* Word `index` (0-based) of the stream keyed by `seed` with its counter
 * starting at 0: word index % 4 of block index / 4. Computed directly, so
 * a device thread can draw its own element without walking a stream. */
static inline GR_HOSTDEV uint32_t gr_philox_word_at(uint64_t seed,
                                                    uint64_t index)
{
    uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    uint64_t block = index >> 2;
    uint32_t ctr[4] = {(uint32_t)block, (uint32_t)(block >> 32), 0u, 0u};
    uint32_t out[4];
    gr_philox4x32_10(ctr, key, out);
    return out[index & 3u];
}

/* A u32 mapped to [0, 1) with 24 bits, exactly representable in f32, so
 * CPU and GPU agree to the bit. */
static inline GR_HOSTDEV float gr_u32_to_uniform(uint32_t r)
{
    return (float)(r >> 8) * (1.0f / 16777216.0f);
}

struct gr_philox_stream {
    uint32_t key[2];
    uint32_t counter[4]; /* 128-bit, word 0 least significant */
    uint32_t block[4];   /* output of the current counter */
    uint32_t used;       /* words of `block` consumed, 0..4 */
};

/* A stream keyed by `seed` whose counter starts at `offset`. */
static inline struct gr_philox_stream gr_philox_stream_init(uint64_t seed,
                                                            uint64_t offset)
{
    struct gr_philox_stream s;
    s.key[0] = (uint32_t)seed;
    s.key[1] = (uint32_t)(seed >> 32);
    s.counter[0] = (uint32_t)offset;
    s.counter[1] = (uint32_t)(offset >> 32);
    s.counter[2] = 0;
    s.counter[3] = 0;
    s.block[0] = s.block[1] = s.block[2] = s.block[3] = 0;
    s.used = 4; /* nothing generated yet */
    return s;
}

static inline uint32_t gr_philox_next_u32(struct gr_philox_stream *s)
{
    if (s->used == 4) {
        gr_philox4x32_10(s->counter, s->key, s->block);
        /* 128-bit increment with carry */
        for (int i = 0; i < 4; i++) {
            if (++s->counter[i] != 0) {
                break;
            }
        }
        s->used = 0;
    }
    return s->block[s->used++];
}

static inline float gr_philox_next_uniform(struct gr_philox_stream *s)
{
    return gr_u32_to_uniform(gr_philox_next_u32(s));
}

/* The splitmix64 finaliser (Steele, Lea & Flood 2014): a bijective mix of
 * 64 bits, used to derive per-world and per-episode seeds. */
static inline GR_HOSTDEV uint64_t gr_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* splitmix64: advances *state by the golden gamma and mixes it. */
static inline uint64_t gr_splitmix64_next(uint64_t *state)
{
    *state += 0x9E3779B97F4A7C15ull;
    return gr_mix64(*state);
}

#endif
