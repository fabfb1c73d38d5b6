/* agents/ppo.h — PPO fine-tuning with frozen options on batched Craft
 * (spec/ocn.md §7, Algorithm 4; §8 MoE in RL; §11 oracle options).
 *
 * A new controller C' (the cell of ocn.md §3 with K outputs, τ_C, one
 * learned initial state and a value head V = w_v·u + b_v) picks one option
 * at a time; the option runs, hard, until its end probability exceeds 0.5,
 * then C' decides again at that same observation and the fresh option acts
 * at once. Only C' learns. PPO runs over the controller's decisions with
 * SMDP returns (a decision of n steps discounts by γ^n). Four policies:
 *   ocn     options from one or several OCN/MoE checkpoints, concatenated
 *           in the order given (S2), frozen; decisions when the option ends
 *   moe     the same pool, a decision every step (options restart from z)
 *   flat    no options: C' is a recurrent policy over the 5 primitive
 *           actions (option k = action k for one step), trained from scratch
 *   oracle  option s = the scripted expert for subtask s (envs/expert.h),
 *           ending on the step after s completes; pool = the letters A..D;
 *           needs no checkpoint (tests the RL plumbing without BC)
 *
 * Names follow cleanrl's ppo.py (learning_rate, num_envs, num_steps, gamma,
 * gae_lambda, num_minibatches, update_epochs, clip_coef, ent_coef, vf_coef,
 * max_grad_norm, target_kl; stats policy_loss, value_loss, entropy,
 * old_approx_kl, approx_kl, clipfrac, explained_variance). One difference
 * of unit: num_steps counts controller DECISIONS per world per rollout
 * (ocn.md §7: batch = 16 × 64 = 1024 decisions), so a rollout's frames vary
 * for ocn/oracle; for moe and flat a decision is a frame, as in cleanrl.
 * Each world stops at its num_steps-th decision point and resumes there in
 * the next rollout, so every decision is whole (no decision is cut by the
 * rollout's end) and V of the waiting decision bootstraps the last one.
 *
 * Where it runs: acting (controller and options, rollouts and evaluation)
 * is plain C on host copies of the weights (no allocation per step, one
 * observation buffer for all worlds; a vectorised tanh within 3 ulp of
 * libm's, AVX2 clones chosen at run time); the update runs on the context's
 * device with the kernel ops and the tape (CPU or CUDA), Adam (eps 1e-5)
 * over the parameters named "ctrl." only: the options' tensors ("opt.")
 * are frozen and in no optimizer. The learning rate decays linearly to 0
 * over total_timesteps frames (anneal_lr).
 *
 * Checkpoints (ppo_save): an OCN checkpoint (agents/ocn.h layout, config
 * text of ocn_config_format) of the PPO model — K = the pool's size, one
 * task (the fine-tuning task), "value 1" (the value head), the options'
 * input rule — plus "world" lines (bc_world_format), "ppo_*" lines
 * (ppo_config_format), the Adam state ("adam/...") and the trainer state
 * (the buffer "ppo.state": worlds, acting state, RNG counters, counts).
 * So `craft run --agent ocn`, `watch` and `eval options` load it as they
 * load a BC checkpoint (they read parameters only), and ppo_load resumes
 * it bit for bit. flat and oracle checkpoints say "kind flat"/"kind
 * oracle", which the OCN loaders refuse by name.
 *
 * MPI (train/mpi.h): in a process of P, the trainer acts worlds
 * [r·E/P, (r+1)·E/P) of num_envs E (train_mpi_share) and stores only their
 * decisions; ppo_iteration all-reduces the rollout's statistics, each
 * minibatch's advantage sums and losses, and the gradients (scaled by the
 * process's share of the minibatch), so every process takes the
 * one-process step. Every process calls ppo_save (it gathers the worlds,
 * so the checkpoint holds all E); process 0 writes. Without MPI, or in one
 * process, nothing changes.
 *
 * Memory: ppo_trainer_new allocates everything (worlds, rollout storage,
 * host weights, scratch) once; an iteration allocates only step tensors in
 * the context's arena, but for the rollout's sparse observation pool and
 * the minibatch rows, which grow (doubling) while the observations need
 * more: a few times in the first iteration, then never. Threads: one thread per trainer. Errors: 0 or a
 * negative GR_E* code with a message (core/error.h).
 *
 *   struct ppo_config c; ppo_config_default(&c);
 *   snprintf(c.task, sizeof c.task, "DCA"); c.world.reward = CRAFT_REWARD_SPARSE;
 *   const char *opts[] = {"runs/s1/best.ckpt"};
 *   struct ppo_trainer *t;
 *   if (ppo_trainer_new(&t, ctx, &c, opts, 1) < 0) fail(gr_last_error());
 *   while (ppo_global_step(t) < c.total_timesteps) {
 *       struct ppo_stats s; if (ppo_iteration(t, &s) < 0) fail(...);
 *   }
 *   struct ppo_eval ev; ppo_evaluate(t, 100, PPO_EVAL_SEED, &ev, NULL);
 *   ppo_save(t, "runs/ppo/last.ckpt", 1);
 *   ppo_trainer_free(t);
 */
