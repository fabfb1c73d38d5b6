/* agents/ppo_compile.h — the pieces of compILE in fine-tuning (issue 26
 * §2): a Gaussian policy over the next segment's latent z (PPO over a
 * continuous action), whose log-probability and entropy are here, on the
 * tape and on the host.
 *
 *   log N(z; μ, diag σ²) = Σ_i [ −½ ((z_i − μ_i)/σ_i)² − log σ_i − ½ log 2π ]
 *   H = Σ_i [ log σ_i + ½ (1 + log 2π) ]
 * with log σ a learned vector (state-independent, as cleanrl's continuous
 * PPO). The latents of two compILE models are not interchangeable (the
 * thesis's reason why compILE cannot merge skills in S2): test
 * agents_compile_ppo measures it (compile_latents, compile_decode in
 * agents/compile.h).
 *
 * Errors: NULL from the tape functions when the context has failed
 * (gr_ctx_status). Threads: one per context. */
#ifndef GROVE_AGENTS_PPO_COMPILE_H
#define GROVE_AGENTS_PPO_COMPILE_H

#include <stdint.h>

#include "agents/compile.h"
#include "agents/ppo.h"
#include "kernels/tensor.h"

/* z, mu [M, d], log_std [1, d] -> [M, 1] log-densities, on the tape. */
struct gr_tensor *ppo_gauss_logp(struct gr_ctx *ctx, struct gr_tensor *z,
                                 struct gr_tensor *mu,
                                 struct gr_tensor *log_std);

/* The entropy of N(·, diag σ²) from log_std [1, d]: a scalar, on the tape. */
struct gr_tensor *ppo_gauss_entropy(struct gr_ctx *ctx,
                                    struct gr_tensor *log_std);

/* The same log-density on the host in double, for one row of d. */
double ppo_gauss_logp_host(const float *z, const float *mu,
                           const float *log_std, int d);

/* z = μ + σ ε with ε ~ N(0, I) drawn from Philox keyed by (key, counter
 * 2·i, 2·i+1 per pair: Box-Muller); *counter advances by d rounded up to
 * even. */
void ppo_gauss_sample(const float *mu, const float *log_std, int d,
                      uint64_t key, uint64_t *counter, float *z);

/* ---- the trainer --------------------------------------------------------

 * The controller C' (new, feed-forward: it reads the observation only):
 *   u = tanh(W_1 x + b_1) (width w, the sparse first layer of the OCN);
 *   μ = W_μ u + b_μ  [G·d] (a mean latent for each of the G compILE
 *   models), the model logits W_k u + b_k [G] (S2: which model's decoder;
 *   absent for G = 1), V = w_v u + b_v, log σ a learned vector [d] (init 0:
 *   σ = 1, compILE's prior). A decision samples k ~ Cat, z ~ N(μ_k, σ²)
 *   (evaluation: argmax and μ) with log-probability log Cat(k) + log
 *   N(z; μ_k, σ²). Parameters "ctl.*"; the compILE models are frozen (in
 *   their own contexts, never trained).
 *
 * A segment: the chosen model's decoder acts, a ~ π(·| x, z) (argmax in
 * evaluation), while its boundary encoder (compile_boundary_step) reads
 * (x, a) from a zero state at the segment's start; at a step t ≥ 1 of the
 * segment where ℓ_t ≥ θ the segment ends before acting there and C'
 * decides at that same observation (hard execution as ocn.md §7). θ is
 * calibrated per model when the trainer is built: the median (the
 * config's boundary_quantile, --boundary-quantile; 0.5), over 32
 * expert demonstrations per training task of the model (seed 1), of the
 * largest ℓ_t (t = 1 … T−1) of the encoder run from the demonstration's
 * start, i.e. the level compILE's inferred first boundary reaches
 * (compILE's logits are a softmax over a whole demonstration's positions,
 * so only their differences mean anything; an agent acting online has
 * no whole demonstration to normalise over: grove's choice; the config
 * line "boundary_threshold θ" records it). SMDP GAE over decisions (ppo_smdp_gae); a truncated episode ends
 * its decision as a termination (no bootstrap). Rollouts count decisions
 * (num_steps per world, each world waits at its next decision point).
 * MPI (train/mpi.h): a process of P plays and stores worlds [r·E/P,
 * (r+1)·E/P) (the others are skipped in its loop), the update is the
 * shared one (agents/ppo_internal.h), ppo_compile_save gathers every
 * world before process 0 writes. */

#define PPO_COMPILE_MAX_MODELS 4

struct ppo_compile;

/* From the compILE BC checkpoints paths[0..n) (1..4; the same hidden size
 * and world; another kind is GR_EFORMAT naming the file). */
int ppo_compile_new(struct ppo_compile **out, struct gr_ctx *ctx,
                    const struct ppo_config *cfg, const char *const *paths,
                    int n_paths);
void ppo_compile_free(struct ppo_compile *t);
const struct craft_config *ppo_compile_world(const struct ppo_compile *t);
int64_t ppo_compile_global_step(const struct ppo_compile *t);
int ppo_compile_n_models(const struct ppo_compile *t);
int ppo_compile_iteration(struct ppo_compile *t, struct ppo_stats *st);
/* trace option = the model index (0 for G = 1), decided 1 where C'
 * decided. */
int ppo_compile_evaluate(struct ppo_compile *t, int episodes,
                         uint64_t base_seed, struct ppo_eval *out,
                         const struct ppo_trace *trace);
char *ppo_compile_checkpoint_config(const struct ppo_compile *t);
int ppo_compile_save(struct ppo_compile *t, const char *path, int force);
int ppo_compile_load(struct ppo_compile *t, const char *path);

#endif
