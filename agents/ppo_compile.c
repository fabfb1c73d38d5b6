/* compILE in fine-tuning: the Gaussian policy and the controller's
 * trainer (agents/ppo_compile.h). */
#define _POSIX_C_SOURCE 200809L
#include "agents/ppo_compile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents/bc.h"
#include "agents/demos.h"
#include "agents/ppo_internal.h"
#include "core/error.h"
#include "core/random.h"
#include "kernels/checkpoint.h"
#include "kernels/layers.h"
#include "kernels/optim.h"
#include "kernels/tape.h"
#include "train/mpi.h"

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

/* ---- the trainer ------------------------------------------------------------ */

/* The worlds one loop plays (the rollout's, or an evaluation's) and their
 * segment state and scratch. */
struct cactor {
    int E;
    struct craft_batch b;
    float *obs;          /* [E, O] */
    uint8_t *ask;        /* 1: C' decides at the next step */
    int32_t *model;      /* [E] decoder in force */
    float *z, *h, *c;    /* [E, d] latent, boundary encoder state */
    int32_t *seg_len;    /* steps of the running segment */
    uint64_t *draws;     /* sampling counters */
    /* scratch */
    int32_t *idx;        /* [E, PPO_NZ_MAX] */
    float *val;
    int32_t *nz;         /* [E] */
    float *mu, *klog, *v; /* [E, G·d], [E, G], [E] */
    float *probs, *logit; /* [E, A], [E] */
    float *h2, *c2;      /* [E, d] */
    int32_t *act;        /* [E] */
    uint8_t *actions;    /* [E] */
    uint8_t *decided, *newly; /* [E] */
    int32_t *k_new;      /* [E] */
    float *logp_new;     /* [E] */
};

struct ppo_compile {
    struct ppo_config cfg;
    struct gr_ctx *ctx;
    int G, d, w, O, A, E, S;
    /* with MPI (train/mpi.h) this process plays worlds [e0, e1) of the E
     * (all of them in one process; the others stay skipped) and stores
     * their decisions, world e's from (e − e0)·S */
    int e0, e1;
    struct gr_ctx *mctx[PPO_COMPILE_MAX_MODELS];
    struct compile_model cm[PPO_COMPILE_MAX_MODELS];
    float theta[PPO_COMPILE_MAX_MODELS]; /* boundary thresholds */
    char sources[PPO_COMPILE_MAX_MODELS][512];
    struct gr_tensor *wx, *b1, *wmu, *bmu, *wk, *bk, *vw, *vb, *log_std;
    struct gr_optim *optim;
    struct craft_config world;
    struct craft_task task;
    struct cactor a;
    uint64_t sample_seed, env_seed;
    float *log_std_h;    /* [d] */
    /* storage: decision i of world e at e·S + i */
    int32_t *d_idx;
    float *d_val, *d_z;
    int32_t *d_k;
    struct ppo_rollout r; /* the rest (agents/ppo_internal.h) */
    float *disc, *reward;
    int32_t *count, *cur, *ep_dec; /* ep_dec: decisions of each world's
                                      running episode */
    uint8_t *term, *trunc, *hold, *skip;
    int32_t *mb_idx, *mb_k;
    float *mb_val, *mb_z;
    int64_t iteration, global_step, total_episodes;
    struct ppo_state state; /* the checkpoint's (agents/ppo_internal.h) */
};

static void cactor_free(struct cactor *a)
{
    craft_batch_free(&a->b);
    void *p[] = {a->obs, a->ask,   a->model, a->z,      a->h,     a->c,
                 a->seg_len, a->draws, a->idx, a->val,  a->nz,    a->mu,
                 a->klog, a->v,    a->probs, a->logit,  a->h2,    a->c2,
                 a->act, a->actions, a->decided, a->newly, a->k_new,
                 a->logp_new};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) {
        free(p[i]);
    }
    memset(a, 0, sizeof *a);
}

static int cactor_init(struct cactor *a, const struct ppo_compile *t, int E,
                       uint64_t base_seed)
{
    memset(a, 0, sizeof *a);
    a->E = E;
    size_t n = (size_t)E, d = (size_t)t->d;
    a->obs = malloc(n * (size_t)t->O * sizeof(float));
    a->ask = malloc(n);
    a->model = calloc(n, 4);
    a->z = calloc(n * d, 4);
    a->h = calloc(n * d, 4);
    a->c = calloc(n * d, 4);
    a->seg_len = calloc(n, 4);
    a->draws = calloc(n, 8);
    a->idx = malloc(n * PPO_NZ_MAX * 4);
    a->val = malloc(n * PPO_NZ_MAX * 4);
    a->nz = calloc(n, 4);
    a->mu = malloc(n * (size_t)t->G * d * 4);
    a->klog = malloc(n * (size_t)t->G * 4);
    a->v = malloc(n * 4);
    a->probs = malloc(n * (size_t)t->A * 4);
    a->logit = malloc(n * 4);
    a->h2 = malloc(n * d * 4);
    a->c2 = malloc(n * d * 4);
    a->act = calloc(n, 4);
    a->actions = calloc(n, 1);
    a->decided = calloc(n, 1);
    a->newly = calloc(n, 1);
    a->k_new = calloc(n, 4);
    a->logp_new = calloc(n, 4);
    if (!a->obs || !a->ask || !a->model || !a->z || !a->h || !a->c ||
        !a->seg_len || !a->draws || !a->idx || !a->val || !a->nz || !a->mu ||
        !a->klog || !a->v || !a->probs || !a->logit || !a->h2 || !a->c2 ||
        !a->act || !a->actions || !a->decided || !a->newly || !a->k_new ||
        !a->logp_new) {
        cactor_free(a);
        return gr_error(GR_ENOMEM, "PPO (compILE): out of memory for %d "
                                   "worlds",
                        E);
    }
    memset(a->ask, 1, n);
    int rc = craft_batch_init(&a->b, &t->world, &t->task, 1, E, base_seed,
                              a->obs);
    if (rc < 0) {
        cactor_free(a);
    }
    return rc;
}

