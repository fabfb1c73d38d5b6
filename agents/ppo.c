/* PPO fine-tuning with frozen options on batched Craft (see agents/ppo.h). */
#define _POSIX_C_SOURCE 200809L
#include "agents/ppo.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents/bc.h"
#include "agents/ocn_load.h"
#include "agents/ppo_act.h"
#include "agents/ppo_internal.h"
#include "core/error.h"
#include "core/random.h"
#include "envs/expert.h"
#include "kernels/checkpoint.h"
#include "kernels/ops.h"
#include "kernels/optim.h"
#include "kernels/rng.h"
#include "kernels/tape.h"
#include "train/mpi.h"

#include <pthread.h>

/* The most threads acting runs on (ppo_set_acting_threads). */
#define PPO_MAX_ACTING 64

/* ---- config ----------------------------------------------------------------- */

void ppo_config_default(struct ppo_config *c)
{
    memset(c, 0, sizeof *c);
    c->policy = PPO_POLICY_OCN;
    craft_config_default(&c->world);
    c->world.n_each = 4;
    c->seed = 1;
    c->learning_rate = 3e-4f;
    c->anneal_lr = 1;
    c->total_timesteps = 2000000;
    c->num_envs = 16;
    c->num_steps = 64;
    c->gamma = 0.99f;
    c->gae_lambda = 0.95f;
    c->num_minibatches = 4;
    c->update_epochs = 4;
    c->norm_adv = 1;
    c->clip_coef = 0.2f;
    c->ent_coef = 0.01f;
    c->vf_coef = 0.5f;
    c->max_grad_norm = 0.5f;
    c->target_kl = 0.0f;
    c->adam_eps = 1e-5f;
    c->tau = 0.0f;
    c->hidden = 128;
    c->width = 128;
    c->boundary_quantile = 0.5f;
}

static const char *const policy_names[] = {"ocn", "moe", "flat", "oracle",
                                           "ompn", "compile"};
#define N_POLICIES 6

const char *ppo_policy_name(enum ppo_policy p)
{
    return (int)p >= 0 && (int)p < N_POLICIES ? policy_names[p] : NULL;
}

int ppo_policy_from_name(const char *name)
{
    for (int i = 0; i < N_POLICIES; i++) {
        if (strcmp(name, policy_names[i]) == 0) {
            return i;
        }
    }
    return -1;
}

static int finite_pos(float x)
{
    return isfinite(x) && x > 0.0f;
}

int ppo_config_validate(const struct ppo_config *c)
{
    if (ppo_policy_name(c->policy) == NULL) {
        return gr_error(GR_EINVAL, "policy %d is not ocn, moe, flat or oracle",
                        (int)c->policy);
    }
    struct craft_task task;
    if (craft_task_parse(c->task, &task) < 0) {
        return gr_error_wrap(GR_EINVAL, "task");
    }
    if (c->num_envs < 1 || c->num_envs > 65535) {
        return gr_error(GR_EINVAL, "num_envs %d: expected 1..65535",
                        c->num_envs);
    }
    if (c->num_steps < 1 || c->num_steps > 1 << 20) {
        return gr_error(GR_EINVAL, "num_steps %d: expected 1..%d",
                        c->num_steps, 1 << 20);
    }
    int64_t D = (int64_t)c->num_envs * c->num_steps;
    if (c->num_minibatches < 1 || D % c->num_minibatches != 0) {
        return gr_error(GR_EINVAL,
                        "num_minibatches %d does not divide the %lld "
                        "decisions of a rollout (num_envs × num_steps)",
                        c->num_minibatches, (long long)D);
    }
    if (D > (int64_t)1 << 26) {
        return gr_error(GR_EINVAL, "num_envs × num_steps = %lld is more than "
                                   "2^26 decisions",
                        (long long)D);
    }
    if (c->update_epochs < 1) {
        return gr_error(GR_EINVAL, "update_epochs %d: expected >= 1",
                        c->update_epochs);
    }
    if (c->total_timesteps < 0) {
        /* 0: train ppo writes the initial model and stops (issue 21) */
        return gr_error(GR_EINVAL, "total_timesteps %lld: expected >= 0 (0: "
                                   "the initial model only)",
                        (long long)c->total_timesteps);
    }
    if (!finite_pos(c->learning_rate) || !finite_pos(c->adam_eps)) {
        return gr_error(GR_EINVAL, "learning_rate %g / adam_eps %g: expected "
                                   "positive numbers",
                        (double)c->learning_rate, (double)c->adam_eps);
    }
    if (!(c->gamma >= 0.0f && c->gamma <= 1.0f) ||
        !(c->gae_lambda >= 0.0f && c->gae_lambda <= 1.0f)) {
        return gr_error(GR_EINVAL, "gamma %g / gae_lambda %g: expected 0..1",
                        (double)c->gamma, (double)c->gae_lambda);
    }
    if (!finite_pos(c->clip_coef) || !(c->ent_coef >= 0.0f) ||
        !isfinite(c->ent_coef) || !(c->vf_coef >= 0.0f) ||
        !isfinite(c->vf_coef) || !finite_pos(c->max_grad_norm) ||
        !(c->target_kl >= 0.0f) || !isfinite(c->target_kl)) {
        return gr_error(GR_EINVAL, "clip_coef, ent_coef, vf_coef, "
                                   "max_grad_norm, target_kl: expected "
                                   "finite numbers (clip and norm > 0)");
    }
    if (!(c->tau >= 0.0f) || !isfinite(c->tau)) {
        return gr_error(GR_EINVAL, "tau %g: expected a number > 0 (0: auto)",
                        (double)c->tau);
    }
    if (c->hidden < 1 || c->width < 1 || c->hidden > 4096 ||
        c->width > 4096) {
        return gr_error(GR_EINVAL, "hidden %d / width %d: expected 1..4096",
                        c->hidden, c->width);
    }
    if (!(c->boundary_quantile >= 0.0f && c->boundary_quantile <= 1.0f)) {
        return gr_error(GR_EINVAL, "boundary quantile %g: expected 0..1",
                        (double)c->boundary_quantile);
    }
    return craft_config_validate(&c->world);
}

int ppo_config_format(const struct ppo_config *c, char *out, size_t cap)
{
    int n = snprintf(
        out, cap,
        "ppo_policy %s\nppo_task %s\nppo_reward %s\nppo_seed %llu\n"
        "ppo_learning_rate %.9g\nppo_anneal_lr %d\nppo_total_timesteps %lld\n"
        "ppo_num_envs %d\nppo_num_steps %d\nppo_gamma %.9g\n"
        "ppo_gae_lambda %.9g\nppo_num_minibatches %d\n"
        "ppo_update_epochs %d\nppo_norm_adv %d\nppo_clip_coef %.9g\n"
        "ppo_ent_coef %.9g\nppo_vf_coef %.9g\nppo_max_grad_norm %.9g\n"
        "ppo_target_kl %.9g\nppo_adam_eps %.9g\nppo_tau %.9g\n"
        "ppo_hidden %d\nppo_width %d\n",
        ppo_policy_name(c->policy), c->task, craft_reward_name(c->world.reward),
        (unsigned long long)c->seed, (double)c->learning_rate, c->anneal_lr,
        (long long)c->total_timesteps, c->num_envs, c->num_steps,
        (double)c->gamma, (double)c->gae_lambda, c->num_minibatches,
        c->update_epochs, c->norm_adv, (double)c->clip_coef,
        (double)c->ent_coef, (double)c->vf_coef, (double)c->max_grad_norm,
        (double)c->target_kl, (double)c->adam_eps, (double)c->tau, c->hidden,
        c->width);
    if (n >= 0 && (size_t)n < cap && c->policy == PPO_POLICY_COMPILE) {
        /* only compile's runs carry it: the other configs' text as before */
        n += snprintf(out + n, cap - (size_t)n,
                      "ppo_boundary_quantile %.9g\n",
                      (double)c->boundary_quantile);
    }
    if (n < 0 || (size_t)n >= cap) {
        return gr_error(GR_EINVAL, "PPO config text longer than %zu bytes",
                        cap);
    }
    return n;
}

int ppo_config_parse(const char *text, struct ppo_config *c)
{
    ppo_config_default(c);
    int line_no = 0;
    const char *p = text;
    while (*p != '\0') {
        const char *eol = strchr(p, '\n');
        size_t n = eol != NULL ? (size_t)(eol - p) : strlen(p);
        char line[256];
        line_no++;
        if (n >= sizeof line || strncmp(p, "ppo_", 4) != 0) {
            p += n + (eol != NULL);
            continue;
        }
        memcpy(line, p + 4, n - 4);
        line[n - 4] = '\0';
        p += n + (eol != NULL);
        char *v = strchr(line, ' ');
        if (v == NULL) {
            return gr_error(GR_EFORMAT, "config line %d: 'ppo_%s' has no "
                                        "value",
                            line_no, line);
        }
        *v++ = '\0';
        char *end = NULL;
        double x = strtod(v, &end);
        int num = end != v && *end == '\0';
        const char *k = line;
        int bad = 0;
        if (strcmp(k, "options") == 0) {
            continue; /* the pool's sources, for the record */
        }
        if (strcmp(k, "policy") == 0) {
            int pol = ppo_policy_from_name(v);
            bad = pol < 0;
            c->policy = (enum ppo_policy)(pol < 0 ? 0 : pol);
        } else if (strcmp(k, "task") == 0) {
            bad = strlen(v) >= sizeof c->task;
            if (!bad) {
                snprintf(c->task, sizeof c->task, "%s", v);
            }
        } else if (strcmp(k, "reward") == 0) {
            int r = craft_reward_from_name(v);
            bad = r < 0;
            c->world.reward = (enum craft_reward)(r < 0 ? 0 : r);
        } else if (!num) {
            bad = 1;
        } else if (strcmp(k, "seed") == 0) {
            c->seed = strtoull(v, NULL, 10);
        } else if (strcmp(k, "learning_rate") == 0) {
            c->learning_rate = (float)x;
        } else if (strcmp(k, "anneal_lr") == 0) {
            c->anneal_lr = (int)x;
        } else if (strcmp(k, "total_timesteps") == 0) {
            c->total_timesteps = (int64_t)x;
        } else if (strcmp(k, "num_envs") == 0) {
            c->num_envs = (int)x;
        } else if (strcmp(k, "num_steps") == 0) {
            c->num_steps = (int)x;
        } else if (strcmp(k, "gamma") == 0) {
            c->gamma = (float)x;
        } else if (strcmp(k, "gae_lambda") == 0) {
            c->gae_lambda = (float)x;
        } else if (strcmp(k, "num_minibatches") == 0) {
            c->num_minibatches = (int)x;
        } else if (strcmp(k, "update_epochs") == 0) {
            c->update_epochs = (int)x;
        } else if (strcmp(k, "norm_adv") == 0) {
            c->norm_adv = (int)x;
        } else if (strcmp(k, "clip_coef") == 0) {
            c->clip_coef = (float)x;
        } else if (strcmp(k, "ent_coef") == 0) {
            c->ent_coef = (float)x;
        } else if (strcmp(k, "vf_coef") == 0) {
            c->vf_coef = (float)x;
        } else if (strcmp(k, "max_grad_norm") == 0) {
            c->max_grad_norm = (float)x;
        } else if (strcmp(k, "target_kl") == 0) {
            c->target_kl = (float)x;
        } else if (strcmp(k, "boundary_quantile") == 0) {
            c->boundary_quantile = (float)x;
        } else if (strcmp(k, "adam_eps") == 0) {
            c->adam_eps = (float)x;
        } else if (strcmp(k, "tau") == 0) {
            c->tau = (float)x;
        } else if (strcmp(k, "hidden") == 0) {
            c->hidden = (int)x;
        } else if (strcmp(k, "width") == 0) {
            c->width = (int)x;
        }
        if (bad) {
            return gr_error(GR_EFORMAT, "config line %d: ppo_%s '%s' is not "
                                        "a valid value",
                            line_no, k, v);
        }
    }
    return 0;
}

