/* agents/compile.h — compILE (Kipf et al., ICML 2019), the OCN's
 * segmenting-VAE baseline (spec/ocn.md §8), on the kernel layer: one code
 * for CPU and CUDA, differentiated by the tape. Trained by behaviour
 * cloning with `grove train bc --model compile` (agents/bc.h,
 * bc_train_policy).
 *
 * The model, per demonstration of T steps (letters: O observation size, A
 * actions, d hidden size = latent size, S = max_segs segments, L = T + 1
 * positions: the T steps and an end-of-sequence position T whose input is
 * a zero observation and the EOS action, as in compILE where the action
 * sequence ends with an EOS token):
 *   o_t = W_enc x_t + b_enc;  e_t = LN(relu(W_in [o_t ; E[a_t]] + b_in))
 *   (E: an action embedding with an EOS row; LN without affine, eps 1e-5;
 *   compILE's task code is `noenv`, zeros, so it is left out);
 *   for segment s = 0 … S-1:
 *     enc_s = an LSTM over e_0 … e_T whose state is multiplied after every
 *             step by mask_{s-1}[t] (mask_{-1} = 1);
 *     boundary: for s < S-1, logits ℓ_s[t] = w_b2 relu(W_b1 enc_s[t] + ·)
 *             for t = 1 … T (t = 0 and padding excluded); b_s =
 *             softmax((ℓ_s + G)/τ_b) with Gumbel noise G while training
 *             (the concrete relaxation), one-hot argmax ℓ_s in evaluation;
 *             the last segment's b is one-hot at T;
 *     latent: r_s = Σ_{t≥1} b_s[t] enc_s[t-1]; [μ_s ; log σ²_s] =
 *             W_z2 relu(W_z1 r_s + ·) + ·; z_s = μ_s + σ_s ε while
 *             training (a continuous Gaussian latent per segment), μ_s in
 *             evaluation;
 *     C_s = cumsum_t b_s; mask_s = Π_{k≤s} C_k (the steps after every
 *             boundary so far);
 *     the segment's share of step t: seg_s[t] = (1 − C_s[t])·mask_{s-1}[t]
 *             (Σ_s seg_s[t] = 1 for t < T: the segment masks);
 *     decoder: π_s(·|t) = softmax(W_d2 relu(W_d1 [o_t ; z_s] + ·) + ·).
 *   loss = (1/B) Σ_n Σ_{t<T_n} Σ_s seg_s[t]·(−log π_s(a_t|t))
 *          + β_z Σ_s mean_n KL(N(μ_s, σ_s²) ‖ N(0, I))
 *          + β_b · S · mean_n KL(softmax(ℓ_0)[1:] ‖ Poisson(λ)[1:])
 *   (compILE's loss; the Poisson prior over positions k = 1 … L of the
 *   batch, log-normalised, index 0 dropped; β_b = β_z = 0.1, λ = 3,
 *   τ_b = 1, S = 4: ocn.md §8 / compILE's flagfile).
 * What metrics.csv reads (teacher-forced, evaluation mode: hard
 * boundaries, z = μ): π_t = Σ_s seg_s[t] π_s(·|t), the assigned segment's
 * decoder (nll, action_acc); the boundary score of step t, the larger the
 * likelier a segment starts at t: the number of inferred (argmax)
 * boundaries b_s at t, s < S-1, plus 10⁻³ Σ_{s<S-1} softmax(ℓ_s)[t] to
 * order steps with the same count (P_top reads it as the OCN's e_t, so its
 * m-1 boundaries are inferred ones first, as OMPN's evaluation of compILE
 * takes the argmax positions); no options, so no nmi. (A training forward
 * writes Σ_s softmax(ℓ_s)[t].)
 *
 * Noise: while training (gradients recorded) each forward draws its
 * Gumbel and Gaussian noise on the host from Philox keyed by (seed, draw
 * counter); the counter is the buffer "cmp.draws", saved in last.ckpt, so
 * --resume continues the same noise. Tests can pass the noise in.
 *
 * Parameters (f32; nn.Linear's init U(±1/sqrt(fan_in)), embeddings
 * N(0, 1), the LSTM U(±1/sqrt(d))):
 *   cmp.enc.wx [O, d] (transposed, read sparsely)  cmp.enc.bias [d]
 *   cmp.act_emb [A + 1, d] (row A = EOS)
 *   cmp.in.weight [d, 2d] columns [o ; E[a]]        cmp.in.bias [d]
 *   cmp.lstm.weight_ih [4d, d], weight_hh [4d, d], bias_ih, bias_hh [4d]
 *     (PyTorch's LSTMCell, gates i, f, g, o)
 *   cmp.b1.weight [d, d], cmp.b1.bias [d], cmp.b2.weight [1, d], .bias [1]
 *   cmp.z1.weight [d, d], cmp.z1.bias [d], cmp.z2.weight [2d, d], .bias [2d]
 *   cmp.dec1.weight [d, 2d] columns [o ; z], cmp.dec1.bias [d]
 *   cmp.dec2.weight [A, d], cmp.dec2.bias [A]
 *
 * Memory, threads, errors: as agents/ompn.h.
 *
 *   struct compile_config cfg; compile_config_default(&cfg);
 *   struct compile_model m; compile_model_init(&m, ctx, &cfg, seed);
 *   struct bc_policy p; compile_bc_policy(&m, &p); bc_train_policy(&p, ...);
 */
