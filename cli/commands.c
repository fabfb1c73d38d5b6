/* The command table: `grove --help` lists these in this order. */
#include "cli/commands.h"

#include <stddef.h>

const struct cli_command *const cli_commands[] = {
    &cmd_version,
    &cmd_craft_run,
    &cmd_bench_craft,
    &cmd_craft_play,
    &cmd_craft_demos,
    &cmd_replay_info,
    &cmd_replay_verify,
    &cmd_replay_dump,
    &cmd_replay_play,
    &cmd_replay_export,
    &cmd_plot,
    &cmd_train_bc,
    &cmd_eval_options,
    &cmd_watch,
    &cmd_bench_ocn,
    &cmd_bench_kernels,
    NULL,
};
