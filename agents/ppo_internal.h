/* agents/ppo_internal.h — what the three PPO trainers share
 * (agents/ppo.c: ocn, moe, flat, oracle; agents/ppo_ompn.c;
 * agents/ppo_compile.c), internal to agents/: the decision storage
 * (struct ppo_rollout) and the update (agents/ppo_update.c), the trainer
 * state of a checkpoint (agents/ppo_state.c), and the small pieces every
 * trainer builds alike (optimizer, random streams, sparse rows, clock).
 *
 * A trainer's rollout fills its decision storage; ppo_update_run then does
 * what is the same for every policy: SMDP GAE per world (ppo_smdp_gae),
 * the explained variance, the learning rate (linear decay), and the epochs
 * of shuffled minibatches (a Fisher-Yates permutation per (iteration,
 * epoch) from the trainer's stream tag), each with the advantage's
 * statistics, the loss on the tape (the trainer's callback), the
 * non-finite checks, backward, the MPI gradient all-reduce, the global-norm
 * clip over the trained parameters, the Adam step, and the statistics of
 * ppo_stats (means over minibatches; approx_kl, clipfrac of the last; the
 * target-KL stop). The callback builds the policy's log-probabilities,
 * entropy and values and hands them to ppo_loss_tail, the clipped objective
 * every policy shares.
 *
 * MPI (train/mpi.h): a process holds the decisions of worlds [e0, e1) of
 * E; a minibatch's rows that fall on it are its share, its loss is their
 * mean and every sum is all-reduced (weighted by the share), so each
 * process takes the one-process step. In one process nothing changes
 * (share 1, the all-reduces do nothing).
 *
 * Errors: 0 or a negative GR_E* code with a message (core/error.h). */
#ifndef GROVE_AGENTS_PPO_INTERNAL_H
#define GROVE_AGENTS_PPO_INTERNAL_H

#include <stdint.h>

#include "agents/ppo.h"
#include "envs/craft.h"
#include "kernels/optim.h"
#include "kernels/tensor.h"

/* What a policy's loss computed before the shared tail, on the tape. */
struct ppo_loss_head {
    /* log-probabilities: [M, A] of A discrete choices, read at action[M]
     * (then action != NULL), or [M, 1] of the choice taken (action NULL) */
    struct gr_tensor *lp;
    const int32_t *action;
    struct gr_tensor *ent;   /* mean entropy, a scalar */
    /* the values [M, 1]; or NULL, and v = linear(v_in, vw, vb) is made
     * after the policy loss */
    struct gr_tensor *v;
    struct gr_tensor *v_in, *vw, *vb;
};

/* The tail of ppo_loss (agents/ppo.h) over M rows, the same ops in the
 * same order for every policy: log ρ = lp[a] − logp_old, Â normalised by
 * (mean, sd) when norm_adv, L_pi, L_V, loss = L_pi + vf_coef·L_V −
 * ent_coef·H, and the host statistics of out. `what` names the loss in an
 * error ("PPO loss (OMPN)"). */
int ppo_loss_tail(struct gr_ctx *ctx, const struct ppo_loss_head *h,
                  int64_t M, const float *logp_old, const float *adv,
                  const float *ret, float clip_coef, float vf_coef,
                  float ent_coef, int norm_adv, double mean, double sd,
                  const char *what, struct ppo_loss_out *out);

/* One minibatch's loss on the tape: rows[0..n) are this process's
 * decisions of the minibatch (indices into the storage of ppo_update, in
 * the permutation's order; n >= 1), mean and sd the advantage's over the
 * whole minibatch (all processes). Fills out (out->loss on the tape). */
typedef int (*ppo_minibatch_loss_fn)(void *self, const int32_t *rows,
                                     int64_t n, double mean, double sd,
                                     struct ppo_loss_out *out);

/* Adam over the parameters named prefix* with cfg's learning rate and
 * epsilon (the update's optimizer). */