#ifndef GROVE_AGENTS_COMPILE_H
#define GROVE_AGENTS_COMPILE_H

#include <stddef.h>
#include <stdint.h>

#include "agents/bc.h"
#include "agents/demos.h"
#include "agents/ocn.h"
#include "envs/craft.h"
#include "kernels/tensor.h"

#define COMPILE_MAX_SEGS 16

struct compile_config {
    int max_segs;   /* S, 2..16 (4) */
    int hidden;     /* d (128) */
    int obs_size;   /* O (1075) */
    int n_actions;  /* A (5) */
    float beta_b;   /* 0.1 */
    float beta_z;   /* 0.1 */
    float prior_rate; /* λ of the Poisson prior on segment length (3) */
    float temp_b;   /* τ_b of the concrete boundaries (1) */
    int n_tasks;    /* the training tasks (the model does not read them) */
    char task_names[OCN_MAX_TASKS][CRAFT_TASK_NAME_CAP];
};

void compile_config_default(struct compile_config *c);
int compile_config_validate(const struct compile_config *c);
/* "kind compile", "max_segs", "hidden", "obs", "actions", "beta_b",
 * "beta_z", "prior_rate", "temp_b", "tasks" lines. */
int compile_config_format(const struct compile_config *c, char *out,
                          size_t cap);
int compile_config_parse(const char *text, struct compile_config *c);

#define COMPILE_N_PARAMS 21

struct compile_model {
    struct compile_config cfg;
    struct gr_ctx *ctx;
    struct gr_tensor *p[COMPILE_N_PARAMS]; /* in the order above */
    struct gr_tensor *draws;               /* buffer cmp.draws [2] i32 */
    uint64_t seed;                         /* of the training noise */
    float *latent_out; /* NULL; set by compile_latents */
};

int compile_model_init(struct compile_model *m, struct gr_ctx *ctx,
                       const struct compile_config *cfg, uint64_t seed);
const char *compile_param_name(int i);
int64_t compile_param_count(const struct compile_config *c);

/* Noise of one training forward, batch elements in the packed batch's
 * order (b->demo), L = b->T + 1: gumbel [S-1, B, L], eps [S, B, d]. */
struct compile_noise {
    const float *gumbel;
    const float *eps;
};

