/* The command table: `grove --help` lists these in this order. */
#include "cli/commands.h"

#include <stddef.h>

const struct cli_command *const cli_commands[] = {
    &cmd_version,
    &cmd_craft_run,
    &cmd_craft_demos,
    &cmd_craft_play,
    &cmd_replay_info,
    &cmd_replay_verify,
    &cmd_replay_dump,
    &cmd_replay_export,
    &cmd_replay_play,
    &cmd_plot,
    &cmd_train_bc,
    &cmd_train_ppo,
    &cmd_eval_options,
    &cmd_watch,
    &cmd_nlp_tasks,
    &cmd_nlp_corpus,
    &cmd_nlp_lm_train,
    &cmd_nlp_lm_eval,
    &cmd_nlp_parse,
    &cmd_nlp_syneval,
    &cmd_nlp_data,
    &cmd_nlp_classify_train,
    &cmd_nlp_classify_eval,
    &cmd_nlp_classify_trees,
    &cmd_nlp_listops_generate,
    &cmd_nlp_logic_generate,
    &cmd_bench_craft,
    &cmd_bench_kernels,
    &cmd_bench_ocn,
    &cmd_bench_nlp,
    &cmd_bench_om,
    NULL,
};
