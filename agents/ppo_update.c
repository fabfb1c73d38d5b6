/* The PPO update the trainers share (see agents/ppo_internal.h). */
#define _POSIX_C_SOURCE 200809L
#include "agents/ppo_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"
#include "core/random.h"
#include "kernels/ops.h"
#include "kernels/rng.h"
#include "kernels/tape.h"
#include "train/mpi.h"

/* ---- the loss's tail --------------------------------------------------------- */

int ppo_loss_tail(struct gr_ctx *ctx, const struct ppo_loss_head *h,
                  int64_t M, const float *logp_old, const float *adv_h,
                  const float *ret_h, float clip_coef, float vf_coef,
                  float ent_coef, int norm_adv, double mean, double sd,
                  const char *what, struct ppo_loss_out *out)
{
    struct gr_tensor *lp = h->lp;
    struct gr_tensor *k =
        h->action != NULL
            ? gr_tensor_from_host(ctx, GR_I32, gr_shape2(M, 1), h->action)
            : NULL;
    struct gr_tensor *old =
        gr_tensor_from_host(ctx, GR_F32, gr_shape2(M, 1), logp_old);
    if (k != NULL) {
        lp = gr_gather(ctx, lp, k);
    }
    struct gr_tensor *logratio = gr_sub(ctx, lp, old);
    struct gr_tensor *ratio = gr_exp(ctx, logratio);
    struct gr_tensor *adv =
        gr_tensor_from_host(ctx, GR_F32, gr_shape2(M, 1), adv_h);
    if (norm_adv) {
        float s = (float)(1.0 / (sd + 1e-8));
        adv = gr_affine(ctx, adv, s, (float)(-mean) * s);
    }
    struct gr_tensor *pg1 = gr_scale(ctx, gr_mul(ctx, ratio, adv), -1.0f);
    struct gr_tensor *pg2 = gr_scale(
        ctx,
        gr_mul(ctx, gr_clamp(ctx, ratio, 1.0f - clip_coef, 1.0f + clip_coef),
               adv),
        -1.0f);
    struct gr_tensor *pg = gr_mean(ctx, gr_maximum(ctx, pg1, pg2));
    struct gr_tensor *v =
        h->v != NULL ? h->v : gr_linear(ctx, h->v_in, h->vw, h->vb);
    struct gr_tensor *ret =
        gr_tensor_from_host(ctx, GR_F32, gr_shape2(M, 1), ret_h);
    struct gr_tensor *vl = gr_mean(ctx, gr_square(ctx, gr_sub(ctx, v, ret)));
    struct gr_tensor *loss = gr_add(
        ctx, gr_add(ctx, pg, gr_scale(ctx, vl, vf_coef)),
        gr_scale(ctx, h->ent, -ent_coef));
    if (loss == NULL || gr_ctx_status(ctx) != 0) {
        int rc = gr_ctx_status(ctx);
        return gr_error(rc != 0 ? rc : GR_EINVAL, "%s: %s", what,
                        gr_ctx_error(ctx));
    }
    out->loss = loss;
    out->policy_loss = gr_tensor_item(pg);
    out->value_loss = gr_tensor_item(vl);
    out->entropy = gr_tensor_item(h->ent);
    float *lr_h = malloc((size_t)M * sizeof *lr_h);
    if (lr_h == NULL) {
        return gr_error(GR_ENOMEM, "%s: out of memory", what);
    }
    int rc = gr_tensor_to_host(logratio, lr_h);
    double okl = 0.0, akl = 0.0, cf = 0.0;
    for (int64_t i = 0; rc == 0 && i < M; i++) {
        double l = lr_h[i], r = exp(l);
        okl += -l;
        akl += (r - 1.0) - l;
        cf += fabs(r - 1.0) > clip_coef;
    }
    free(lr_h);
    out->old_approx_kl = okl / (double)M;
    out->approx_kl = akl / (double)M;
    out->clipfrac = cf / (double)M;
    return rc;
}

/* ---- what every trainer builds ----------------------------------------------- */

