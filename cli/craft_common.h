/* cli/craft_common.h — what the Craft and agents commands share (internal
 * to cli/): the compute context of --device/--threads, task lists,
 * --n-each, and opening a policy checkpoint (agents/ocn_load.h) with the
 * command's device. Used by cmd_craft.c, cmd_craft_ocn.c, cmd_bc.c,
 * cmd_agents.c and cmd_replay.c. */
#ifndef GROVE_CLI_CRAFT_COMMON_H
#define GROVE_CLI_CRAFT_COMMON_H

#include <limits.h>

#include "agents/ocn_load.h"
#include "cli/cli.h"
#include "envs/craft.h"
#include "kernels/tensor.h"

/* A compute context on the device and threads of the shared options. */
int cli_agents_ctx_new(const struct cli_common *common, struct gr_ctx **ctx);

/* Parses a comma-separated task list given to `flag` into tasks[cap]
 * (no task twice); returns the count, or -1 after printing a usage error. */
int cli_parse_tasks(const struct cli_command *cmd, const char *flag,
                    const char *text, struct craft_task *tasks, int cap);

/* Opens a policy checkpoint on the device --device/--threads ask for. */
int cli_load_policy(const char *path, const struct cli_common *common,
                    struct ocn_loaded *p);
/* cli_load_policy for an OMPN checkpoint (ompn_load). */
int cli_load_ompn(const char *path, const struct cli_common *common,
                  struct ompn_loaded *p);

/* Maps the requested tasks to the checkpoint's controller states; prints
 * the error and returns -1 when one is not a training task. */
int cli_map_tasks(const struct cli_command *cmd, const struct ocn_loaded *p,
                  const struct craft_task *tasks, int n, int *index);

/* Index of the largest of p[0..n) (ties: the smallest index). */
int cli_argmax_f(const float *p, int n);

/* --n-each N of craft run, craft demos, train bc and replay commands: sets
 * c->n_each (CLI_N_EACH_UNSET: the flag was not given, c is kept) and
 * validates the world. 0, or the exit code of the usage error it printed. */
int cli_world_n_each(const struct cli_command *cmd, int n_each,
                     struct craft_config *c);

/* --n-each not given (any int the user can type is checked instead). */
#define CLI_N_EACH_UNSET INT_MIN

/* The S1/S2 world (ocn.md §6.1): four copies of each primitive. */
#define CLI_S1S2_N_EACH 4

/* 1 when tasks[0..n) are all made of OCN letter subtasks (A-D: craft.md
 * §6.4's S1 and S2 task sets and any other letter task), else 0. */
int cli_tasks_s1s2(const struct craft_task *tasks, int n);

/* The world's n_each when --n-each is not given: CLI_S1S2_N_EACH for S1/S2
 * task sets (ocn.md §6.1), craft.md §3's 1 for the others (OMPN tasks). */
int cli_default_n_each(const struct craft_task *tasks, int n);

/* A file (checkpoint, replay) brings its world `have`; n_each is what the
 * command was asked for (CLI_N_EACH_UNSET: nothing asked), by `asked_by`
 * ("--n-each 4", "--recipe thesis"). Prints one line and returns CLI_EXIT_USAGE when they
 * differ, else 0. */
int cli_check_file_world(const struct cli_command *cmd, const char *file,
                         const struct craft_config *have, int n_each,
                         const char *asked_by);

#endif