/* ---- SMDP GAE ------------------------------------------------------------------ */

void ppo_smdp_gae(int n, const float *R, const int32_t *steps,
                  const float *value, const uint8_t *terminated,
                  const uint8_t *truncated, const float *boot,
                  float last_value, float gamma, float lambda, float *adv,
                  float *ret)
{
    double next_adv = 0.0;
    for (int j = n - 1; j >= 0; j--) {
        double g = pow((double)gamma, (double)steps[j]);
        double nv;
        int cont;
        if (terminated[j]) {
            nv = 0.0;
            cont = 0;
        } else if (truncated[j]) {
            nv = boot[j];
            cont = 0;
        } else {
            nv = j == n - 1 ? last_value : value[j + 1];
            cont = j < n - 1;
        }
        double delta = R[j] + g * nv - value[j];
        double a = delta + (cont ? g * lambda * next_adv : 0.0);
        adv[j] = (float)a;
        ret[j] = (float)(a + value[j]);
        next_adv = a;
    }
}

/* ---- the loss ---------------------------------------------------------------- */

/* ppo_loss with the advantage's statistics given (norm_adv). */
static int loss_with(struct ocn_model *m, const struct ppo_minibatch *b,
                     float clip_coef, float vf_coef, float ent_coef,
                     int norm_adv, double mean, double sd,
                     struct ppo_loss_out *out);

int ppo_loss(struct ocn_model *m, const struct ppo_minibatch *b,
             float clip_coef, float vf_coef, float ent_coef, int norm_adv,
             struct ppo_loss_out *out)
{
    /* the advantage, normalised over the minibatch (host statistics) */
    double mean = 0.0, sd = 0.0;
    double sum = 0.0, var = 0.0;
    for (int64_t i = 0; i < b->M; i++) {
        sum += b->adv[i];
    }
    mean = sum / (double)b->M;
    for (int64_t i = 0; i < b->M; i++) {
        var += (b->adv[i] - mean) * (b->adv[i] - mean);
    }
    sd = b->M > 1 ? sqrt(var / (double)(b->M - 1)) : 0.0;
    return loss_with(m, b, clip_coef, vf_coef, ent_coef, norm_adv, mean, sd,
                     out);
}

static int loss_with(struct ocn_model *m, const struct ppo_minibatch *b,
                     float clip_coef, float vf_coef, float ent_coef,
                     int norm_adv, double mean, double sd,
                     struct ppo_loss_out *out)
{
    struct gr_ctx *ctx = m->ctx;
    const int64_t M = b->M, K = m->cfg.n_options, d = m->cfg.hidden;
    if (m->c_vw == NULL || m->cfg.n_tasks != 1) {
        return gr_error(GR_EINVAL, "PPO loss: the model needs a value head "
                                   "and one task");
    }
    struct gr_tensor *idx =
        gr_tensor_from_host(ctx, GR_I32, gr_shape2(M, b->nz), b->idx);
    struct gr_tensor *val =
        gr_tensor_from_host(ctx, GR_F32, gr_shape2(M, b->nz), b->val);
    struct gr_tensor *hc =
        gr_tensor_from_host(ctx, GR_F32, gr_shape2(M, d), b->hc);
    int any_first = 0;
    for (int64_t i = 0; i < M; i++) {
        any_first |= b->first[i] != 0.0f;
    }
    if (any_first) {
        struct gr_tensor *first =
            gr_tensor_from_host(ctx, GR_F32, gr_shape2(M, 1), b->first);
        struct gr_tensor *zero_ids = gr_tensor_new(ctx, GR_I32, gr_shape1(M));
        struct gr_tensor *h0 = gr_embedding(ctx, m->h_init, zero_ids);
        hc = gr_add(ctx, gr_mul(ctx, hc, gr_affine(ctx, first, -1.0f, 1.0f)),
                    gr_mul(ctx, h0, first));
    }
    struct gr_tensor *pre =
        gr_add(ctx,
               gr_add(ctx, gr_sparse_matmul(ctx, idx, val, m->c_wx), m->c_b1),
               gr_matmul(ctx, hc, m->c_wh, 0, 1));
    struct gr_tensor *z = gr_tanh(ctx, pre);
    struct gr_tensor *u = gr_tanh(ctx, gr_linear(ctx, z, m->c_w2, m->c_b2));
    /* only the head's K logit rows: the next state (rows K..K+d-1) is not
     * in the loss, and skipping it saves a third of the update */
    struct gr_tensor *logits =
        gr_linear(ctx, u, gr_slice(ctx, m->c_wo, 0, 0, K),
                  gr_slice(ctx, m->c_bo, 0, 0, K));
    struct gr_tensor *lp =
        gr_log_softmax(ctx, gr_scale(ctx, logits, 1.0f / m->cfg.tau), NULL);
    struct gr_tensor *p = gr_exp(ctx, lp);
    struct gr_tensor *ent =
        gr_scale(ctx, gr_mean(ctx, gr_sum_dim(ctx, gr_mul(ctx, p, lp), 1)),
                 -1.0f);
    struct ppo_loss_head h = {lp, b->option, ent, NULL, u, m->c_vw, m->c_vb};
    return ppo_loss_tail(ctx, &h, M, b->logp_old, b->adv, b->ret, clip_coef,
                         vf_coef, ent_coef, norm_adv, mean, sd, "PPO loss",
                         out);
}

/* ---- the trainer --------------------------------------------------------------- */

/* Per-world acting state. */
struct actor {
    int E;
    uint8_t *ask;       /* 1: the controller decides at the next step */
    uint8_t *first;     /* 1: the next decision is the episode's first */
    int32_t *opt;       /* option in force */
    float *hc;          /* [E, d] controller state H^C */
    float *ho;          /* [E, d] the running option's state */
    int32_t *start;     /* oracle: the target's count when the option began */
    uint64_t *draws;    /* sampling counter */
    int32_t *ep_dec;    /* decisions in the current episode */
    float *disc;        /* γ^i of the open decision's next reward */
    int32_t *cur;       /* open decision (rollout storage index) */
};

static void actor_free(struct actor *a)
{
    free(a->ask);
    free(a->first);
    free(a->opt);
    free(a->hc);
    free(a->ho);
    free(a->start);
    free(a->draws);
    free(a->ep_dec);
    free(a->disc);
    free(a->cur);
    memset(a, 0, sizeof *a);
}

static int actor_init(struct actor *a, int E, int d)
{
    memset(a, 0, sizeof *a);
    a->E = E;
    size_t n = (size_t)E;
    a->ask = malloc(n);
    a->first = malloc(n);
    a->opt = calloc(n, sizeof *a->opt);
    a->hc = calloc(n * (size_t)d, sizeof *a->hc);
    a->ho = calloc(n * (size_t)d, sizeof *a->ho);
    a->start = calloc(n, sizeof *a->start);
    a->draws = calloc(n, sizeof *a->draws);
    a->ep_dec = calloc(n, sizeof *a->ep_dec);
    a->disc = calloc(n, sizeof *a->disc);
    a->cur = calloc(n, sizeof *a->cur);
    if (!a->ask || !a->first || !a->opt || !a->hc || !a->ho || !a->start ||
        !a->draws || !a->ep_dec || !a->disc || !a->cur) {
        actor_free(a);
        return gr_error(GR_ENOMEM, "PPO: out of memory for %d worlds", E);
    }
    memset(a->ask, 1, n);
    memset(a->first, 1, n);
    return 0;
}

/* One acting thread's worlds [base, base + E) and its scratch: a frame
 * of those worlds is each world's sparse observation, then the worlds
 * that share a cell go through it together (agents/ppo_act.h). The
 * rollout runs one per thread (--threads), the evaluation one. */
struct sweep {
    int base, E;
    int32_t *idx;  /* [E, PPO_NZ_MAX] */
    float *val;
    int *nz;       /* [E] */
    int *act;      /* [E]: this frame's action; -1: none yet */
    uint8_t *decided; /* [E]: 1 where the controller decided this frame */
    int32_t *rows; /* [E]: the worlds of one group */
    int32_t *wl;   /* [3, E]: the frame's lists of worlds (continuing,
                      deciding, starting an option) */
    const int32_t **ip; /* [E]: one group's rows */
    const float **vp, **hp;
    int *np;
    struct hcell_scratch s;
    float *prob, *hnext; /* [max(K, A)], [d] */
    float *final_obs;    /* [O]: a truncated episode's last observation */
    int32_t *row_idx;    /* [O] */
    float *row_val;
    /* a rollout's share: the sparse observations of its decisions (in
     * the order taken; the update reads a decision's from the pool of its
     * world's thread, ppo_trainer.owner), its counts */
    int32_t *p_idx;
    float *p_val;
    size_t p_cap, p_used;
    struct craft_log log;
    int64_t frames, dec_sum;
    int profile; /* 1: marks the trainer's part (one thread only) */
    struct ppo_trainer *trainer;
    int rc;
    char err[512]; /* the message of rc (errors are per thread) */
};