int ppo_optim_new(struct gr_optim **out, struct gr_ctx *ctx,
                  const struct ppo_config *cfg, const char *prefix)
{
    struct gr_optim_config ocf = gr_optim_config_default(GR_OPTIM_ADAM);
    ocf.lr = cfg->learning_rate;
    ocf.eps = cfg->adam_eps;
    ocf.prefix = prefix;
    return gr_optim_new(out, ctx, "adam", &ocf);
}

void ppo_seeds(const struct ppo_config *cfg, uint64_t *sample_seed,
               uint64_t *env_seed)
{
    *sample_seed = gr_mix64(cfg->seed ^ 0x53414D504C45ull);
    *env_seed = gr_mix64(cfg->seed ^ 0x574F524C44ull);
}

/* Appends x[i] (non-zero) at nz; GR_EINVAL past PPO_NZ_MAX. */
static int sparse_put(int32_t *idx, float *val, int *nz, int i, float v,
                      const char *what)
{
    if (*nz == PPO_NZ_MAX) {
        return gr_error(GR_EINVAL, "%s: an observation has more than %d "
                                   "non-zeros",
                        what, PPO_NZ_MAX);
    }
    idx[*nz] = i;
    val[*nz] = v;
    (*nz)++;
    return 0;
}

int ppo_sparse_row(const float *x, int O, int32_t *idx, float *val,
                   int pad, const char *what)
{
    int nz = 0, i = 0;
    /* most entries are zero: eight at a time are skipped on their bits
     * (a -0.0 fails this test and then the exact one below) */
    for (; i + 8 <= O; i += 8) {
        uint32_t any = 0;
        for (int q = 0; q < 8; q++) {
            uint32_t bits;
            memcpy(&bits, x + i + q, sizeof bits);
            any |= bits;
        }
        if (any == 0) {
            continue;
        }
        if (nz + 8 <= PPO_NZ_MAX) {
            /* without a branch an entry: every slot is written and the
             * count moves past the non-zeros only (a branch an entry
             * mispredicted about once a group) */
            for (int q = 0; q < 8; q++) {
                idx[nz] = i + q;
                val[nz] = x[i + q];
                nz += x[i + q] != 0.0f;
            }
            continue;
        }
        for (int q = 0; q < 8; q++) {
            if (x[i + q] != 0.0f &&
                sparse_put(idx, val, &nz, i + q, x[i + q], what) < 0) {
                return GR_EINVAL;
            }
        }
    }
    for (; i < O; i++) {
        if (x[i] != 0.0f && sparse_put(idx, val, &nz, i, x[i], what) < 0) {
            return GR_EINVAL;
        }
    }
    for (int c = nz; pad && c < PPO_NZ_MAX; c++) {
        idx[c] = -1;
        val[c] = 0.0f;
    }
    return nz;
}

void ppo_trace_step(const struct ppo_trace *trace, int T, int e, int step,
                    int action, int option, int decided, float reward)
{
    if (trace == NULL || step >= T) {
        return;
    }
    size_t at = (size_t)e * T + (size_t)step;
    if (trace->action != NULL) {
        trace->action[at] = (uint8_t)action;
    }
    if (trace->option != NULL) {
        trace->option[at] = (int16_t)option;
    }
    if (trace->decided != NULL) {
        trace->decided[at] = (uint8_t)decided;
    }
    if (trace->reward != NULL) {
        trace->reward[at] = reward;
    }
}

void ppo_trace_end(const struct ppo_trace *trace, int e, int length)
{
    if (trace != NULL && trace->length != NULL) {
        trace->length[e] = length;
    }
}

double ppo_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- the decision storage -------------------------------------------------- */

