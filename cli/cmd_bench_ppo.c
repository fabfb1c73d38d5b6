/* grove bench ppo: PPO training frames/s against a PyTorch PPO of the same
 * model and loop (bench/ppo/bench_ppo.h, issue 20 §5). */
#include <stdio.h>

#include "bench/ppo/bench_ppo.h"
#include "cli/build_info.h"
#include "cli/commands.h"
#include "kernels/device.h"

static int run_bench_ppo(const struct cli_command *cmd, int argc, char **argv)
{
    int quick = 0, no_torch = 0;
    struct bench_ppo_options o;
    bench_ppo_options_default(&o);
    const char *python = o.python, *script = o.script, *options = NULL;
    struct cli_common common;
    int first = 0;
    const struct cli_option opts[] = {
        CLI_FLAG("quick", "tiny sizes, for a smoke run", &quick),
        CLI_INT("num-envs", "N", "16", "parallel worlds", &o.num_envs),
        CLI_INT("num-steps", "N", "64",
                "controller decisions per world per rollout", &o.num_steps),
        CLI_INT("iterations", "N", "3", "timed iterations per round",
                &o.iterations),
        CLI_INT("runs", "K", "3", "rounds; the median is shown", &o.runs),
        CLI_STRING("options", "CKPT", NULL,
                   "the frozen options (default: fresh S1-shaped options, "
                   "K = 3, d = w = 128)",
                   &options),
        CLI_FLAG("no-baseline", "do not run the PyTorch baseline",
                 &no_torch),
        CLI_STRING("python", "PATH", "/usr/bin/python3",
                   "interpreter with torch for the baseline", &python),
        CLI_STRING("script", "FILE", NULL,
                   "the baseline script (default: bench/ppo/ppo_torch.py of "
                   "the source tree)",
                   &script),
        CLI_END,
    };
    int rc = cli_parse(cmd, opts,
                       CLI_COMMON_DEVICE | CLI_COMMON_THREADS |
                           CLI_COMMON_QUIET,
                       0, 0, argc, argv, &common, &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    if (o.num_envs < 1 || o.num_envs > 65536 || o.num_steps < 4 ||
        o.num_steps > 4096 || o.iterations < 1 || o.runs < 1 ||
        o.runs > 64) {
        return cli_usage_error(cmd, "--num-envs 1..65536, --num-steps "
                                    "4..4096, --iterations >= 1, --runs "
                                    "1..64");
    }
    o.quick = quick;
    o.threads = cli_threads_or_cores(common.threads);
    o.cuda = common.device == CLI_DEVICE_CUDA ||
             (common.device == CLI_DEVICE_AUTO && gr_cuda_device_count() > 0);
    o.python = no_torch ? NULL : python;
    o.options = options;
    if (script != NULL) {
        o.script = script;
    }
    o.build = GROVE_BUILD_TYPE ", " GROVE_C_COMPILER ", " GROVE_GIT_DESCRIBE;
    o.quiet = common.quiet;
    if (bench_ppo_run(&o, stdout) < 0) {
        return cli_fail(cmd);
    }
    return CLI_EXIT_OK;
}

const struct cli_command cmd_bench_ppo = {
    "bench ppo",
    "PPO training speed (frames/s) against a PyTorch PPO of the same loop.",
    "",
    "S1 shapes (policy ocn on DCA, sparse reward, four-copy world; K = 3 "
    "frozen options, d = w = 128; 16 worlds x 64 decisions per rollout): "
    "grove's trainer (agents/ppo.h, as `train ppo` runs it) against a "
    "cleanrl-style PyTorch PPO of the same model, hyperparameters and loop "
    "(bench/ppo/ppo_torch.py), which steps the same C environment through "
    "grove's Python bindings (libgrove.so), run in the same invocation, the "
    "rounds in alternation. Prints the Markdown table case | grove | "
    "baseline | ratio | spread and where each side's time goes "
    "(environment, options, controller, update).\n\n"
    "Example:\n"
    "  grove bench ppo --threads 1",
    run_bench_ppo,
};