#ifndef GROVE_AGENTS_PPO_H
#define GROVE_AGENTS_PPO_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "agents/ocn.h"
#include "envs/craft.h"
#include "kernels/tensor.h"

/* Base seed of the evaluation maps: episode 0 of world j of a batch with
 * this base seed (craft_episode_seed(PPO_EVAL_SEED, j, 0)). */
#define PPO_EVAL_SEED 0x70706F6576616C01ull
/* Most non-zero features of one observation the rollout stores (Craft's
 * default world has at most ~120). The rollout keeps its observations in
 * one sparse pool that starts at PPO_NZ_START entries a decision and
 * doubles while they need more (ppo_storage_bytes). */
#define PPO_NZ_MAX 256
#define PPO_NZ_START 32
#define PPO_MAX_SOURCES 8

enum ppo_policy {
    PPO_POLICY_OCN = 0,
    PPO_POLICY_MOE = 1,
    PPO_POLICY_FLAT = 2,
    PPO_POLICY_ORACLE = 3,
    PPO_POLICY_OMPN = 4, /* agents/ppo_ompn.h (its own trainer) */
    PPO_POLICY_COMPILE = 5, /* agents/ppo_compile.h (its own trainer) */
};

struct ppo_config {
    enum ppo_policy policy;     /* (ocn) */
    char task[CRAFT_TASK_NAME_CAP]; /* the fine-tuning task ("DCA") */
    struct craft_config world;  /* flat/oracle: the world; ocn/moe: only
                                   its reward is used, the rest comes from
                                   the options' checkpoints */
    uint64_t seed;              /* controller init, worlds, sampling (1) */
    /* cleanrl ppo.py */
    float learning_rate;        /* 3e-4 */
    int anneal_lr;              /* 1: linear decay to 0 over the frames */
    int64_t total_timesteps;    /* frames of the run (2,000,000; 0: none,
                                   the initial model only) */
    int num_envs;               /* parallel worlds (16) */
    int num_steps;              /* decisions per world per rollout (64) */
    float gamma, gae_lambda;    /* 0.99, 0.95 */
    int num_minibatches;        /* 4 */
    int update_epochs;          /* 4 */
    int norm_adv;               /* 1: advantages normalised per minibatch */
    float clip_coef;            /* 0.2 */
    float ent_coef, vf_coef;    /* 0.01, 0.5 */
    float max_grad_norm;        /* 0.5 */
    float target_kl;            /* 0: off; else stop the epochs once
                                   approx_kl exceeds it (cleanrl) */
    float adam_eps;             /* 1e-5 */
    /* the new controller */
    float tau;                  /* τ_C; 0: auto (10, or 1 for flat) */
    int hidden, width;          /* flat/oracle only (128, 128); ocn/moe
                                   take the options' */
    float boundary_quantile;    /* compile: the quantile of the expert
                                   demonstrations' peak boundary logits θ
                                   is set at (0.5, the median;
                                   agents/ppo_compile.h) */
};

/* ocn.md §7's table with cleanrl's names; task "", world craft.md §3 with
 * n_each 4 (the S1/S2 world, ocn.md §6.1). */
void ppo_config_default(struct ppo_config *c);

/* GR_EINVAL naming the first bad field (num_envs 0, a minibatch count
 * that does not divide num_envs·num_steps, an unknown task, ...). */
int ppo_config_validate(const struct ppo_config *c);

/* "ocn", "moe", "flat", "oracle"; the inverse gives -1. */
const char *ppo_policy_name(enum ppo_policy p);
int ppo_policy_from_name(const char *name);

/* The config as "ppo_KEY VALUE" lines (every field above but world, which
 * the checkpoint keeps as "world" lines), into out[cap]; returns the
 * length or GR_EINVAL. ppo_config_parse reads them back (other lines are
 * ignored; GR_EFORMAT naming the line for a bad value; fields without a
 * line keep ppo_config_default's value). */
int ppo_config_format(const struct ppo_config *c, char *out, size_t cap);
int ppo_config_parse(const char *text, struct ppo_config *c);

/* ---- the SMDP advantage (ocn.md §7), exposed for tests ------------------ */