int ppo_rollout_init(struct ppo_rollout *r, int E, int S, int e0, int e1,
                     int num_minibatches, const char *what)
{
    r->E = E;
    r->S = S;
    r->e0 = e0;
    r->e1 = e1;
    const size_t D = (size_t)(e1 - e0) * (size_t)S;
    const size_t M = (size_t)E * (size_t)S / (size_t)num_minibatches;
    r->R = calloc(D, sizeof *r->R);
    r->n = calloc(D, sizeof *r->n);
    r->value = calloc(D, sizeof *r->value);
    r->logp = calloc(D, sizeof *r->logp);
    r->term = calloc(D, 1);
    r->trunc = calloc(D, 1);
    r->boot = calloc(D, sizeof *r->boot);
    r->nz = calloc(D, sizeof *r->nz);
    r->adv = calloc(D, sizeof *r->adv);
    r->ret = calloc(D, sizeof *r->ret);
    r->last_value = calloc((size_t)E, sizeof *r->last_value);
    r->perm = calloc((size_t)E * (size_t)S, sizeof *r->perm);
    r->rows = calloc(M, sizeof *r->rows);
    r->mb_logp = calloc(M, sizeof *r->mb_logp);
    r->mb_adv = calloc(M, sizeof *r->mb_adv);
    r->mb_ret = calloc(M, sizeof *r->mb_ret);
    if (!r->R || !r->n || !r->value || !r->logp || !r->term || !r->trunc ||
        !r->boot || !r->nz || !r->adv || !r->ret || !r->last_value ||
        !r->perm || !r->rows || !r->mb_logp || !r->mb_adv || !r->mb_ret) {
        return gr_error(GR_ENOMEM, "%s: out of memory for %zu decisions",
                        what, D);
    }
    return 0;
}

void ppo_rollout_free(struct ppo_rollout *r)
{
    void *p[] = {r->R,    r->n,    r->value,      r->logp,
                 r->term, r->trunc, r->boot,      r->nz,
                 r->adv,  r->ret,  r->last_value, r->perm,
                 r->rows, r->mb_logp, r->mb_adv,  r->mb_ret};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) {
        free(p[i]);
    }
    memset(r, 0, sizeof *r);
}

int ppo_rollout_nz_max(const struct ppo_rollout *r, const int32_t *rows,
                       int64_t M)
{
    int nzm = 1;
    for (int64_t i = 0; i < M; i++) {
        nzm = r->nz[rows[i]] > nzm ? r->nz[rows[i]] : nzm;
    }
    return nzm;
}

void ppo_rollout_gather(struct ppo_rollout *r, const int32_t *rows,
                        int64_t M)
{
    for (int64_t i = 0; i < M; i++) {
        int64_t j = rows[i];
        r->mb_logp[i] = r->logp[j];
        r->mb_adv[i] = r->adv[j];
        r->mb_ret[i] = r->ret[j];
    }
}

int ppo_rollout_totals(const struct ppo_rollout *r, int64_t frames,
                       const struct craft_log *log, int64_t dec_sum,
                       int64_t *global_step, int64_t *total_episodes,
                       struct ppo_stats *st)
{
    const int64_t D = (int64_t)r->E * r->S;
    double sums[6] = {(double)frames, (double)log->episodes, log->return_sum,
                      (double)log->steps, (double)log->successes,
                      (double)dec_sum};
    int rc = train_allreduce_sum(sums, 6);
    if (rc < 0) {
        return rc;
    }
    frames = (int64_t)sums[0];
    *global_step += frames;
    *total_episodes += (int64_t)sums[1];
    st->frames = frames;
    st->global_step = *global_step;
    st->decisions = D;
    st->episodes = (int64_t)sums[1];
    st->total_episodes = *total_episodes;
    double ne = sums[1];
    st->episodic_return = ne > 0 ? sums[2] / ne : NAN;
    st->episodic_length = ne > 0 ? sums[3] / ne : NAN;
    st->success_rate = ne > 0 ? sums[4] / ne : NAN;
    st->decisions_per_episode = ne > 0 ? sums[5] / ne : NAN;
    st->mean_option_duration = (double)frames / (double)D;
    return 0;
}

/* ---- the update ------------------------------------------------------------ */

/* GAE per world of this process, then the explained variance of the
 * rollout's values (sums of every process). */