/* C' on the tape over M rows: u [M, w] -> mu [M, G·d], klog [M, G] (NULL
 * for G = 1), v [M, 1]. */
static void ctl_forward(struct ppo_compile *t, struct gr_tensor *idx,
                        struct gr_tensor *val, struct gr_tensor **mu,
                        struct gr_tensor **klog, struct gr_tensor **v)
{
    struct gr_ctx *ctx = t->ctx;
    struct gr_tensor *u = gr_tanh(
        ctx, gr_add(ctx, gr_sparse_matmul(ctx, idx, val, t->wx), t->b1));
    *mu = gr_linear(ctx, u, t->wmu, t->bmu);
    *klog = t->G > 1 ? gr_linear(ctx, u, t->wk, t->bk) : NULL;
    *v = gr_linear(ctx, u, t->vw, t->vb);
}

static int sparse_rows(struct cactor *a, int O)
{
    int nzm = 1;
    for (int e = 0; e < a->E; e++) {
        int n = ppo_sparse_row(a->obs + (size_t)e * O, O,
                               a->idx + (size_t)e * PPO_NZ_MAX,
                               a->val + (size_t)e * PPO_NZ_MAX, 1,
                               "PPO (compILE)");
        if (n < 0) {
            return n;
        }
        a->nz[e] = n;
        nzm = n > nzm ? n : nzm;
    }
    return nzm;
}

/* [E, PPO_NZ_MAX] rows packed to [E, nzm] in place of scratch copies */
static void pack_rows(const struct cactor *a, int nzm, int32_t *idx,
                      float *val)
{
    for (int e = 0; e < a->E; e++) {
        memcpy(idx + (size_t)e * nzm, a->idx + (size_t)e * PPO_NZ_MAX,
               (size_t)nzm * 4);
        memcpy(val + (size_t)e * nzm, a->val + (size_t)e * PPO_NZ_MAX,
               (size_t)nzm * 4);
    }
}

static int pick(const float *p, int n, float u)
{
    float c = 0.0f;
    int last = 0;
    for (int i = 0; i < n; i++) {
        if (p[i] > 0.0f) {
            last = i;
            c += p[i];
            if (u < c) {
                return i;
            }
        }
    }
    return last;
}

static int argmax_f(const float *p, int n)
{
    int b = 0;
    for (int i = 1; i < n; i++) {
        b = p[i] > p[b] ? i : b;
    }
    return b;
}

/* Decodes and advances the boundary encoder for the rows sel[e] = 1 with
 * their model's decoder: a->act[e] (sampled, or argmax when greedy),
 * a->logit[e]; the encoder state of those rows is updated in a->h2/c2
 * (copied into h/c by the caller where kept). */
static int decode_sel(struct ppo_compile *t, struct cactor *a, int nzm,
                      const int32_t *idx, const float *val,
                      const uint8_t *sel, int greedy)
{
    const int E = a->E, d = t->d, A = t->A;
    memcpy(a->h2, a->h, (size_t)E * d * 4);
    memcpy(a->c2, a->c, (size_t)E * d * 4);
    float *hh = malloc((size_t)E * d * 4), *cc = malloc((size_t)E * d * 4);
    if (hh == NULL || cc == NULL) {
        free(hh);
        free(cc);
        return gr_error(GR_ENOMEM, "PPO (compILE): out of memory");
    }
    int rc = 0;
    for (int g = 0; g < t->G && rc == 0; g++) {
        int any = 0;
        for (int e = 0; e < E; e++) {
            any |= sel[e] && a->model[e] == g;
        }
        if (!any) {
            continue;
        }
        rc = compile_decode(&t->cm[g], idx, val, E, nzm, a->z, a->probs);
        for (int e = 0; rc == 0 && e < E; e++) {
            if (sel[e] && a->model[e] == g) {
                const float *p = a->probs + (size_t)e * A;
                if (greedy) {
                    a->act[e] = argmax_f(p, A);
                } else {
                    uint64_t key = gr_rng_key_of(
                        t->sample_seed,
                        gr_rng_stream(0x434D5041, (uint64_t)e, 0, 0));
                    a->act[e] = pick(p, A, gr_rng_uniform(key, a->draws[e]++));
                }
            }
        }
        if (rc == 0) {
            memcpy(hh, a->h, (size_t)E * d * 4);
            memcpy(cc, a->c, (size_t)E * d * 4);
            rc = compile_boundary_step(&t->cm[g], idx, val, E, nzm, a->act,
                                       hh, cc, a->probs);
        }
        for (int e = 0; rc == 0 && e < E; e++) {
            if (sel[e] && a->model[e] == g) {
                memcpy(a->h2 + (size_t)e * d, hh + (size_t)e * d,
                       (size_t)d * 4);
                memcpy(a->c2 + (size_t)e * d, cc + (size_t)e * d,
                       (size_t)d * 4);
                a->logit[e] = a->probs[e];
            }
        }
    }
    free(hh);
    free(cc);
    return rc;
}

