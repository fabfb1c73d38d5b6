/* grove bench om: Ordered Memory training tokens/s against the PyTorch
 * reference on the same batches, in the same run (bench/nlp/bench_om.h). */
#include <stdio.h>

#include "bench/bench_util.h"
#include "bench/nlp/bench_om.h"
#include "cli/build_info.h"
#include "cli/commands.h"
#include "cli/lm_common.h"
#include "core/error.h"

static int run_bench_om(const struct cli_command *cmd, int argc, char **argv)
{
    struct cli_common common;
    int first = 0;
    struct bench_om_options o;
    bench_om_options_default(&o);
    int no_baseline = 0;
    const struct cli_option opts[] = {
        CLI_INT("batches", "N", "3", "timed batches per side", &o.batches),
        CLI_INT("warmup", "N", "1",
                "untimed batches first (grove then repeats the largest "
                "once, which settles its step arena)",
                &o.warmup),
        CLI_INT("pairs", "N", "128", "pairs per batch", &o.pairs),
        CLI_INT("rounds", "N", "3",
                "alternations grove, baseline (median, spread)", &o.rounds),
        CLI_INT("nslot", "N", "12", "memory slots", &o.nslot),
        CLI_INT("nhid", "D", "200", "slot and embedding size", &o.nhid),
        CLI_STRING("data", "DIR", NULL,
                   "logic_inference folder (default ../shared/data beside "
                   "the source tree; synthetic batches when absent)",
                   &o.data),
        CLI_FLAG("quick", "tiny sizes on synthetic batches (a CI smoke run, "
                 "not the issue's case)",
                 &o.quick),
        CLI_FLAG("no-baseline", "do not run the PyTorch baseline",
                 &no_baseline),
        CLI_STRING("python", "PATH", "/usr/bin/python3",
                   "interpreter with torch for the reference", &o.python),
        CLI_STRING("script", "FILE", NULL,
                   "the reference script (default: bench/nlp/om_ref.py of "
                   "the source tree)",
                   &o.script),
        CLI_END,
    };
    int rc = cli_parse(cmd, opts, CLI_COMMON_DEVICE | CLI_COMMON_THREADS, 0,
                       0, argc, argv, &common, &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    struct gr_ctx_config cc;
    if ((rc = lm_cli_ctx_config(cmd, &common, &cc)) != CLI_CONTINUE) {
        return rc;
    }
    if (o.batches < 1 || o.warmup < 0 || o.pairs < 1 || o.nslot < 2 ||
        o.nhid < 1 || o.rounds < 1 || o.rounds > BENCH_MAX_ROUNDS) {
        return cli_usage_error(cmd, "--batches and --pairs must be 1 or "
                               "more, --rounds in [1, %d], --warmup 0 or "
                               "more, --nslot 2 or more",
                               BENCH_MAX_ROUNDS);
    }
    if (o.quick) {
        o.nhid = o.nhid == 200 ? 16 : o.nhid;
        o.pairs = o.pairs == 128 ? 4 : o.pairs;
        o.nslot = o.nslot == 12 ? 6 : o.nslot;
    }
    o.device = cc.device == GR_DEVICE_AUTO ? GR_DEVICE_CPU : cc.device;
    o.threads = cli_threads_or_cores(common.threads);
    o.baseline = !no_baseline;
    o.build = GROVE_BUILD_TYPE;
    o.commit = GROVE_GIT_DESCRIBE;
    if (bench_om_run(&o, stdout) < 0) {
        return cli_fail(cmd);
    }
    return CLI_EXIT_OK;
}

const struct cli_command cmd_bench_om = {
    "bench om",
    "Benchmark Ordered Memory training (tokens/s, logic size) against the "
    "PyTorch reference in the same run.",
    "",
    "Logic classifier at D 200, 128 pairs, 12 slots, 1 thread by default; "
    "both sides train on the same batches (random pairs of train0-6).\n"
    "The sides alternate --rounds times. Prints both BLAS and a Markdown "
    "table case | grove | baseline | ratio | spread | peak memory (ratio = "
    "grove / PyTorch, the median of the rounds' ratios), by wall clock and by "
    "process CPU time.\n\n"
    "Example:\n"
    "  grove bench om --quick",
    run_bench_om,
};
