/* cli/commands.h — every subcommand's table entry, defined in cli/cmd_*.c. */
#ifndef GROVE_CLI_COMMANDS_H
#define GROVE_CLI_COMMANDS_H

#include "cli/cli.h"

extern const struct cli_command cmd_version;
extern const struct cli_command cmd_bench_kernels;

#endif
