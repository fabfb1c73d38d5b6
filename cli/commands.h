/* cli/commands.h — every subcommand's table entry, defined in cli/cmd_*.c. */
#ifndef GROVE_CLI_COMMANDS_H
#define GROVE_CLI_COMMANDS_H

#include "cli/cli.h"

extern const struct cli_command cmd_version;
extern const struct cli_command cmd_nlp_tasks;
extern const struct cli_command cmd_nlp_corpus;
extern const struct cli_command cmd_nlp_parse;
extern const struct cli_command cmd_nlp_syneval;

extern const struct cli_command cmd_nlp_lm_train;
extern const struct cli_command cmd_nlp_lm_eval;
extern const struct cli_command cmd_bench_nlp;

#endif