/* One world's decisions j = 0..n-1 in time order: R[j] = Σ_{i<n_j} γ^i r
 * (the decision's discounted reward), steps[j] = n_j >= 1, value[j] = V_j,
 * terminated[j] / truncated[j]: the episode ended inside decision j (by the
 * task or the time limit), boot[j] = V at the truncation observation (read
 * only where truncated), last_value = V of the decision waiting after j =
 * n-1 (read only when that one did not end its episode):
 *   V'_j  = value[j+1] | boot[j] if truncated | last_value for j = n-1
 *   δ_j   = R_j + γ^{n_j} (1 − terminated_j) V'_j − V_j
 *   Â_j   = δ_j + γ^{n_j} λ (1 − ended_j) Â_{j+1}     (Â_n = 0)
 *   ret_j = Â_j + V_j
 * into adv[n], ret[n]. */
void ppo_smdp_gae(int n, const float *R, const int32_t *steps,
                  const float *value, const uint8_t *terminated,
                  const uint8_t *truncated, const float *boot,
                  float last_value, float gamma, float lambda, float *adv,
                  float *ret);

/* ---- the loss (one minibatch), exposed for the PyTorch fixture ---------- */

/* A minibatch of M stored decisions: sparse observations idx/val [M, nz]
 * (idx -1 = unused slot), the controller state they were taken in
 * hc [M, d] (ignored where first = 1: the first decision of an episode
 * reads ctrl.h_init row 0, which so learns), first [M] 0/1, the option
 * chosen [M], its log-probability then [M], advantages and returns [M]. */
struct ppo_minibatch {
    int M, nz;
    const int32_t *idx;
    const float *val;
    const float *hc;
    const float *first;
    const int32_t *option;
    const float *logp_old;
    const float *adv;
    const float *ret;
};

struct ppo_loss_out {
    struct gr_tensor *loss; /* scalar step tensor, on the tape */
    double policy_loss;     /* L_pi = −mean(min(ρÂ, clip(ρ, 1±ε)Â)) */
    double value_loss;      /* L_V = mean((V − ret)²) */
    double entropy;         /* mean entropy of the controller's p */
    double old_approx_kl;   /* mean(−log ρ) */
    double approx_kl;       /* mean((ρ − 1) − log ρ) (cleanrl) */
    double clipfrac;        /* share of |ρ − 1| > ε */
};

/* loss = L_pi + vf_coef·L_V − ent_coef·entropy (ocn.md §7) on the model's
 * controller (m must have a value head and one task); Â normalised over the
 * minibatch first when norm_adv ((Â − mean) / (std + 1e-8), std with
 * Bessel's correction, as torch.std). Records on the tape. */
int ppo_loss(struct ocn_model *m, const struct ppo_minibatch *b,
             float clip_coef, float vf_coef, float ent_coef, int norm_adv,
             struct ppo_loss_out *out);

/* ---- the trainer --------------------------------------------------------- */

struct ppo_trainer;

/* Builds a trainer in `ctx` (an empty context, the device of the update):
 * for ocn/moe, the options of option_paths[0..n_paths) (OCN/MoE
 * checkpoints, or a PPO checkpoint: its pool) concatenated in order, which
 * must agree on hidden, width, the options' input rule and the world (else
 * GR_EINVAL naming both files); a fresh controller and value head drawn
 * from cfg->seed. flat/oracle take no paths. The worlds start at
 * craft_episode_seed(mix(seed), j, 0). */
int ppo_trainer_new(struct ppo_trainer **out, struct gr_ctx *ctx,
                    const struct ppo_config *cfg,
                    const char *const *option_paths, int n_paths);
void ppo_trainer_free(struct ppo_trainer *t);

/* Acting (rollouts) on n threads (1 at construction), each stepping a
 * contiguous share of this process's worlds; n is capped at the worlds
 * and at 64. Every world's actions, decisions and stored numbers are the
 * same for any n (acting's rows give the same bits in any grouping,
 * agents/ppo_act.h); the rollout's summed return may differ in its last
 * bits. GR_EINVAL for n < 1; on failure the old threads stay. */
int ppo_set_acting_threads(struct ppo_trainer *t, int n);
int ppo_acting_threads(const struct ppo_trainer *t);

/* The model (controller ctrl.*, options opt.* for ocn/moe), its config,
 * the world the worlds run (reward included). */
struct ocn_model *ppo_model(struct ppo_trainer *t);
const struct craft_config *ppo_world(const struct ppo_trainer *t);
const struct ppo_config *ppo_trainer_config(const struct ppo_trainer *t);

/* The subtasks of the task no option was trained on, for a warning:
 * writes their letters/names comma-separated into out[cap] ("" when every
 * subtask is among the options' training tasks' subtasks; always "" for
 * flat and oracle). */
void ppo_untrained_subtasks(const struct ppo_trainer *t, char *out,
                            size_t cap);