struct ppo_trainer {
    struct ppo_config cfg;
    struct gr_ctx *ctx;
    struct ocn_model m;
    struct gr_optim *optim;
    struct craft_config world;
    struct craft_task task;
    int K, d, w, O, A, E, S;
    /* with MPI (train/mpi.h) this process acts worlds [e0, e1) of the E
     * (all of them in one process); the rollout storage holds only its
     * worlds' decisions, world e's at (e − e0)·S */
    int e0, e1;
    float tau;
    int decide_every; /* moe, flat: a decision every step */
    struct craft_subtask oracle[4];
    struct hcell hc, ho; /* controller (head: K, d, value), options */
    struct sweep *acting; /* [n_acting]: the rollout's threads */
    int n_acting;
    /* worlds */
    struct craft_batch batch;
    float *obs;       /* [E, O] */
    float *step_reward; /* [E]: a frame's rewards */
    uint8_t *step_term;  /* [2, E]: a frame's terminated, truncated */
    struct actor act;
    uint64_t sample_seed;
    uint64_t env_seed;
    /* rollout storage: decision i of world e at e·S + i; its sparse
     * observation is d_nz[j] entries of the pool p_idx/p_val of the acting
     * thread owner[e] from d_off[j] (in the order the decisions were
     * taken; a pool grows by doubling while the observations need more,
     * so it ends at most twice their size instead of PPO_NZ_MAX slots a
     * decision) */
    int32_t *owner;   /* [E]: the acting thread of each world */
    int64_t *d_off;   /* [D] */
    float *d_hc;      /* [D, d] */
    float *d_first;
    int32_t *d_opt;
    struct ppo_rollout r; /* the rest (agents/ppo_internal.h) */
    int32_t *count;   /* [E] decisions this rollout */
    uint8_t *actions; /* [E] */
    /* scratch */
    int32_t *mb_idx, *mb_opt; /* mb_idx, mb_val: [M, mb_nz] */
    float *mb_val, *mb_hc, *mb_first;
    int mb_nz;
    /* progress */
    int64_t iteration, global_step, total_episodes;
    volatile sig_atomic_t *part; /* ppo_set_profile */
    /* provenance */
    char sources[PPO_MAX_SOURCES][512];
    int n_sources;
    struct craft_subtask trained[64];
    int n_trained;
    struct ppo_state state; /* the checkpoint's (agents/ppo_internal.h) */
};

struct ocn_model *ppo_model(struct ppo_trainer *t)
{
    return &t->m;
}

const struct craft_config *ppo_world(const struct ppo_trainer *t)
{
    return &t->world;
}

const struct ppo_config *ppo_trainer_config(const struct ppo_trainer *t)
{
    return &t->cfg;
}

int64_t ppo_global_step(const struct ppo_trainer *t)
{
    return t->global_step;
}

int64_t ppo_iterations(const struct ppo_trainer *t)
{
    return t->iteration;
}

/* Copies the controller's parameters to the host layout. */
static int refresh_ctrl(struct ppo_trainer *t)
{
    struct hcell *c = &t->hc;
    const int w = t->w, d = t->d, K = t->K, nh = c->nh;
    float *tmp = malloc((size_t)(K + d) * (size_t)(w > d ? w : d) *
                        sizeof *tmp);
    if (tmp == NULL) {
        return gr_error(GR_ENOMEM, "PPO: out of memory");
    }
    struct ocn_model *m = &t->m;
    int rc = gr_tensor_to_host(m->c_wx, c->wx);
    if (rc == 0) {
        rc = gr_tensor_to_host(m->c_wh, tmp); /* [w, d] */
        hcell_transpose(c->whT, tmp, 1, w, d);
    }
    if (rc == 0) {
        rc = gr_tensor_to_host(m->c_b1, c->b1);
    }
    if (rc == 0) {
        rc = gr_tensor_to_host(m->c_w2, tmp);
        hcell_transpose(c->w2T, tmp, 1, w, w);
    }
    if (rc == 0) {
        rc = gr_tensor_to_host(m->c_b2, c->b2);
    }
    if (rc == 0) {
        /* head rows K + d, then the value row */
        rc = gr_tensor_to_host(m->c_wo, tmp);
        for (int o = 0; o < K + d; o++) {
            for (int i = 0; i < w; i++) {
                c->woT[(size_t)i * nh + o] = tmp[(size_t)o * w + i];
            }
        }
    }
    if (rc == 0) {
        rc = gr_tensor_to_host(m->c_vw, tmp);
        for (int i = 0; i < w; i++) {
            c->woT[(size_t)i * nh + K + d] = tmp[i];
        }
    }
    if (rc == 0) {
        rc = gr_tensor_to_host(m->c_bo, c->bo);
    }
    if (rc == 0) {
        rc = gr_tensor_to_host(m->c_vb, c->bo + K + d);
    }
    if (rc == 0) {
        rc = gr_tensor_to_host(m->h_init, c->h_init);
    }
    if (rc == 0) {
        hcell_pad_heads(c);
    }
    free(tmp);
    return rc;
}

/* Copies the options' parameters to the host layout (once: frozen). */
static int refresh_options(struct ppo_trainer *t)
{
    struct hcell *c = &t->ho;
    const int w = t->w, d = t->d, K = t->K, nh = c->nh;
    size_t big = (size_t)K * (size_t)nh * (size_t)w;
    if ((size_t)K * w * d > big) {
        big = (size_t)K * w * d;
    }
    if ((size_t)K * w * w > big) {
        big = (size_t)K * w * w;
    }
    float *tmp = malloc(big * sizeof *tmp);
    if (tmp == NULL) {
        return gr_error(GR_ENOMEM, "PPO: out of memory");
    }
    struct ocn_model *m = &t->m;
    int rc = gr_tensor_to_host(m->o_wx, c->wx);
    if (rc == 0) {
        rc = gr_tensor_to_host(m->o_wh, tmp);
        hcell_transpose(c->whT, tmp, K, w, d);
    }
    if (rc == 0) {
        rc = gr_tensor_to_host(m->o_b1, c->b1);
    }
    if (rc == 0) {
        rc = gr_tensor_to_host(m->o_w2, tmp);
        hcell_transpose(c->w2T, tmp, K, w, w);
    }
    if (rc == 0) {
        rc = gr_tensor_to_host(m->o_b2, c->b2);
    }
    if (rc == 0) {
        rc = gr_tensor_to_host(m->o_wo, tmp);
        hcell_transpose(c->woT, tmp, K, nh, w);
    }
    if (rc == 0) {
        rc = gr_tensor_to_host(m->o_bo, c->bo);
    }
    if (rc == 0) {
        hcell_pad_heads(c);
    }
    free(tmp);
    return rc;
}

/* Sparse form of one observation row; GR_EINVAL past PPO_NZ_MAX. */
static int sparse_row(const float *x, int O, int32_t *idx, float *val)
{
    return ppo_sparse_row(x, O, idx, val, 0, "PPO");
}

/* Softmax of logits[n] / tau into p; returns log-sum-exp of the scaled
 * logits (log p[i] = logits[i]/tau - lse). */
static double softmax_tau(const float *logits, int n, float tau, float *p)
{
    double mx = -INFINITY;
    for (int i = 0; i < n; i++) {
        double v = (double)logits[i] / tau;
        mx = v > mx ? v : mx;
    }
    double s = 0.0;
    for (int i = 0; i < n; i++) {
        double e = exp((double)logits[i] / tau - mx);
        p[i] = (float)e;
        s += e;
    }
    for (int i = 0; i < n; i++) {
        p[i] = (float)(p[i] / s);
    }
    return mx + log(s);
}

static int argmax_p(const float *p, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++) {
        if (p[i] > p[best]) {
            best = i;
        }
    }
    return best;
}

/* One draw of Categorical(p) for world e. */
static int sample_p(const struct ppo_trainer *t, struct actor *a, int e,
                    const float *p, int n)
{
    uint64_t key =
        gr_rng_key_of(t->sample_seed, gr_rng_stream(0x50504F, (uint64_t)e, 0,
                                                    0));
    float u = gr_rng_uniform(key, a->draws[e]++);
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

/* The controller's heads at one row: p[K] (sw->prob), h_next[d]
 * (sw->hnext), *value; returns the log-sum-exp of the scaled logits. */
static double ctrl_finish(const struct ppo_trainer *t, struct sweep *sw,
                          const float *head, float *value)
{
    memcpy(sw->hnext, head + t->K, (size_t)t->d * sizeof *sw->hnext);
    hcell_tanh(sw->hnext, t->d);
    *value = head[t->K + t->d];
    return softmax_tau(head, t->K, t->tau, sw->prob);
}

static int target_count(const struct craft_batch *b, int e,
                        const struct craft_subtask *s)
{
    return b->inventory[(size_t)e * CRAFT_N_KINDS + s->kind];
}

static int oracle_action(const struct ppo_trainer *t, const struct craft_batch *b,
                         int e, int k)
{
    struct craft_world w;
    craft_batch_get(b, e, &w);
    w.task.n = 1;
    w.task.sub[0] = t->oracle[k];
    w.k = 0;
    int a = CRAFT_ACTION_USE;
    if (craft_expert_act(&w, &a, NULL) != CRAFT_EXPERT_OK) {
        a = CRAFT_ACTION_USE;
    }
    return a;
}

static void sweep_free(struct sweep *sw)
{
    void *bufs[] = {sw->idx,      sw->val,       sw->nz,      sw->act,
                    sw->decided,  sw->rows,      sw->wl,      (void *)sw->ip,
                    (void *)sw->vp, (void *)sw->hp, sw->np,   sw->prob,
                    sw->hnext,    sw->final_obs, sw->row_idx, sw->row_val,
                    sw->p_idx,    sw->p_val};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
        free(bufs[i]);
    }
    hcell_scratch_free(&sw->s);
    memset(sw, 0, sizeof *sw);
}

