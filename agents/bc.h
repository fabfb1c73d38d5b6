/* agents/bc.h — behaviour cloning of an OCN (or MoE; or, through struct
 * bc_policy, OMPN and compILE: agents/ompn.h, agents/compile.h) on demonstrations
 * (spec/ocn.md §6), its validation metrics (§9), greedy returns, and the
 * option → subtask success matrix (§9, thesis Table 5.2).
 *
 * Training (bc_train): each update draws `batch` demonstrations from the
 * pooled training demos of all tasks, in the order of a permutation of the
 * training set per epoch (Fisher-Yates on the Philox stream keyed by
 * (seed, epoch)), so the batch of update u is a pure function of (seed, u);
 * one forward of ocn.md §5 over the packed batch, backward, global-norm
 * clipping, one Adam step. At update 0 and every `eval_every` updates (and
 * at the last) it validates (bc_validate) and appends a row to
 * RUN/metrics.csv; every `return_every` updates it also plays
 * `return_episodes` greedy episodes per task (bc_greedy_returns). After each
 * validation RUN/last.ckpt (parameters, Adam state and the training state
 * "bc.state") is written, and RUN/best.ckpt (parameters) whenever the
 * validation NLL is the lowest so far. With `resume`, training restarts
 * from RUN/last.ckpt: parameters, optimizer state, update count and best
 * NLL are restored and metrics.csv is cut back to that update, so the run
 * continues bit for bit as if it had not stopped (same device and
 * threads; wall_s aside).
 *
 * metrics.csv columns (agents/README.md documents each): update, nll,
 * action_acc, f1_tol0, f1_tol1, align_acc, nmi, train_nll, greedy_return,
 * greedy_success, wall_s. Cells not computed on a row are empty.
 *
 * Memory: every function allocates what it needs and frees it before
 * returning (train: demo batches, host buffers, once). Threads: one thread
 * per context. Errors: negative GR_E* codes with a message naming the file
 * or update.
 *
 *   struct bc_options o; bc_options_default(&o);
 *   o.run = &run; o.config_text = text;   // run: train_run_open'd
 *   if (bc_train(&model, opt, &demos, &o, NULL) < 0) fail();
 */
#ifndef GROVE_AGENTS_BC_H
#define GROVE_AGENTS_BC_H

#include <stdint.h>

#include "agents/demos.h"
#include "agents/ocn.h"
#include "kernels/optim.h"
#include "train/train.h"

/* Base seed of the fixed evaluation maps (greedy returns): those of the
 * i-th training task are drawn from craft_episode_seed(BC_EVAL_SEED, i, n)
 * (bc_solvable_seeds). */
#define BC_EVAL_SEED 0x6576616C00000001ull
/* Base seed of the success matrix's maps: those of the one-subtask task of
 * the j-th subtask are drawn from craft_episode_seed(BC_MATRIX_SEED, j, n)
 * (bc_solvable_seeds). */
#define BC_MATRIX_SEED 0x6D61747200000001ull

/* One row of metrics.csv; NaN marks a cell not computed. */
struct bc_row {
    int64_t update;
    double nll, action_acc, f1_tol0, f1_tol1, align_acc, nmi;
    double train_nll;      /* mean training loss since the previous row */
    double greedy_return;  /* mean return of the greedy episodes */
    double greedy_success; /* share of them that finished the task */
    double wall_s;         /* seconds since the run (or resume) started */
};

struct bc_options {
    int batch;           /* demonstrations per update (512) */
    int64_t updates;     /* total updates (10000) */
    float lr;            /* Adam learning rate (1e-3) */
    float clip;          /* global gradient norm (0.2) */
    int eval_every;      /* validation period in updates (100) */
    int return_every;    /* greedy-return period in updates (1000) */
    int return_episodes; /* greedy episodes per task (30) */
    int val_batch;       /* demonstrations per validation forward (512) */
    uint64_t seed;       /* data order */
    int quiet;           /* no progress bar */
    /* The run folder (train/train.h), opened by the caller with
     * bc_metrics_columns; on --resume (run->spec.resume) training continues
     * from its last.ckpt. */
    struct train_run *run;
    const char *config_text; /* saved in every checkpoint */
    /* Called after each metrics row is written (for example to redraw the
     * learning curves); may be NULL. */
    void (*on_row)(void *arg, const struct bc_row *row);
    void *on_row_arg;
};

/* The columns of a BC run's metrics.csv, for train_run_open. */
const struct train_column *bc_metrics_columns(int *n);

struct bc_result {
    struct bc_row last;     /* the final row */
    int64_t best_update;    /* update of the lowest validation NLL */
    double best_nll;
    double seconds;         /* training time of this call */
    double updates_per_s;
    int stopped;            /* 1: a signal stopped training (last.ckpt
                             * written at update stopped_at) */
    int64_t stopped_at;
};