/* Bytes of the rollout storage and the minibatch buffers now (they grow
 * to fit the observations seen: about 8 bytes a non-zero feature, the
 * controller state and ~60 bytes a decision). */
size_t ppo_storage_bytes(const struct ppo_trainer *t);

/* Frames stepped so far (cleanrl's global_step), iterations done. */
int64_t ppo_global_step(const struct ppo_trainer *t);
int64_t ppo_iterations(const struct ppo_trainer *t);

struct ppo_stats {
    int64_t iteration;      /* iterations done, this one included */
    int64_t global_step;    /* frames after this iteration */
    int64_t frames;         /* frames of this rollout */
    int64_t decisions;      /* num_envs · num_steps */
    int64_t episodes;       /* episodes finished during this rollout */
    int64_t total_episodes; /* since the start of the run */
    double episodic_return; /* mean over those episodes (NaN if none) */
    double episodic_length;
    double success_rate;
    double decisions_per_episode; /* over the finished episodes */
    double mean_option_duration;  /* frames per decision of this rollout */
    double learning_rate;   /* used by this update */
    double policy_loss, value_loss, entropy; /* means over minibatches */
    double old_approx_kl, approx_kl, clipfrac; /* of the last minibatch */
    double explained_variance; /* 1 − Var(ret − V)/Var(ret) of the batch */
    double grad_norm;       /* mean global norm before clipping */
    int epochs;             /* epochs run (fewer when target_kl stops) */
    double rollout_s, update_s; /* wall time of the two halves */
};

/* Where the trainer is, for a sampling profiler (`grove bench ppo`): after
 * ppo_set_profile(t, part), each iteration stores into *part the part it
 * enters and PPO_PART_OTHER when it returns; a SIGPROF handler that reads
 * *part counts where the time goes at the cost of a store per part (a
 * clock read per part per frame would cost a third of the rollout). NULL
 * (the default): off. Results are unchanged either way. */
enum ppo_part {
    PPO_PART_OTHER = 0,  /* outside ppo_iteration */
    PPO_PART_ROLLOUT,    /* the rollout's own bookkeeping (sparse rows,
                            rewards, storage copies of rows) */
    PPO_PART_ENV,        /* the worlds' steps, truncation copies included */
    PPO_PART_OPTIONS,    /* the options' forward and sampling (oracle: the
                            expert's search) */
    PPO_PART_CTRL,       /* the controller's forward, sampling, storage,
                            truncation bootstraps */
    PPO_PART_UPDATE,     /* GAE, the epochs of minibatches, the host copy */
    PPO_PART_N
};
void ppo_set_profile(struct ppo_trainer *t, volatile sig_atomic_t *part);

/* One rollout (num_envs · num_steps decisions) and one PPO update.
 * GR_EINVAL with "non-finite loss at iteration N (epoch E, minibatch B)"
 * (or "non-finite gradient") when the loss or the gradient norm is not
 * finite: no optimizer step is taken with it (the minibatches before it
 * were applied; the caller keeps its last good checkpoint). */
int ppo_iteration(struct ppo_trainer *t, struct ppo_stats *st);

/* Greedy evaluation (ocn.md §7): world j = 0..episodes-1 plays episode 0
 * of craft_episode_seed(base_seed, j, 0) once, controller and options by
 * argmax, hard execution. The trainer's state is untouched (the same call
 * gives the same result). */
struct ppo_eval {
    int episodes;
    double mean_return, success_rate, mean_length;
    double decisions_per_episode;
};

/* What each evaluation episode did, for a replay (caller-owned arrays of
 * [episodes] or [episodes, max_steps]; any may be NULL). option[e, t] is
 * the option in force at step t (for flat: the action), decided[e, t] 1
 * where the controller decided at t. */
struct ppo_trace {
    uint64_t *seed;
    int32_t *length;
    uint8_t *action;
    int16_t *option;
    uint8_t *decided;
    float *reward;
};

int ppo_evaluate(struct ppo_trainer *t, int episodes, uint64_t base_seed,
                 struct ppo_eval *out, const struct ppo_trace *trace);

/* The checkpoint's config text (see above), malloc'd (caller frees). */
char *ppo_checkpoint_config(const struct ppo_trainer *t);

/* Writes the whole trainer (parameters, Adam state, trainer state) to path
 * (atomically; an existing file only with force). */
int ppo_save(struct ppo_trainer *t, const char *path, int force);

/* Restores a trainer built with the same config and pool from a file of
 * ppo_save: GR_EFORMAT naming the file when its trainer state does not fit
 * (another num_envs, policy or pool). The run then continues bit for bit
 * (same device and threads). */
int ppo_load(struct ppo_trainer *t, const char *path);

#endif