/* Scratch for acting on the worlds [base, base + E). */
static int sweep_init(struct sweep *sw, const struct ppo_trainer *t, int base,
                      int E)
{
    memset(sw, 0, sizeof *sw);
    size_t n = (size_t)E, O = (size_t)t->O;
    size_t np = (size_t)(t->K > t->A ? t->K : t->A);
    sw->base = base;
    sw->E = E;
    sw->idx = malloc(n * PPO_NZ_MAX * sizeof *sw->idx);
    sw->val = malloc(n * PPO_NZ_MAX * sizeof *sw->val);
    sw->nz = calloc(n, sizeof *sw->nz);
    sw->act = calloc(n, sizeof *sw->act);
    sw->decided = calloc(n, 1);
    sw->rows = calloc(n, sizeof *sw->rows);
    sw->wl = calloc(3 * n, sizeof *sw->wl);
    sw->ip = calloc(n, sizeof *sw->ip);
    sw->vp = calloc(n, sizeof *sw->vp);
    sw->hp = calloc(n, sizeof *sw->hp);
    sw->np = calloc(n, sizeof *sw->np);
    sw->prob = calloc(np, sizeof *sw->prob);
    sw->hnext = calloc((size_t)t->d, sizeof *sw->hnext);
    sw->final_obs = calloc(O, sizeof *sw->final_obs);
    sw->row_idx = calloc(O, sizeof *sw->row_idx);
    sw->row_val = calloc(O, sizeof *sw->row_val);
    if (!sw->idx || !sw->val || !sw->nz || !sw->act || !sw->decided ||
        !sw->rows || !sw->wl || !sw->ip || !sw->vp || !sw->hp || !sw->np ||
        !sw->prob || !sw->hnext || !sw->final_obs || !sw->row_idx ||
        !sw->row_val) {
        sweep_free(sw);
        return gr_error(GR_ENOMEM, "PPO: out of memory for acting on %d "
                                   "worlds",
                        E);
    }
    int nh = t->ho.ldo > t->hc.ldo ? t->ho.ldo : t->hc.ldo;
    int rc = hcell_scratch_init(&sw->s, E, t->w, t->d, nh);
    if (rc < 0) {
        sweep_free(sw);
    }
    return rc;
}

/* World e's observation x into the sweep; its count of entries or
 * GR_EINVAL past PPO_NZ_MAX. */
static int sweep_observe(struct sweep *sw, int e, const float *x, int O)
{
    const int i = e - sw->base;
    int nz = sparse_row(x, O, sw->idx + (size_t)i * PPO_NZ_MAX,
                        sw->val + (size_t)i * PPO_NZ_MAX);
    if (nz >= 0) {
        sw->nz[i] = nz;
    }
    sw->act[i] = -1;
    sw->decided[i] = 0;
    return nz;
}

/* Row r of the next group is world e, with state h (NULL: none). */
static void sweep_row(struct sweep *sw, int r, int e, const float *h)
{
    const int i = e - sw->base;
    sw->rows[r] = e;
    sw->ip[r] = sw->idx + (size_t)i * PPO_NZ_MAX;
    sw->vp[r] = sw->val + (size_t)i * PPO_NZ_MAX;
    sw->np[r] = sw->nz[i];
    sw->hp[r] = h;
}

/* The controller on worlds ws[0..n), each from its state H^C (h_init
 * at an episode's first decision): the heads in sw->s.y, row i for
 * ws[i], and the state row i used in sw->hp[i]. */
static void ctrl_rows(const struct ppo_trainer *t, struct actor *a,
                      struct sweep *sw, const int32_t *ws, int n)
{
    for (int i = 0; i < n; i++) {
        int e = ws[i];
        sweep_row(sw, i, e,
                  a->first[e] ? t->hc.h_init : a->hc + (size_t)e * t->d);
    }
    hcell_rows(&t->hc, 0, n, sw->ip, sw->vp, sw->np, sw->hp, &sw->s);
}

/* The controller's value at a dense observation x (a truncated
 * episode's last) and state h. */
static int ctrl_one(const struct ppo_trainer *t, struct sweep *sw,
                    const float *x, const float *h, float *value)
{
    int nz = sparse_row(x, t->O, sw->row_idx, sw->row_val);
    if (nz < 0) {
        return nz;
    }
    const int32_t *ip = sw->row_idx;
    const float *vp = sw->row_val, *hp = h;
    hcell_rows(&t->hc, 0, 1, &ip, &vp, &nz, &hp, &sw->s);
    ctrl_finish(t, sw, sw->s.y, value);
    return 0;
}

/* The running option's new state and action in world e from its heads. */
static int option_act(const struct ppo_trainer *t, struct sweep *sw,
                      struct actor *a, int e, const float *head, int greedy)
{
    float *ho = a->ho + (size_t)e * t->d;
    memcpy(ho, head + t->A, (size_t)t->d * sizeof *ho);
    hcell_tanh(ho, t->d);
    softmax_tau(head, t->A, 1.0f, sw->prob);
    return greedy ? argmax_p(sw->prob, t->A)
                  : sample_p(t, a, e, sw->prob, t->A);
}

/* The running options of worlds ws[0..n): sw->act[e] their actions, -1
 * where the option ends (ocn.md §7: its end > 0.5). */
static void options_continue(const struct ppo_trainer *t, struct actor *a,
                             const struct craft_batch *b, struct sweep *sw,
                             const int32_t *ws, int n, int greedy)
{
    if (t->cfg.policy == PPO_POLICY_ORACLE) {
        for (int i = 0; i < n; i++) {
            int e = ws[i], k = a->opt[e];
            sw->act[e - sw->base] =
                target_count(b, e, &t->oracle[k]) > a->start[e]
                    ? -1
                    : oracle_action(t, b, e, k);
        }
        return;
    }
    if (t->cfg.policy != PPO_POLICY_OCN) {
        for (int i = 0; i < n; i++) {
            sw->act[ws[i] - sw->base] = -1;
        }
        return;
    }
    const int nh = t->ho.ldo;
    for (int k = 0; k < t->K; k++) {
        int R = 0;
        for (int i = 0; i < n; i++) {
            int e = ws[i];
            if (a->opt[e] == k) {
                sweep_row(sw, R++, e, a->ho + (size_t)e * t->d);
            }
        }
        if (R == 0) {
            continue;
        }
        hcell_rows(&t->ho, k, R, sw->ip, sw->vp, sw->np, sw->hp, &sw->s);
        for (int r = 0; r < R; r++) {
            int e = sw->rows[r];
            const float *head = sw->s.y + (size_t)r * nh;
            float end = 1.0f / (1.0f + expf(-head[t->A + t->d]));
            sw->act[e - sw->base] =
                end > 0.5f ? -1 : option_act(t, sw, a, e, head, greedy);
        }
    }
}

/* Options a->opt[e] start in worlds ws[0..n) (from z_k) and act at once:
 * sw->act[e]. */
static void options_start(const struct ppo_trainer *t, struct actor *a,
                          const struct craft_batch *b, struct sweep *sw,
                          const int32_t *ws, int n, int greedy)
{
    switch (t->cfg.policy) {
    case PPO_POLICY_OCN:
    case PPO_POLICY_MOE:
        for (int k = 0; k < t->K; k++) {
            int R = 0;
            for (int i = 0; i < n; i++) {
                if (a->opt[ws[i]] == k) {
                    sweep_row(sw, R++, ws[i], NULL);
                }
            }
            if (R == 0) {
                continue;
            }
            hcell_rows(&t->ho, k, R, sw->ip, sw->vp, sw->np, NULL, &sw->s);
            for (int r = 0; r < R; r++) {
                int e = sw->rows[r];
                sw->act[e - sw->base] =
                    option_act(t, sw, a, e, sw->s.y + (size_t)r * t->ho.ldo,
                               greedy);
            }
        }
        return;
    case PPO_POLICY_FLAT:
        for (int i = 0; i < n; i++) {
            sw->act[ws[i] - sw->base] = a->opt[ws[i]];
        }
        return;
    case PPO_POLICY_ORACLE:
        for (int i = 0; i < n; i++) {
            int e = ws[i], k = a->opt[e];
            a->start[e] = target_count(b, e, &t->oracle[k]);
            sw->act[e - sw->base] = oracle_action(t, b, e, k);
        }
        return;
    case PPO_POLICY_OMPN: /* not this trainer's (ppo_trainer_new) */
    case PPO_POLICY_COMPILE:
        break;
    }
}

/* Steps world e with action a; *final_obs_ready = 1 when the episode was
 * truncated and sw->final_obs holds its last observation. */
static int step_world(struct sweep *sw, struct craft_batch *b, float *obs,
                      uint8_t *actions, int e, int a, float *reward,
                      uint8_t *term, uint8_t *trunc, int *final_ready,
                      struct craft_log *log)
{
    actions[e] = (uint8_t)a;
    *final_ready = 0;
    if (b->t[e] + 1 >= b->config.max_steps) {
        /* the batch resets a finished world inside the step: play the
         * step on a copy first to keep the truncation observation */
        struct craft_world w;
        struct craft_step st;
        craft_batch_get(b, e, &w);
        if (craft_world_step(&w, a, &st) == 0 && st.truncated) {
            craft_world_observe(&w, sw->final_obs);
            *final_ready = 1;
        }
    }
    struct craft_batch_out out = {0};
    out.obs = obs;
    out.reward = reward;
    out.terminated = term;
    out.truncated = trunc;
    return craft_batch_step_range(b, e, e + 1, actions, &out, log);
}

void ppo_set_profile(struct ppo_trainer *t, volatile sig_atomic_t *part)
{
    t->part = part;
}

/* Marks the part the trainer enters (ppo_set_profile). */
static void part(struct ppo_trainer *t, enum ppo_part p)
{
    if (t->part != NULL) {
        *t->part = (sig_atomic_t)p;
    }
}

/* The same from an acting thread: only the one that profiles marks. */
static void sweep_part(struct ppo_trainer *t, const struct sweep *sw,
                       enum ppo_part p)
{
    if (sw->profile) {
        part(t, p);
    }
}

/* Room for `need` entries in an acting thread's pool (doubling). */
static int sweep_pool_reserve(struct sweep *sw, size_t need)
{
    if (need <= sw->p_cap) {
        return 0;
    }
    size_t cap = 2 * sw->p_cap > need ? 2 * sw->p_cap : need;
    int32_t *idx = realloc(sw->p_idx, cap * sizeof *idx);
    if (idx != NULL) {
        sw->p_idx = idx;
    }
    float *val = idx != NULL ? realloc(sw->p_val, cap * sizeof *val) : NULL;
    if (val == NULL) {
        return gr_error(GR_ENOMEM, "PPO: out of memory for %zu sparse "
                                   "observation entries", cap);
    }
    sw->p_val = val;
    sw->p_cap = cap;
    return 0;
}