/* The Craft world a model was trained in, kept in its checkpoint's config
 * as "world KEY VALUE" lines (craft_config_set's keys). Only what differs
 * from craft_config_default is written, so the config of a run in the
 * default world is unchanged; the reward is not kept (acting picks it).
 * bc_world_format writes those lines to out[cap] and returns their length
 * (GR_EINVAL if cap is short). bc_world_parse starts from
 * craft_config_default, applies every "world" line of text (other lines
 * are ignored) and validates: GR_EFORMAT naming the line otherwise. */
int bc_world_format(const struct craft_config *c, char *out, size_t cap);
int bc_world_parse(const char *text, struct craft_config *c);

/* ocn.md §6 defaults (batch 512, 10,000 updates, lr 1e-3, clip 0.2,
 * validation every 100, greedy returns every 1000 with 30 episodes). */
void bc_options_default(struct bc_options *o);

/* Creates the Adam optimizer of ocn.md §6 (betas 0.9, 0.999, eps 1e-8,
 * constant lr) over every parameter of the model's context, named "adam". */
int bc_optimizer_new(struct gr_optim **out, struct ocn_model *m, float lr);

/* Trains. `opt` from bc_optimizer_new; ds split (demo_set_split). */
int bc_train(struct ocn_model *m, struct gr_optim *opt, struct demo_set *ds,
             const struct bc_options *o, struct bc_result *res);

/* Any model behaviour cloning can train, as hooks: the OCN (bc_policy_ocn)
 * and the baselines without options (OMPN: agents/ompn.h ompn_bc_policy).
 * forward runs the model teacher-forced over a packed batch and fills
 * struct ocn_forward_out's loss and nll_sum, and when asked end (a
 * boundary score: the larger, the likelier a boundary before step t; P_top
 * reads it), act_prob and act_argmax; pi_c [N, n_options] only when
 * n_options > 0. n_options = 0: the model has no options, metrics.csv's
 * nmi stays empty. greedy_returns: NULL leaves the greedy columns empty. */
struct bc_policy {
    struct gr_ctx *ctx;
    int n_tasks;
    int n_options;
    void *model;
    int (*forward)(void *model, const struct demo_batch *b,
                   struct ocn_forward_out *out);
    int (*greedy_returns)(void *model, const struct craft_config *config,
                          int episodes, uint64_t base_seed,
                          double *mean_return, double *success);
};

/* The OCN / MoE m as a bc_policy (ocn_forward, bc_greedy_returns). */
void bc_policy_ocn(struct bc_policy *p, struct ocn_model *m);

/* bc_train and bc_validate for any policy; bc_optimizer_ctx is
 * bc_optimizer_new over every parameter of ctx. */
int bc_train_policy(const struct bc_policy *p, struct gr_optim *opt,
                    struct demo_set *ds, const struct bc_options *o,
                    struct bc_result *res);
int bc_validate_policy(const struct bc_policy *p, const struct demo_set *ds,
                       const int64_t *ids, int64_t n, int batch,
                       struct bc_row *row);
int bc_optimizer_ctx(struct gr_optim **out, struct gr_ctx *ctx, float lr);

/* Validation metrics of ocn.md §9 on demonstrations ids[0..n) of ds,
 * teacher-forced, in forwards of `batch`: fills row->nll, action_acc,
 * f1_tol0, f1_tol1 (on P_top), align_acc, nmi; the other fields are left
 * untouched. Runs without recording gradients; resets the step arena. */
int bc_validate(struct ocn_model *m, const struct demo_set *ds,
                const int64_t *ids, int64_t n, int batch, struct bc_row *row);

/* Plays `episodes` greedy episodes (argmax π_t, ocn.md §6) of each of the
 * model's tasks (task i = the model's controller state i, parsed from
 * cfg.task_names) under `config`, on the maps bc_solvable_seeds draws for
 * task i from craft_episode_seed(base_seed, i, n). Writes the mean return
 * and the share of successes over all episodes, and per task when the
 * arrays are not NULL ([n_tasks] each). */
int bc_greedy_returns(struct ocn_model *m, const struct craft_config *config,
                      int episodes, uint64_t base_seed, double *mean_return,
                      double *success, double *task_return,
                      double *task_success);

/* The evaluation maps of stream j (the j-th subtask of the success matrix,
 * the j-th task of the greedy returns): seeds[0..episodes) get the first
 * `episodes` seeds craft_episode_seed(base_seed, j, n), n = 0, 1, ..., on
 * which the expert (craft.md §8) completes `task` under `config`; *skipped
 * (may be NULL) the seeds passed over. A map the expert cannot finish
 * (target walled in, or the agent: about 2.4 % of maps with n_each 4,
 * 0.2 % with 1) says nothing about a policy, and demonstrations skip such
 * maps too. GR_EINVAL when fewer than 1 map in 64 is solvable. */
int bc_solvable_seeds(const struct craft_config *config,
                      const struct craft_task *task, int j, int episodes,
                      uint64_t base_seed, uint64_t *seeds, int *skipped);

