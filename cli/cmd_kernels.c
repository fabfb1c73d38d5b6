/* grove bench kernels: the kernel layer's benchmark table (SGEMM, LSTM and
 * ON-LSTM training steps, peak memory) against PyTorch in the same run. */
#include <stdio.h>

#include "bench/bench_util.h"
#include "bench/kernels/bench_kernels.h"
#include "cli/build_info.h"
#include "cli/commands.h"
#include "core/error.h"
#include "kernels/tensor.h"

static int run_bench_kernels(const struct cli_command *cmd, int argc,
                             char **argv)
{
    struct bench_kernels_opts o = bench_kernels_defaults();
    struct cli_common common;
    int first = 0, no_torch = 0, quick = 0, rounds = 3;
    const char *python = o.python;
    const struct cli_option opts[] = {
        CLI_FLAG("quick", "fewer sizes and repetitions (under a minute)",
                 &quick),
        CLI_STRING("python", "PATH", "/usr/bin/python3",
                   "interpreter with torch for the baseline", &python),
        CLI_FLAG("no-baseline", "do not run the PyTorch baseline",
                 &no_torch),
        CLI_INT("rounds", "N", "3",
                "alternations grove, PyTorch (median, spread)", &rounds),
        CLI_END,
    };
    int rc = cli_parse(cmd, opts,
                       CLI_COMMON_DEVICE | CLI_COMMON_THREADS |
                           CLI_COMMON_QUIET,
                       0, 0, argc, argv, &common, &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    if (rounds < 1 || rounds > BENCH_MAX_ROUNDS) {
        return cli_usage_error(cmd, "--rounds must be in [1, %d]",
                               BENCH_MAX_ROUNDS);
    }
    o.rounds = rounds;
    o.quick = quick;
    o.no_torch = no_torch;
    o.python = python;
    o.threads = common.threads;
    o.quiet = common.quiet;
    o.device = common.device == CLI_DEVICE_CPU    ? GR_DEVICE_CPU
               : common.device == CLI_DEVICE_CUDA ? GR_DEVICE_CUDA
                                                  : GR_DEVICE_AUTO;
    char build[256];
    snprintf(build, sizeof build, "%s %s, %s, %s", GROVE_VERSION,
             GROVE_GIT_DESCRIBE, GROVE_BUILD_TYPE, GROVE_C_COMPILER);
    o.build = build;
    if (bench_kernels_run(&o, stdout) < 0) {
        return cli_fail(cmd);
    }
    return CLI_EXIT_OK;
}

const struct cli_command cmd_bench_kernels = {
    "bench kernels",
    "Benchmark the kernel layer (SGEMM, LSTM/ON-LSTM steps) against "
    "PyTorch.",
    "",
    "Prints a Markdown table case | grove | baseline | ratio | spread on "
    "stdout, the two sides alternated --rounds times (medians; spread = "
    "the range of the rounds' ratios), with grove's BLAS and the BLAS and "
    "threads PyTorch ran on. The "
    "baseline runs bench/kernels/bench_torch.py with --python (Debian's "
    "python3-torch); without torch the table says so and shows grove "
    "alone. Use --threads 1 on a shared machine: multi-threaded timings of "
    "small cases are dominated by thread contention there.\n\n"
    "Example:\n"
    "  grove bench kernels --quick --threads 1",
    run_bench_kernels,
};