int ppo_optim_new(struct gr_optim **out, struct gr_ctx *ctx,
                  const struct ppo_config *cfg, const char *prefix);

/* The run's two random streams from cfg->seed: the policy's sampling and
 * the worlds' (craft_batch_init's base seed). */
void ppo_seeds(const struct ppo_config *cfg, uint64_t *sample_seed,
               uint64_t *env_seed);

/* The non-zeros of the observation x[0..O) into idx and val, at most
 * PPO_NZ_MAX of them (more: GR_EINVAL naming `what`); with pad, the rest
 * of the PPO_NZ_MAX slots get -1 and 0. Returns their count. */
int ppo_sparse_row(const float *x, int O, int32_t *idx, float *val,
                   int pad, const char *what);

/* An evaluation's step `step` of episode e into trace (nothing when
 * trace is NULL, nor past T steps, nor into its NULL arrays), and the
 * episode's length when it ends. */
void ppo_trace_step(const struct ppo_trace *trace, int T, int e, int step,
                    int action, int option, int decided, float reward);
void ppo_trace_end(const struct ppo_trace *trace, int e, int length);

/* Monotonic seconds (the iteration's rollout_s, update_s). */
double ppo_now_s(void);

/* The decision storage every trainer's rollout fills and the update reads,
 * with the update's scratch: this process's decisions of worlds [e0, e1)
 * of E (all of them in one process), S a world, world e's decision i at
 * (e − e0)·S + i; D = (e1 − e0)·S of them, M = E·S / num_minibatches rows
 * a minibatch (all processes). What a policy stores besides (its
 * observations, states, actions) stays in its trainer. */
struct ppo_rollout {
    int E, S;
    int e0, e1;
    /* [D] */
    float *R;                /* discounted reward of a decision */
    int32_t *n;              /* frames a decision lasted */
    float *value, *logp;     /* V and log π of the decision taken */
    uint8_t *term, *trunc;
    float *boot;             /* a truncation's bootstrap value */
    int32_t *nz;             /* non-zeros of the decision's observation */
    float *adv, *ret;        /* written by the update (GAE) */
    float *last_value;       /* [E], world e at e */
    int32_t *perm;           /* [E·S] scratch */
    int32_t *rows;           /* [M] a minibatch's rows of this process */
    float *mb_logp, *mb_adv, *mb_ret; /* [M] */
};

/* Allocates r for E worlds of S decisions, this process's [e0, e1), and
 * num_minibatches (the buffers zeroed); `what` names the trainer in the
 * error ("PPO (OMPN)"). ppo_rollout_free frees what there is (r zeroed
 * first by the caller, as a calloc'ed trainer's is). */
int ppo_rollout_init(struct ppo_rollout *r, int E, int S, int e0, int e1,
                     int num_minibatches, const char *what);
void ppo_rollout_free(struct ppo_rollout *r);

/* The most non-zeros of the decisions rows[0..M), at least 1. */
int ppo_rollout_nz_max(const struct ppo_rollout *r, const int32_t *rows,
                       int64_t M);

/* mb_logp, mb_adv, mb_ret [i] = logp, adv, ret [rows[i]], i < M. */
void ppo_rollout_gather(struct ppo_rollout *r, const int32_t *rows,
                        int64_t M);

/* The rollout's totals over every process (MPI): `frames` played and the
 * log of the episodes that ended on this process's worlds, dec_sum their
 * decisions. Adds them to the trainer's counters and fills st's frames,
 * global_step, decisions (E·S), episodes, total_episodes, the episodes'
 * means (NaN without one) and mean_option_duration (frames / (E·S)). */
int ppo_rollout_totals(const struct ppo_rollout *r, int64_t frames,
                       const struct craft_log *log, int64_t dec_sum,
                       int64_t *global_step, int64_t *total_episodes,
                       struct ppo_stats *st);