static int gae(const struct ppo_update *u, struct ppo_stats *st)
{
    const struct ppo_rollout *r = u->r;
    const int S = r->S;
    const int64_t D = (int64_t)r->E * S;
    const int64_t Dl = (int64_t)(r->e1 - r->e0) * S;
    for (int e = r->e0; e < r->e1; e++) {
        int64_t o = (int64_t)(e - r->e0) * S;
        ppo_smdp_gae(S, r->R + o, r->n + o, r->value + o, r->term + o,
                     r->trunc + o, r->boot + o, r->last_value[e],
                     u->cfg->gamma, u->cfg->gae_lambda, r->adv + o,
                     r->ret + o);
    }
    double mean2[2] = {0.0, 0.0};
    for (int64_t j = 0; j < Dl; j++) {
        mean2[0] += r->ret[j];
        mean2[1] += r->ret[j] - r->value[j];
    }
    int rc = train_allreduce_sum(mean2, 2);
    double mr = mean2[0] / (double)D, mdiff = mean2[1] / (double)D;
    double var2[2] = {0.0, 0.0};
    for (int64_t j = 0; j < Dl; j++) {
        double rj = r->ret[j] - mr;
        double df = r->ret[j] - r->value[j] - mdiff;
        var2[0] += rj * rj;
        var2[1] += df * df;
    }
    if (rc == 0) {
        rc = train_allreduce_sum(var2, 2);
    }
    double vr = var2[0], vd = var2[1];
    st->explained_variance = vr > 0.0 ? 1.0 - vd / vr : NAN;
    return rc;
}

/* A fresh permutation of the D decisions of every process per (iteration,
 * epoch). */
static void permute(const struct ppo_update *u, int ep, int64_t D)
{
    uint64_t key = gr_rng_key_of(
        u->cfg->seed, gr_rng_stream(u->perm_tag, (uint64_t)u->iteration,
                                    (uint64_t)ep, 0));
    int32_t *perm = u->r->perm;
    for (int64_t j = 0; j < D; j++) {
        perm[j] = (int32_t)j;
    }
    for (int64_t j = D - 1; j > 0; j--) {
        uint64_t r = ((uint64_t)gr_rng_u32(key, 2 * (uint64_t)j) << 32) |
                     gr_rng_u32(key, 2 * (uint64_t)j + 1);
        int64_t i = (int64_t)(r % (uint64_t)(j + 1));
        int32_t tmp = perm[j];
        perm[j] = perm[i];
        perm[i] = tmp;
    }
}

/* The advantage's mean and standard deviation (Bessel) over a minibatch of
 * M rows whose rows here are rows[0..n): the sums are all-reduced (in one
 * process n = M). */
static int adv_stats(const struct ppo_update *u, const int32_t *rows,
                     int64_t n, int64_t M, double *mean, double *sd)
{
    double sum = 0.0, var = 0.0;
    for (int64_t i = 0; i < n; i++) {
        sum += u->r->adv[rows[i]];
    }
    int rc = train_allreduce_sum(&sum, 1);
    *mean = sum / (double)M;
    for (int64_t i = 0; rc == 0 && i < n; i++) {
        double a = u->r->adv[rows[i]];
        var += (a - *mean) * (a - *mean);
    }
    if (rc == 0) {
        rc = train_allreduce_sum(&var, 1);
    }
    *sd = M > 1 ? sqrt(var / (double)(M - 1)) : 0.0;
    return rc;
}