/* Room for minibatch rows of `nz` sparse entries. */
static int mb_reserve(struct ppo_trainer *t, int64_t M, int nz)
{
    if (nz <= t->mb_nz) {
        return 0;
    }
    size_t n = (size_t)M * (size_t)nz;
    int32_t *idx = realloc(t->mb_idx, n * sizeof *idx);
    if (idx != NULL) {
        t->mb_idx = idx;
    }
    float *val = idx != NULL ? realloc(t->mb_val, n * sizeof *val) : NULL;
    if (val == NULL) {
        return gr_error(GR_ENOMEM, "PPO: out of memory for a minibatch of "
                                   "%lld rows of %d entries",
                        (long long)M, nz);
    }
    t->mb_val = val;
    t->mb_nz = nz;
    return 0;
}

size_t ppo_storage_bytes(const struct ppo_trainer *t)
{
    const size_t D = (size_t)(t->e1 - t->e0) * (size_t)t->S;
    const size_t d = (size_t)t->d;
    const size_t M = (size_t)t->E * (size_t)t->S /
                     (size_t)t->cfg.num_minibatches;
    size_t per_d = sizeof(int64_t) + 4 /* d_nz */ + d * 4 /* d_hc */ +
                   7 * 4 /* first, logp, value, R, boot, adv, ret */ +
                   4 + 4 + 1 + 1 /* opt, n, term, trunc */ + 4 /* perm */;
    size_t per_m = (size_t)t->mb_nz * 8 + d * 4 + 5 * 4 + 4;
    size_t pools = 0;
    for (int i = 0; i < t->n_acting; i++) {
        pools += t->acting[i].p_cap * 8;
    }
    return D * per_d + pools + M * per_m;
}

static void acting_free(struct ppo_trainer *t)
{
    for (int i = 0; i < t->n_acting; i++) {
        sweep_free(&t->acting[i]);
    }
    free(t->acting);
    t->acting = NULL;
    t->n_acting = 0;
}

int ppo_set_acting_threads(struct ppo_trainer *t, int n)
{
    const int W = t->e1 - t->e0;
    if (n < 1) {
        return gr_error(GR_EINVAL, "PPO: %d acting threads, expected 1 or "
                                   "more",
                        n);
    }
    n = n < W ? n : W;
    n = n < PPO_MAX_ACTING ? n : PPO_MAX_ACTING;
    struct sweep *sw = calloc((size_t)n, sizeof *sw);
    if (sw == NULL) {
        return gr_error(GR_ENOMEM, "PPO: out of memory for %d acting "
                                   "threads",
                        n);
    }
    int rc = 0, made = 0;
    for (; made < n && rc == 0; made++) {
        const int lo = t->e0 + (int)((int64_t)W * made / n);
        const int hi = t->e0 + (int)((int64_t)W * (made + 1) / n);
        rc = sweep_init(&sw[made], t, lo, hi - lo);
        if (rc < 0) {
            break;
        }
        /* the pool starts at PPO_NZ_START entries a decision and grows
         * to what the observations need (sweep_pool_reserve) */
        rc = sweep_pool_reserve(&sw[made], (size_t)(hi - lo) * (size_t)t->S *
                                               PPO_NZ_START);
    }
    if (rc < 0) {
        for (int i = 0; i < made; i++) {
            sweep_free(&sw[i]);
        }
        free(sw);
        return rc;
    }
    acting_free(t);
    t->acting = sw;
    t->n_acting = n;
    for (int i = 0; i < n; i++) {
        for (int e = sw[i].base; e < sw[i].base + sw[i].E; e++) {
            t->owner[e] = i;
        }
    }
    return 0;
}

int ppo_acting_threads(const struct ppo_trainer *t)
{
    return t->n_acting;
}

/* One acting thread's part of a rollout: frames of the worlds
 * [sw->base, sw->base + sw->E) until each has its S decisions and waits
 * at the next. Its decisions' sparse observations go to the thread's pool
 * (t->d_off relative to it until the rollout gathers the pools). Every
 * world's numbers are its own (its sampling stream, its rows' bits in any
 * group), so they do not depend on how the worlds are split. */
static int rollout_worlds(struct ppo_trainer *t, struct sweep *sw)
{
    const int S = t->S, O = t->O, d = t->d, E = sw->E;
    const int lo = sw->base, hi = sw->base + sw->E;
    struct actor *a = &t->act;
    struct craft_batch *b = &t->batch;
    float *reward = t->step_reward;
    uint8_t *term = t->step_term, *trunc = t->step_term + t->E;
    int32_t *cont = sw->wl, *dec = sw->wl + E, *start = sw->wl + 2 * E;
    int n_active = E;
    int rc = 0;
    sweep_part(t, sw, PPO_PART_ROLLOUT);
    /* a frame of every world still in the rollout: its running option
     * acts or ends; the controller decides where it ended (or the world
     * waits for the next rollout); the chosen options start; the worlds
     * step */
    while (n_active > 0 && rc == 0) {
        int nc = 0, nd = 0, ns = 0;
        for (int e = lo; e < hi; e++) {
            if (t->count[e] > S) {
                continue; /* done this rollout */
            }
            rc = sweep_observe(sw, e, t->obs + (size_t)e * O, O);
            if (rc < 0) {
                return rc;
            }
            rc = 0;
            if (a->ask[e]) {
                dec[nd++] = e;
            } else {
                cont[nc++] = e;
            }
        }
        sweep_part(t, sw, PPO_PART_OPTIONS);
        options_continue(t, a, b, sw, cont, nc, 0);
        sweep_part(t, sw, PPO_PART_ROLLOUT);
        for (int i = 0; i < nc; i++) {
            if (sw->act[cont[i] - lo] < 0) {
                a->ask[cont[i]] = 1;
                dec[nd++] = cont[i];
            }
        }
        sweep_part(t, sw, PPO_PART_CTRL);
        ctrl_rows(t, a, sw, dec, nd);
        for (int i = 0; i < nd; i++) {
            int e = dec[i];
            const float *h = sw->hp[i];
            const float *head = sw->s.y + (size_t)i * t->hc.ldo;
            float v;
            double lse = ctrl_finish(t, sw, head, &v);
            if (t->count[e] == S) {
                /* the world waits here for the next rollout: this
                 * decision's value bootstraps the last one */
                t->r.last_value[e] = v;
                t->count[e] = S + 1;
                n_active--;
                continue;
            }
            const int nz = sw->nz[e - lo];
            rc = sweep_pool_reserve(sw, sw->p_used + (size_t)nz);
            if (rc < 0) {
                return rc;
            }
            int64_t j = (int64_t)(e - t->e0) * S + t->count[e]++;
            int k = sample_p(t, a, e, sw->prob, t->K);
            memcpy(sw->p_idx + sw->p_used, sw->idx + (size_t)(e - lo) * PPO_NZ_MAX,
                   (size_t)nz * sizeof *sw->p_idx);
            memcpy(sw->p_val + sw->p_used, sw->val + (size_t)(e - lo) * PPO_NZ_MAX,
                   (size_t)nz * sizeof *sw->p_val);
            t->d_off[j] = (int64_t)sw->p_used;
            sw->p_used += (size_t)nz;
            t->r.nz[j] = nz;
            memcpy(t->d_hc + j * d, h, (size_t)d * sizeof *t->d_hc);
            t->d_first[j] = a->first[e] ? 1.0f : 0.0f;
            t->d_opt[j] = k;
            t->r.logp[j] = (float)((double)head[k] / t->tau - lse);
            t->r.value[j] = v;
            t->r.R[j] = 0.0f;
            t->r.n[j] = 0;
            t->r.term[j] = 0;
            t->r.trunc[j] = 0;
            t->r.boot[j] = 0.0f;
            memcpy(a->hc + (size_t)e * d, sw->hnext, (size_t)d * sizeof(float));
            a->first[e] = 0;
            a->ask[e] = (uint8_t)t->decide_every;
            a->cur[e] = (int32_t)j;
            a->disc[e] = 1.0f;
            a->ep_dec[e]++;
            a->opt[e] = k;
            start[ns++] = e;
        }
        sweep_part(t, sw, PPO_PART_OPTIONS);
        options_start(t, a, b, sw, start, ns, 0);
        sweep_part(t, sw, PPO_PART_ROLLOUT);
        for (int e = lo; e < hi; e++) {
            int act = sw->act[e - lo];
            if (t->count[e] > S || act < 0) {
                continue; /* waiting, or done this rollout */
            }
            sw->act[e - lo] = -1;
            int final_ready;
            sweep_part(t, sw, PPO_PART_ENV);
            rc = step_world(sw, b, t->obs, t->actions, e, act, reward, term,
                            trunc, &final_ready, &sw->log);
            sweep_part(t, sw, PPO_PART_ROLLOUT);
            if (rc < 0) {
                return rc;
            }
            sw->frames++;
            int64_t j = a->cur[e];
            t->r.R[j] += a->disc[e] * reward[e];
            a->disc[e] *= t->cfg.gamma;
            t->r.n[j]++;
            if (term[e] || trunc[e]) {
                t->r.term[j] = term[e];
                t->r.trunc[j] = trunc[e];
                if (trunc[e] && final_ready) {
                    sweep_part(t, sw, PPO_PART_CTRL);
                    float v = 0.0f;
                    rc = ctrl_one(t, sw, sw->final_obs, a->hc + (size_t)e * d,
                                  &v);
                    t->r.boot[j] = v;
                    sweep_part(t, sw, PPO_PART_ROLLOUT);
                    if (rc < 0) {
                        return rc;
                    }
                }
                sw->dec_sum += a->ep_dec[e];
                a->ep_dec[e] = 0;
                a->ask[e] = 1;
                a->first[e] = 1;
            }
        }
    }
    return 0;
}

/* An acting thread: its worlds' rollout, the error kept for the caller
 * (messages are per thread). */
static void *acting_main(void *arg)
{
    struct sweep *sw = arg;
    sw->rc = rollout_worlds(sw->trainer, sw);
    if (sw->rc < 0) {
        snprintf(sw->err, sizeof sw->err, "%s", gr_last_error());
    }
    return NULL;
}

