/* cli/cmd_craft_ocn.h — the hook through which `grove craft run` (cli/
 * cmd_craft.c) hands `--agent ocn` to the OCN agent of cli/cmd_craft_ocn.c.
 *
 *   if (cli_craft_run_wants_ocn(argc, argv))
 *       return cli_craft_run_ocn(cmd, argc, argv);
 */
#ifndef GROVE_CLI_CMD_CRAFT_OCN_H
#define GROVE_CLI_CMD_CRAFT_OCN_H

#include "cli/cli.h"

/* 1 when argv holds "--agent ocn", "--agent=ocn" or --checkpoint (a
 * checkpoint implies the ocn agent). */
int cli_craft_run_wants_ocn(int argc, char **argv);

/* `grove craft run --agent ocn --checkpoint FILE ...`: its own option
 * table (and --help); returns the command's exit status. */
int cli_craft_run_ocn(const struct cli_command *cmd, int argc, char **argv);

#endif
