/* Device queries for a build without the CUDA backend. */
#include "kernels/device.h"

#include <stdio.h>

#include "core/error.h"

int gr_cuda_compiled(void) { return 0; }

int gr_cuda_device_count(void) { return 0; }

int gr_cuda_device_describe(int index, char *out, size_t cap)
{
    if (cap > 0) {
        out[0] = '\0';
    }
    return gr_error(GR_EINVAL, "GPU %d: this build has no CUDA backend",
                    index);
}

void gr_cuda_status(char *out, size_t cap)
{
    snprintf(out, cap, "not compiled in (configure with -DGROVE_CUDA=ON)");
}
