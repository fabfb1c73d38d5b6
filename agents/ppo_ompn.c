/* OMPN fine-tuned by PPO as a recurrent policy (see agents/ppo_ompn.h). */
#define _POSIX_C_SOURCE 200809L
#include "agents/ppo_ompn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents/bc.h"
#include "agents/ocn_load.h"
#include "agents/ppo_internal.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/random.h"
#include "kernels/checkpoint.h"
#include "kernels/layers.h"
#include "kernels/ops.h"
#include "kernels/optim.h"
#include "kernels/rng.h"
#include "kernels/tape.h"
#include "train/mpi.h"

/* ppo_ompn_loss with the advantage's statistics given (norm_adv). */
static int loss_with(struct ompn_model *m, struct gr_tensor *vw,
                     struct gr_tensor *vb, const struct ppo_ompn_minibatch *b,
                     float clip_coef, float vf_coef, float ent_coef,
                     int norm_adv, double mean, double sd,
                     struct ppo_loss_out *out)
{
    struct gr_ctx *ctx = m->ctx;
    const int64_t M = b->M;
    int32_t *task = calloc((size_t)M, sizeof *task);
    if (task == NULL) {
        return gr_error(GR_ENOMEM, "PPO loss (OMPN): out of memory");
    }
    struct gr_tensor *feat = NULL;
    int rc = ompn_step_rows(m, b->idx, b->val, M, b->nz, task, b->mem,
                            b->first, &feat);
    free(task);
    if (rc < 0) {
        return rc;
    }
    struct gr_tensor *lp = gr_log_softmax(
        ctx, gr_linear(ctx, feat, m->act_w, m->act_b), NULL);
    struct gr_tensor *p = gr_exp(ctx, lp);
    struct gr_tensor *ent =
        gr_scale(ctx, gr_mean(ctx, gr_sum_dim(ctx, gr_mul(ctx, p, lp), 1)),
                 -1.0f);
    struct ppo_loss_head h = {lp, b->action, ent, NULL, feat, vw, vb};
    return ppo_loss_tail(ctx, &h, M, b->logp_old, b->adv, b->ret, clip_coef,
                         vf_coef, ent_coef, norm_adv, mean, sd,
                         "PPO loss (OMPN)", out);
}

int ppo_ompn_loss(struct ompn_model *m, struct gr_tensor *vw,
                  struct gr_tensor *vb, const struct ppo_ompn_minibatch *b,
                  float clip_coef, float vf_coef, float ent_coef,
                  int norm_adv, struct ppo_loss_out *out)
{
    const int64_t M = b->M;
    if (m->cfg.n_tasks != 1 || M < 1) {
        return gr_error(GR_EINVAL, "PPO loss (OMPN): the model needs one "
                                   "task and the minibatch rows");
    }
    double mean = 0.0, var = 0.0;
    for (int64_t i = 0; i < M; i++) {
        mean += b->adv[i];
    }
    mean /= (double)M;
    for (int64_t i = 0; i < M; i++) {
        var += (b->adv[i] - mean) * (b->adv[i] - mean);
    }
    double sd = M > 1 ? sqrt(var / (double)(M - 1)) : 0.0;
    return loss_with(m, vw, vb, b, clip_coef, vf_coef, ent_coef, norm_adv,
                     mean, sd, out);
}

/* ---- the trainer ------------------------------------------------------------ */

