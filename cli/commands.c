/* The command table: `grove --help` lists these in this order. */
#include "cli/commands.h"

#include <stddef.h>

const struct cli_command *const cli_commands[] = {
    &cmd_version,
    &cmd_nlp_tasks,
    &cmd_nlp_corpus,
    &cmd_nlp_parse,
    &cmd_nlp_syneval,
    &cmd_nlp_lm_train,
    &cmd_nlp_lm_eval,
    &cmd_bench_nlp,
    NULL,
};
