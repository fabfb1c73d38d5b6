/* kernels/dropout_cpu_internal.h — INTERNAL to kernels/: the CPU's dropout
 * masks drawn many elements at a time (kernels/dropout_cpu.c).
 *
 * The mask bits are exactly those of kernels/rng.h: element m of a draw
 * keyed by `key` is kept iff gr_rng_keep(key, m, p), i.e. word m & 3 of
 * the Philox 4x32-10 block m >> 2 (counter = block index, key = the draw's
 * 64-bit key). What changes is only how they are computed: one Philox
 * block per four elements, four or eight blocks per vector instruction
 * where the CPU has AVX2 (chosen at run time), and the comparison with p
 * done on the integer (word >> 8 >= ceil(p·2^24), the same decision as
 * the float comparison of gr_rng_keep, exactly), so the CUDA backend,
 * which draws element by element with gr_rng_keep, stays bit-identical.
 *
 * Pure functions of their arguments, no allocation; any thread. */
#ifndef GROVE_KERNELS_DROPOUT_CPU_INTERNAL_H
#define GROVE_KERNELS_DROPOUT_CPU_INTERNAL_H

#include <stdint.h>

/* Words 4·b0 .. 4·(b0 + nb) - 1 of the Philox stream keyed by `key`
 * (blocks b0 .. b0 + nb - 1, their four words each, in order) into
 * out[4·nb]. */
void gr_cpu_philox_blocks(uint64_t key, uint64_t b0, int64_t nb,
                          uint32_t *out);

/* For i < n: v = gr_rng_keep(key, m0 + i, p) ? x[i]·scale : 0, then
 * y[i] = v (acc 0) or y[i] += v (acc 1). y may be x. p in (0, 1). */
void gr_cpu_dropout_run(uint64_t key, uint64_t m0, int64_t n, float p,
                        float scale, const float *x, float *y, int acc);

#endif