static int rollout(struct ppo_trainer *t, struct ppo_stats *st)
{
    part(t, PPO_PART_ROLLOUT); /* all of it, with several threads */
    for (int e = 0; e < t->E; e++) {
        t->count[e] = 0;
    }
    for (int i = 0; i < t->n_acting; i++) {
        struct sweep *sw = &t->acting[i];
        sw->trainer = t;
        sw->p_used = 0;
        sw->frames = 0;
        sw->dec_sum = 0;
        memset(&sw->log, 0, sizeof sw->log);
        sw->rc = 0;
        sw->err[0] = '\0';
        sw->profile = t->n_acting == 1;
    }
    /* threads 1.. take their worlds; this one takes the first share */
    pthread_t tid[PPO_MAX_ACTING];
    int started = 0;
    for (int i = 1; i < t->n_acting; i++) {
        if (pthread_create(&tid[i], NULL, acting_main, &t->acting[i]) != 0) {
            break;
        }
        started = i;
    }
    for (int i = started + 1; i < t->n_acting; i++) {
        acting_main(&t->acting[i]); /* a thread that did not start */
    }
    acting_main(&t->acting[0]);
    for (int i = 1; i <= started; i++) {
        pthread_join(tid[i], NULL);
    }
    part(t, PPO_PART_ROLLOUT);
    struct craft_log log = {0};
    int64_t frames = 0, dec_sum = 0;
    for (int i = 0; i < t->n_acting; i++) {
        const struct sweep *sw = &t->acting[i];
        if (sw->rc < 0) {
            return gr_error(sw->rc, "%s", sw->err);
        }
        log.episodes += sw->log.episodes;
        log.successes += sw->log.successes;
        log.steps += sw->log.steps;
        log.return_sum += sw->log.return_sum;
        frames += sw->frames;
        dec_sum += sw->dec_sum;
    }
    return ppo_rollout_totals(&t->r, frames, &log, dec_sum, &t->global_step,
                              &t->total_episodes, st);
}


/* One minibatch's loss (agents/ppo_internal.h): the rows' sparse
 * observations, controller states and the rest gathered from the storage,
 * then loss_with. */
static int minibatch_loss(void *self, const int32_t *rows, int64_t Ml,
                          double mean, double sd, struct ppo_loss_out *lo)
{
    struct ppo_trainer *t = self;
    const int d = t->d;
    const int64_t M = (int64_t)t->E * t->S / t->cfg.num_minibatches;
    int nzm = ppo_rollout_nz_max(&t->r, rows, Ml);
    int rc = mb_reserve(t, M, nzm);
    if (rc < 0) {
        return rc;
    }
    ppo_rollout_gather(&t->r, rows, Ml);
    for (int64_t i = 0; i < Ml; i++) {
        int64_t j = rows[i];
        int nz = t->r.nz[j];
        const struct sweep *ow = &t->acting[t->owner[t->e0 + j / t->S]];
        memcpy(t->mb_idx + i * nzm, ow->p_idx + t->d_off[j],
               (size_t)nz * sizeof *t->mb_idx);
        memcpy(t->mb_val + i * nzm, ow->p_val + t->d_off[j],
               (size_t)nz * sizeof *t->mb_val);
        for (int c = nz; c < nzm; c++) {
            t->mb_idx[i * nzm + c] = -1;
            t->mb_val[i * nzm + c] = 0.0f;
        }
        memcpy(t->mb_hc + i * d, t->d_hc + j * d,
               (size_t)d * sizeof *t->mb_hc);
        t->mb_first[i] = t->d_first[j];
        t->mb_opt[i] = t->d_opt[j];
    }
    struct ppo_minibatch b = {(int)Ml,   nzm,        t->mb_idx,  t->mb_val,
                              t->mb_hc,  t->mb_first, t->mb_opt, t->r.mb_logp,
                              t->r.mb_adv, t->r.mb_ret};
    return loss_with(&t->m, &b, t->cfg.clip_coef, t->cfg.vf_coef,
                     t->cfg.ent_coef, t->cfg.norm_adv, mean, sd, lo);
}

static int update(struct ppo_trainer *t, struct ppo_stats *st)
{
    struct ppo_update u = {
        .ctx = t->ctx,
        .optim = t->optim,
        .cfg = &t->cfg,
        .prefix = "ctrl.",
        .perm_tag = 0x5045524D,
        .iteration = t->iteration,
        .global_step = t->global_step,
        .r = &t->r,
        .loss = minibatch_loss,
        .self = t,
    };
    int rc = ppo_update_run(&u, st);
    return rc < 0 ? rc : refresh_ctrl(t);
}

int ppo_iteration(struct ppo_trainer *t, struct ppo_stats *st)
{
    memset(st, 0, sizeof *st);
    double t0 = ppo_now_s();
    int rc = rollout(t, st);
    double t1 = ppo_now_s();
    if (rc == 0) {
        part(t, PPO_PART_UPDATE);
        rc = update(t, st);
    }
    part(t, PPO_PART_OTHER);
    if (rc < 0) {
        return rc;
    }
    t->iteration++;
    st->iteration = t->iteration;
    st->rollout_s = t1 - t0;
    st->update_s = ppo_now_s() - t1;
    return 0;
}

/* ---- evaluation ------------------------------------------------------------- */

int ppo_evaluate(struct ppo_trainer *t, int episodes, uint64_t base_seed,
                 struct ppo_eval *out, const struct ppo_trace *trace)
{
    memset(out, 0, sizeof *out);
    if (episodes < 1 || episodes > 65535) {
        return gr_error(GR_EINVAL, "PPO evaluation: %d episodes, expected "
                                   "1..65535",
                        episodes);
    }
    const int O = t->O, d = t->d, T = t->world.max_steps;
    struct craft_batch b;
    struct actor a;
    int rc = craft_batch_init(&b, &t->world, &t->task, 1, episodes, base_seed,
                              NULL);
    if (rc < 0) {
        return rc;
    }
    rc = actor_init(&a, episodes, d);
    float *obs = malloc((size_t)episodes * O * sizeof *obs);
    uint8_t *actions = calloc((size_t)episodes, 1);
    uint8_t *done = calloc((size_t)episodes, 3);
    float *rew = calloc((size_t)episodes, sizeof *rew);
    if (rc == 0 && (obs == NULL || actions == NULL || done == NULL ||
                    rew == NULL)) {
        rc = gr_error(GR_ENOMEM, "PPO evaluation: out of memory");
    }
    for (int e = 0; rc == 0 && e < episodes; e++) {
        craft_batch_observe(&b, e, obs + (size_t)e * O);
        if (trace != NULL && trace->seed != NULL) {
            trace->seed[e] = b.seed[e];
        }
    }
    struct sweep sw = {0};
    if (rc == 0) {
        rc = sweep_init(&sw, t, 0, episodes);
    }
    int32_t *cont = sw.wl, *decl = sw.wl + episodes,
            *start = sw.wl + 2 * (size_t)episodes;
    double ret_sum = 0.0, len_sum = 0.0, succ = 0.0, dec = 0.0;
    int left = episodes;
    while (rc == 0 && left > 0) {
        int nc = 0, nd = 0;
        for (int e = 0; e < episodes; e++) {
            if (done[e]) {
                continue;
            }
            rc = sweep_observe(&sw, e, obs + (size_t)e * O, O);
            if (rc < 0) {
                break;
            }
            rc = 0;
            if (a.ask[e]) {
                decl[nd++] = e;
            } else {
                cont[nc++] = e;
            }
        }
        if (rc < 0) {
            break;
        }
        options_continue(t, &a, &b, &sw, cont, nc, 1);
        for (int i = 0; i < nc; i++) {
            if (sw.act[cont[i]] < 0) {
                a.ask[cont[i]] = 1;
                decl[nd++] = cont[i];
            }
        }
        ctrl_rows(t, &a, &sw, decl, nd);
        for (int i = 0; i < nd; i++) {
            int e = decl[i];
            float v;
            ctrl_finish(t, &sw, sw.s.y + (size_t)i * t->hc.ldo, &v);
            memcpy(a.hc + (size_t)e * d, sw.hnext, (size_t)d * sizeof(float));
            a.first[e] = 0;
            a.ask[e] = (uint8_t)t->decide_every;
            a.opt[e] = argmax_p(sw.prob, t->K);
            start[i] = e;
            sw.decided[e] = 1;
            dec += 1.0;
        }
        options_start(t, &a, &b, &sw, start, nd, 1);
        for (int e = 0; e < episodes && rc == 0; e++) {
            if (done[e]) {
                continue;
            }
            int decided = sw.decided[e], act = sw.act[e];
            int step = b.t[e];
            actions[e] = (uint8_t)act;
            struct craft_batch_out bo = {0};
            bo.obs = obs;
            bo.reward = rew;
            bo.terminated = done + episodes;
            bo.truncated = done + 2 * episodes;
            rc = craft_batch_step_range(&b, e, e + 1, actions, &bo, NULL);
            if (rc < 0) {
                break;
            }
            float r = rew[e];
            int term = done[episodes + e], trunc = done[2 * episodes + e];
            ppo_trace_step(trace, T, e, step, act, a.opt[e], decided, r);
            ret_sum += r;
            if (term || trunc) {
                done[e] = 1;
                left--;
                len_sum += step + 1;
                succ += term;
                ppo_trace_end(trace, e, step + 1);
            }
        }
    }
    sweep_free(&sw);
    free(obs);
    free(actions);
    free(done);
    free(rew);
    actor_free(&a);
    craft_batch_free(&b);
    if (rc < 0) {
        return rc;
    }
    out->episodes = episodes;
    out->mean_return = ret_sum / episodes;
    out->success_rate = succ / episodes;
    out->mean_length = len_sum / episodes;
    out->decisions_per_episode = dec / episodes;
    return 0;
}

/* ---- construction -------------------------------------------------------------- */

static int world_text(const struct craft_config *c, char *out, size_t cap)
{
    struct craft_config w = *c;
    w.reward = CRAFT_REWARD_DENSE;
    return bc_world_format(&w, out, cap);
}

/* The world lines on one line, for messages: "n_each 4; ..." or
 * "default". */
static void world_summary(const struct craft_config *c, char *out, size_t cap)
{
    char text[512];
    if (world_text(c, text, sizeof text) <= 0) {
        snprintf(out, cap, "default");
        return;
    }
    size_t n = 0;
    out[0] = '\0';
    for (char *p = text; *p != '\0' && n + 1 < cap;) {
        char *eol = strchr(p, '\n');
        if (eol != NULL) {
            *eol = '\0';
        }
        const char *item = strncmp(p, "world ", 6) == 0 ? p + 6 : p;
        int w = snprintf(out + n, cap - n, "%s%s", n ? "; " : "", item);
        if (w < 0) {
            break;
        }
        n += (size_t)w;
        if (eol == NULL) {
            break;
        }
        p = eol + 1;
    }
}