/* One frame of every world not skipped: ends segments whose boundary
 * fires, lets C' decide where asked (a world on hold that asks gets no
 * decision: a->decided 2 and its value in a->v), and leaves the action in
 * a->act. a->decided[e] = 1 where C' decided (k_new, z in a->z,
 * logp_new, value in a->v). */
static int frame(struct ppo_compile *t, struct cactor *a,
                 const uint8_t *skip, const uint8_t *hold, int greedy)
{
    const int E = a->E, d = t->d, G = t->G;
    int nzm = sparse_rows(a, t->O);
    if (nzm < 0) {
        return nzm;
    }
    int32_t *idx = malloc((size_t)E * nzm * 4);
    float *val = malloc((size_t)E * nzm * 4);
    uint8_t *sel = calloc((size_t)E, 1);
    if (idx == NULL || val == NULL || sel == NULL) {
        free(idx);
        free(val);
        free(sel);
        return gr_error(GR_ENOMEM, "PPO (compILE): out of memory");
    }
    pack_rows(a, nzm, idx, val);
    memset(a->decided, 0, (size_t)E);
    int rc = 0, any = 0;
    /* A: running segments act, unless their boundary fires here */
    for (int e = 0; e < E; e++) {
        sel[e] = !skip[e] && !a->ask[e];
        any |= sel[e];
    }
    if (any) {
        rc = decode_sel(t, a, nzm, idx, val, sel, greedy);
    }
    for (int e = 0; rc == 0 && e < E; e++) {
        if (!sel[e]) {
            continue;
        }
        if (a->seg_len[e] >= 1 && a->logit[e] >= t->theta[a->model[e]]) {
            a->ask[e] = 1; /* ℓ ≥ θ: the segment ends before t */
        } else {
            memcpy(a->h + (size_t)e * d, a->h2 + (size_t)e * d, (size_t)d * 4);
            memcpy(a->c + (size_t)e * d, a->c2 + (size_t)e * d, (size_t)d * 4);
            a->seg_len[e]++;
        }
    }
    /* B: C' decides where asked */
    any = 0;
    for (int e = 0; e < E; e++) {
        any |= !skip[e] && a->ask[e];
    }
    if (rc == 0 && any) {
        int was = gr_set_grad_enabled(t->ctx, 0);
        struct gr_tensor *ti =
            gr_tensor_from_host(t->ctx, GR_I32, gr_shape2(E, nzm), idx);
        struct gr_tensor *tv =
            gr_tensor_from_host(t->ctx, GR_F32, gr_shape2(E, nzm), val);
        struct gr_tensor *mu, *kl, *v;
        ctl_forward(t, ti, tv, &mu, &kl, &v);
        if (v == NULL || gr_ctx_status(t->ctx) != 0) {
            rc = gr_error(GR_EINVAL, "PPO (compILE) controller: %s",
                          gr_ctx_error(t->ctx));
        }
        if (rc == 0) {
            rc = gr_tensor_to_host(mu, a->mu);
        }
        if (rc == 0 && kl != NULL) {
            rc = gr_tensor_to_host(kl, a->klog);
        }
        if (rc == 0) {
            rc = gr_tensor_to_host(v, a->v);
        }
        gr_step_reset(t->ctx);
        gr_set_grad_enabled(t->ctx, was);
        for (int e = 0; rc == 0 && e < E; e++) {
            sel[e] = 0;
            if (skip[e] || !a->ask[e]) {
                continue;
            }
            if (hold != NULL && hold[e]) {
                a->decided[e] = 2;
                continue;
            }
            uint64_t key = gr_rng_key_of(
                t->sample_seed, gr_rng_stream(0x43544C, (uint64_t)e, 0, 0));
            int k = 0;
            double lpk = 0.0;
            if (G > 1) {
                const float *l = a->klog + (size_t)e * G;
                double mx = l[0], s = 0.0;
                for (int g = 1; g < G; g++) {
                    mx = fmax(mx, l[g]);
                }
                float p[PPO_COMPILE_MAX_MODELS];
                for (int g = 0; g < G; g++) {
                    s += exp(l[g] - mx);
                }
                for (int g = 0; g < G; g++) {
                    p[g] = (float)(exp(l[g] - mx) / s);
                }
                k = greedy ? argmax_f(p, G)
                           : pick(p, G, gr_rng_uniform(key, a->draws[e]++));
                lpk = l[k] - mx - log(s);
            }
            const float *m = a->mu + ((size_t)e * G + (size_t)k) * d;
            float *z = a->z + (size_t)e * d;
            if (greedy) {
                memcpy(z, m, (size_t)d * 4);
            } else {
                ppo_gauss_sample(m, t->log_std_h, d, key, &a->draws[e], z);
            }
            a->k_new[e] = k;
            a->logp_new[e] =
                (float)(lpk + ppo_gauss_logp_host(z, m, t->log_std_h, d));
            a->model[e] = k;
            memset(a->h + (size_t)e * d, 0, (size_t)d * 4);
            memset(a->c + (size_t)e * d, 0, (size_t)d * 4);
            a->seg_len[e] = 0;
            a->ask[e] = 0;
            a->decided[e] = 1;
            sel[e] = 1;
        }
        int fresh = 0;
        for (int e = 0; e < E; e++) {
            fresh |= sel[e];
        }
        if (rc == 0 && fresh) {
            rc = decode_sel(t, a, nzm, idx, val, sel, greedy);
            for (int e = 0; rc == 0 && e < E; e++) {
                if (sel[e]) {
                    memcpy(a->h + (size_t)e * d, a->h2 + (size_t)e * d,
                           (size_t)d * 4);
                    memcpy(a->c + (size_t)e * d, a->c2 + (size_t)e * d,
                           (size_t)d * 4);
                    a->seg_len[e] = 1;
                }
            }
        }
    }
    for (int e = 0; e < E; e++) {
        a->actions[e] = (uint8_t)a->act[e];
    }
    free(idx);
    free(val);
    free(sel);
    return rc;
}

