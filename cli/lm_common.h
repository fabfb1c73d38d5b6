/* cli/lm_common.h — what the language-model commands share (cli/cmd_lm.c,
 * and the --checkpoint paths of cli/cmd_nlp.c). Internal to cli/. */
#ifndef GROVE_CLI_LM_COMMON_H
#define GROVE_CLI_LM_COMMON_H

#include "cli/cli.h"
#include "kernels/tensor.h"

/* The compute context a command's --device and --threads ask for.
 * Returns CLI_CONTINUE, or CLI_EXIT_USAGE after printing the error. */
int lm_cli_ctx_config(const struct cli_command *cmd,
                      const struct cli_common *common,
                      struct gr_ctx_config *cc);

#endif