struct ppo_ompn {
    struct ppo_config cfg;
    struct gr_ctx *ctx;
    struct ompn_model m;
    struct gr_tensor *vw, *vb;
    struct gr_optim *optim;
    struct craft_config world;
    struct craft_task task;
    int n, d, O, A, E, S, F; /* F = 3d */
    /* with MPI (train/mpi.h) this process acts worlds [e0, e1) of the E
     * (all of them in one process): the acting state and the storage hold
     * only those, world e at row e − e0 */
    int e0, e1;
    struct craft_batch batch;
    float *obs;             /* [E, O] */
    struct ompn_act_state act; /* [e1 − e0] worlds */
    float *mem_all;         /* [E, n, d]: every world's memory, for */
    uint8_t *first_all;     /* [E]        the checkpoint */
    uint64_t *draws;        /* [E] sampling counters */
    uint64_t sample_seed, env_seed;
    /* storage: frame s of world e at (e − e0)·S + s, D = (e1 − e0)·S */
    int32_t *d_idx;         /* [D, PPO_NZ_MAX] */
    float *d_val;
    int32_t *d_act;
    float *d_mem;           /* [D, n, d] */
    float *d_first;
    struct ppo_rollout r;   /* the rest (agents/ppo_internal.h) */
    /* scratch */
    float *probs, *feat, *vtmp; /* [E, A], [E, F], [E] */
    int32_t *amax;          /* [E] */
    uint8_t *actions;       /* [E] */
    float *reward;
    uint8_t *term, *trunc;
    float *mem_keep;        /* [e1 − e0, n, d] */
    uint8_t *first_keep;    /* [e1 − e0] */
    float *vw_h;            /* [F + 1]: the value head on the host */
    int32_t *mb_idx, *mb_act;
    float *mb_val, *mb_mem, *mb_first;
    int64_t iteration, global_step, total_episodes;
    char source[512];
    struct ppo_state state; /* the checkpoint's (agents/ppo_internal.h) */
};

struct ompn_model *ppo_ompn_model(struct ppo_ompn *t)
{
    return &t->m;
}

const struct craft_config *ppo_ompn_world(const struct ppo_ompn *t)
{
    return &t->world;
}

int64_t ppo_ompn_global_step(const struct ppo_ompn *t)
{
    return t->global_step;
}

static int refresh_value(struct ppo_ompn *t)
{
    int rc = gr_tensor_to_host(t->vw, t->vw_h);
    return rc == 0 ? gr_tensor_to_host(t->vb, t->vw_h + t->F) : rc;
}

/* values[j] = w_v · feat[j] + b_v for E rows */
static void host_values(const struct ppo_ompn *t, const float *feat, int E,
                        float *values)
{
    for (int j = 0; j < E; j++) {
        double s = t->vw_h[t->F];
        for (int k = 0; k < t->F; k++) {
            s += (double)t->vw_h[k] * feat[(size_t)j * t->F + k];
        }
        values[j] = (float)s;
    }
}

