/* Inside libgrove_cuda.so (kernels/cuda_plugin.h): the device queries
 * through the CUDA runtime API, grove's gr_error forwarded to the process
 * that loaded this library, and the one exported entry point. Plain C; the
 * kernels are in the .cu files beside it. */
#include "kernels/cuda_plugin.h"

#include <cuda_runtime_api.h>
#include <stdarg.h>
#include <stdio.h>

#include "core/error.h"
#include "kernels/attention_internal.h"
#include "kernels/backend.h"

/* grove's gr_error, given at load time. */
static int (*host_error)(int code, const char *fmt, ...);

/* The .cu files call gr_error (core/error.h) as when they were linked into
 * grove; this library links nothing of grove, so its gr_error (hidden: no
 * other object sees it) formats the message and hands it over. */
int gr_error(int code, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return host_error ? host_error(code, "%s", msg) : code;
}

static int cu_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError(); /* clear the sticky error for later calls */
        return 0;
    }
    return n;
}

static int cu_device_describe(int index, char *out, size_t cap)
{
    struct cudaDeviceProp prop;
    if (index < 0 || index >= cu_device_count() ||
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

static void cu_status(char *out, size_t cap)
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

/* The only symbol this library exports (its version script says so too). */
__attribute__((visibility("default"))) const struct gr_cuda_plugin *
grove_cuda_plugin(int abi, int (*error)(int code, const char *fmt, ...));

const struct gr_cuda_plugin *
grove_cuda_plugin(int abi, int (*error)(int code, const char *fmt, ...))
{
    static struct gr_cuda_plugin table;
    if (abi != GR_CUDA_PLUGIN_ABI) {
        return NULL;
    }
    host_error = error;
    table.abi = GR_CUDA_PLUGIN_ABI;
    table.backend_size = sizeof(struct gr_backend);
    table.attn_size = sizeof(struct gr_attn_backend);
    table.device_count = cu_device_count;
    table.device_describe = cu_device_describe;
    table.status = cu_status;
    table.state_new = gr_cuda_state_new;
    table.state_free = gr_cuda_state_free;
    table.backend = gr_backend_cuda();
    table.attn = gr_attn_backend_cuda();
    return &table;
}