/* The option → subtask success matrix: for option i and subtask j of
 * subs[0..n_subs), `episodes` episodes of the one-subtask task [subs[j]]
 * on the maps of bc_solvable_seeds (the same maps for every option), option
 * i acting alone and greedily from z_i = 0, its end signal ignored;
 * success = the subtask done within config->max_steps.
 * rate[i * n_subs + j] gets the share of successes. */
int bc_success_matrix(struct ocn_model *m, const struct craft_config *config,
                      const struct craft_subtask *subs, int n_subs,
                      int episodes, uint64_t base_seed, double *rate);

/* Base seed of the alignment's demonstrations (bc_option_alignment):
 * demonstration n of task `name` starts from
 * craft_demo_seed(BC_ALIGN_SEED, name, n), maps training never drew from
 * (grove's demonstrations use base seeds 1, 2, ...). */
#define BC_ALIGN_SEED 0x616C69676E000001ull
#define BC_ALIGN_MAX_SUBTASKS 32 /* = SEG_NMI_MAX_LABELS */
#define BC_PLACE_MAX 4 /* offsets -4 .. +4 in struct bc_alignment */

/* How the options line up with the subtasks on expert demonstrations,
 * teacher-forced (ocn.md §9's NMI, opened up): the steps on which each
 * option was in force (argmax Π^C_t) during each subtask, and the mean end
 * probability e_t where a subtask has just ended and elsewhere. */
struct bc_alignment {
    int n_options, n_subtasks;
    struct craft_subtask subtasks[BC_ALIGN_MAX_SUBTASKS]; /* columns, in
                                             bc_model_subtasks order */
    int64_t steps[OCN_MAX_OPTIONS][BC_ALIGN_MAX_SUBTASKS];
    /* each subtask segment of each demonstration once, under the option
     * in force on most of its steps (ties: the lower option) */
    int64_t segments[OCN_MAX_OPTIONS][BC_ALIGN_MAX_SUBTASKS];
    int64_t demos, total_steps;
    double nmi;          /* of the steps (ocn.md §9) */
    double nmi_segments; /* of the segments: blind to a few steps of
                            another option inside a segment */
    /* mean e_t over steps t >= 1 whose previous action completed a
     * subtask (the first step of the next one), and over the other
     * steps t >= 1; NaN when there are none */
    double end_after_boundary, end_elsewhere;
    int64_t n_after_boundary, n_elsewhere;
    /* Where the boundaries fall (any policy; ocn.md §9's P_top). place[k]:
     * predicted boundaries before T-1 whose nearest true boundary is
     * k - BC_PLACE_MAX steps away (predicted minus true; the first and last
     * bins also count everything farther). around[k] / n_around[k]: the
     * mean boundary score b_t at t = g + 1 + k - BC_PLACE_MAX over the true
     * boundaries g < T-1 (k = BC_PLACE_MAX is the step P_top aims at). */
    int64_t place[2 * BC_PLACE_MAX + 1];
    double around[2 * BC_PLACE_MAX + 1];
    int64_t n_around[2 * BC_PLACE_MAX + 1];
    /* of the place[] boundaries, those at step 0 where no subtask ended
     * (picked from b_1, the first score P_top reads: a model whose score
     * is high from the start puts its boundary there); the mean b_t at
     * t = 1 .. BC_PLACE_MAX */
    int64_t place_first;
    double first[BC_PLACE_MAX];
    int64_t n_first[BC_PLACE_MAX];
    /* end_after_boundary and end_elsewhere per subtask column: the mean
     * score on the first step of each subtask that follows a boundary, and
     * on its other steps t >= 1 (NaN when none) */
    double sub_start[BC_ALIGN_MAX_SUBTASKS], sub_rest[BC_ALIGN_MAX_SUBTASKS];
    int64_t n_sub_start[BC_ALIGN_MAX_SUBTASKS], n_sub_rest[BC_ALIGN_MAX_SUBTASKS];
    double f1_tol0, f1_tol1, align_acc; /* as bc_row's, on these demos */
};

/* Generates per_task expert demonstrations of each of the model's tasks
 * in `config` (craft.md §10; demonstration n of task `name` from
 * craft_demo_seed(base_seed, name, n)) and fills *out from a
 * teacher-forced pass over all of them. */
int bc_option_alignment(struct ocn_model *m, const struct craft_config *config,
                        int per_task, uint64_t base_seed,
                        struct bc_alignment *out);

/* The same for any policy p trained on tasks[0..n_tasks) (n_options 0: no
 * option table, no NMI; the boundary placement and metrics only). */
int bc_policy_alignment(const struct bc_policy *p,
                        const struct craft_task *tasks, int n_tasks,
                        const struct craft_config *config, int per_task,
                        uint64_t base_seed, struct bc_alignment *out);

/* The distinct subtasks of the model's tasks, in order of first
 * appearance (A, C, D for AC, CD) into subs[cap]; returns the count. */
int bc_model_subtasks(const struct ocn_model *m, struct craft_subtask *subs,
                      int cap);

#endif
