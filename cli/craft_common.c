/* What the Craft and agents commands share: the compute context of
 * --device/--threads, task lists, --n-each, opening a policy checkpoint.
 * See cli/craft_common.h. */
#define _POSIX_C_SOURCE 200809L
#include "cli/craft_common.h"

#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "kernels/device.h"

static enum gr_device to_device(enum cli_device d)
{
    switch (d) {
    case CLI_DEVICE_CPU:
        return GR_DEVICE_CPU;
    case CLI_DEVICE_CUDA:
        return GR_DEVICE_CUDA;
    default:
        return GR_DEVICE_AUTO;
    }
}

int cli_agents_ctx_new(const struct cli_common *common, struct gr_ctx **ctx)
{
    struct gr_ctx_config c = gr_ctx_config_default();
    c.device = to_device(common->device);
    c.threads = common->threads;
    return gr_ctx_new(ctx, &c);
}

/* Parses a comma-separated task list into tasks[cap]; returns the count or
 * -1 after printing a usage error. */
int cli_parse_tasks(const struct cli_command *cmd, const char *flag,
                    const char *text, struct craft_task *tasks, int cap)
{
    char list[1024];
    if (strlen(text) >= sizeof list) {
        cli_usage_error(cmd, "%s is longer than %zu characters", flag,
                        sizeof list - 1);
        return -1;
    }
    snprintf(list, sizeof list, "%s", text);
    char *items[64];
    int n = cli_split_list(list, items, cap < 64 ? cap : 64);
    if (n < 1) {
        cli_usage_error(cmd, "%s '%s' is not a comma-separated list of 1..%d "
                             "tasks",
                        flag, text, cap);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (craft_task_parse(items[i], &tasks[i]) < 0) {
            cli_usage_error(cmd, "%s: %s", flag, gr_last_error());
            return -1;
        }
        for (int j = 0; j < i; j++) {
            if (strcmp(tasks[j].name, tasks[i].name) == 0) {
                cli_usage_error(cmd, "%s names task %s twice", flag,
                                tasks[i].name);
                return -1;
            }
        }
    }
    return n;
}

/* Opens a policy checkpoint on the device --device/--threads ask for. */
int cli_load_policy(const char *path, const struct cli_common *common,
                       struct ocn_loaded *p)
{
    struct gr_ctx_config c = gr_ctx_config_default();
    c.device = to_device(common->device);
    c.threads = common->threads;
    return ocn_load(p, path, &c);
}

int cli_load_ompn(const char *path, const struct cli_common *common,
                  struct ompn_loaded *p)
{
    struct gr_ctx_config c = gr_ctx_config_default();
    c.device = to_device(common->device);
    c.threads = common->threads;
    return ompn_load(p, path, &c);
}

/* Maps the requested tasks to the checkpoint's controller states; prints
 * the error and returns -1 when one is not a training task. */
int cli_map_tasks(const struct cli_command *cmd, const struct ocn_loaded *p,
                     const struct craft_task *tasks, int n, int *index)
{
    if (ocn_loaded_map_tasks(p, tasks, n, index) < 0) {
        cli_fail(cmd);
        return -1;
    }
    return 0;
}

int cli_argmax_f(const float *p, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++) {
        if (p[i] > p[best]) {
            best = i;
        }
    }
    return best;
}

int cli_tasks_s1s2(const struct craft_task *tasks, int n)
{
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < tasks[i].n; j++) {
            if (craft_subtask_letter(&tasks[i].sub[j]) == 0) {
                return 0;
            }
        }
    }
    return n > 0;
}

int cli_default_n_each(const struct craft_task *tasks, int n)
{
    return cli_tasks_s1s2(tasks, n) ? CLI_S1S2_N_EACH : 1;
}

int cli_check_file_world(const struct cli_command *cmd, const char *file,
                         const struct craft_config *have, int n_each,
                         const char *asked_by)
{
    if (n_each == CLI_N_EACH_UNSET || have->n_each == n_each) {
        return 0;
    }
    fprintf(stderr,
            "grove %s: %s is of the world n_each %d, not the n_each %d that "
            "%s asks for (give a file of that world, or leave the world to "
            "the file)\n",
            cmd->name, file, have->n_each, n_each, asked_by);
    return CLI_EXIT_USAGE;
}

int cli_world_n_each(const struct cli_command *cmd, int n_each,
                     struct craft_config *c)
{
    if (n_each == CLI_N_EACH_UNSET) {
        return 0;
    }
    c->n_each = n_each;
    if (n_each < 1 || craft_config_validate(c) < 0) {
        return cli_usage_error(cmd, "--n-each %d: %s", n_each,
                               n_each < 1 ? "must be at least 1"
                                          : gr_last_error());
    }
    return 0;
}
