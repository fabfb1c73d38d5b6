/* agents/ompn.h — OMPN, the Ordered Memory Policy Network (Lu et al., ICLR
 * 2021), the OCN's direct ancestor and one of its baselines (spec/ocn.md
 * §8), on the kernel layer: one code for CPU and CUDA, differentiated by the
 * tape. Trained by behaviour cloning with `grove train bc --model ompn`
 * (agents/bc.h, bc_train_policy).
 *
 * The model (ocn.md §8; letters: O observation size, A actions, n slots, d
 * slot size, N packed rows, B demonstrations or worlds). The memory is n
 * ordered slots M[0..n-1] of size d, slot 0 the highest level. Per step,
 * with o_t = W_enc x_t + b_enc (size d) and the task code g (a learned
 * embedding of the task id, [choice]: OMPN's `emb` encoder, so that the
 * task reaches OMPN as it reaches the OCN's controller), c_t = [o_t ; g]:
 *  1. bottom-up candidates: v ← o_t; for i = n-1 … 0:
 *     v ← ComCell_i(v, M_{t-1}[i], c_t), M̂[i] ← v, where
 *     ComCell(v, h, c) = LN(σ(g_v)⊙v + σ(g_h)⊙h + σ(g_c)⊙u) with
 *     [g_v g_h g_c] = LN_affine(first 3d of W2 relu(W1 [v;h;c] + b1) + b2)
 *     and u its last d;
 *  2. expansion: β_i = σ(MLP([c_t ; M_{t-1}[i] ; M̂[i]])), the MLP
 *     Linear(4d, d), leaky ReLU (0.01), Linear(d, 1); stick-breaking from
 *     the bottom: p̂_i = β_i Π_{k>i} (1 − β_k), p_end = Π_k (1 − β_k); the
 *     slot distribution p = p̂ / Σ_i p̂_i (p_end dropped: grove's Craft has
 *     no DONE action, ocn.md §8); cp_i = Σ_{j≤i} p_j, rcp_i = Σ_{j≥i} p_j;
 *  3. top-down: ch ← 0; for i = 0 … n-1: kids[i] ← ch;
 *     ch ← DecomCell_i(rcp_i M̂[i] + (1 − rcp_i) ch, c_t), where
 *     DecomCell(h, c) = LN(σ(g)⊙h + σ(g_c)⊙u), [g g_c] =
 *     LN_affine(first 2d of W2 relu(W1 [h;c] + b1) + b2), u its last d
 *     (the last DecomCell's output is never used, so grove has n-1);
 *  4. M_t = M_{t-1}⊙(1 − cp) + M̂⊙p + kids⊙(1 − rcp); y = M_t[n-1];
 *  5. π_t = softmax(W_a [y ; o_t ; g] + b_a) over the A actions.
 * LN is layer norm without affine parameters (eps 1e-5), LN_affine with.
 * At t = 0 (an episode's first step) the memory is [LN(g), 0, …, 0], the
 * ComCells are not run (M̂ = M_{-1}) and p is forced to the top slot
 * (p = [1, 0, …]): slot 0 keeps LN(g) and the DecomCells fill the rest.
 *
 * Boundary score (ocn.md §8): s_t = Σ_i (i+1) p_t[i], the expected
 * expansion depth; a small s_t (an expansion near the top) marks a
 * boundary before step t. The forward writes it as ocn_forward_out.end in
 * the OCN's orientation, b_t = (n − s_t) / (n − 1) ∈ [0, 1] (1 at t = 0),
 * so bc's P_top — the m−1 largest b_t, t ≥ 1, give boundaries t−1, plus
 * T−1 — is exactly ocn.md §8's "m−1 smallest s_t".
 *
 * Parameters (named tensors of the context, f32; per-slot cells stacked):
 *   ompn.enc.wx [O, d] (W_enc transposed, read sparsely) ompn.enc.bias [d]
 *   ompn.task [n_tasks, d]                       N(0, 1) (nn.Embedding)
 *   ompn.com.l1.weight [n, 4d, 4d] columns [v ; h ; o ; g]   .bias [n, 4d]
 *   ompn.com.l2.weight [n, 4d, 4d] rows [g_v g_h g_c u]      .bias [n, 4d]
 *   ompn.com.ln.weight [n, 3d] (ones)  ompn.com.ln.bias [n, 3d] (zeros)
 *   ompn.dec.l1.weight [n-1, 4d, 3d] columns [h ; o ; g]  .bias [n-1, 4d]
 *   ompn.dec.l2.weight [n-1, 3d, 4d] rows [g g_c u]       .bias [n-1, 3d]
 *   ompn.dec.ln.weight [n-1, 2d]        ompn.dec.ln.bias [n-1, 2d]
 *   ompn.dist.l1.weight [d, 4d] columns [o ; g ; M ; M̂]   .bias [d]
 *   ompn.dist.l2.weight [1, d]          ompn.dist.l2.bias [1]
 *   ompn.actor.weight [A, 3d] columns [y ; o ; g]         .bias [A]
 * Slot i of a stacked cell is index i (ComCell_i, DecomCell_i). Every
 * weight and bias U(±1/sqrt(fan_in)) (nn.Linear), layer norms 1 and 0.
 *
 * Memory: parameters live in the caller's context; the forward allocates
 * step tensors (valid until gr_step_reset) and fills caller-owned host
 * arrays; acting keeps its memory on the host (struct ompn_act_state).
 * Threads: one per context. Errors: 0 or a negative GR_E* code with a
 * message (the context's first op error is passed on).
 *
 *   struct ompn_config cfg; ompn_config_default(&cfg);   // n = 3, d = 128
 *   cfg.n_tasks = 2; strcpy(cfg.task_names[0], "AC"); ...
 *   struct ompn_model m; ompn_model_init(&m, ctx, &cfg, seed);
 *   gr_step_reset(ctx);
 *   struct ocn_forward_out fo = {0};
 *   if (ompn_forward(&m, &batch, &fo, NULL) < 0) ...;     // fo.loss
 *   gr_backward(ctx, fo.loss); ...
 *   struct bc_policy p; ompn_bc_policy(&m, &p);  bc_train_policy(&p, ...);
 */