int ppo_update_run(const struct ppo_update *u, struct ppo_stats *st)
{
    const struct ppo_config *cfg = u->cfg;
    struct ppo_rollout *r = u->r;
    const int S = r->S;
    const int64_t D = (int64_t)r->E * S;
    const int64_t M = D / cfg->num_minibatches;
    /* this process's decisions are the global ones [g0, g1) */
    const int64_t g0 = (int64_t)r->e0 * S, g1 = (int64_t)r->e1 * S;
    int rc = gae(u, st);
    /* learning rate: linear decay over the frames (cleanrl's anneal_lr) */
    double frac = 1.0;
    if (cfg->anneal_lr && cfg->total_timesteps > 0) {
        int64_t before = u->global_step - st->frames;
        frac = 1.0 - (double)before / (double)cfg->total_timesteps;
        frac = frac < 0.0 ? 0.0 : frac;
    }
    float lr = (float)(frac * cfg->learning_rate);
    gr_optim_set_lr(u->optim, lr);
    st->learning_rate = lr;
    double pl = 0.0, vl = 0.0, en = 0.0, gn = 0.0;
    int n_mb = 0, epochs = 0;
    struct ppo_loss_out lo = {0};
    for (int ep = 0; ep < cfg->update_epochs && rc == 0; ep++) {
        permute(u, ep, D);
        for (int mb = 0; mb < cfg->num_minibatches && rc == 0; mb++) {
            /* the minibatch's decisions of this process's worlds (all of
             * them in one process), in the permutation's order */
            const int32_t *rows = r->perm + (int64_t)mb * M;
            int64_t Ml = 0;
            for (int64_t i = 0; i < M; i++) {
                if (rows[i] >= g0 && rows[i] < g1) {
                    r->rows[Ml++] = (int32_t)(rows[i] - g0);
                }
            }
            gr_step_reset(u->ctx);
            gr_zero_grad(u->ctx);
            double mean = 0.0, sd = 0.0;
            rc = adv_stats(u, r->rows, Ml, M, &mean, &sd);
            if (rc < 0) {
                break;
            }
            /* each process's loss is its rows' mean: weighted by its share
             * of the minibatch, the sums over processes are the whole
             * minibatch's (a process without rows adds nothing) */
            double share = (double)Ml / (double)M;
            memset(&lo, 0, sizeof lo);
            if (Ml > 0) {
                rc = u->loss(u->self, r->rows, Ml, mean, sd, &lo);
            }
            double sums[7] = {0.0};
            if (rc == 0 && Ml > 0) {
                sums[0] = gr_tensor_item(lo.loss) * share;
                sums[1] = lo.policy_loss * share;
                sums[2] = lo.value_loss * share;
                sums[3] = lo.entropy * share;
                sums[4] = lo.old_approx_kl * share;
                sums[5] = lo.approx_kl * share;
                sums[6] = lo.clipfrac * share;
            }
            if (rc == 0) {
                rc = train_allreduce_sum(sums, 7);
            }
            if (rc == 0) {
                lo.policy_loss = sums[1];
                lo.value_loss = sums[2];
                lo.entropy = sums[3];
                lo.old_approx_kl = sums[4];
                lo.approx_kl = sums[5];
                lo.clipfrac = sums[6];
                if (!isfinite(sums[0])) {
                    rc = gr_error(GR_EINVAL, "non-finite loss at iteration "
                                             "%lld (epoch %d, minibatch %d)",
                                  (long long)u->iteration + 1, ep, mb);
                    break;
                }
                if (Ml > 0) {
                    rc = gr_backward(u->ctx, lo.loss);
                }
            }
            if (rc == 0 && train_mpi_size() > 1) {
                rc = train_allreduce_grads(u->ctx, share);
            }
            float norm = 0.0f;
            if (rc == 0) {
                rc = gr_clip_grad_norm(u->ctx, u->prefix, cfg->max_grad_norm,
                                       &norm);
            }
            if (rc == 0 && !isfinite(norm)) {
                rc = gr_error(GR_EINVAL, "non-finite gradient at iteration "
                                         "%lld (epoch %d, minibatch %d)",
                              (long long)u->iteration + 1, ep, mb);
            }
            if (rc == 0) {
                rc = gr_optim_step(u->optim);
            }
            pl += lo.policy_loss;
            vl += lo.value_loss;
            en += lo.entropy;
            gn += norm;
            n_mb++;
        }
        epochs++;
        if (cfg->target_kl > 0.0f && lo.approx_kl > cfg->target_kl) {
            break;
        }
    }
    gr_step_reset(u->ctx);
    if (rc < 0) {
        return rc;
    }
    st->policy_loss = pl / n_mb;
    st->value_loss = vl / n_mb;
    st->entropy = en / n_mb;
    st->grad_norm = gn / n_mb;
    st->old_approx_kl = lo.old_approx_kl;
    st->approx_kl = lo.approx_kl;
    st->clipfrac = lo.clipfrac;
    st->epochs = epochs;
    return 0;
}
