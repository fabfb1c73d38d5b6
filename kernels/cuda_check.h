/* The check every CUDA source of the kernel layer makes after a kernel
 * launch (backend_cuda.cu, scan_cuda.cu, attention_cuda.cu,
 * attention_fused_cuda.cu). Include it after <cuda_runtime.h> and
 * core/error.h: it includes neither, so that bench/gpu/emulate, which
 * swaps <cuda_runtime.h> for its host emulation, can compile a .cu file
 * that uses it. */
#ifndef GROVE_KERNELS_CUDA_CHECK_H
#define GROVE_KERNELS_CUDA_CHECK_H

/* 0 when the last launch was accepted; otherwise GR_EDEVICE with the
 * kernel's name and CUDA's reason (reading the error clears it). */
static inline int gr_cuda_launched(const char *what)
{
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
        return gr_error(GR_EDEVICE, "CUDA kernel %s: %s", what,
                        cudaGetErrorString(e));
    }
    return 0;
}

#endif
