/* Device queries through the CUDA runtime API (plain C; no kernels here). */
#include "kernels/device.h"

#include <cuda_runtime_api.h>
#include <stdio.h>

#include "core/error.h"

int gr_cuda_compiled(void) { return 1; }

int gr_cuda_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError(); /* clear the sticky error for later calls */
        return 0;
    }
    return n;
}

int gr_cuda_device_describe(int index, char *out, size_t cap)
{
    struct cudaDeviceProp prop;
    if (index < 0 || index >= gr_cuda_device_count() ||
        cudaGetDeviceProperties(&prop, index) != cudaSuccess) {
        if (cap > 0) {
            out[0] = '\0';
        }
        return gr_error(GR_EINVAL, "no GPU %d", index);
    }
    snprintf(out, cap, "%s, sm_%d%d, %.1f GiB", prop.name, prop.major,
             prop.minor, (double)prop.totalGlobalMem / (1024.0 * 1024 * 1024));
    return 0;
}

void gr_cuda_status(char *out, size_t cap)
{
    int runtime = 0, driver = 0, n = 0;
    cudaRuntimeGetVersion(&runtime);
    cudaDriverGetVersion(&driver);
    cudaError_t err = cudaGetDeviceCount(&n);
    if (driver == 0) {
        snprintf(out, cap, "CUDA runtime %d.%d; no CUDA driver found",
                 runtime / 1000, (runtime % 1000) / 10);
    } else if (err != cudaSuccess) {
        snprintf(out, cap, "CUDA runtime %d.%d, driver %d.%d: %s",
                 runtime / 1000, (runtime % 1000) / 10, driver / 1000,
                 (driver % 1000) / 10, cudaGetErrorString(err));
        cudaGetLastError();
    } else {
        snprintf(out, cap, "CUDA runtime %d.%d, driver %d.%d",
                 runtime / 1000, (runtime % 1000) / 10, driver / 1000,
                 (driver % 1000) / 10);
    }
}
