/* agents/ocn.h — the Option-Controller Network of spec/ocn.md (§3 cell, §4
 * initial states, §5 soft forward pass, §6 BC loss and acting, §8 MoE), on
 * the kernel layer: the same code runs on CPU and CUDA and is
 * differentiated by the tape (kernels/tape.h).
 *
 * Shapes (letters of kernels/README.md plus ocn.md §2): O observation size
 * (1075), A actions (5), K options, d recurrent state, w MLP width, B
 * demonstrations (or worlds), N packed rows (steps of all demonstrations,
 * agents/demos.h), NZ non-zeros per observation row.
 *
 * Parameters (named tensors of the context, f32). The cell's first layer
 * U1 · [x ; h] is stored as its two column blocks: the observation block
 * transposed, as a table [O, w] read row by row by gr_sparse_matmul (only
 * the ~50 columns in use are touched, forward and backward), and the state
 * block [w, d]. The heads of §3 share one matrix (their rows stacked). The
 * K options are stacked in one tensor per part so that every option runs in
 * one batched product.
 *   ctrl.l1.wx [O, w]      ctrl.l1.wh [w, d]      ctrl.l1.bias [w]
 *   ctrl.l2.weight [w, w]  ctrl.l2.bias [w]
 *   ctrl.head.weight [K + d, w]  rows 0..K-1 = W_out, K..K+d-1 = W_hid
 *   ctrl.head.bias [K + d]        (the controller's end head is skipped,
 *                                  ocn.md §4)
 *   ctrl.h_init [n_tasks, d]      learned initial state per task
 *   ctrl.value.weight [1, w], ctrl.value.bias [1]   only with value_head
 *                                 (a PPO controller's value head)
 *   opt.l1.wx [O, K·w]      row o = options 0..K-1's columns, concatenated
 *   opt.l1.wh [K, w, d]     opt.l1.bias [K, w]
 *   opt.l2.weight [K, w, w] opt.l2.bias [K, w]
 *   opt.head.weight [K, A + d + 1, w]  rows: W_out (A), W_hid (d), w_end (1)
 *   opt.head.bias [K, A + d + 1]
 * Initialisation (ocn.md §3-4): every weight and bias U(±1/sqrt(fan_in))
 * with fan_in = O + d for layer 1 and w for the others; h_init N(0, 0.1²);
 * option initial states are zero and not parameters.
 *
 * The MoE baseline (ocn.md §8) is the same model with e_t ≡ 1: its forward
 * skips the continue branch, which e_t = 1 multiplies by exactly zero.
 *
 * Memory: parameters live in the caller's context (kernels/tensor.h);
 * forward passes allocate step tensors (valid until gr_step_reset) and
 * fill caller-owned host arrays. Acting keeps its soft state in a struct
 * ocn_act_state (host arrays, allocated by ocn_act_state_init). Threads:
 * one thread per context. Errors: 0 or a negative GR_E* code with a message
 * (the context's first op error is passed on, naming op and shapes).
 *
 *   struct ocn_config cfg; ocn_config_default(&cfg);     // K=3, d=w=128
 *   cfg.n_tasks = 2; strcpy(cfg.task_names[0], "AC"); ...
 *   struct ocn_model m;  ocn_model_init(&m, ctx, &cfg, seed);
 *   gr_step_reset(ctx);
 *   struct ocn_forward_out fo = {0};
 *   if (ocn_forward(&m, &batch, &fo) < 0) ...;             // fo.loss
 *   gr_backward(ctx, fo.loss); gr_clip_grad_norm(...); gr_optim_step(...);
 */
#ifndef GROVE_AGENTS_OCN_H
#define GROVE_AGENTS_OCN_H

#include <stddef.h>
#include <stdint.h>

#include "agents/demos.h"
#include "envs/craft.h"
#include "kernels/tensor.h"

#define OCN_MAX_OPTIONS 32
#define OCN_MAX_TASKS DEMO_MAX_TASKS
#define OCN_CONFIG_TEXT_CAP 2048

enum ocn_kind {
    OCN_KIND_OCN = 0, /* the Option-Controller Network */
    OCN_KIND_MOE = 1, /* mixture of experts: e_t ≡ 1 (ocn.md §8) */
};

