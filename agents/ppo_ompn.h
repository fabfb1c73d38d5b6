/* agents/ppo_ompn.h — OMPN fine-tuned by PPO as a recurrent policy over the
 * primitive actions (issue 26 §2, the controller-free reading of the
 * thesis's Fig 5.4: OMPN has no options to freeze, so the whole network
 * learns, starting from its behaviour-cloning weights).
 *
 * The policy is agents/ompn.h's model with one task code (the fine-tuning
 * task's) and a value head V = w_v · [y ; o ; g] + b_v on the action
 * head's input (`ompn.value.weight` [1, 3d], `ompn.value.bias` [1], new,
 * U(±1/sqrt(3d)) and 0). From the BC checkpoint every parameter is copied;
 * the task code is the BC model's row for the task when the task was one
 * of its training tasks, else a fresh N(0, 1) row (seed), which PPO
 * learns. Every parameter trains (Adam over "ompn.").
 *
 * Rollouts (ocn.md §7's loop with a decision at every frame, as moe and
 * flat): each frame every world runs one OMPN step on its observation and
 * memory, samples a ~ π_t and stores (sparse x_t, the memory M_{t-1} it
 * read, first, a, log π_t[a], V). The memory is the recurrent state: it is
 * stored per step, as the OCN's controller state H^C is, and the update
 * runs one step from it (truncated back-propagation of one step; the
 * episode's first step builds [LN(g), 0, …] on the tape, so g learns).
 * GAE is ppo_smdp_gae with one frame a decision. A truncated episode is
 * treated as terminated (ocn.md §7 allows it where the last observation's
 * value is not at hand: here it would need one more OMPN step per world).
 * The loss is agents/ppo.h's over π: L_pi + c_V L_V − c_H H(π).
 *
 * Checkpoints (ppo_ompn_save): the OMPN config (kind ompn, one task), the
 * line "value 1", the world lines, "rl_init PATH", the ppo_* lines, the
 * parameters, Adam's state and the trainer state (buffer "ppo.state":
 * worlds, memories, sampling counters); ppo_ompn_load resumes bit for bit
 * (same device and threads).
 *
 * MPI (train/mpi.h): as agents/ppo.h's trainer, a process of P acts
 * worlds [r·E/P, (r+1)·E/P) (its acting state and storage hold only
 * those), the update is the shared one (agents/ppo_internal.h), and
 * ppo_ompn_save gathers every world before process 0 writes.
 *
 * Memory: storage allocated once by ppo_ompn_new; an iteration allocates
 * step tensors and rebuilds the acting state (ompn_act_state: LN(g) of
 * the updated task code) and a few small host buffers. Threads: one per trainer. Errors: 0 or a negative GR_E* code
 * with a message.
 *
 *   struct ppo_config c; ppo_config_default(&c); c.policy = PPO_POLICY_OMPN;
 *   snprintf(c.task, sizeof c.task, "DCA");
 *   struct ppo_ompn *t;
 *   if (ppo_ompn_new(&t, ctx, &c, "runs/ompn/best.ckpt") < 0) fail(...);
 *   struct ppo_stats s; ppo_ompn_iteration(t, &s); ...
 */
#ifndef GROVE_AGENTS_PPO_OMPN_H
#define GROVE_AGENTS_PPO_OMPN_H

#include "agents/ompn.h"
#include "agents/ppo.h"

/* A minibatch of M stored frames: sparse observations idx/val [M, nz]
 * (idx -1 unused), the memory each step read mem [M, n, d] (ignored where
 * first = 1), first [M] 0/1, the action taken [M], its log-probability
 * then [M], advantages and returns [M]. */
struct ppo_ompn_minibatch {
    int M, nz;
    const int32_t *idx;
    const float *val;
    const float *mem;
    const float *first;
    const int32_t *action;
    const float *logp_old;
    const float *adv;
    const float *ret;
};

/* agents/ppo.h's loss over OMPN's π and the value head (vw [1, 3d], vb
 * [1]); the model must have one task. Records on the tape. */
int ppo_ompn_loss(struct ompn_model *m, struct gr_tensor *vw,
                  struct gr_tensor *vb, const struct ppo_ompn_minibatch *b,
                  float clip_coef, float vf_coef, float ent_coef,
                  int norm_adv, struct ppo_loss_out *out);

struct ppo_ompn;

/* Builds the trainer in ctx (an empty context) from the OMPN BC checkpoint
 * init_path (another kind is GR_EFORMAT naming it); cfg->policy must be
 * PPO_POLICY_OMPN; the world is the checkpoint's, with cfg's reward. */
int ppo_ompn_new(struct ppo_ompn **out, struct gr_ctx *ctx,
                 const struct ppo_config *cfg, const char *init_path);
void ppo_ompn_free(struct ppo_ompn *t);

struct ompn_model *ppo_ompn_model(struct ppo_ompn *t);
const struct craft_config *ppo_ompn_world(const struct ppo_ompn *t);
int64_t ppo_ompn_global_step(const struct ppo_ompn *t);

/* One rollout (num_envs · num_steps frames) and one PPO update; stats as
 * ppo_iteration's (mean_option_duration 1, decisions_per_episode = the
 * episode length). */
int ppo_ompn_iteration(struct ppo_ompn *t, struct ppo_stats *st);

/* Greedy evaluation as ppo_evaluate (argmax π; trace option = action,
 * decided = 1). The trainer's state is untouched. */
int ppo_ompn_evaluate(struct ppo_ompn *t, int episodes, uint64_t base_seed,
                      struct ppo_eval *out, const struct ppo_trace *trace);

/* The checkpoint's config text (above), malloc'd. */
char *ppo_ompn_checkpoint_config(const struct ppo_ompn *t);

int ppo_ompn_save(struct ppo_ompn *t, const char *path, int force);
/* GR_EFORMAT naming the file when it is not this trainer's kind/shape. */
int ppo_ompn_load(struct ppo_ompn *t, const char *path);

#endif