/* Teacher-forced forward over the packed batch b. Training mode when
 * gradients are being recorded (noise from `noise`, or drawn when NULL),
 * else evaluation mode. Fills out->loss (the loss above), out->nll_sum
 * (Σ of the expected NLL term, per step), and when not NULL out->end [N]
 * (the boundary score; 1 at t = 0), act_prob, act_argmax, pi [N, A]
 * (π_t above). seg: NULL or [N, S], seg_s[t] per packed row. */
int compile_forward(struct compile_model *m, const struct demo_batch *b,
                    const struct compile_noise *noise,
                    struct ocn_forward_out *out, float *seg);

/* The latents a demonstration gives (evaluation mode: hard boundaries,
 * z = μ): z [S, B, d] (segment s of batch element j at (s·B + j)·d, the
 * packed batch's element order) and seg [N, S] (NULL or the segment
 * shares per packed row, as compile_forward). Records nothing. */
int compile_latents(struct compile_model *m, const struct demo_batch *b,
                    float *z, float *seg);

/* The decoder alone: logits [M, A] of π(·| x, z) for sparse observations
 * idx/val [M, nz] and latents z [M, d], on the tape (the decoder of a
 * segment played online, agents/README.md). */
struct gr_tensor *compile_decode_logits(struct compile_model *m,
                                        struct gr_tensor *idx,
                                        struct gr_tensor *val,
                                        struct gr_tensor *z);

/* The same on the host, without recording: probs [M, A]. */
int compile_decode(struct compile_model *m, const int32_t *idx,
                   const float *val, int64_t M, int nz, const float *z,
                   float *probs);

/* One step of the first segment's encoder online (segment 0: no mask),
 * for playing a segment (agents/ppo_compile.h): E rows of sparse
 * observations idx/val [E, nz] and the action taken there action [E], the
 * LSTM state h, c [E, d] (host, zeros at a segment's start; updated in
 * place) -> logit [E], the boundary logit ℓ at this position. Records
 * nothing. */
int compile_boundary_step(struct compile_model *m, const int32_t *idx,
                          const float *val, int64_t E, int nz,
                          const int32_t *action, float *h, float *c,
                          float *logit);

/* compILE's counterpart of the option success matrix (bc_success_matrix;
 * `eval options` prints it for a compILE checkpoint): each distinct
 * subtask of the model's training tasks, subs[0..*n_subs) in their order
 * of first appearance, gets the mean latent μ of the segments whose steps
 * mostly work on it (the segment of a step: its largest share), over
 * `demos` expert demonstrations per training task
 * (COMPILE_PROBE_DEMO_SEED; compile_latents, hard boundaries); found[i]
 * such segments for subtask i. Then the decoder plays latent i alone and
 * greedily on subtask j's one-subtask task, `episodes` maps the expert can
 * solve (bc_solvable_seeds from base_seed, as the option matrix), until
 * the time limit (no boundary ends it): rate[i·S + j] the share done.
 * A mean latent may blur what segments of one subtask carry apart, so
 * also: the first segment of every demonstration played again from the
 * demonstration's start (its map and task) with its own latent, its
 * subtask's mean latent and a zero latent: replay[0..3) the share that
 * does the first subtask within the time limit, over *n_replayed
 * demonstrations. subs, found: CRAFT_MAX_SUBTASKS; rate:
 * CRAFT_MAX_SUBTASKS². */
#define COMPILE_PROBE_DEMO_SEED 7
int compile_latent_matrix(struct compile_model *m,
                          const struct craft_config *world, int demos,
                          int episodes, uint64_t base_seed,
                          struct craft_subtask *subs, int *n_subs,
                          double *rate, int64_t *found, double *replay,
                          int *n_replayed);

/* The model as a policy behaviour cloning trains: no options (nmi
 * empty), no greedy returns (the decoder needs a latent that only a whole
 * demonstration gives). */
void compile_bc_policy(struct compile_model *m, struct bc_policy *p);

#endif