static int rollout(struct ppo_compile *t, struct ppo_stats *st)
{
    struct cactor *a = &t->a;
    const int E = t->E, S = t->S, d = t->d, e0 = t->e0;
    struct craft_log log = {0};
    int64_t frames = 0, dec_sum = 0;
    int active = t->e1 - e0, rc = 0;
    int32_t *ep_dec = t->ep_dec;
    for (int e = 0; e < E; e++) {
        t->count[e] = 0;
        t->skip[e] = e < e0 || e >= t->e1; /* another process's world */
        t->hold[e] = 0;
    }
    while (active > 0 && rc == 0) {
        for (int e = 0; e < E; e++) {
            t->hold[e] = t->count[e] == S;
        }
        rc = frame(t, a, t->skip, t->hold, 0);
        for (int e = 0; rc == 0 && e < E; e++) {
            if (t->skip[e]) {
                continue;
            }
            if (a->decided[e] == 2) {
                t->r.last_value[e] = a->v[e];
                t->skip[e] = 1;
                active--;
                continue;
            }
            if (a->decided[e] == 1) {
                int64_t j = (int64_t)(e - e0) * S + t->count[e]++;
                memcpy(t->d_idx + j * PPO_NZ_MAX, a->idx + (size_t)e * PPO_NZ_MAX,
                       PPO_NZ_MAX * 4);
                memcpy(t->d_val + j * PPO_NZ_MAX, a->val + (size_t)e * PPO_NZ_MAX,
                       PPO_NZ_MAX * 4);
                t->r.nz[j] = a->nz[e];
                memcpy(t->d_z + j * d, a->z + (size_t)e * d, (size_t)d * 4);
                t->d_k[j] = a->k_new[e];
                t->r.logp[j] = a->logp_new[e];
                t->r.value[j] = a->v[e];
                t->r.R[j] = 0.0f;
                t->r.n[j] = 0;
                t->r.term[j] = 0;
                t->r.trunc[j] = 0;
                t->r.boot[j] = 0.0f;
                t->cur[e] = (int32_t)j;
                t->disc[e] = 1.0f;
                ep_dec[e]++;
            }
            struct craft_batch_out out = {0};
            out.obs = a->obs;
            out.reward = t->reward;
            out.terminated = t->term;
            out.truncated = t->trunc;
            rc = craft_batch_step_range(&a->b, e, e + 1, a->actions, &out,
                                        &log);
            if (rc < 0) {
                break;
            }
            frames++;
            int64_t j = t->cur[e];
            t->r.R[j] += t->disc[e] * t->reward[e];
            t->disc[e] *= t->cfg.gamma;
            t->r.n[j]++;
            if (t->term[e] || t->trunc[e]) {
                t->r.term[j] = 1; /* truncation as termination */
                a->ask[e] = 1;
                dec_sum += ep_dec[e];
                ep_dec[e] = 0;
            }
        }
    }
    if (rc < 0) {
        return rc;
    }
    return ppo_rollout_totals(&t->r, frames, &log, dec_sum, &t->global_step,
                              &t->total_episodes, st);
}

/* The PPO loss of the M decisions gathered in mb_* on the tape
 * (agents/ppo.h's, with the controller's log-probability log Cat(k) +
 * log N(z; μ_k, σ²)), the advantage's statistics given. */
static int loss_rows(struct ppo_compile *t, int64_t M, int nz, double mean,
                     double sd, struct ppo_loss_out *out)
{
    struct gr_ctx *ctx = t->ctx;
    const int G = t->G, d = t->d;
    struct gr_tensor *idx =
        gr_tensor_from_host(ctx, GR_I32, gr_shape2(M, nz), t->mb_idx);
    struct gr_tensor *val =
        gr_tensor_from_host(ctx, GR_F32, gr_shape2(M, nz), t->mb_val);
    struct gr_tensor *mu, *kl, *v;
    ctl_forward(t, idx, val, &mu, &kl, &v);
    struct gr_tensor *z =
        gr_tensor_from_host(ctx, GR_F32, gr_shape2(M, d), t->mb_z);
    struct gr_tensor *k =
        gr_tensor_from_host(ctx, GR_I32, gr_shape2(M, 1), t->mb_k);
    struct gr_tensor *ent = ppo_gauss_entropy(ctx, t->log_std);
    struct gr_tensor *lp;
    if (G > 1) {
        float *oh = calloc((size_t)(M * G), sizeof *oh);
        if (oh == NULL) {
            return gr_error(GR_ENOMEM, "PPO (compILE): out of memory");
        }
        for (int64_t i = 0; i < M; i++) {
            oh[i * G + t->mb_k[i]] = 1.0f;
        }
        struct gr_tensor *toh =
            gr_tensor_from_host(ctx, GR_F32, gr_shape3(M, G, 1), oh);
        free(oh);
        struct gr_tensor *muk = gr_sum_dim(
            ctx, gr_mul(ctx, gr_reshape(ctx, mu, gr_shape3(M, G, d)), toh), 1);
        struct gr_tensor *lk = gr_log_softmax(ctx, kl, NULL);
        lp = gr_add(ctx, ppo_gauss_logp(ctx, z, muk, t->log_std),
                    gr_gather(ctx, lk, k));
        struct gr_tensor *hk = gr_scale(
            ctx,
            gr_mean(ctx, gr_sum_dim(ctx, gr_mul(ctx, gr_exp(ctx, lk), lk), 1)),
            -1.0f);
        ent = gr_add(ctx, ent, hk);
    } else {
        lp = ppo_gauss_logp(ctx, z, mu, t->log_std);
    }
    struct ppo_loss_head h = {lp, NULL, ent, v, NULL, NULL, NULL};
    return ppo_loss_tail(ctx, &h, M, t->r.mb_logp, t->r.mb_adv, t->r.mb_ret,
                         t->cfg.clip_coef, t->cfg.vf_coef, t->cfg.ent_coef,
                         t->cfg.norm_adv, mean, sd, "PPO loss (compILE)",
                         out);
}