#ifndef GROVE_AGENTS_OMPN_H
#define GROVE_AGENTS_OMPN_H

#include <stddef.h>
#include <stdint.h>

#include "agents/bc.h"
#include "agents/demos.h"
#include "agents/ocn.h"
#include "envs/craft.h"
#include "kernels/tensor.h"

#define OMPN_MAX_SLOTS 16

struct ompn_config {
    int n_slots;   /* n, 2..16 (3) */
    int hidden;    /* d, the slot size (128) */
    int obs_size;  /* O (1075) */
    int n_actions; /* A (5) */
    int n_tasks;   /* training tasks = task codes */
    char task_names[OCN_MAX_TASKS][CRAFT_TASK_NAME_CAP];
};

/* n = 3, d = 128, O = 1075, A = 5, no tasks. */
void ompn_config_default(struct ompn_config *c);

/* GR_EINVAL naming the first bad field. */
int ompn_config_validate(const struct ompn_config *c);

/* "kind ompn", "slots n", "hidden d", "obs O", "actions A", "tasks
 * AC,CD" lines into out[cap]; the length or GR_EINVAL. */
int ompn_config_format(const struct ompn_config *c, char *out, size_t cap);

/* Parses ompn_config_format's text (other keys ignored). A config whose
 * kind is not ompn (an OCN's) is GR_EFORMAT "kind 'ocn' is not ompn". */
int ompn_config_parse(const char *text, struct ompn_config *c);

struct ompn_model {
    struct ompn_config cfg;
    struct gr_ctx *ctx;
    struct gr_tensor *enc_wx, *enc_b, *task;
    struct gr_tensor *com_w1, *com_b1, *com_w2, *com_b2, *com_lnw, *com_lnb;
    struct gr_tensor *dec_w1, *dec_b1, *dec_w2, *dec_b2, *dec_lnw, *dec_lnb;
    struct gr_tensor *dist_w1, *dist_b1, *dist_w2, *dist_b2;
    struct gr_tensor *act_w, *act_b;
};

