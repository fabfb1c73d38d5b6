/* agents/ocn_load.h — one way to open an OCN / MoE policy checkpoint with
 * the world it was trained in and its training tasks, for every command
 * that plays one (craft run --agent ocn, watch, eval options, train ppo);
 * ompn_load does the same for an OMPN one (eval options, train ppo --policy
 * ompn).
 *
 *   struct ocn_loaded p;
 *   if (ocn_load(&p, "runs/s1/best.ckpt", &ctx_config) < 0) fail();
 *   int idx[2];
 *   if (ocn_loaded_map_tasks(&p, tasks, 2, idx) < 0) fail(); // "task X is
 *   ...                                  // not one of the training tasks"
 *   ocn_loaded_free(&p);
 *
 * Errors name the file: "x.ckpt: not an OCN checkpoint" for an LM's, a shape
 * that is not Craft's, the loader's own messages (truncated, CRC). */
#ifndef GROVE_AGENTS_OCN_LOAD_H
#define GROVE_AGENTS_OCN_LOAD_H

#include "agents/ocn.h"
#include "agents/ompn.h"
#include "envs/craft.h"
#include "kernels/tensor.h"

struct ocn_loaded {
    struct gr_ctx *ctx;        /* owned: holds the model's parameters */
    struct ocn_model model;
    struct craft_config world; /* the world it was trained in (reward dense) */
    struct craft_task tasks[OCN_MAX_TASKS]; /* its training tasks, in order */
    int n_tasks;
    char *config;              /* the checkpoint's config text (owned) */
};

/* Reads the config, builds the model in a new context of `cc` and loads the
 * parameters. On failure nothing is left to free. */
int ocn_load(struct ocn_loaded *out, const char *path,
             const struct gr_ctx_config *cc);

void ocn_loaded_free(struct ocn_loaded *p);

/* Index of `task` among the training tasks (its controller initial state),
 * or -1. */
int ocn_loaded_task_index(const struct ocn_loaded *p,
                          const struct craft_task *task);

/* index[i] = ocn_loaded_task_index of tasks[i]; GR_EINVAL naming the first
 * task that is not a training task, and listing those that are. */
int ocn_loaded_map_tasks(const struct ocn_loaded *p,
                         const struct craft_task *tasks, int n, int *index);

struct ompn_loaded {
    struct gr_ctx *ctx;        /* owned: holds the model's parameters */
    struct ompn_model model;
    struct craft_config world; /* the world it was trained in */
    struct craft_task tasks[OCN_MAX_TASKS]; /* its training tasks, in order */
    int n_tasks;
};

/* ocn_load for an OMPN behaviour-cloning checkpoint: "PATH: not an OMPN
 * checkpoint" for another model's, "PATH is a fine-tuned (PPO) OMPN
 * checkpoint" for one train ppo wrote. On failure nothing is left to free. */
int ompn_load(struct ompn_loaded *out, const char *path,
              const struct gr_ctx_config *cc);

void ompn_loaded_free(struct ompn_loaded *p);

#endif