/* One minibatch's loss (agents/ppo_internal.h): the rows gathered into
 * mb_*, then loss_rows. */
static int minibatch_loss(void *self, const int32_t *rows, int64_t M,
                          double mean, double sd, struct ppo_loss_out *lo)
{
    struct ppo_compile *t = self;
    const int d = t->d;
    int nzm = ppo_rollout_nz_max(&t->r, rows, M);
    ppo_rollout_gather(&t->r, rows, M);
    for (int64_t i = 0; i < M; i++) {
        int64_t j = rows[i];
        memcpy(t->mb_idx + i * nzm, t->d_idx + j * PPO_NZ_MAX,
               (size_t)nzm * 4);
        memcpy(t->mb_val + i * nzm, t->d_val + j * PPO_NZ_MAX,
               (size_t)nzm * 4);
        memcpy(t->mb_z + i * d, t->d_z + j * d, (size_t)d * 4);
        t->mb_k[i] = t->d_k[j];
    }
    return loss_rows(t, M, nzm, mean, sd, lo);
}


static int update(struct ppo_compile *t, struct ppo_stats *st)
{
    struct ppo_update u = {
        .ctx = t->ctx,
        .optim = t->optim,
        .cfg = &t->cfg,
        .prefix = "ctl.",
        .perm_tag = 0x43504552,
        .iteration = t->iteration,
        .global_step = t->global_step,
        .r = &t->r,
        .loss = minibatch_loss,
        .self = t,
    };
    int rc = ppo_update_run(&u, st);
    return rc < 0 ? rc : gr_tensor_to_host(t->log_std, t->log_std_h);
}

int ppo_compile_iteration(struct ppo_compile *t, struct ppo_stats *st)
{
    memset(st, 0, sizeof *st);
    double t0 = ppo_now_s();
    int rc = rollout(t, st);
    double t1 = ppo_now_s();
    if (rc == 0) {
        rc = update(t, st);
    }
    if (rc < 0) {
        return rc;
    }
    t->iteration++;
    st->iteration = t->iteration;
    st->rollout_s = t1 - t0;
    st->update_s = ppo_now_s() - t1;
    return 0;
}

int ppo_compile_evaluate(struct ppo_compile *t, int episodes,
                         uint64_t base_seed, struct ppo_eval *out,
                         const struct ppo_trace *trace)
{
    if (episodes < 1) {
        return gr_error(GR_EINVAL, "evaluation: %d episodes", episodes);
    }
    struct cactor a;
    int rc = cactor_init(&a, t, episodes, base_seed);
    if (rc < 0) {
        return rc;
    }
    const int E = episodes, T = t->world.max_steps;
    uint8_t *done = calloc((size_t)E, 1);
    float *rew = calloc((size_t)E, 4);
    uint8_t *te = calloc((size_t)E, 2);
    if (done == NULL || rew == NULL || te == NULL) {
        rc = gr_error(GR_ENOMEM, "evaluation: out of memory");
    }
    int left = E;
    double R = 0.0, succ = 0.0, len = 0.0, decs = 0.0;
    for (int j = 0; rc == 0 && j < E; j++) {
        if (trace != NULL && trace->seed != NULL) {
            trace->seed[j] = a.b.seed[j];
        }
    }
    while (rc == 0 && left > 0) {
        rc = frame(t, &a, done, NULL, 1);
        for (int e = 0; rc == 0 && e < E; e++) {
            if (done[e]) {
                continue;
            }
            int step = a.b.t[e];
            decs += a.decided[e] == 1;
            struct craft_batch_out o = {0};
            o.obs = a.obs; /* the next frame reads the new observation */
            o.reward = rew;
            o.terminated = te;
            o.truncated = te + E;
            float ret_before = a.b.ret[e];
            rc = craft_batch_step_range(&a.b, e, e + 1, a.actions, &o, NULL);
            ppo_trace_step(trace, T, e, step, a.actions[e], a.model[e],
                           a.decided[e] == 1, rew[e]);
            if (te[e] || te[E + e]) {
                done[e] = 1;
                left--;
                R += ret_before + rew[e];
                succ += te[e];
                len += step + 1;
                ppo_trace_end(trace, e, step + 1);
            }
        }
    }
    if (rc == 0) {
        out->episodes = E;
        out->mean_return = R / E;
        out->success_rate = succ / E;
        out->mean_length = len / E;
        out->decisions_per_episode = decs / E;
    }
    free(done);
    free(rew);
    free(te);
    cactor_free(&a);
    return rc;
}

/* ---- building, saving, loading ---------------------------------------------- */

/* The trainer state of a checkpoint: between iterations every world waits
 * at a decision, so no segment state to keep: each world's flag, sampling
 * counter and decisions of its running episode, then the worlds. */