static int sample_a(struct ppo_ompn *t, int e, const float *p)
{
    uint64_t key = gr_rng_key_of(
        t->sample_seed, gr_rng_stream(0x4F4D504E, (uint64_t)e, 0, 0));
    float u = gr_rng_uniform(key, t->draws[e]++);
    float c = 0.0f;
    int last = 0;
    for (int i = 0; i < t->A; i++) {
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

static int sparse_row(const float *x, int O, int32_t *idx, float *val)
{
    return ppo_sparse_row(x, O, idx, val, 1, "PPO (OMPN)");
}

/* One rollout of this process's worlds [e0, e1) (all of them in one
 * process): the acting state's row e − e0 is world e, its frames are
 * stored from (e − e0)·S. */
static int rollout(struct ppo_ompn *t, struct ppo_stats *st)
{
    const int S = t->S, O = t->O, A = t->A, e0 = t->e0, e1 = t->e1;
    const int El = e1 - e0;
    const size_t nd = (size_t)t->n * t->d;
    const float *obs_l = t->obs + (size_t)e0 * O;
    struct craft_log log = {0};
    int rc = 0;
    for (int s = 0; s < S && rc == 0; s++) {
        for (int e = e0; e < e1; e++) {
            const int le = e - e0;
            int64_t j = (int64_t)le * S + s;
            float *mj = t->d_mem + (size_t)j * nd;
            if (t->act.first[le]) {
                memset(mj, 0, nd * sizeof *mj);
            } else {
                memcpy(mj, t->act.mem + (size_t)le * nd, nd * sizeof *mj);
            }
            t->d_first[j] = t->act.first[le] ? 1.0f : 0.0f;
            int nz = sparse_row(t->obs + (size_t)e * O,
                                O, t->d_idx + (size_t)j * PPO_NZ_MAX,
                                t->d_val + (size_t)j * PPO_NZ_MAX);
            if (nz < 0) {
                return nz;
            }
            t->r.nz[j] = nz;
        }
        rc = ompn_act_feat(&t->m, &t->act, obs_l, t->amax, t->probs, NULL,
                           t->feat);
        if (rc < 0) {
            break;
        }
        host_values(t, t->feat, El, t->vtmp);
        for (int e = e0; e < e1; e++) {
            const int le = e - e0;
            int64_t j = (int64_t)le * S + s;
            const float *p = t->probs + (size_t)le * A;
            int a = sample_a(t, e, p);
            t->actions[e] = (uint8_t)a;
            t->d_act[j] = a;
            t->r.logp[j] = logf(fmaxf(p[a], 1e-30f));
            t->r.value[j] = t->vtmp[le];
        }
        struct craft_batch_out out = {0};
        out.obs = t->obs;
        out.reward = t->reward;
        out.terminated = t->term;
        out.truncated = t->trunc;
        rc = craft_batch_step_range(&t->batch, e0, e1, t->actions, &out,
                                    &log);
        for (int e = e0; rc == 0 && e < e1; e++) {
            int64_t j = (int64_t)(e - e0) * S + s;
            t->r.R[j] = t->reward[e];
            t->r.n[j] = 1;
            /* a truncation ends the episode as a termination does (the
             * header): no bootstrap from the last observation */
            t->r.term[j] = (uint8_t)(t->term[e] || t->trunc[e]);
            t->r.trunc[j] = 0;
            t->r.boot[j] = 0.0f;
            if (t->term[e] || t->trunc[e]) {
                ompn_act_reset(&t->act, e - e0, 0);
            }
        }
    }
    if (rc == 0) {
        /* the value of the observation each world waits at: one step on
         * a copy of the memories */
        memcpy(t->mem_keep, t->act.mem, (size_t)El * nd * sizeof(float));
        memcpy(t->first_keep, t->act.first, (size_t)El);
        rc = ompn_act_feat(&t->m, &t->act, obs_l, t->amax, t->probs, NULL,
                           t->feat);
        memcpy(t->act.mem, t->mem_keep, (size_t)El * nd * sizeof(float));
        memcpy(t->act.first, t->first_keep, (size_t)El);
        if (rc == 0) {
            host_values(t, t->feat, El, t->r.last_value + e0);
        }
    }
    if (rc < 0) {
        return rc;
    }
    /* a decision every frame */
    return ppo_rollout_totals(&t->r, (int64_t)El * S, &log,
                              (int64_t)log.steps, &t->global_step,
                              &t->total_episodes, st);
}


/* One minibatch's loss (agents/ppo_internal.h): the rows gathered from
 * the storage, then loss_with. */
static int minibatch_loss(void *self, const int32_t *rows, int64_t M,
                          double mean, double sd, struct ppo_loss_out *lo)
{
    struct ppo_ompn *t = self;
    const size_t nd = (size_t)t->n * t->d;
    int nzm = ppo_rollout_nz_max(&t->r, rows, M);
    ppo_rollout_gather(&t->r, rows, M);
    for (int64_t i = 0; i < M; i++) {
        int64_t j = rows[i];
        memcpy(t->mb_idx + i * nzm, t->d_idx + j * PPO_NZ_MAX,
               (size_t)nzm * sizeof *t->mb_idx);
        memcpy(t->mb_val + i * nzm, t->d_val + j * PPO_NZ_MAX,
               (size_t)nzm * sizeof *t->mb_val);
        memcpy(t->mb_mem + (size_t)i * nd, t->d_mem + (size_t)j * nd,
               nd * sizeof *t->mb_mem);
        t->mb_first[i] = t->d_first[j];
        t->mb_act[i] = t->d_act[j];
    }
    struct ppo_ompn_minibatch b = {
        (int)M,      nzm,       t->mb_idx,  t->mb_val, t->mb_mem,
        t->mb_first, t->mb_act, t->r.mb_logp, t->r.mb_adv, t->r.mb_ret};
    return loss_with(&t->m, t->vw, t->vb, &b, t->cfg.clip_coef,
                     t->cfg.vf_coef, t->cfg.ent_coef, t->cfg.norm_adv, mean,
                     sd, lo);
}

static int update(struct ppo_ompn *t, struct ppo_stats *st)
{
    struct ppo_update u = {
        .ctx = t->ctx,
        .optim = t->optim,
        .cfg = &t->cfg,
        .prefix = "ompn.",
        .perm_tag = 0x4F504552,
        .iteration = t->iteration,
        .global_step = t->global_step,
        .r = &t->r,
        .loss = minibatch_loss,
        .self = t,
    };
    int rc = ppo_update_run(&u, st);
    return rc < 0 ? rc : refresh_value(t);
}

/* The acting state keeps LN(g) from the parameters at its creation: after
 * an update it is rebuilt, keeping each world's memory and flags. */
static int rebuild_act(struct ppo_ompn *t, const float *mem,
                       const uint8_t *first)
{
    ompn_act_state_free(&t->act);
    const int El = t->e1 - t->e0;
    int rc = ompn_act_state_init(&t->act, &t->m, El);
    if (rc == 0) {
        memcpy(t->act.mem, mem, (size_t)El * t->n * t->d * sizeof(float));
        memcpy(t->act.first, first, (size_t)El);
    }
    return rc;
}

int ppo_ompn_iteration(struct ppo_ompn *t, struct ppo_stats *st)
{
    memset(st, 0, sizeof *st);
    double t0 = ppo_now_s();
    int rc = rollout(t, st);
    double t1 = ppo_now_s();
    if (rc < 0) {
        return rc;
    }
    /* keep the memories across the act state's rebuild */
    const size_t nd = (size_t)t->n * t->d, El = (size_t)(t->e1 - t->e0);
    memcpy(t->mem_keep, t->act.mem, El * nd * sizeof(float));
    memcpy(t->first_keep, t->act.first, El);
    rc = update(t, st);
    int rc2 = rebuild_act(t, t->mem_keep, t->first_keep);
    if (rc < 0 || rc2 < 0) {
        return rc < 0 ? rc : rc2;
    }
    t->iteration++;
    st->iteration = t->iteration;
    st->rollout_s = t1 - t0;
    st->update_s = ppo_now_s() - t1;
    return 0;
}

int ppo_ompn_evaluate(struct ppo_ompn *t, int episodes, uint64_t base_seed,
                      struct ppo_eval *out, const struct ppo_trace *trace)
{
    if (episodes < 1) {
        return gr_error(GR_EINVAL, "evaluation: %d episodes", episodes);
    }
    const int E = episodes, O = t->O, T = t->world.max_steps;
    struct craft_world *w = malloc((size_t)E * sizeof *w);
    float *obs = malloc((size_t)E * O * sizeof *obs);
    int32_t *act = malloc((size_t)E * sizeof *act);
    uint8_t *done = calloc((size_t)E, 1);
    struct ompn_act_state st;
    memset(&st, 0, sizeof st);
    int rc = 0;
    if (w == NULL || obs == NULL || act == NULL || done == NULL) {
        rc = gr_error(GR_ENOMEM, "evaluation: out of memory");
    }
    if (rc == 0) {
        rc = ompn_act_state_init(&st, &t->m, E);
    }
    for (int j = 0; rc == 0 && j < E; j++) {
        uint64_t seed = craft_episode_seed(base_seed, (uint64_t)j, 0);
        rc = craft_world_reset(&w[j], &t->world, seed, &t->task);
        ompn_act_reset(&st, j, 0);
        if (trace != NULL && trace->seed != NULL) {
            trace->seed[j] = seed;
        }
    }
    int left = E;
    double R = 0.0, succ = 0.0, len = 0.0;
    while (rc == 0 && left > 0) {
        for (int j = 0; j < E; j++) {
            craft_world_observe(&w[j], obs + (size_t)j * O);
        }
        rc = ompn_act(&t->m, &st, obs, act, NULL, NULL);
        for (int j = 0; rc == 0 && j < E; j++) {
            if (done[j]) {
                continue;
            }
            int step = w[j].t;
            struct craft_step s;
            rc = craft_world_step(&w[j], act[j], &s);
            /* the action stands as its own option, a decision a step */
            ppo_trace_step(trace, T, j, step, act[j], act[j], 1, s.reward);
            if (s.terminated || s.truncated) {
                done[j] = 1;
                left--;
                R += w[j].episode_return;
                succ += s.terminated;
                len += w[j].t;
                ppo_trace_end(trace, j, w[j].t);
            }
        }
    }
    if (rc == 0) {
        out->episodes = E;
        out->mean_return = R / E;
        out->success_rate = succ / E;
        out->mean_length = len / E;
        out->decisions_per_episode = len / E;
    }
    ompn_act_state_free(&st);
    free(w);
    free(obs);
    free(act);
    free(done);
    return rc;
}

/* ---- building, saving, loading ---------------------------------------------- */

/* The trainer state of a checkpoint: every world's memory, first flag
 * and sampling counter, then the worlds. */
static void state_layout(struct ppo_ompn *t, struct ppo_state_layout *L)
{
    ppo_state_begin(L, 0x4F4D5053u, t->E, t->d, &t->iteration,
                    &t->global_step, &t->total_episodes);
    ppo_state_add(L, t->mem_all, (size_t)t->n * t->d * 4);
    ppo_state_add(L, t->first_all, 1);
    ppo_state_add(L, t->draws, 8);
    ppo_state_add_batch(L, &t->batch);
}

void ppo_ompn_free(struct ppo_ompn *t)
{
    if (t == NULL) {
        return;
    }
    gr_optim_free(t->optim);
    craft_batch_free(&t->batch);
    ompn_act_state_free(&t->act);
    ppo_rollout_free(&t->r);
    ppo_state_free(&t->state);
    void *bufs[] = {t->obs,      t->draws,      t->d_idx,    t->d_val,
                    t->d_act,    t->d_mem,      t->d_first,  t->probs,
                    t->feat,     t->vtmp,       t->amax,     t->actions,
                    t->reward,   t->term,       t->trunc,    t->mem_keep,
                    t->first_keep, t->mem_all,  t->first_all, t->vw_h,
                    t->mb_idx,   t->mb_act,     t->mb_val,   t->mb_mem,
                    t->mb_first};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
        free(bufs[i]);
    }
    free(t);
}

/* The BC model of path into the trainer's model: every parameter, the
 * task code from the row of the fine-tuning task where it has one. */
static int load_init(struct ppo_ompn *t, const char *path,
                     struct ompn_config *cfg_out)
{
    struct gr_ctx_config cc = gr_ctx_config_default();
    cc.device = GR_DEVICE_CPU;
    cc.threads = 1;
    struct ompn_loaded src;
    int rc = ompn_load(&src, path, &cc);
    if (rc == GR_EFORMAT) {
        return gr_error_wrap(rc, "--init takes an OMPN behaviour-cloning "
                                 "checkpoint (--resume continues a PPO run)");
    }
    if (rc < 0) {
        return rc;
    }
    t->world = src.world;
    const struct ompn_model *sm = &src.model;
    *cfg_out = sm->cfg;
    cfg_out->n_tasks = 1;
    snprintf(cfg_out->task_names[0], sizeof cfg_out->task_names[0], "%s",
             t->task.name);
    rc = ompn_model_init(&t->m, t->ctx, cfg_out, t->cfg.seed);
    int row = -1;
    for (int i = 0; i < sm->cfg.n_tasks; i++) {
        if (strcmp(sm->cfg.task_names[i], t->task.name) == 0) {
            row = i;
        }
    }
    for (int i = 0; rc == 0 && i < OMPN_N_PARAMS; i++) {
        struct gr_tensor *from = ompn_param(sm, i), *to = ompn_param(&t->m, i);
        float *h = malloc((size_t)from->numel * sizeof *h);
        if (h == NULL) {
            rc = gr_error(GR_ENOMEM, "PPO (OMPN): out of memory");
            break;
        }
        rc = gr_tensor_to_host(from, h);
        if (rc == 0 && from == sm->task) {
            if (row >= 0) {
                rc = gr_tensor_set_host(to, h + (size_t)row * sm->cfg.hidden);
            } /* else: the fresh N(0, 1) row of ompn_model_init */
        } else if (rc == 0) {
            rc = gr_tensor_set_host(to, h);
        }
        free(h);
    }
    ompn_loaded_free(&src);
    return rc;
}

int ppo_ompn_new(struct ppo_ompn **out, struct gr_ctx *ctx,
                 const struct ppo_config *cfg, const char *init_path)
{
    *out = NULL;
    if (cfg->policy != PPO_POLICY_OMPN) {
        return gr_error(GR_EINVAL, "PPO (OMPN): policy %s",
                        ppo_policy_name(cfg->policy));
    }
    int rc = ppo_config_validate(cfg);
    if (rc < 0) {
        return rc;
    }
    struct ppo_ompn *t = calloc(1, sizeof *t);
    if (t == NULL) {
        return gr_error(GR_ENOMEM, "PPO (OMPN): out of memory");
    }
    t->cfg = *cfg;
    t->ctx = ctx;
    snprintf(t->source, sizeof t->source, "%s", init_path);
    craft_task_parse(cfg->task, &t->task);
    struct ompn_config oc;
    rc = load_init(t, init_path, &oc);
    if (rc < 0) {
        free(t);
        return rc;
    }
    t->world.reward = cfg->world.reward;
    craft_config_for_task(&t->world, &t->task, &t->world);
    t->n = oc.n_slots;
    t->d = oc.hidden;
    t->F = 3 * oc.hidden;
    t->O = oc.obs_size;
    t->A = oc.n_actions;
    t->E = cfg->num_envs;
    t->S = cfg->num_steps;
    t->vw = gr_param_new(ctx, "ompn.value.weight", gr_shape2(1, t->F));
    t->vb = gr_param_new(ctx, "ompn.value.bias", gr_shape1(1));
    if (t->vw == NULL || t->vb == NULL) {
        rc = gr_error(GR_ENOMEM, "PPO (OMPN): the value head");
    }
    if (rc == 0) {
        float b = 1.0f / sqrtf((float)t->F);
        rc = gr_init_uniform(t->vw, -b, b, gr_rng_make(cfg->seed, 0x56414Cu));
    }
    if (rc == 0) {
        rc = ppo_optim_new(&t->optim, ctx, cfg, "ompn.");
    }
    train_mpi_share(t->E, &t->e0, &t->e1);
    if (rc == 0 && t->e1 <= t->e0) {
        rc = gr_error(GR_EINVAL, "PPO (OMPN): %d worlds for %d MPI "
                                 "processes",
                      t->E, train_mpi_size());
    }
    /* D: this process's frames; the permutation and a minibatch count
     * every process's */
    const size_t E = (size_t)t->E, El = (size_t)(t->e1 - t->e0),
                 D = El * (size_t)t->S, Dall = E * (size_t)t->S,
                 nd = (size_t)t->n * t->d,
                 M = Dall / (size_t)cfg->num_minibatches;
    if (rc == 0) {
        rc = ompn_act_state_init(&t->act, &t->m, (int)El);
    }
    if (rc == 0) {
        rc = ppo_rollout_init(&t->r, t->E, t->S, t->e0, t->e1,
                              cfg->num_minibatches, "PPO (OMPN)");
    }
    if (rc == 0) {
        t->obs = malloc(E * t->O * sizeof(float));
        t->draws = calloc(E, 8);
        t->d_idx = malloc(D * PPO_NZ_MAX * sizeof(int32_t));
        t->d_val = malloc(D * PPO_NZ_MAX * sizeof(float));
        t->d_act = calloc(D, 4);
        t->d_mem = malloc(D * nd * sizeof(float));
        t->d_first = calloc(D, 4);
        t->probs = malloc(E * t->A * sizeof(float));
        t->feat = malloc(E * t->F * sizeof(float));
        t->vtmp = malloc(E * sizeof(float));
        t->amax = malloc(E * 4);
        t->actions = calloc(E, 1);
        t->reward = calloc(E, 4);
        t->term = calloc(E, 1);
        t->trunc = calloc(E, 1);
        t->mem_keep = malloc(El * nd * sizeof(float));
        t->first_keep = malloc(El);
        t->mem_all = calloc(E * nd, sizeof(float));
        t->first_all = calloc(E, 1);
        t->vw_h = malloc(((size_t)t->F + 1) * sizeof(float));
        t->mb_idx = malloc(M * PPO_NZ_MAX * 4);
        t->mb_val = malloc(M * PPO_NZ_MAX * 4);
        t->mb_mem = malloc(M * nd * sizeof(float));
        t->mb_act = malloc(M * 4);
        t->mb_first = malloc(M * 4);
        if (!t->obs || !t->draws || !t->d_idx || !t->d_val || !t->d_act ||
            !t->d_mem || !t->d_first || !t->probs || !t->feat || !t->vtmp ||
            !t->amax || !t->actions || !t->reward || !t->term || !t->trunc ||
            !t->mem_keep || !t->first_keep || !t->mem_all ||
            !t->first_all || !t->vw_h || !t->mb_idx || !t->mb_val ||
            !t->mb_mem || !t->mb_act || !t->mb_first) {
            rc = gr_error(GR_ENOMEM, "PPO (OMPN): out of memory for %zu "
                                     "frames",
                          D);
        }
    }
    if (rc == 0) {
        ppo_seeds(cfg, &t->sample_seed, &t->env_seed);
        rc = craft_batch_init(&t->batch, &t->world, &t->task, 1, t->E,
                              t->env_seed, t->obs);
    }
    for (int e = 0; rc == 0 && e < (int)El; e++) {
        ompn_act_reset(&t->act, e, 0);
    }
    if (rc == 0) {
        rc = refresh_value(t);
    }
    if (rc == 0) {
        struct ppo_state_layout L;
        state_layout(t, &L);
        rc = ppo_state_init(&t->state, ctx, &L, "PPO (OMPN)");
    }
    if (rc < 0) {
        ppo_ompn_free(t);
        return rc;
    }
    *out = t;
    return 0;
}

char *ppo_ompn_checkpoint_config(const struct ppo_ompn *t)
{
    size_t cap = 16384;
    char *text = malloc(cap);
    if (text == NULL) {
        gr_error(GR_ENOMEM, "PPO (OMPN): out of memory");
        return NULL;
    }
    int n = ompn_config_format(&t->m.cfg, text, cap);
    int m = n < 0 ? -1 : snprintf(text + n, cap - (size_t)n, "value 1\n");
    if (m >= 0) {
        n += m;
        struct craft_config w = t->world;
        m = bc_world_format(&w, text + n, cap - (size_t)n);
    }
    if (m >= 0) {
        n += m;
        m = snprintf(text + n, cap - (size_t)n, "rl_init %s\n", t->source);
        m = m >= 0 && (size_t)m < cap - (size_t)n ? m : -1;
    }
    if (m >= 0) {
        n += m;
        m = ppo_config_format(&t->cfg, text + n, cap - (size_t)n);
    }
    if (n < 0 || m < 0) {
        free(text);
        gr_error(GR_EINVAL, "PPO (OMPN): config text too long");
        return NULL;
    }
    return text;
}

static char *config_text(const void *t)
{
    return ppo_ompn_checkpoint_config(t);
}

int ppo_ompn_save(struct ppo_ompn *t, const char *path, int force)
{
    /* the memories of this process's worlds from the acting state */
    const size_t nd = (size_t)t->n * t->d, El = (size_t)(t->e1 - t->e0);
    memcpy(t->mem_all + (size_t)t->e0 * nd, t->act.mem,
           El * nd * sizeof(float));
    memcpy(t->first_all + t->e0, t->act.first, El);
    struct ppo_state_layout L;
    state_layout(t, &L);
    return ppo_state_save(&t->state, t->ctx, &L, path, force, config_text,
                          t);
}

int ppo_ompn_load(struct ppo_ompn *t, const char *path)
{
    char *text = NULL;
    int rc = gr_checkpoint_read_config(path, &text);
    if (rc < 0) {
        return rc;
    }
    struct ppo_config c;
    struct ompn_config oc;
    rc = ppo_config_parse(text, &c);
    if (rc == 0 && (strstr(text, "ppo_policy ") == NULL ||
                    ompn_config_parse(text, &oc) < 0)) {
        rc = gr_error(GR_EFORMAT, "%s is not a PPO checkpoint of OMPN", path);
    } else if (rc == 0 && (c.num_envs != t->E || oc.n_slots != t->n ||
                           oc.hidden != t->d)) {
        rc = gr_error(GR_EFORMAT, "%s: %d worlds, %d slots of %d; this run "
                                  "has %d, %d, %d",
                      path, c.num_envs, oc.n_slots, oc.hidden, t->E, t->n,
                      t->d);
    }
    free(text);
    struct ppo_state_layout L;
    state_layout(t, &L);
    if (rc == 0) {
        rc = ppo_state_load(&t->state, t->ctx, &L, path, t->obs, t->O);
    }
    if (rc == 0) {
        /* the acting copies from the loaded parameters */
        ompn_act_state_free(&t->act);
        rc = ompn_act_state_init(&t->act, &t->m, t->e1 - t->e0);
    }
    if (rc == 0) {
        /* this process's worlds into the acting state */
        const size_t nd = (size_t)t->n * t->d;
        const size_t El = (size_t)(t->e1 - t->e0);
        memcpy(t->act.mem, t->mem_all + (size_t)t->e0 * nd,
               El * nd * sizeof(float));
        memcpy(t->act.first, t->first_all + t->e0, El);
    }
    if (rc == 0) {
        rc = refresh_value(t);
    }
    return rc;
}
