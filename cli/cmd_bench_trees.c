/* grove bench trees: binary Tree-LSTM training sentences/s, grove's level
 * batching against PyTorch per-node and level-batched versions on the same
 * trees, in the same run (bench/trees/bench_trees.h). */
#include <stdio.h>

#include "bench/bench_util.h"
#include "bench/trees/bench_trees.h"
#include "cli/build_info.h"
#include "cli/commands.h"
#include "core/error.h"

static int run_bench_trees(const struct cli_command *cmd, int argc,
                           char **argv)
{
    struct cli_common common;
    int first = 0;
    struct bench_trees_options o;
    bench_trees_options_default(&o);
    int no_baseline = 0;
    const struct cli_option opts[] = {
        CLI_INT("sentences", "N", "100",
                "trees per pass (the first N of SST train.txt)",
                &o.sentences),
        CLI_INT("batch", "B", "25", "sentences per batch", &o.batch),
        CLI_INT("emsize", "E", "300", "word vector size", &o.emsize),
        CLI_INT("nhid", "H", "150", "state size", &o.nhid),
        CLI_INT("warmup", "N", "1", "untimed batches per pass", &o.warmup),
        CLI_INT("rounds", "N", "3",
                "alternations grove, per-node, levels (median, spread)",
                &o.rounds),
        CLI_STRING("data", "DIR", NULL,
                   "SST folder with train.txt (default ../shared/data/sst2 "
                   "beside the source tree; random trees when absent)",
                   &o.data),
        CLI_FLAG("quick", "tiny sizes on random trees (a CI smoke run, not "
                 "the issue's case)",
                 &o.quick),
        CLI_FLAG("no-baseline", "do not run the PyTorch versions",
                 &no_baseline),
        CLI_STRING("python", "PATH", "/usr/bin/python3",
                   "interpreter with torch for the baseline", &o.python),
        CLI_STRING("script", "FILE", NULL,
                   "the baseline script (default: bench/trees/"
                   "bench_treelstm.py of the source tree)",
                   &o.script),
        CLI_END,
    };
    int rc = cli_parse(cmd, opts, CLI_COMMON_THREADS, 0, 0, argc, argv,
                       &common, &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    if (o.sentences < 1 || o.batch < 1 || o.emsize < 1 || o.nhid < 1 ||
        o.warmup < 0 || o.rounds < 1 || o.rounds > BENCH_MAX_ROUNDS) {
        return cli_usage_error(cmd, "--sentences, --batch, --emsize and "
                               "--nhid must be 1 or more, --warmup 0 or "
                               "more, --rounds in [1, %d]",
                               BENCH_MAX_ROUNDS);
    }
    if (o.quick) {
        o.sentences = o.sentences == 100 ? 12 : o.sentences;
        o.batch = o.batch == 25 ? 4 : o.batch;
        o.emsize = o.emsize == 300 ? 16 : o.emsize;
        o.nhid = o.nhid == 150 ? 8 : o.nhid;
    }
    if (o.warmup * o.batch >= o.sentences) {
        return cli_usage_error(cmd, "--sentences %d leaves no timed batch "
                               "after --warmup %d of --batch %d",
                               o.sentences, o.warmup, o.batch);
    }
    o.threads = cli_threads_or_cores(common.threads);
    o.baseline = !no_baseline;
    o.build = GROVE_BUILD_TYPE;
    o.commit = GROVE_GIT_DESCRIBE;
    if (bench_trees_run(&o, stdout) < 0) {
        return cli_fail(cmd);
    }
    return CLI_EXIT_OK;
}

const struct cli_command cmd_bench_trees = {
    "bench trees",
    "Benchmark binary Tree-LSTM training (sentences/s on SST trees) against "
    "PyTorch per-node and level-batched versions in the same run.",
    "",
    "E 300, H 150, batch 25, the first 100 SST train sentences, every node "
    "supervised, Adam, 1 thread by default; the three sides read the same "
    "trees and alternate --rounds times. Prints both BLAS and a Markdown "
    "table case | grove | baseline | ratio | spread (ratio = grove / "
    "PyTorch, the median of the rounds' ratios), by wall clock and by "
    "process CPU time.\n\n"
    "Example:\n"
    "  grove bench trees --quick",
    run_bench_trees,
};
