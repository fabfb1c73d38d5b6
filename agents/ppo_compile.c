/* Gaussian policy pieces for compILE in fine-tuning (agents/ppo_compile.h). */
#include "agents/ppo_compile.h"

#include <math.h>

#include "kernels/ops.h"
#include "kernels/rng.h"

#define LOG_2PI 1.8378770664093453

struct gr_tensor *ppo_gauss_logp(struct gr_ctx *ctx, struct gr_tensor *z,
                                 struct gr_tensor *mu,
                                 struct gr_tensor *log_std)
{
    if (z == NULL || mu == NULL || log_std == NULL) {
        return NULL;
    }
    const int64_t M = mu->shape[0], d = mu->shape[1];
    struct gr_tensor *scaled = gr_mul(ctx, gr_sub(ctx, z, mu),
                                      gr_exp(ctx, gr_scale(ctx, log_std,
                                                           -1.0f)));
    struct gr_tensor *quad = gr_reshape(
        ctx, gr_scale(ctx, gr_sum_dim(ctx, gr_square(ctx, scaled), 1), -0.5f),
        gr_shape2(M, 1));
    /* − Σ log σ − (d/2) log 2π, the same for every row */
    struct gr_tensor *norm = gr_affine(ctx, gr_sum(ctx, log_std), -1.0f,
                                       (float)(-0.5 * (double)d * LOG_2PI));
    return gr_add(ctx, quad, norm);
}

struct gr_tensor *ppo_gauss_entropy(struct gr_ctx *ctx,
                                    struct gr_tensor *log_std)
{
    if (log_std == NULL) {
        return NULL;
    }
    const int64_t d = log_std->numel;
    return gr_affine(ctx, gr_sum(ctx, log_std), 1.0f,
                     (float)(0.5 * (double)d * (1.0 + LOG_2PI)));
}

double ppo_gauss_logp_host(const float *z, const float *mu,
                           const float *log_std, int d)
{
    double s = 0.0;
    for (int i = 0; i < d; i++) {
        double u = ((double)z[i] - mu[i]) * exp(-(double)log_std[i]);
        s += -0.5 * u * u - log_std[i] - 0.5 * LOG_2PI;
    }
    return s;
}

void ppo_gauss_sample(const float *mu, const float *log_std, int d,
                      uint64_t key, uint64_t *counter, float *z)
{
    for (int i = 0; i < d; i += 2) {
        float u1 = gr_rng_uniform(key, (*counter)++);
        float u2 = gr_rng_uniform(key, (*counter)++);
        double r = sqrt(-2.0 * log(1.0 - (double)u1));
        double a = 2.0 * 3.14159265358979323846 * (double)u2;
        z[i] = (float)(mu[i] + exp(log_std[i]) * r * cos(a));
        if (i + 1 < d) {
            z[i + 1] = (float)(mu[i + 1] + exp(log_std[i + 1]) * r * sin(a));
        }
    }
}
