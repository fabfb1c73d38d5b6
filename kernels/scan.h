/* kernels/scan.h — INTERNAL to kernels/: the device kernels of the linear
 * scan c[s] = a[s]⊙c[s-1] + b[s] (gr_linear_scan, kernels/fasttrees.h),
 * entries scan_fwd / scan_bwd of the device table (backend.h states their
 * semantics). CPU in scan_cpu.c, CUDA in scan_cuda.cu. */
#ifndef GROVE_KERNELS_SCAN_H
#define GROVE_KERNELS_SCAN_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

int gr_cpu_scan_fwd(void *st, const float *a, const float *b,
                    const float *c0, float *c, int64_t t, int64_t n);
int gr_cpu_scan_bwd(void *st, const float *a, const float *c,
                    const float *c0, const float *gc, float *d, float *ga,
                    float *gb, float *gc0, int64_t t, int64_t n);

#ifdef GROVE_HAVE_CUDA_BACKEND
int gr_cu_scan_fwd(void *st, const float *a, const float *b,
                   const float *c0, float *c, int64_t t, int64_t n);
int gr_cu_scan_bwd(void *st, const float *a, const float *c,
                   const float *c0, const float *gc, float *d, float *ga,
                   float *gb, float *gc0, int64_t t, int64_t n);
#endif

#ifdef __cplusplus
}
#endif

#endif