/* Loads the options of one checkpoint into host arrays of the pool. */
struct pool {
    int K, d, w, O, A, ign_lo, ign_hi;
    float *wx;                      /* [O, K·w] */
    float *wh, *b1, *w2, *b2, *wo, *bo; /* stacked per option */
    struct craft_config world;
    int have_world;
};

static void pool_free(struct pool *p)
{
    free(p->wx);
    free(p->wh);
    free(p->b1);
    free(p->w2);
    free(p->b2);
    free(p->wo);
    free(p->bo);
    memset(p, 0, sizeof *p);
}

static int grow(float **a, size_t n)
{
    float *q = realloc(*a, n * sizeof **a);
    if (q == NULL) {
        return gr_error(GR_ENOMEM, "PPO: out of memory for the option pool");
    }
    *a = q;
    return 0;
}

static int pool_add(struct ppo_trainer *t, struct pool *p, const char *path)
{
    struct gr_ctx_config cc = gr_ctx_config_default();
    cc.device = GR_DEVICE_CPU;
    cc.step_chunk_bytes = 1 << 20;
    struct ocn_loaded src;
    int rc = ocn_load(&src, path, &cc);
    if (rc < 0) {
        return rc;
    }
    const struct ocn_config c = src.model.cfg;
    const struct craft_config world = src.world;
    if (p->K > 0) {
        char a[512], b[512];
        world_summary(&p->world, a, sizeof a);
        world_summary(&world, b, sizeof b);
        if (c.hidden != p->d || c.width != p->w) {
            rc = gr_error(GR_EINVAL, "%s: options of hidden %d, width %d; "
                                     "%s has %d, %d (a pool needs one size)",
                          path, c.hidden, c.width, t->sources[0], p->d, p->w);
        } else if (c.opt_ignore_lo != p->ign_lo ||
                 c.opt_ignore_hi != p->ign_hi) {
            rc = gr_error(GR_EINVAL, "%s: its options read other features "
                                     "than those of %s",
                          path, t->sources[0]);
        } else if (strcmp(a, b) != 0) {
            rc = gr_error(GR_EINVAL, "%s was trained in another world than "
                                     "%s (%s vs %s)",
                          path, t->sources[0], b, a);
        }
    } else {
        p->d = c.hidden;
        p->w = c.width;
        p->O = c.obs_size;
        p->A = c.n_actions;
        p->ign_lo = c.opt_ignore_lo;
        p->ign_hi = c.opt_ignore_hi;
        p->world = world;
    }
    if (rc == 0 && p->K + c.n_options > OCN_MAX_OPTIONS) {
        rc = gr_error(GR_EINVAL, "%s: the pool would have %d options, more "
                                 "than %d",
                      path, p->K + c.n_options, OCN_MAX_OPTIONS);
    }
    if (rc < 0) {
        ocn_loaded_free(&src);
        return rc;
    }
    /* the subtasks its options were trained on */
    for (int i = 0; i < src.n_tasks; i++) {
        for (int s = 0; s < src.tasks[i].n && t->n_trained < 64; s++) {
            t->trained[t->n_trained++] = src.tasks[i].sub[s];
        }
    }
    struct ocn_model m = src.model;
    const int Ks = c.n_options, K = p->K + Ks, w = p->w, d = p->d,
              A = p->A, O = p->O, nh = A + d + 1;
    if (rc == 0) {
        rc = grow(&p->wx, (size_t)O * K * w);
    }
    float *wx = NULL;
    if (rc == 0) {
        wx = malloc((size_t)O * Ks * w * sizeof *wx);
        rc = wx == NULL ? gr_error(GR_ENOMEM, "PPO: out of memory") : 0;
    }
    if (rc == 0) {
        rc = gr_tensor_to_host(m.o_wx, wx);
    }
    if (rc == 0) {
        /* rows widen from p->K·w to K·w columns: move them from the end */
        for (int o = O - 1; o >= 0; o--) {
            memmove(p->wx + (size_t)o * K * w, p->wx + (size_t)o * p->K * w,
                    (size_t)p->K * w * sizeof(float));
            memcpy(p->wx + (size_t)o * K * w + (size_t)p->K * w,
                   wx + (size_t)o * Ks * w, (size_t)Ks * w * sizeof(float));
        }
    }
    free(wx);
    struct {
        float **dst;
        struct gr_tensor *src;
        size_t per;
    } parts[] = {{&p->wh, m.o_wh, (size_t)w * d}, {&p->b1, m.o_b1, (size_t)w},
                 {&p->w2, m.o_w2, (size_t)w * w}, {&p->b2, m.o_b2, (size_t)w},
                 {&p->wo, m.o_wo, (size_t)nh * w}, {&p->bo, m.o_bo, (size_t)nh}};
    for (int i = 0; rc == 0 && i < 6; i++) {
        rc = grow(parts[i].dst, (size_t)K * parts[i].per);
        if (rc == 0) {
            rc = gr_tensor_to_host(parts[i].src,
                                   *parts[i].dst + (size_t)p->K * parts[i].per);
        }
    }
    ocn_loaded_free(&src);
    if (rc < 0) {
        return gr_error_wrap(rc, "%s", path);
    }
    p->K = K;
    return 0;
}

/* The trainer state of a checkpoint: each world's acting state, then the
 * worlds. */
static void state_layout(struct ppo_trainer *t, struct ppo_state_layout *L)
{
    const size_t d = (size_t)t->d;
    struct actor *a = &t->act;
    ppo_state_begin(L, 0x50504F53u, t->E, t->d, &t->iteration,
                    &t->global_step, &t->total_episodes);
    ppo_state_add(L, a->ask, 1);
    ppo_state_add(L, a->first, 1);
    ppo_state_add(L, a->opt, 4);
    ppo_state_add(L, a->hc, d * 4);
    ppo_state_add(L, a->ho, d * 4);
    ppo_state_add(L, a->start, 4);
    ppo_state_add(L, a->draws, 8);
    ppo_state_add(L, a->ep_dec, 4);
    ppo_state_add_batch(L, &t->batch);
}

void ppo_trainer_free(struct ppo_trainer *t)
{
    if (t == NULL) {
        return;
    }
    gr_optim_free(t->optim);
    hcell_free(&t->hc);
    hcell_free(&t->ho);
    acting_free(t);
    craft_batch_free(&t->batch);
    actor_free(&t->act);
    ppo_rollout_free(&t->r);
    ppo_state_free(&t->state);
    void *bufs[] = {t->obs,       t->step_reward, t->step_term, t->owner,
                    t->d_off,     t->d_hc,        t->d_first,   t->d_opt,
                    t->count,     t->actions,     t->mb_idx,    t->mb_opt,
                    t->mb_val,    t->mb_hc,       t->mb_first};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
        free(bufs[i]);
    }
    free(t);
}