struct ocn_config {
    enum ocn_kind kind;
    int n_options;  /* K, 1..32 (3) */
    int hidden;     /* d (128) */
    int width;      /* w (128) */
    int obs_size;   /* O (1075) */
    int n_actions;  /* A (5) */
    float tau;      /* τ_C, the controller's temperature (10) */
    int ctrl_blind; /* 1: the controller's layer 1 reads only its own state,
                       not the observation (not ocn.md §3, where every cell
                       reads x; a variant measured in docs/ocn) (0) */
    int opt_ignore_lo, opt_ignore_hi; /* observation features [lo, hi) the
                       options' layer 1 does not read (0, 0: none; not
                       ocn.md §3 either: train bc --options-without-inventory
                       hides Craft's inventory counts, a variant measured in
                       docs/ocn) */
    float balance;  /* weight λ of the option-balance term added to the
                       BC loss, λ · KL(ū ‖ uniform) with ū the controller's
                       distribution in force averaged over every step of
                       the batch (0: none, ocn.md §6; not in the thesis:
                       train bc --balance-options, measured in docs/ocn) */
    int value_head; /* 1: the controller also has a value head
                       V = w_v · u + b_v on its MLP output (ocn.md §7:
                       ctrl.value.weight [1, w], ctrl.value.bias [1]);
                       PPO's controllers (agents/ppo.h) have it, BC's do
                       not; config line "value 1" (0) */
    int act_hard;   /* 1: ocn_act executes hard, as PPO trained it
                       (ocn.md §7, greedy): the running option keeps
                       control until its e > 0.5, then the controller
                       picks argmax p and that option starts from z_k;
                       config line "acting hard" (0: the soft §5 of BC) */
    int n_tasks;    /* training tasks = controller initial states */
    char task_names[OCN_MAX_TASKS][CRAFT_TASK_NAME_CAP]; /* "AC", ... */
};

/* ocn.md's defaults: OCN, K = 3, d = w = 128, O = 1075, A = 5, τ_C = 10,
 * no tasks. */
void ocn_config_default(struct ocn_config *c);

/* GR_EINVAL naming the first bad field. */
int ocn_config_validate(const struct ocn_config *c);

/* "ocn" / "moe"; the inverse gives -1 for an unknown name. */
const char *ocn_kind_name(enum ocn_kind k);
int ocn_kind_from_name(const char *name);

/* The config as text, one "key value" line each (kind, options, hidden,
 * width, obs, actions, tau, tasks; then, only when set, "controller blind",
 * "options_ignore LO:HI", "balance λ" and "value 1"), into out[cap]; the format of a
 * checkpoint's config. Returns the length or GR_EINVAL if cap is short. */
int ocn_config_format(const struct ocn_config *c, char *out, size_t cap);

/* Parses ocn_config_format's text (other keys are ignored, so a trainer can
 * append its own lines). GR_EFORMAT naming the line for a bad value or a
 * missing key. */
int ocn_config_parse(const char *text, struct ocn_config *c);

struct ocn_model {
    struct ocn_config cfg;
    struct gr_ctx *ctx;
    /* controller */
    struct gr_tensor *c_wx, *c_wh, *c_b1, *c_w2, *c_b2, *c_wo, *c_bo;
    struct gr_tensor *h_init;
    struct gr_tensor *c_vw, *c_vb; /* value head (NULL without value_head) */
    /* options, stacked over K */
    struct gr_tensor *o_wx, *o_wh, *o_b1, *o_w2, *o_b2, *o_wo, *o_bo;
};

/* Creates and initialises the parameters in ctx (names above; they must
 * not exist yet). The draw is keyed by (seed, parameter name), so it is the
 * same on CPU and CUDA. */
int ocn_model_init(struct ocn_model *m, struct gr_ctx *ctx,
                   const struct ocn_config *cfg, uint64_t seed);

/* Finds the parameters of a model built before (for example by
 * ocn_model_init in a context about to load a checkpoint). */
int ocn_model_bind(struct ocn_model *m, struct gr_ctx *ctx,
                   const struct ocn_config *cfg);

/* Elements in the parameters (controller + options + initial states). */
int64_t ocn_param_count(const struct ocn_config *c);

/* What the teacher-forced forward pass over a packed batch returns. The
 * host arrays are optional (NULL: not computed); each is indexed by the
 * batch's packed row r (agents/demos.h): */
