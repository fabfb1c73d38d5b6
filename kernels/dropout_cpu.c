/* The CPU's dropout masks many elements at a time
 * (kernels/dropout_cpu_internal.h): the bits of gr_rng_keep, one Philox
 * block per four elements, and with AVX2 eight blocks per loop trip in
 * 64-bit vector lanes (vpmuludq gives the 32x32 -> 64 products Philox
 * needs). Was one scalar block per four elements in the backend's loop:
 * 15-22 % of a UDGN / StructFormer training step (bench/nlp/README.md). */
#include "kernels/dropout_cpu_internal.h"

#include <math.h>
#include <stdint.h>

#include "core/random.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define GR_DROP_AVX2 1
#include <immintrin.h>
#endif
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

static void blocks_scalar(const uint32_t pkey[2], uint64_t b0, int64_t nb,
                          uint32_t *out)
{
    for (int64_t b = 0; b < nb; b++) {
        uint64_t c = b0 + (uint64_t)b;
        uint32_t ctr[4] = {(uint32_t)c, (uint32_t)(c >> 32), 0u, 0u};
        gr_philox4x32_10(ctr, pkey, out + 4 * b);
    }
}

#if defined(GR_DROP_AVX2)
static int have_avx2(void)
{
    static int known = -1; /* a benign race: every thread computes 0 or 1 */
    if (known < 0) {
        __builtin_cpu_init();
        known = __builtin_cpu_supports("avx2") ? 1 : 0;
    }
    return known;
}

/* One Philox round on four blocks held in the low halves of 64-bit lanes
 * (the high halves carry garbage that vpmuludq ignores and that never
 * reaches a low half). */
#define PHILOX_ROUND(c0, c1, c2, c3, k0, k1)                                 \
    do {                                                                     \
        __m256i p0_ = _mm256_mul_epu32(c0, m0);                              \
        __m256i p1_ = _mm256_mul_epu32(c2, m1);                              \
        c0 = _mm256_xor_si256(_mm256_xor_si256(_mm256_srli_epi64(p1_, 32),  \
                                               c1), k0);                     \
        c1 = p1_;                                                            \
        c2 = _mm256_xor_si256(_mm256_xor_si256(_mm256_srli_epi64(p0_, 32),  \
                                               c3), k1);                     \
        c3 = p0_;                                                            \
    } while (0)

/* The four blocks' words in order: block j's (c0, c1, c2, c3) at
 * out[4j .. 4j + 3]. */
__attribute__((target("avx2"))) static inline void
store4(__m256i c0, __m256i c1, __m256i c2, __m256i c3, uint32_t *out)
{
    __m256i a = _mm256_blend_epi32(c0, _mm256_slli_epi64(c1, 32), 0xAA);
    __m256i b = _mm256_blend_epi32(c2, _mm256_slli_epi64(c3, 32), 0xAA);
    __m256i lo = _mm256_unpacklo_epi64(a, b); /* blocks 0 | 2 */
    __m256i hi = _mm256_unpackhi_epi64(a, b); /* blocks 1 | 3 */
    _mm256_storeu_si256((__m256i *)out, _mm256_permute2x128_si256(lo, hi,
                                                                  0x20));
    _mm256_storeu_si256((__m256i *)(out + 8),
                        _mm256_permute2x128_si256(lo, hi, 0x31));
}

/* Blocks in groups of eight (two independent chains of four); returns how
 * many blocks it did (a multiple of 8). */