static void state_layout(struct ppo_compile *t, struct ppo_state_layout *L)
{
    ppo_state_begin(L, 0x434D5053u, t->E, t->d, &t->iteration,
                    &t->global_step, &t->total_episodes);
    ppo_state_add(L, t->a.ask, 1);
    ppo_state_add(L, t->a.draws, 8);
    ppo_state_add(L, t->ep_dec, 4);
    ppo_state_add_batch(L, &t->a.b);
}

void ppo_compile_free(struct ppo_compile *t)
{
    if (t == NULL) {
        return;
    }
    gr_optim_free(t->optim);
    cactor_free(&t->a);
    for (int g = 0; g < t->G; g++) {
        gr_ctx_free(t->mctx[g]);
    }
    ppo_rollout_free(&t->r);
    ppo_state_free(&t->state);
    void *p[] = {t->log_std_h, t->d_idx, t->d_val,  t->d_z,   t->d_k,
                 t->disc,      t->reward, t->count, t->cur,   t->ep_dec,
                 t->term,      t->trunc,  t->hold,  t->skip,  t->mb_idx,
                 t->mb_k,      t->mb_val, t->mb_z};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) {
        free(p[i]);
    }
    free(t);
}

const struct craft_config *ppo_compile_world(const struct ppo_compile *t)
{
    return &t->world;
}

int64_t ppo_compile_global_step(const struct ppo_compile *t)
{
    return t->global_step;
}

int ppo_compile_n_models(const struct ppo_compile *t)
{
    return t->G;
}