struct ocn_forward_out {
    struct gr_tensor *loss; /* scalar step tensor: the BC loss of ocn.md §6,
                               −(1/Σ T_n) Σ log max(π_t[a_t], 1e-12) */
    double nll_sum;         /* Σ −log max(π_t[a_t], 1e-12) (host) */
    float *end;      /* [N] e_t (1 at t = 0 and for MoE) */
    float *pi_c;     /* [N, K] Π^C_t, the controller's distribution in
                        force after step t */
    float *act_prob; /* [N] π_t[a_t] */
    int32_t *act_argmax; /* [N] argmax_a π_t[a] (ties: smallest a) */
    float *pi;       /* [N, A] π_t */
};

/* Runs ocn.md §5 (or MoE) over the packed batch b with teacher forcing and
 * builds the loss. Records on the tape when gradients are enabled. With
 * force_end >= 0 (tests), e_t is replaced by that constant for t >= 1. */
int ocn_forward(struct ocn_model *m, const struct demo_batch *b,
                struct ocn_forward_out *out);
int ocn_forward_forced(struct ocn_model *m, const struct demo_batch *b,
                       float force_end, struct ocn_forward_out *out);

/* ---- acting online (ocn.md §6 "Acting with a BC model") ---- */

/* The soft state of E worlds, on the host. */
struct ocn_act_state {
    int E;
    float *hc;       /* [E, d]   controller state H^C */
    float *pi_c;     /* [E, K]   option distribution in force Π^C */
    float *ho;       /* [K, E, d] option states H^i */
    uint8_t *first;  /* [E] 1: the next step is t = 0 of an episode */
    int32_t *task;   /* [E] controller initial state used at t = 0 */
    float *h_init;   /* [n_tasks, d] copy of the model's initial states */
    /* scratch (allocated once: acting allocates nothing per step) */
    int32_t *idx;    /* [E, O] */
    int32_t *idx_o;  /* [E, O]: idx without the features options ignore */
    float *val;      /* [E, O] */
    float *buf;      /* [K · E · max(d, A) + E] */
    /* hard acting (cfg.act_hard) only: */
    int32_t *opt;    /* [E] the option in control */
    float *hard;     /* scratch [K·E·(2A + 2d + 1) + E·(K + d)] */
};

int ocn_act_state_init(struct ocn_act_state *s, const struct ocn_model *m,
                       int E);
void ocn_act_state_free(struct ocn_act_state *s);

/* Starts a new episode of task index `task` (0..n_tasks-1) in world j. */
void ocn_act_reset(struct ocn_act_state *s, int j, int task);

/* The non-zeros of each row of dense obs[E, O] into idx/val [E, nz]
 * (column, value; padded with -1, 0); returns nz, the most non-zeros of a
 * row (at least 1). idx and val hold E * O entries. Acting's sparse
 * input, shared by the models that read Craft observations. */
int ocn_sparse_rows(const float *obs, int E, int O, int32_t *idx, float *val);

/* One soft step of §5 for every world: obs[E, O] (dense; the sparse rows
 * are built here) -> per world: actions[E] = argmax π_t (ties: smallest),
 * and when not NULL probs[E, A] = π_t, end[E] = e_t, pi_c[E, K] = Π^C_t.
 * With cfg.act_hard (a PPO checkpoint) the step is hard instead: π_t is
 * the running option's, end[j] its e (1 where the controller decided),
 * pi_c[j] the controller's distribution at its last decision (its argmax
 * is the option in control).
 * Runs without recording (gradients disabled inside) and resets the step
 * arena before it returns. */
int ocn_act(struct ocn_model *m, struct ocn_act_state *s, const float *obs,
            int32_t *actions, float *probs, float *end, float *pi_c);

/* One step of every option alone (its own cell, ocn.md §3) for the E
 * worlds of s (only its scratch is used): obs[E, O]; ho[K, E, d] is the
 * options' state in and out (zeros = z_i, a fresh start); probs[K, E, A]
 * and end[K, E] receive π and e (either may be NULL). For the option →
 * subtask success matrix (ocn.md §9). Resets the step arena. */
int ocn_options_step(struct ocn_model *m, struct ocn_act_state *s,
                     const float *obs, float *ho, float *probs, float *end);

#endif