__attribute__((target("avx2"))) static int64_t
blocks_avx2(const uint32_t pkey[2], uint64_t b0, int64_t nb, uint32_t *out)
{
    const __m256i m0 = _mm256_set1_epi64x((long long)GR_PHILOX_M0);
    const __m256i m1 = _mm256_set1_epi64x((long long)GR_PHILOX_M1);
    __m256i k0[10], k1[10];
    uint32_t a = pkey[0], b = pkey[1];
    for (int r = 0; r < 10; r++) {
        k0[r] = _mm256_set1_epi32((int)a);
        k1[r] = _mm256_set1_epi32((int)b);
        a += GR_PHILOX_W0;
        b += GR_PHILOX_W1;
    }
    const __m256i zero = _mm256_setzero_si256();
    int64_t done = 0;
    for (; done + 8 <= nb; done += 8) {
        uint64_t c = b0 + (uint64_t)done;
        /* counter words 0, 1 = the block index's low, high halves */
        __m256i xa = _mm256_setr_epi64x((long long)c, (long long)(c + 1),
                                        (long long)(c + 2),
                                        (long long)(c + 3));
        __m256i xb = _mm256_setr_epi64x((long long)(c + 4),
                                        (long long)(c + 5),
                                        (long long)(c + 6),
                                        (long long)(c + 7));
        __m256i a0 = xa, a1 = _mm256_srli_epi64(xa, 32), a2 = zero,
                a3 = zero;
        __m256i b0v = xb, b1v = _mm256_srli_epi64(xb, 32), b2v = zero,
                b3v = zero;
        for (int r = 0; r < 10; r++) {
            PHILOX_ROUND(a0, a1, a2, a3, k0[r], k1[r]);
            PHILOX_ROUND(b0v, b1v, b2v, b3v, k0[r], k1[r]);
        }
        store4(a0, a1, a2, a3, out + 4 * done);
        store4(b0v, b1v, b2v, b3v, out + 4 * done + 16);
    }
    return done;
}
#endif

void gr_cpu_philox_blocks(uint64_t key, uint64_t b0, int64_t nb,
                          uint32_t *out)
{
    const uint32_t pkey[2] = {(uint32_t)key, (uint32_t)(key >> 32)};
    int64_t done = 0;
#if defined(GR_DROP_AVX2)
    if (have_avx2()) {
        done = blocks_avx2(pkey, b0, nb, out);
    }
#endif
    blocks_scalar(pkey, b0 + (uint64_t)done, nb - done, out + 4 * done);
}

/* Words per chunk: a multiple of 32 (whole groups of eight blocks) that
 * keeps the chunk's words in L1 beside x and y. */
#define DROP_CHUNK 512

void gr_cpu_dropout_run(uint64_t key, uint64_t m0, int64_t n, float p,
                        float scale, const float *x, float *y, int acc)
{
    /* gr_rng_keep: (float)(w >> 8) · 2^-24 >= p. Both sides are exact
     * (24-bit integer, power-of-two scaling), so this is (w >> 8) >=
     * p · 2^24, i.e. >= its ceiling, an integer in [0, 2^24). */
    const int32_t t = (int32_t)ceilf(p * 16777216.0f);
    uint32_t words[DROP_CHUNK + 4];
    while (n > 0) {
        int64_t off = (int64_t)(m0 & 3u);
        int64_t take = DROP_CHUNK - off;
        take = take < n ? take : n;
        gr_cpu_philox_blocks(key, m0 >> 2, (off + take + 3) >> 2, words);
        const uint32_t *w = words + off;
        int64_t i0 = 0;
#if defined(__SSE2__)
        /* Branch-free: a random mask made the scalar loop's branch
         * mispredict on a third of the elements. Kept: x·scale, the same
         * product; dropped: +0 (the and-mask), as the scalar 0.0f. */
        const __m128i tm1 = _mm_set1_epi32(t - 1);
        const __m128 vs = _mm_set1_ps(scale);
        for (; i0 + 4 <= take; i0 += 4) {
            __m128i wv = _mm_srli_epi32(
                _mm_loadu_si128((const __m128i *)(w + i0)), 8);
            __m128 keep = _mm_castsi128_ps(_mm_cmpgt_epi32(wv, tm1));
            __m128 v = _mm_and_ps(_mm_mul_ps(_mm_loadu_ps(x + i0), vs), keep);
            if (acc) {
                v = _mm_add_ps(_mm_loadu_ps(y + i0), v);
            }
            _mm_storeu_ps(y + i0, v);
        }
#endif
        if (acc) {
            for (int64_t i = i0; i < take; i++) {
                float v = (int32_t)(w[i] >> 8) >= t ? x[i] * scale : 0.0f;
                y[i] += v;
            }
        } else {
            for (int64_t i = i0; i < take; i++) {
                y[i] = (int32_t)(w[i] >> 8) >= t ? x[i] * scale : 0.0f;
            }
        }
        x += take;
        y += take;
        m0 += (uint64_t)take;
        n -= take;
    }
}