static int load_model(struct ppo_compile *t, int g, const char *path)
{
    char *text = NULL;
    int rc = gr_checkpoint_read_config(path, &text);
    if (rc < 0) {
        return rc;
    }
    struct compile_config cc;
    rc = compile_config_parse(text, &cc);
    struct craft_config w;
    int rw = rc == 0 ? bc_world_parse(text, &w) : 0;
    int is_ppo = strstr(text, "ppo_policy ") != NULL;
    free(text);
    if (rc < 0 || is_ppo) {
        char why[512] = "";
        if (rc < 0) {
            snprintf(why, sizeof why, ": %s", gr_last_error());
        }
        return gr_error(GR_EFORMAT, "%s: not a compILE checkpoint (train bc "
                                    "--model compile)%s",
                        path, why);
    }
    if (rw < 0) {
        return gr_error_wrap(rw, "%s", path);
    }
    if (cc.obs_size != CRAFT_OBS_SIZE || cc.n_actions != CRAFT_N_ACTIONS) {
        return gr_error(GR_EFORMAT, "%s: %d observations, %d actions; Craft "
                                    "has %d and %d",
                        path, cc.obs_size, cc.n_actions, CRAFT_OBS_SIZE,
                        CRAFT_N_ACTIONS);
    }
    if (g == 0) {
        t->world = w;
        t->d = cc.hidden;
    } else if (cc.hidden != t->d || w.n_each != t->world.n_each ||
               w.width != t->world.width || w.height != t->world.height) {
        return gr_error(GR_EINVAL, "%s and %s: another hidden size or world",
                        t->sources[0], path);
    }
    struct gr_ctx_config ccf = gr_ctx_config_default();
    ccf.device = GR_DEVICE_CPU;
    ccf.threads = 1;
    rc = gr_ctx_new(&t->mctx[g], &ccf);
    if (rc == 0) {
        rc = compile_model_init(&t->cm[g], t->mctx[g], &cc, 0);
    }
    if (rc == 0) {
        rc = gr_checkpoint_load(t->mctx[g], path, GR_CKPT_PARAMS, NULL);
    }
    return rc;
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* θ of model g: the median (cfg.boundary_quantile) over expert
 * demonstrations of its training
 * tasks (PPO_COMPILE_CALIB_DEMOS per task, seed 1) of the largest online
 * boundary logit ℓ_t, t = 1 … T−1, of the first segment's encoder run
 * from the demonstration's start: the level compILE's inferred first
 * boundary reaches, so the online rule fires where compILE would place
 * one, about as often. */
#define PPO_COMPILE_CALIB_DEMOS 32
static int calibrate(struct ppo_compile *t, int g)
{
    struct compile_model *m = &t->cm[g];
    struct craft_task tasks[OCN_MAX_TASKS];
    int n_tasks = m->cfg.n_tasks, rc = 0;
    for (int i = 0; i < n_tasks && rc == 0; i++) {
        rc = craft_task_parse(m->cfg.task_names[i], &tasks[i]);
    }
    if (rc < 0 || n_tasks < 1) {
        return gr_error(GR_EFORMAT, "%s: the model's training tasks",
                        t->sources[g]);
    }
    struct craft_config w = t->world;
    struct demo_set ds;
    memset(&ds, 0, sizeof ds);
    rc = demo_set_generate(&ds, &w, tasks, n_tasks, PPO_COMPILE_CALIB_DEMOS,
                           1, NULL, NULL);
    if (rc < 0) {
        return gr_error_wrap(rc, "%s: calibration demonstrations",
                             t->sources[g]);
    }
    const int n = (int)ds.n, d = t->d;
    struct demo_batch b;
    memset(&b, 0, sizeof b);
    int64_t *ids = malloc((size_t)n * sizeof *ids);
    float *h = calloc((size_t)n * d, 4), *c = calloc((size_t)n * d, 4);
    float *lg = malloc((size_t)n * 4), *peak = malloc((size_t)n * 4);
    if (ids == NULL || h == NULL || c == NULL || lg == NULL || peak == NULL) {
        rc = gr_error(GR_ENOMEM, "PPO (compILE): out of memory");
    }
    for (int i = 0; rc == 0 && i < n; i++) {
        ids[i] = i;
        peak[i] = -INFINITY;
    }
    if (rc == 0) {
        rc = demo_batch_build(&b, &ds, ids, n);
    }
    for (int s = 0; rc == 0 && s < b.T; s++) {
        int64_t r0 = b.row_off[s];
        int act = b.active[s]; /* a prefix: lengths are non-increasing */
        rc = compile_boundary_step(m, b.idx + r0 * b.nz, b.val + r0 * b.nz,
                                   act, b.nz, b.action + r0, h, c, lg);
        for (int j = 0; rc == 0 && s >= 1 && j < act; j++) {
            peak[j] = lg[j] > peak[j] ? lg[j] : peak[j];
        }
    }
    int k = 0;
    for (int j = 0; rc == 0 && j < b.B; j++) {
        if (b.len[j] >= 2) {
            peak[k++] = peak[j];
        }
    }
    if (rc == 0) {
        if (k == 0) {
            t->theta[g] = 0.0f;
        } else {
            /* the boundary_quantile of the peaks (0.5: peak[k / 2], the
             * median) */
            qsort(peak, (size_t)k, sizeof *peak, cmp_float);
            int q = (int)((double)t->cfg.boundary_quantile * k);
            t->theta[g] = peak[q < k ? q : k - 1];
        }
    }
    free(ids);
    free(h);
    free(c);
    free(lg);
    free(peak);
    demo_batch_free(&b);
    demo_set_free(&ds);
    return rc;
}

int ppo_compile_new(struct ppo_compile **out, struct gr_ctx *ctx,
                    const struct ppo_config *cfg, const char *const *paths,
                    int n_paths)
{
    *out = NULL;
    if (cfg->policy != PPO_POLICY_COMPILE) {
        return gr_error(GR_EINVAL, "PPO (compILE): policy %s",
                        ppo_policy_name(cfg->policy));
    }
    if (n_paths < 1 || n_paths > PPO_COMPILE_MAX_MODELS) {
        return gr_error(GR_EINVAL, "PPO (compILE): %d models, expected 1..%d",
                        n_paths, PPO_COMPILE_MAX_MODELS);
    }
    int rc = ppo_config_validate(cfg);
    if (rc < 0) {
        return rc;
    }
    struct ppo_compile *t = calloc(1, sizeof *t);
    if (t == NULL) {
        return gr_error(GR_ENOMEM, "PPO (compILE): out of memory");
    }
    t->cfg = *cfg;
    t->ctx = ctx;
    craft_task_parse(cfg->task, &t->task);
    for (int g = 0; g < n_paths && rc == 0; g++) {
        snprintf(t->sources[g], sizeof t->sources[g], "%s", paths[g]);
        t->G = g + 1;
        rc = load_model(t, g, paths[g]);
    }
    if (rc < 0) {
        ppo_compile_free(t);
        return rc;
    }
    for (int g = 0; g < t->G && rc == 0; g++) {
        rc = calibrate(t, g); /* in the models' own world */
    }
    if (rc < 0) {
        ppo_compile_free(t);
        return rc;
    }
    t->world.reward = cfg->world.reward;
    craft_config_for_task(&t->world, &t->task, &t->world);
    t->w = cfg->width;
    t->O = CRAFT_OBS_SIZE;
    t->A = CRAFT_N_ACTIONS;
    t->E = cfg->num_envs;
    t->S = cfg->num_steps;
    const int G = t->G, d = t->d, w = t->w;
    t->wx = gr_param_new(ctx, "ctl.l1.wx", gr_shape2(t->O, w));
    t->b1 = gr_param_new(ctx, "ctl.l1.bias", gr_shape1(w));
    t->wmu = gr_param_new(ctx, "ctl.mu.weight", gr_shape2(G * d, w));
    t->bmu = gr_param_new(ctx, "ctl.mu.bias", gr_shape1(G * d));
    if (G > 1) {
        t->wk = gr_param_new(ctx, "ctl.model.weight", gr_shape2(G, w));
        t->bk = gr_param_new(ctx, "ctl.model.bias", gr_shape1(G));
    }
    t->vw = gr_param_new(ctx, "ctl.value.weight", gr_shape2(1, w));
    t->vb = gr_param_new(ctx, "ctl.value.bias", gr_shape1(1));
    t->log_std = gr_param_new(ctx, "ctl.log_std", gr_shape2(1, d));
    if (!t->wx || !t->b1 || !t->wmu || !t->bmu || !t->vw || !t->vb ||
        !t->log_std || (G > 1 && (!t->wk || !t->bk))) {
        rc = gr_error(GR_ENOMEM, "PPO (compILE): the controller");
    }
    struct gr_rng rng = gr_rng_make(cfg->seed, 0x43544Cu);
    float bo = 1.0f / sqrtf((float)t->O), bw = 1.0f / sqrtf((float)w);
    if (rc == 0) rc = gr_init_uniform(t->wx, -bo, bo, rng);
    if (rc == 0) rc = gr_init_uniform(t->b1, -bo, bo, rng);
    /* small initial means: z starts near compILE's prior N(0, I) */
    if (rc == 0) rc = gr_init_uniform(t->wmu, -0.1f * bw, 0.1f * bw, rng);
    if (rc == 0 && G > 1) rc = gr_init_uniform(t->wk, -0.1f * bw, 0.1f * bw, rng);
    if (rc == 0) rc = gr_init_uniform(t->vw, -bw, bw, rng);
    if (rc == 0) {
        rc = ppo_optim_new(&t->optim, ctx, cfg, "ctl.");
    }
    train_mpi_share(t->E, &t->e0, &t->e1);
    if (rc == 0 && t->e1 <= t->e0) {
        rc = gr_error(GR_EINVAL, "PPO (compILE): %d worlds for %d MPI "
                                 "processes",
                      t->E, train_mpi_size());
    }
    /* D: this process's decisions; the permutation and a minibatch count
     * every process's */
    const size_t E = (size_t)t->E, Dall = E * (size_t)t->S,
                 D = (size_t)(t->e1 - t->e0) * (size_t)t->S,
                 M = Dall / (size_t)cfg->num_minibatches;
    if (rc == 0) {
        ppo_seeds(cfg, &t->sample_seed, &t->env_seed);
        rc = cactor_init(&t->a, t, t->E, t->env_seed);
    }
    if (rc == 0) {
        rc = ppo_rollout_init(&t->r, t->E, t->S, t->e0, t->e1,
                              cfg->num_minibatches, "PPO (compILE)");
    }
    if (rc == 0) {
        t->log_std_h = calloc((size_t)d, 4);
        t->d_idx = malloc(D * PPO_NZ_MAX * 4);
        t->d_val = malloc(D * PPO_NZ_MAX * 4);
        t->d_z = malloc(D * (size_t)d * 4);
        t->d_k = calloc(D, 4);
        t->disc = calloc(E, 4);
        t->reward = calloc(E, 4);
        t->count = calloc(E, 4);
        t->cur = calloc(E, 4);
        t->ep_dec = calloc(E, 4);
        t->term = calloc(E, 1);
        t->trunc = calloc(E, 1);
        t->hold = calloc(E, 1);
        t->skip = calloc(E, 1);
        t->mb_idx = malloc(M * PPO_NZ_MAX * 4);
        t->mb_val = malloc(M * PPO_NZ_MAX * 4);
        t->mb_z = malloc(M * (size_t)d * 4);
        t->mb_k = malloc(M * 4);
        if (!t->log_std_h || !t->d_idx || !t->d_val || !t->d_z || !t->d_k ||
            !t->disc || !t->reward || !t->count || !t->cur || !t->ep_dec ||
            !t->term || !t->trunc || !t->hold || !t->skip || !t->mb_idx ||
            !t->mb_val || !t->mb_z || !t->mb_k) {
            rc = gr_error(GR_ENOMEM, "PPO (compILE): out of memory");
        }
    }
    if (rc == 0) {
        struct ppo_state_layout L;
        state_layout(t, &L);
        rc = ppo_state_init(&t->state, ctx, &L, "PPO (compILE)");
    }
    if (rc < 0) {
        ppo_compile_free(t);
        return rc;
    }
    *out = t;
    return 0;
}

char *ppo_compile_checkpoint_config(const struct ppo_compile *t)
{
    size_t cap = 16384;
    char *text = malloc(cap);
    if (text == NULL) {
        gr_error(GR_ENOMEM, "PPO (compILE): out of memory");
        return NULL;
    }
    int n = snprintf(text, cap, "kind compile_controller\nmodels %d\nhidden "
                                "%d\nwidth %d\ntasks %s\n",
                     t->G, t->d, t->w, t->task.name);
    for (int g = 0; g < t->G; g++) {
        n += snprintf(text + n, cap - (size_t)n, "boundary_threshold %.9g\n",
                      (double)t->theta[g]);
    }
    struct craft_config w = t->world;
    int m = bc_world_format(&w, text + n, cap - (size_t)n);
    for (int g = 0; m >= 0 && g < t->G; g++) {
        n += m;
        m = snprintf(text + n, cap - (size_t)n, "rl_init %s\n", t->sources[g]);
        m = (size_t)m < cap - (size_t)n ? m : -1;
    }
    if (m >= 0) {
        n += m;
        m = ppo_config_format(&t->cfg, text + n, cap - (size_t)n);
    }
    if (m < 0) {
        free(text);
        gr_error(GR_EINVAL, "PPO (compILE): config text too long");
        return NULL;
    }
    return text;
}

static char *config_text(const void *t)
{
    return ppo_compile_checkpoint_config(t);
}

int ppo_compile_save(struct ppo_compile *t, const char *path, int force)
{
    struct ppo_state_layout L;
    state_layout(t, &L);
    return ppo_state_save(&t->state, t->ctx, &L, path, force, config_text,
                          t);
}

int ppo_compile_load(struct ppo_compile *t, const char *path)
{
    char *text = NULL;
    int rc = gr_checkpoint_read_config(path, &text);
    if (rc < 0) {
        return rc;
    }
    struct ppo_config c;
    rc = ppo_config_parse(text, &c);
    if (rc == 0 && strstr(text, "kind compile_controller\n") != text) {
        rc = gr_error(GR_EFORMAT, "%s is not a PPO checkpoint of compILE",
                      path);
    } else if (rc == 0 && c.num_envs != t->E) {
        rc = gr_error(GR_EFORMAT, "%s: %d worlds; this run has %d", path,
                      c.num_envs, t->E);
    }
    free(text);
    struct ppo_state_layout L;
    state_layout(t, &L);
    if (rc == 0) {
        rc = ppo_state_load(&t->state, t->ctx, &L, path, t->a.obs, t->O);
    }
    if (rc == 0) {
        rc = gr_tensor_to_host(t->log_std, t->log_std_h);
    }
    return rc;
}
