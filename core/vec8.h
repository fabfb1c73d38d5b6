/* core/vec8.h — eight-float vectors (the GCC/Clang vector extension) and
 * the sparse-row product that both the kernel layer's CPU sparse matmul
 * and PPO's acting run.
 *
 * gr_v8f is one AVX2 register, or two SSE ones where the caller is
 * compiled for the x86-64 baseline: callers put their hot functions in
 * target clones ("avx2", "default"), and the always-inline helper below is
 * compiled into each clone. Multiplies and adds stay separate (no FMA),
 * so every clone gives the same bits.
 *
 * GR_HAVE_VEC8 is defined where the extension exists; callers keep a
 * scalar path for the others. Nothing here is exported from libgrove
 * (static inline; the declaration's line starts with `static`, which is
 * what python/tests/test_lib.py reads). */
#ifndef GROVE_CORE_VEC8_H
#define GROVE_CORE_VEC8_H

#include <stdint.h>
#include <string.h>

/* The attribute that compiles a hot function twice, for AVX2 and the
 * x86-64 baseline, picked at run time (GCC; not under the address
 * sanitizer, whose build has no ifunc resolver to run). Empty elsewhere. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_ADDRESS__)
#define GR_VEC8_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define GR_VEC8_CLONES
#endif

#if defined(__GNUC__) || defined(__clang__)
#define GR_HAVE_VEC8 1

typedef float gr_v8f __attribute__((vector_size(32)));

/* Unaligned loads and stores (macros: a function taking or returning a
 * vector changes its ABI between target clones). */
#define GR_LD8(v, p) memcpy(&(v), (p), sizeof(gr_v8f))
#define GR_ST8(p, v) memcpy((p), &(v), sizeof(gr_v8f))

/* y[0..64) += Σ_j val[j]·table[idx[j]·stride .. +64) over j < nz in
 * ascending j, skipping entries with idx < 0 or skip_lo <= idx < skip_hi
 * (val NULL: ones). The 64 sums stay in registers over all the entries:
 * y is read and written once, not once an entry (a chain through memory
 * that bounded the plain loop). The terms are those of the plain loop in
 * its order, so the bits are too. */
static inline __attribute__((always_inline)) void gr_sparse_axpy64(
    const int32_t *idx, const float *val, int64_t nz, const float *table,
    int64_t stride, int32_t skip_lo, int32_t skip_hi, float *y)
{
    gr_v8f a0, a1, a2, a3, a4, a5, a6, a7;
    GR_LD8(a0, y);
    GR_LD8(a1, y + 8);
    GR_LD8(a2, y + 16);
    GR_LD8(a3, y + 24);
    GR_LD8(a4, y + 32);
    GR_LD8(a5, y + 40);
    GR_LD8(a6, y + 48);
    GR_LD8(a7, y + 56);
    for (int64_t j = 0; j < nz; j++) {
        int32_t id = idx[j];
        if (id < 0 || (id >= skip_lo && id < skip_hi)) {
            continue;
        }
        float v = val ? val[j] : 1.0f;
        const float *row = table + (int64_t)id * stride;
        gr_v8f t;
        GR_LD8(t, row);
        a0 += v * t;
        GR_LD8(t, row + 8);
        a1 += v * t;
        GR_LD8(t, row + 16);
        a2 += v * t;
        GR_LD8(t, row + 24);
        a3 += v * t;
        GR_LD8(t, row + 32);
        a4 += v * t;
        GR_LD8(t, row + 40);
        a5 += v * t;
        GR_LD8(t, row + 48);
        a6 += v * t;
        GR_LD8(t, row + 56);
        a7 += v * t;
    }
    GR_ST8(y, a0);
    GR_ST8(y + 8, a1);
    GR_ST8(y + 16, a2);
    GR_ST8(y + 24, a3);
    GR_ST8(y + 32, a4);
    GR_ST8(y + 40, a5);
    GR_ST8(y + 48, a6);
    GR_ST8(y + 56, a7);
}
#endif

#endif