int ppo_trainer_new(struct ppo_trainer **out, struct gr_ctx *ctx,
                    const struct ppo_config *cfg,
                    const char *const *option_paths, int n_paths)
{
    *out = NULL;
    int rc = ppo_config_validate(cfg);
    if (rc < 0) {
        return rc;
    }
    if (cfg->policy == PPO_POLICY_OMPN || cfg->policy == PPO_POLICY_COMPILE) {
        return gr_error(GR_EINVAL, "policy %s has its own trainer "
                                   "(agents/ppo_%s.h)",
                        ppo_policy_name(cfg->policy),
                        ppo_policy_name(cfg->policy));
    }
    int needs = cfg->policy == PPO_POLICY_OCN || cfg->policy == PPO_POLICY_MOE;
    if (needs && n_paths < 1) {
        return gr_error(GR_EINVAL, "policy %s needs the options' checkpoint "
                                   "(one or more)",
                        ppo_policy_name(cfg->policy));
    }
    if (!needs && n_paths > 0) {
        return gr_error(GR_EINVAL, "policy %s takes no options' checkpoint",
                        ppo_policy_name(cfg->policy));
    }
    if (n_paths > PPO_MAX_SOURCES) {
        return gr_error(GR_EINVAL, "%d options' checkpoints: at most %d",
                        n_paths, PPO_MAX_SOURCES);
    }
    struct ppo_trainer *t = calloc(1, sizeof *t);
    if (t == NULL) {
        return gr_error(GR_ENOMEM, "PPO: out of memory");
    }
    t->cfg = *cfg;
    t->ctx = ctx;
    craft_task_parse(cfg->task, &t->task);
    struct pool pool = {0};
    for (int i = 0; i < n_paths && rc == 0; i++) {
        snprintf(t->sources[i], sizeof t->sources[i], "%s", option_paths[i]);
        t->n_sources = i + 1;
        rc = pool_add(t, &pool, option_paths[i]);
    }
    if (rc < 0) {
        pool_free(&pool);
        free(t);
        return rc;
    }
    struct ocn_config oc;
    ocn_config_default(&oc);
    oc.kind = cfg->policy == PPO_POLICY_MOE ? OCN_KIND_MOE : OCN_KIND_OCN;
    if (needs) {
        oc.n_options = pool.K;
        oc.hidden = pool.d;
        oc.width = pool.w;
        oc.opt_ignore_lo = pool.ign_lo;
        oc.opt_ignore_hi = pool.ign_hi;
        t->world = pool.world;
        t->world.reward = cfg->world.reward;
    } else {
        oc.n_options = cfg->policy == PPO_POLICY_FLAT ? CRAFT_N_ACTIONS : 4;
        oc.hidden = cfg->hidden;
        oc.width = cfg->width;
        t->world = cfg->world;
    }
    craft_config_for_task(&t->world, &t->task, &t->world);
    t->tau = cfg->tau > 0.0f ? cfg->tau
                             : (cfg->policy == PPO_POLICY_FLAT ? 1.0f : 10.0f);
    oc.tau = t->tau;
    oc.value_head = 1;
    oc.act_hard = 1; /* ocn_act (craft run, watch) plays it as trained */
    oc.n_tasks = 1;
    snprintf(oc.task_names[0], sizeof oc.task_names[0], "%s", t->task.name);
    t->K = oc.n_options;
    t->d = oc.hidden;
    t->w = oc.width;
    t->O = oc.obs_size;
    t->A = oc.n_actions;
    t->E = cfg->num_envs;
    t->S = cfg->num_steps;
    train_mpi_share(t->E, &t->e0, &t->e1);
    if (t->e1 <= t->e0) {
        pool_free(&pool);
        free(t);
        return gr_error(GR_EINVAL, "num_envs %d is fewer than the %d MPI "
                                   "processes",
                        cfg->num_envs, train_mpi_size());
    }
    t->decide_every = cfg->policy == PPO_POLICY_MOE ||
                      cfg->policy == PPO_POLICY_FLAT;
    const char *letters = "ABCD";
    for (int i = 0; i < 4; i++) {
        char name[2] = {letters[i], 0};
        struct craft_task one;
        craft_task_parse(name, &one);
        t->oracle[i] = one.sub[0];
    }
    rc = ocn_model_init(&t->m, ctx, &oc, cfg->seed);
    if (rc == 0 && needs) {
        struct ocn_model *m = &t->m;
        rc = gr_tensor_set_host(m->o_wx, pool.wx);
        if (rc == 0) rc = gr_tensor_set_host(m->o_wh, pool.wh);
        if (rc == 0) rc = gr_tensor_set_host(m->o_b1, pool.b1);
        if (rc == 0) rc = gr_tensor_set_host(m->o_w2, pool.w2);
        if (rc == 0) rc = gr_tensor_set_host(m->o_b2, pool.b2);
        if (rc == 0) rc = gr_tensor_set_host(m->o_wo, pool.wo);
        if (rc == 0) rc = gr_tensor_set_host(m->o_bo, pool.bo);
    }
    pool_free(&pool);
    if (rc == 0 && gr_param_set_trainable(ctx, "opt.", 0) < 1) {
        rc = gr_error(GR_EINVAL, "PPO: the model has no option parameters");
    }
    if (rc == 0) {
        rc = ppo_optim_new(&t->optim, ctx, cfg, "ctrl.");
    }
    const int E = t->E, S = t->S, d = t->d, w = t->w, K = t->K, O = t->O;
    const size_t D = (size_t)(t->e1 - t->e0) * S; /* this process's */
    if (rc == 0) {
        rc = hcell_alloc(&t->hc, 1, O, w, d, K + d + 1, w);
    }
    if (rc == 0) {
        rc = hcell_alloc(&t->ho, K, O, w, d, t->A + d + 1, K * w);
        t->ho.ign_lo = oc.opt_ignore_lo;
        t->ho.ign_hi = oc.opt_ignore_hi;
    }
    if (rc == 0) {
        rc = actor_init(&t->act, E, d);
    }
    if (rc == 0) {
        rc = ppo_rollout_init(&t->r, E, S, t->e0, t->e1,
                              cfg->num_minibatches, "PPO");
    }
    if (rc == 0) {
        t->obs = malloc((size_t)E * O * sizeof(float));
        t->step_reward = calloc((size_t)E, sizeof(float));
        t->step_term = calloc(2 * (size_t)E, 1);
        t->owner = calloc((size_t)E, sizeof(int32_t));
        t->d_off = calloc(D, sizeof(int64_t));
        t->d_hc = malloc(D * d * sizeof(float));
        t->d_first = calloc(D, sizeof(float));
        t->d_opt = calloc(D, sizeof(int32_t));
        t->count = calloc((size_t)E, sizeof(int32_t));
        t->actions = calloc((size_t)E, 1);
        size_t M = (size_t)E * S / (size_t)cfg->num_minibatches;
        t->mb_nz = PPO_NZ_START;
        t->mb_idx = malloc(M * PPO_NZ_START * sizeof(int32_t));
        t->mb_val = malloc(M * PPO_NZ_START * sizeof(float));
        t->mb_hc = malloc(M * d * sizeof(float));
        t->mb_first = malloc(M * sizeof(float));
        t->mb_opt = malloc(M * sizeof(int32_t));
        if (!t->obs || !t->step_reward || !t->step_term || !t->owner ||
            !t->d_off || !t->d_hc || !t->d_first || !t->d_opt || !t->count ||
            !t->actions || !t->mb_idx || !t->mb_val || !t->mb_hc ||
            !t->mb_first || !t->mb_opt) {
            rc = gr_error(GR_ENOMEM, "PPO: out of memory for %zu decisions",
                          D);
        }
    }
    if (rc == 0) {
        rc = ppo_set_acting_threads(t, 1);
    }
    if (rc == 0) {
        ppo_seeds(cfg, &t->sample_seed, &t->env_seed);
        rc = craft_batch_init(&t->batch, &t->world, &t->task, 1, E,
                              t->env_seed, t->obs);
    }
    if (rc == 0) {
        rc = refresh_ctrl(t);
    }
    if (rc == 0 && needs) {
        rc = refresh_options(t);
    }
    if (rc == 0) {
        struct ppo_state_layout L;
        state_layout(t, &L);
        rc = ppo_state_init(&t->state, ctx, &L, "PPO");
    }
    if (rc < 0) {
        ppo_trainer_free(t);
        return rc;
    }
    *out = t;
    return 0;
}

void ppo_untrained_subtasks(const struct ppo_trainer *t, char *out,
                            size_t cap)
{
    size_t n = 0;
    out[0] = '\0';
    if (t->cfg.policy == PPO_POLICY_FLAT || t->cfg.policy == PPO_POLICY_ORACLE) {
        return;
    }
    for (int s = 0; s < t->task.n; s++) {
        int found = 0;
        for (int i = 0; i < t->n_trained && !found; i++) {
            found = t->trained[i].op == t->task.sub[s].op &&
                    t->trained[i].kind == t->task.sub[s].kind;
        }
        for (int q = 0; q < s && !found; q++) {
            found = t->task.sub[q].op == t->task.sub[s].op &&
                    t->task.sub[q].kind == t->task.sub[s].kind; /* once */
        }
        if (!found) {
            char name[64];
            if (craft_subtask_name(&t->task.sub[s], name, sizeof name) < 0) {
                continue;
            }
            int wr = snprintf(out + n, cap - n, "%s%s", n ? "," : "", name);
            if (wr < 0 || (size_t)wr >= cap - n) {
                return;
            }
            n += (size_t)wr;
        }
    }
}

/* ---- checkpoints --------------------------------------------------------------- */

char *ppo_checkpoint_config(const struct ppo_trainer *t)
{
    size_t cap = OCN_CONFIG_TEXT_CAP + 4096;
    char *text = malloc(cap);
    if (text == NULL) {
        gr_error(GR_ENOMEM, "PPO: out of memory");
        return NULL;
    }
    int n = ocn_config_format(&t->m.cfg, text, cap);
    if (n < 0) {
        free(text);
        return NULL;
    }
    if (t->cfg.policy == PPO_POLICY_FLAT || t->cfg.policy == PPO_POLICY_ORACLE) {
        /* not a network of options: the OCN loaders refuse it by name */
        const char *kind = ppo_policy_name(t->cfg.policy);
        char *rest = strchr(text, '\n');
        size_t rl = strlen(rest);
        char *tmp = malloc(rl + 64);
        if (tmp == NULL) {
            free(text);
            return NULL;
        }
        snprintf(tmp, rl + 64, "kind %s%s", kind, rest);
        n = snprintf(text, cap, "%s", tmp);
        free(tmp);
    }
    int m = world_text(&t->world, text + n, cap - (size_t)n);
    if (m < 0) {
        free(text);
        return NULL;
    }
    n += m;
    for (int i = 0; i < t->n_sources; i++) {
        m = snprintf(text + n, cap - (size_t)n, "ppo_options %s\n",
                     t->sources[i]);
        if (m < 0 || (size_t)m >= cap - (size_t)n) {
            free(text);
            gr_error(GR_EINVAL, "PPO: config text too long");
            return NULL;
        }
        n += m;
    }
    m = ppo_config_format(&t->cfg, text + n, cap - (size_t)n);
    if (m < 0) {
        free(text);
        return NULL;
    }
    return text;
}

static char *config_text(const void *t)
{
    return ppo_checkpoint_config(t);
}

int ppo_save(struct ppo_trainer *t, const char *path, int force)
{
    struct ppo_state_layout L;
    state_layout(t, &L);
    return ppo_state_save(&t->state, t->ctx, &L, path, force, config_text,
                          t);
}

/* The integer of the config line "key N", or -1. */
static int config_int(const char *text, const char *key)
{
    size_t n = strlen(key);
    for (const char *p = text; p != NULL && *p != '\0';) {
        if (strncmp(p, key, n) == 0 && p[n] == ' ') {
            return atoi(p + n + 1);
        }
        p = strchr(p, '\n');
        p = p != NULL ? p + 1 : NULL;
    }
    return -1;
}

int ppo_load(struct ppo_trainer *t, const char *path)
{
    char *text = NULL;
    int rc = gr_checkpoint_read_config(path, &text);
    if (rc < 0) {
        return rc;
    }
    struct ppo_config c;
    rc = ppo_config_parse(text, &c);
    int K = config_int(text, "options"), d = config_int(text, "hidden"),
        w = config_int(text, "width");
    if (rc == 0 && strstr(text, "ppo_policy ") == NULL) {
        rc = gr_error(GR_EFORMAT, "%s is not a PPO checkpoint", path);
    } else if (rc == 0 && c.policy != t->cfg.policy) {
        rc = gr_error(GR_EFORMAT, "%s: a %s policy; this run's is %s", path,
                      ppo_policy_name(c.policy),
                      ppo_policy_name(t->cfg.policy));
    } else if (rc == 0 && c.num_envs != t->E) {
        rc = gr_error(GR_EFORMAT, "%s: a trainer of %d worlds (num_envs); "
                                  "this run has %d",
                      path, c.num_envs, t->E);
    } else if (rc == 0 && (K != t->K || d != t->d || w != t->w)) {
        rc = gr_error(GR_EFORMAT, "%s: %d options of hidden %d, width %d; "
                                  "this run has %d, %d, %d",
                      path, K, d, w, t->K, t->d, t->w);
    }
    free(text);
    struct ppo_state_layout L;
    state_layout(t, &L);
    if (rc == 0) {
        rc = ppo_state_load(&t->state, t->ctx, &L, path, t->obs, t->O);
    }
    if (rc == 0) {
        rc = refresh_ctrl(t);
    }
    return rc;
}