struct ppo_update {
    struct gr_ctx *ctx;
    struct gr_optim *optim;
    const struct ppo_config *cfg;
    const char *prefix;      /* the trained parameters ("ctrl.") */
    uint32_t perm_tag;       /* the permutation's RNG stream tag */
    int64_t iteration;       /* iterations done before this one */
    int64_t global_step;     /* frames after this rollout */
    struct ppo_rollout *r;   /* read; adv, ret, perm, rows written */
    ppo_minibatch_loss_fn loss;
    void *self;
};

/* GAE, then the epochs (above); st->frames must hold the rollout's frames
 * (all processes). Fills st's learning_rate, explained_variance, the
 * losses, approx_kl, clipfrac, grad_norm and epochs. A non-finite loss or
 * gradient is GR_EINVAL "non-finite loss at iteration N (epoch E,
 * minibatch B)" with no step taken for that minibatch. Ends with the step
 * arena reset. */
int ppo_update_run(const struct ppo_update *u, struct ppo_stats *st);

/* ---- the trainer state of a checkpoint (agents/ppo_state.c) ---------------
 *
 * Beside the parameters and the optimizer, a PPO checkpoint holds the
 * buffer "ppo.state": a 64-byte head (magic, version 1, E, hidden as
 * uint32; the iteration, global_step and total_episodes counters as
 * int64), then per-world arrays, each whole for the E worlds, in the order
 * a trainer's layout adds them (its own acting state, then the worlds'
 * batch). With MPI each process acts its share of the worlds: the arrays
 * are gathered before process 0 writes. */

#define PPO_STATE_MAX_ARRAYS 24

struct ppo_state_layout {
    uint32_t magic;          /* the trainer's ("PPOS", "OMPS", "CMPS") */
    int E, d;
    int64_t *iteration, *global_step, *total_episodes;
    struct craft_batch *batch; /* the worlds (ppo_state_add_batch) */
    int n;
    struct {
        void *p;
        size_t size;         /* bytes a world */
    } a[PPO_STATE_MAX_ARRAYS];
};

/* Starts L: the head's magic, E and hidden, and the counters. */
void ppo_state_begin(struct ppo_state_layout *L, uint32_t magic, int E,
                     int d, int64_t *iteration, int64_t *global_step,
                     int64_t *total_episodes);

/* Appends an array of E items of `size` bytes to the layout. */
void ppo_state_add(struct ppo_state_layout *L, void *p, size_t size);

/* Appends the worlds' arrays of b (grid, position, direction, progress,
 * task, steps, inventory, return, episode, seed) and keeps b. */
void ppo_state_add_batch(struct ppo_state_layout *L, struct craft_batch *b);

/* The state buffer a trainer owns: its tensor "ppo.state" and host copy. */
struct ppo_state {
    struct gr_tensor *buf;
    size_t bytes;
    uint8_t *host;
};

/* Sizes and allocates s for the layout L (`what` names the trainer in the
 * error). ppo_state_free frees the host copy (the tensor is ctx's). */
int ppo_state_init(struct ppo_state *s, struct gr_ctx *ctx,
                   const struct ppo_state_layout *L, const char *what);
void ppo_state_free(struct ppo_state *s);

/* The worlds gathered (MPI), then on process 0: the state into s, and the
 * checkpoint of ctx (GR_CKPT_ALL) with the config text config(self) to
 * path. */
int ppo_state_save(struct ppo_state *s, struct gr_ctx *ctx,
                   const struct ppo_state_layout *L, const char *path,
                   int force, char *(*config)(const void *self),
                   const void *self);

/* The checkpoint of path into ctx (GR_CKPT_ALL), its state into L's
 * arrays (a head of another shape: GR_EFORMAT naming path), and the
 * worlds' observations into obs [E, O]. The trainer checks the config
 * text before. */
int ppo_state_load(struct ppo_state *s, struct gr_ctx *ctx,
                   const struct ppo_state_layout *L, const char *path,
                   float *obs, int O);

#endif
