/* agents/demos.h — expert demonstrations for behaviour cloning
 * (spec/craft.md §10, spec/ocn.md §6): generated in memory with the
 * scripted expert or read from a replay file, split per task, and cut into
 * batches of sparse observations.
 *
 * A demonstration is the expert run from reset(seed, task) until the task
 * is done: per step t = 0 .. T-1 the observation x_t (before the action),
 * the action a_t, the subtask index k_t (before the action) and whether a_t
 * completed a subtask (the true boundaries G of ocn.md §9). Observations
 * are stored sparsely: about 50 of the 1075 entries are non-zero, so each
 * step keeps its non-zero columns (increasing) and their values.
 *
 * Split (craft.md §10): per task, in file (or generation) order, the first
 * floor(0.8 n) demonstrations train and the rest validate; with 6000 per
 * task that is 4800 / 1200.
 *
 * Batches are *packed*: the B demonstrations of a batch are ordered by
 * decreasing length (stable), so the demonstrations still running at step t
 * are a prefix 0 .. B_t - 1; the rows of step t are rows row_off[t] ..
 * row_off[t] + B_t - 1 of every per-row array. This is a padded, masked
 * [T, B] batch with the masked-out cells left away (PyTorch's
 * pack_padded_sequence): the loss, its gradient and every metric are the
 * same, and no compute is spent on padding. Observations of a batch are
 * [rows, NZ] column indices (i32, -1 in unused slots) and values (f32),
 * NZ the most non-zeros of a row in the batch: the input of
 * gr_sparse_matmul (kernels/ops.h).
 *
 * Memory: a demo_set and a demo_batch own their arrays (malloc'd by the
 * functions here, released by demo_set_free / demo_batch_free). Building a
 * batch reuses its arrays (allocated once for the largest batch).
 * Threads: distinct objects are independent. Errors: negative GR_E* codes
 * with a message naming the file, byte offset, task or field.
 *
 *   struct demo_set ds;
 *   struct craft_task tasks[2]; craft_task_parse("AC", &tasks[0]); ...
 *   if (demo_set_generate(&ds, &cfg, tasks, 2, 6000, seed, NULL) < 0) ...
 *   demo_set_split(&ds, 0.8);                      // 4800 / 1200 per task
 *   struct demo_batch b = {0};
 *   demo_batch_build(&b, &ds, ds.train, 512);      // first 512 train demos
 *   ... model(b.idx, b.val, b.action ...) ...
 *   demo_batch_free(&b); demo_set_free(&ds);
 */
#ifndef GROVE_AGENTS_DEMOS_H
#define GROVE_AGENTS_DEMOS_H

#include <stddef.h>
#include <stdint.h>

#include "envs/craft.h"

#define DEMO_MAX_TASKS 16

struct demo_set {
    struct craft_config config;           /* the worlds' configuration */
    int n_tasks;
    struct craft_task tasks[DEMO_MAX_TASKS];
    int64_t n;                            /* demonstrations */
    int32_t *task;                        /* [n] index into tasks */
    int32_t *len;                         /* [n] T (1 .. max_steps) */
    int64_t *first;                       /* [n] index of its step 0 */
    uint64_t *seed;                       /* [n] reset seed */
    int64_t n_steps;                      /* Σ T */
    uint8_t *action;                      /* [n_steps] a_t, 0..4 */
    uint8_t *subtask;                     /* [n_steps] k_t */
    uint8_t *boundary;                    /* [n_steps] 1 when a_t completed
                                             a subtask (t ∈ G) */
    int64_t *nz_first;                    /* [n_steps + 1] offsets */
    uint16_t *nz_idx;                     /* [nnz] columns, increasing */
    float *nz_val;                        /* [nnz] values (non-zero) */
    int max_len;                          /* longest T */
    int max_nz;                           /* most non-zeros of one step */
    int64_t skipped;                      /* maps the expert could not
                                             finish / unfinished episodes
                                             of a file (not kept) */
    int64_t other_tasks;                  /* file episodes of tasks not
                                             asked for (not kept) */
    /* split (demo_set_split) */
    int64_t n_train, n_val;
    int64_t *train;                       /* [n_train] demo indices */
    int64_t *val;                         /* [n_val] */
    /* internal capacities */
    int64_t cap_demos_, cap_steps_, cap_nz_;
};

/* Writes the non-zero entries of obs[CRAFT_OBS_SIZE] into idx[] / val[]
 * (each of capacity CRAFT_OBS_SIZE), in increasing column order; returns
 * their count. */
int demo_obs_sparse(const float *obs, int32_t *idx, float *val);

/* Generates per_task demonstrations of each task with the expert of
 * craft.md §8: demonstration n of task `name` starts from
 * craft_demo_seed(base_seed, name, n) for n = 0, 1, 2, ...; a map the
 * expert cannot finish is skipped and counted (ds->skipped). `config` is
 * adjusted per task (craft_config_for_task). progress: called with
 * (done, total) every 256 demonstrations, may be NULL. *ds is
 * initialised here. */
int demo_set_generate(struct demo_set *ds, const struct craft_config *config,
                      const struct craft_task *tasks, int n_tasks,
                      int64_t per_task, uint64_t base_seed,
                      void (*progress)(void *arg, int64_t done, int64_t total),
                      void *progress_arg);

/* Reads the demonstrations of `tasks` from a replay file, re-simulating
 * every episode (replays/replay.h, REPLAY_READ_VERIFY) to recover the
 * observations. Episodes of other tasks are counted in ds->other_tasks and
 * left out; episodes that did not end with the task done are counted in
 * ds->skipped and left out. GR_EFORMAT/GR_EIO from the reader (naming the
 * byte offset), GR_EINVAL when a task has no episode in the file. *ds is
 * initialised here. */
int demo_set_load_replay(struct demo_set *ds, const char *path,
                         const struct craft_task *tasks, int n_tasks);

/* Splits per task in order: the first floor(train_frac · n_task)
 * demonstrations train, the rest validate. GR_EINVAL naming the task when
 * either part would be empty. */
int demo_set_split(struct demo_set *ds, double train_frac);

void demo_set_free(struct demo_set *ds);

/* Number of subtasks m of demonstration i (= entries of G). */
int demo_n_boundaries(const struct demo_set *ds, int64_t i);

struct demo_batch {
    int B;          /* demonstrations */
    int T;          /* longest length (steps) */
    int nz;         /* NZ: columns per row of idx / val */
    int64_t rows;   /* Σ T_n, the packed rows */
    int64_t *demo;  /* [B] demo index of batch element b (sorted order) */
    int32_t *task;  /* [B] task index */
    int32_t *len;   /* [B] lengths, non-increasing */
    int32_t *active;  /* [T] B_t: elements still running at step t */
    int64_t *row_off; /* [T + 1] first row of step t */
    int32_t *idx;   /* [rows, nz] observation columns, -1 unused */
    float *val;     /* [rows, nz] values (0 in unused slots) */
    int32_t *action;  /* [rows] a_t */
    /* internal capacities */
    int cap_B_, cap_T_;
    int64_t cap_rows_, cap_cells_;
};

/* Builds the packed batch of demonstrations ids[0..n) (indices into ds).
 * Reuses b's arrays when large enough (zero-initialise b before the first
 * call). GR_EINVAL for n < 1 or an index out of range, GR_ENOMEM. */
int demo_batch_build(struct demo_batch *b, const struct demo_set *ds,
                     const int64_t *ids, int n);

void demo_batch_free(struct demo_batch *b);

#endif
