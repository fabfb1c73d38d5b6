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

#endif
