/* kernels/device.h — which compute devices this build and machine have.
 *
 * The only part of kernels/ outside the .cu files that speaks of CUDA, in
 * plain C: counts and descriptions, no CUDA types. Safe to call from any
 * thread; no allocation. Nothing here fails: with no CUDA compiled in, or
 * no driver, or no GPU, or no loadable libgrove_cuda.so, the count is 0 and
 * gr_cuda_status says why. In a CUDA build the first call of
 * gr_cuda_device_count, gr_cuda_device_describe or gr_cuda_status loads
 * the CUDA backend (libgrove_cuda.so, cudart, cuBLAS: about a second)
 * when a CUDA driver is present; gr_cuda_compiled loads nothing.
 *
 *   if (gr_cuda_device_count() > 0) { ... }
 */
#ifndef GROVE_KERNELS_DEVICE_H
#define GROVE_KERNELS_DEVICE_H

#include <stddef.h>

/* 1 if the CUDA backend was compiled into this build. */
int gr_cuda_compiled(void);

/* GPUs the CUDA runtime can see now (0 without CUDA, driver or GPU). */
int gr_cuda_device_count(void);

/* "NVIDIA H100 80GB HBM3, sm_90, 79.1 GiB" for GPU `index` into out[cap].
 * Returns 0, or GR_EINVAL for an index out of range. */
int gr_cuda_device_describe(int index, char *out, size_t cap);

/* One line on the CUDA situation: "CUDA runtime 13.0, driver 13.0" or the
 * reason none is usable ("not compiled in", "no CUDA driver found", ...). */
void gr_cuda_status(char *out, size_t cap);

#endif