#define OMPN_N_PARAMS 21

/* Creates and initialises the parameters (names above) in ctx; the draw is
 * keyed by (seed, name), the same on CPU and CUDA. */
int ompn_model_init(struct ompn_model *m, struct gr_ctx *ctx,
                    const struct ompn_config *cfg, uint64_t seed);

/* The i-th parameter (0 .. OMPN_N_PARAMS-1, the order of the list above)
 * and its name. */
struct gr_tensor *ompn_param(const struct ompn_model *m, int i);
const char *ompn_param_name(int i);

int64_t ompn_param_count(const struct ompn_config *c);

/* Teacher-forced forward over the packed batch b (agents/demos.h): the BC
 * loss of ocn.md §6 in out->loss, out->nll_sum, and when not NULL
 * out->end [N] (the boundary score b_t above), act_prob [N], act_argmax
 * [N], pi [N, A]; out->pi_c is not used (OMPN has no options). slot_p:
 * NULL or [N, n], the slot distribution p_t per packed row. */
int ompn_forward(struct ompn_model *m, const struct demo_batch *b,
                 struct ocn_forward_out *out, float *slot_p);

/* One step of M rows on the tape, each from its own stored memory (PPO
 * over OMPN as a recurrent policy, agents/ppo_ompn.h): sparse observations
 * idx/val [M, nz] (idx -1 unused), task [M], mem [M, n, d] (host; M_{t-1}
 * of each row, ignored where first[j] != 0: those rows start an episode
 * from [LN(g), 0, …], built on the tape so the task code gets gradient,
 * and take the t = 0 rule). -> *feat [M, 3d], the action head's input
 * [y ; o ; g] (π = softmax(W_a feat + b_a)). */
int ompn_step_rows(struct ompn_model *m, const int32_t *idx, const float *val,
                   int64_t M, int nz, const int32_t *task, const float *mem,
                   const float *first, struct gr_tensor **feat);

/* ---- acting online (greedy, as OMPN evaluates) ---- */

struct ompn_act_state {
    int E;
    float *mem;     /* [E, n, d] the memory M of each world */
    uint8_t *first; /* [E] 1: the next step is t = 0 */
    int32_t *task;  /* [E] task index */
    float *g_ln;    /* [n_tasks, d] LN(g) per task (the first slot) */
    int32_t *idx;   /* scratch [E, O] */
    float *val;     /* scratch [E, O] */
    float *buf;     /* scratch [E · max(n·d, A)] */
};

int ompn_act_state_init(struct ompn_act_state *s, const struct ompn_model *m,
                        int E);
void ompn_act_state_free(struct ompn_act_state *s);

/* Starts a new episode of task index `task` in world j. */
void ompn_act_reset(struct ompn_act_state *s, int j, int task);

/* One step for every world: obs [E, O] dense -> actions[E] = argmax π_t
 * (ties: smallest), and when not NULL probs [E, A] = π_t, slot_p [E, n] =
 * p_t. Runs without recording; resets the step arena. */
int ompn_act(struct ompn_model *m, struct ompn_act_state *s,
             const float *obs, int32_t *actions, float *probs, float *slot_p);

/* ompn_act that also writes feat [E, 3d] (the action head's input
 * [y ; o ; g], for a value head) when not NULL. */
int ompn_act_feat(struct ompn_model *m, struct ompn_act_state *s,
                  const float *obs, int32_t *actions, float *probs,
                  float *slot_p, float *feat);

/* bc_greedy_returns for OMPN: `episodes` greedy episodes of each of the
 * model's tasks on the maps bc_solvable_seeds draws from base_seed. */
int ompn_greedy_returns(struct ompn_model *m, const struct craft_config *config,
                        int episodes, uint64_t base_seed, double *mean_return,
                        double *success);

/* The model as a policy behaviour cloning trains (agents/bc.h): no
 * options (metrics.csv's nmi stays empty), greedy returns by
 * ompn_greedy_returns. */
void ompn_bc_policy(struct ompn_model *m, struct bc_policy *p);

#endif
