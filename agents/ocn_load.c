/* Opening a policy checkpoint with its world and tasks: see
 * agents/ocn_load.h. */
#include "agents/ocn_load.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents/bc.h"
#include "core/error.h"
#include "kernels/checkpoint.h"

/* What every policy checkpoint needs before its model is built: the world
 * it was trained in (craft.md §3 defaults when not stated), a model that
 * reads Craft's observations and acts with its actions, its training
 * tasks' names parsed into tasks[], and a new context of cc. */
static int open_policy(const char *path, const char *config,
                       const struct gr_ctx_config *cc, int obs_size,
                       int n_actions, const char (*names)[CRAFT_TASK_NAME_CAP],
                       int n_tasks, struct craft_config *world,
                       struct craft_task *tasks, struct gr_ctx **ctx)
{
    int rc = bc_world_parse(config, world);
    if (rc < 0) {
        return gr_error_wrap(rc, "%s", path);
    }
    if (obs_size != CRAFT_OBS_SIZE || n_actions != CRAFT_N_ACTIONS) {
        return gr_error(GR_EINVAL,
                        "%s: the model reads %d observations and has %d "
                        "actions; Craft has %d and %d",
                        path, obs_size, n_actions, CRAFT_OBS_SIZE,
                        CRAFT_N_ACTIONS);
    }
    for (int i = 0; i < n_tasks; i++) {
        if (craft_task_parse(names[i], &tasks[i]) < 0) {
            return gr_error_wrap(GR_EFORMAT, "%s: training task %d", path, i);
        }
    }
    return gr_ctx_new(ctx, cc);
}

int ocn_load(struct ocn_loaded *out, const char *path,
             const struct gr_ctx_config *cc)
{
    memset(out, 0, sizeof *out);
    int rc = gr_checkpoint_read_config(path, &out->config);
    if (rc < 0) {
        return rc;
    }
    struct ocn_config cfg;
    if (strncmp(out->config, "kind ompn\n", 10) == 0) {
        /* OMPN (agents/ompn.h) has a memory, not options */
        rc = gr_error(GR_EINVAL,
                      "%s: an OMPN checkpoint (train bc --model ompn), not an "
                      "OCN or MoE: OMPN has no options, so it has no option "
                      "success matrix or alignment and no options to play; "
                      "its boundary metrics f1_tol0, f1_tol1 and align_acc "
                      "are in its run's metrics.csv, and it is fine-tuned "
                      "with grove train ppo --policy ompn --init %s",
                      path, path);
        free(out->config);
        out->config = NULL;
        return rc;
    }
    if (strncmp(out->config, "kind compile\n", 13) == 0) {
        /* compILE (agents/compile.h) has segment latents, not options */
        rc = gr_error(GR_EINVAL,
                      "%s: a compILE checkpoint (train bc --model compile), "
                      "not an OCN or MoE: compILE has no options to play "
                      "(grove eval options prints its latents' success "
                      "matrix instead); its boundary metrics f1_tol0, "
                      "f1_tol1 and align_acc are in its run's metrics.csv, "
                      "and it is fine-tuned with grove train ppo --policy "
                      "compile --init %s",
                      path, path);
        free(out->config);
        out->config = NULL;
        return rc;
    }
    rc = ocn_config_parse(out->config, &cfg);
    if (rc < 0) {
        rc = gr_error_wrap(rc, "%s: not an OCN checkpoint", path);
    }
    if (rc == 0) {
        rc = open_policy(path, out->config, cc, cfg.obs_size, cfg.n_actions,
                         cfg.task_names, cfg.n_tasks, &out->world,
                         out->tasks, &out->ctx);
    }
    out->n_tasks = cfg.n_tasks;
    if (rc == 0) {
        rc = ocn_model_init(&out->model, out->ctx, &cfg, 0);
    }
    if (rc == 0) {
        rc = gr_checkpoint_load(out->ctx, path, GR_CKPT_PARAMS, NULL);
    }
    if (rc < 0) {
        ocn_loaded_free(out);
    }
    return rc;
}

void ocn_loaded_free(struct ocn_loaded *p)
{
    gr_ctx_free(p->ctx);
    free(p->config);
    memset(p, 0, sizeof *p);
}

int ocn_loaded_task_index(const struct ocn_loaded *p,
                          const struct craft_task *task)
{
    for (int i = 0; i < p->n_tasks; i++) {
        if (strcmp(p->tasks[i].name, task->name) == 0) {
            return i;
        }
    }
    return -1;
}

int ocn_loaded_map_tasks(const struct ocn_loaded *p,
                         const struct craft_task *tasks, int n, int *index)
{
    for (int i = 0; i < n; i++) {
        index[i] = ocn_loaded_task_index(p, &tasks[i]);
        if (index[i] < 0) {
            char have[512];
            size_t k = 0;
            have[0] = '\0';
            for (int j = 0; j < p->n_tasks && k < sizeof have; j++) {
                int w = snprintf(have + k, sizeof have - k, "%s%s",
                                 j ? "," : "", p->tasks[j].name);
                if (w < 0) {
                    break;
                }
                k += (size_t)w;
            }
            return gr_error(GR_EINVAL,
                            "task %s is not one of the checkpoint's training "
                            "tasks (%s): the controller has no initial state "
                            "for it",
                            tasks[i].name, have);
        }
    }
    return 0;
}

int ompn_load(struct ompn_loaded *out, const char *path,
              const struct gr_ctx_config *cc)
{
    memset(out, 0, sizeof *out);
    char *text = NULL;
    int rc = gr_checkpoint_read_config(path, &text);
    if (rc < 0) {
        return rc;
    }
    struct ompn_config cfg;
    rc = ompn_config_parse(text, &cfg);
    if (rc < 0) {
        rc = gr_error_wrap(GR_EFORMAT, "%s: not an OMPN checkpoint", path);
    } else if (strstr(text, "\nvalue 1") != NULL) {
        rc = gr_error(GR_EFORMAT, "%s is a fine-tuned (PPO) OMPN checkpoint, "
                                  "not a behaviour-cloning one",
                      path);
    }
    if (rc == 0) {
        rc = open_policy(path, text, cc, cfg.obs_size, cfg.n_actions,
                         cfg.task_names, cfg.n_tasks, &out->world,
                         out->tasks, &out->ctx);
    }
    free(text);
    out->n_tasks = cfg.n_tasks;
    if (rc == 0) {
        rc = ompn_model_init(&out->model, out->ctx, &cfg, 0);
    }
    if (rc == 0) {
        rc = gr_checkpoint_load(out->ctx, path, GR_CKPT_PARAMS, NULL);
    }
    if (rc < 0) {
        ompn_loaded_free(out);
    }
    return rc;
}

void ompn_loaded_free(struct ompn_loaded *p)
{
    gr_ctx_free(p->ctx);
    memset(p, 0, sizeof *p);
}
