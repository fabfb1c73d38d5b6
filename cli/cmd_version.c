/* grove version: what this build is and which GPUs it can see. */
#include <stdio.h>

#include "cli/build_info.h"
#include "cli/commands.h"
#include "kernels/device.h"
#include "train/mpi.h"

static int run_version(const struct cli_command *cmd, int argc, char **argv)
{
    struct cli_common common;
    int first = 0;
    const struct cli_option opts[] = {CLI_END};
    int rc = cli_parse(cmd, opts, 0, 0, 0, argc, argv, &common, &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }

    char status[256];
    gr_cuda_status(status, sizeof status);
    printf("grove %s (%s)\n", GROVE_VERSION, GROVE_GIT_DESCRIBE);
    printf("build:     %s, %s, C11\n", GROVE_BUILD_TYPE, GROVE_C_COMPILER);
    printf("sanitize:  %s\n", GROVE_SANITIZE_TEXT);
    if (gr_cuda_compiled()) {
        printf("cuda:      compiled in (nvcc %s, archs %s); %s\n",
               GROVE_CUDA_COMPILER, GROVE_CUDA_ARCHS, status);
    } else {
        printf("cuda:      %s\n", status);
    }
    printf("mpi:       %s\n",
           train_mpi_built()
               ? "yes (mpirun -np N grove train bc|nlp lm train ...)"
               : "no (build with libopenmpi-dev installed, -DGROVE_MPI=ON)");
    int n = gr_cuda_device_count();
    printf("gpus:      %d visible\n", n);
    for (int i = 0; i < n; i++) {
        char desc[256];
        if (gr_cuda_device_describe(i, desc, sizeof desc) == 0) {
            printf("  gpu %d:   %s\n", i, desc);
        }
    }
    return CLI_EXIT_OK;
}

const struct cli_command cmd_version = {
    "version",
    "Print grove's version, build options, and the GPUs it can see.",
    "",
    NULL,
    run_version,
};
