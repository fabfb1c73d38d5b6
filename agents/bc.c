/* Behaviour cloning, validation metrics, greedy returns, success matrix
 * (see agents/bc.h). */
#define _POSIX_C_SOURCE 200809L
#include "agents/bc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents/segment.h"
#include "core/error.h"
#include "core/files.h"
#include "core/progress.h"
#include "core/random.h"
#include "envs/expert.h"
#include "kernels/checkpoint.h"
#include "kernels/ops.h"
#include "kernels/tape.h"
#include "train/mpi.h"

void bc_options_default(struct bc_options *o)
{
    memset(o, 0, sizeof *o);
    o->batch = 512;
    o->updates = 10000;
    o->lr = 1e-3f;
    o->clip = 0.2f;
    o->eval_every = 100;
    o->return_every = 1000;
    o->return_episodes = 30;
    o->val_batch = 512;
    o->seed = 1;
}

/* appends one "world KEY VALUE" line at out + *len */
static void world_line(char *out, size_t cap, int *len, const char *key,
                       const char *value)
{
    if (*len >= 0 && (size_t)*len < cap) {
        int n = snprintf(out + *len, cap - (size_t)*len, "world %s %s\n", key,
                         value);
        *len = n < 0 ? -1 : *len + n;
    }
}

int bc_world_format(const struct craft_config *c, char *out, size_t cap)
{
    struct craft_config d;
    craft_config_default(&d);
    int len = 0;
    char v[160];
    if (cap > 0) {
        out[0] = '\0';
    }
    if (c->width != d.width || c->height != d.height) {
        snprintf(v, sizeof v, "%d", c->width);
        world_line(out, cap, &len, "width", v);
        snprintf(v, sizeof v, "%d", c->height);
        world_line(out, cap, &len, "height", v);
    }
    if (c->primitives != d.primitives) {
        craft_primitives_format(c->primitives, v, sizeof v);
        world_line(out, cap, &len, "primitives", v);
    }
    if (c->n_each != d.n_each) {
        snprintf(v, sizeof v, "%d", c->n_each);
        world_line(out, cap, &len, "n_each", v);
    }
    if (c->workshops != d.workshops) {
        world_line(out, cap, &len, "workshops", c->workshops ? "on" : "off");
    }
    if (c->treasure != d.treasure) {
        world_line(out, cap, &len, "treasure", craft_treasure_name(c->treasure));
    }
    if (c->coarse_view != d.coarse_view) {
        world_line(out, cap, &len, "coarse_view",
                   c->coarse_view ? "on" : "off");
    }
    if (c->max_steps != d.max_steps) {
        snprintf(v, sizeof v, "%d", c->max_steps);
        world_line(out, cap, &len, "max_steps", v);
    }
    if (len < 0 || (size_t)len >= cap) {
        return gr_error(GR_EINVAL, "world config: %zu bytes are too few", cap);
    }
    return len;
}

int bc_world_parse(const char *text, struct craft_config *c)
{
    craft_config_default(c);
    int line_no = 0;
    for (const char *p = text; *p != '\0';) {
        const char *end = strchr(p, '\n');
        size_t n = end != NULL ? (size_t)(end - p) : strlen(p);
        line_no++;
        if (n > 6 && strncmp(p, "world ", 6) == 0) {
            char key[64], value[192], extra[2];
            char line[256];
            if (n >= sizeof line) {
                return gr_error(GR_EFORMAT, "config line %d: too long",
                                line_no);
            }
            memcpy(line, p, n);
            line[n] = '\0';
            if (sscanf(line + 6, "%63s %191s %1s", key, value, extra) != 2) {
                return gr_error(GR_EFORMAT, "config line %d: '%s' is not "
                                            "'world KEY VALUE'",
                                line_no, line);
            }
            int rc = craft_config_set(c, key, value);
            if (rc < 0) {
                return gr_error_wrap(GR_EFORMAT, "config line %d", line_no);
            }
        }
        p += n + (end != NULL);
    }
    if (craft_config_validate(c) < 0) {
        return gr_error_wrap(GR_EFORMAT, "config: the world");
    }
    return 0;
}

int bc_optimizer_ctx(struct gr_optim **out, struct gr_ctx *ctx, float lr)
{
    struct gr_optim_config oc = gr_optim_config_default(GR_OPTIM_ADAM);
    oc.lr = lr;
    oc.beta1 = 0.9f;
    oc.beta2 = 0.999f;
    oc.eps = 1e-8f;
    return gr_optim_new(out, ctx, "adam", &oc);
}

int bc_optimizer_new(struct gr_optim **out, struct ocn_model *m, float lr)
{
    return bc_optimizer_ctx(out, m->ctx, lr);
}

static int ocn_policy_forward(void *model, const struct demo_batch *b,
                              struct ocn_forward_out *out)
{
    return ocn_forward(model, b, out);
}

static int ocn_policy_returns(void *model, const struct craft_config *config,
                              int episodes, uint64_t base_seed,
                              double *mean_return, double *success)
{
    return bc_greedy_returns(model, config, episodes, base_seed, mean_return,
                             success, NULL, NULL);
}

void bc_policy_ocn(struct bc_policy *p, struct ocn_model *m)
{
    memset(p, 0, sizeof *p);
    p->ctx = m->ctx;
    p->n_tasks = m->cfg.n_tasks;
    p->n_options = m->cfg.n_options;
    p->model = m;
    p->forward = ocn_policy_forward;
    p->greedy_returns = ocn_policy_returns;
}

/* ---- subtasks and tasks of a model ------------------------------------------ */

static int same_subtask(const struct craft_subtask *a,
                        const struct craft_subtask *b)
{
    return a->op == b->op && a->kind == b->kind;
}

static int model_tasks(const struct ocn_model *m, struct craft_task *tasks)
{
    for (int i = 0; i < m->cfg.n_tasks; i++) {
        int rc = craft_task_parse(m->cfg.task_names[i], &tasks[i]);
        if (rc < 0) {
            return gr_error_wrap(rc, "the model's task %d", i);
        }
    }
    return 0;
}

int bc_model_subtasks(const struct ocn_model *m, struct craft_subtask *subs,
                      int cap)
{
    struct craft_task tasks[OCN_MAX_TASKS];
    int rc = model_tasks(m, tasks);
    if (rc < 0) {
        return rc;
    }
    int n = 0;
    for (int i = 0; i < m->cfg.n_tasks; i++) {
        for (int j = 0; j < tasks[i].n; j++) {
            int seen = 0;
            for (int k = 0; k < n; k++) {
                seen |= same_subtask(&subs[k], &tasks[i].sub[j]);
            }
            if (!seen && n < cap) {
                subs[n++] = tasks[i].sub[j];
            }
        }
    }
    return n;
}

/* The model must read Craft's observation and act with its actions. */
static int check_craft_model(const struct ocn_model *m, const char *what)
{
    if (m->cfg.obs_size != CRAFT_OBS_SIZE ||
        m->cfg.n_actions != CRAFT_N_ACTIONS) {
        return gr_error(GR_EINVAL,
                        "%s: the model reads %d observations and has %d "
                        "actions; Craft has %d and %d",
                        what, m->cfg.obs_size, m->cfg.n_actions,
                        CRAFT_OBS_SIZE, CRAFT_N_ACTIONS);
    }
    return 0;
}

/* ---- validation -------------------------------------------------------------- */

/* sum / n, NaN when n is 0 (struct bc_alignment's means) */
static double mean_or_nan(double sum, int64_t n)
{
    return n > 0 ? sum / (double)n : NAN;
}

/* One demonstration's boundary placement into al (struct bc_alignment):
 * the offset of each predicted boundary before T-1 to its nearest true
 * one (ties: the earlier), the scores around each true boundary and on
 * the first steps. */
static void add_placement(struct bc_alignment *al, const float *score, int T,
                          const int *truth, int m_true, const int *pred,
                          int np)
{
    const int W = BC_PLACE_MAX;
    for (int k = 0; k < np && m_true > 0; k++) {
        if (pred[k] >= T - 1) {
            continue;
        }
        int near = truth[0];
        for (int j = 1; j < m_true; j++) {
            if (abs(pred[k] - truth[j]) < abs(pred[k] - near)) {
                near = truth[j];
            }
        }
        int off = pred[k] - near;
        al->place_first += pred[k] == 0 && off != 0;
        off = off < -W ? -W : (off > W ? W : off);
        al->place[off + W]++;
    }
    for (int t = 1; t <= W && t < T; t++) {
        al->first[t - 1] += score[t];
        al->n_first[t - 1]++;
    }
    for (int j = 0; j < m_true; j++) {
        for (int k = -W; k <= W && truth[j] < T - 1; k++) {
            int t = truth[j] + 1 + k;
            if (t >= 1 && t < T) {
                al->around[k + W] += score[t];
                al->n_around[k + W]++;
            }
        }
    }
}

/* every label the NMI accepts has a column in struct bc_alignment */
_Static_assert(BC_ALIGN_MAX_SUBTASKS >= SEG_NMI_MAX_LABELS,
               "bc_alignment columns");

/* One demonstration's true segments (split after each boundary step)
 * into al->segments: each counted once, under the option in force on most
 * of its steps (ties: the lower option). */
static void add_segments(struct bc_alignment *al, const uint8_t *boundary,
                         const int *in_force, const int *labels, int T, int K)
{
    int count[OCN_MAX_OPTIONS] = {0};
    for (int t = 0; t < T; t++) {
        count[in_force[t]]++;
        if (boundary[t] || t == T - 1) {
            int best = 0;
            for (int k = 1; k < K; k++) {
                best = count[k] > count[best] ? k : best;
            }
            al->segments[best][labels[t]]++;
            memset(count, 0, sizeof count);
        }
    }
}

/* bc_validate, and when `al` is not NULL the counts of bc_alignment
 * (its steps, sums and counts must start at zero; labels are the set's
 * subtasks in order of first appearance). */
static int validate(const struct bc_policy *pol, const struct demo_set *ds,
                    const int64_t *ids, int64_t n, int batch,
                    struct bc_row *row, struct bc_alignment *al)
{
    struct gr_ctx *ctx = pol->ctx;
    const int K = pol->n_options; /* 0: no options, no NMI */
    if (n < 1 || batch < 1) {
        return gr_error(GR_EINVAL, "validation: %lld demonstrations in "
                                   "batches of %d",
                        (long long)n, batch);
    }
    /* subtask identities of the set's tasks -> small labels for the NMI */
    struct craft_subtask subs[SEG_NMI_MAX_LABELS];
    int n_subs = 0;
    int label[DEMO_MAX_TASKS][CRAFT_MAX_SUBTASKS];
    for (int ti = 0; ti < ds->n_tasks; ti++) {
        for (int j = 0; j < ds->tasks[ti].n; j++) {
            int l = -1;
            for (int k = 0; k < n_subs; k++) {
                if (same_subtask(&subs[k], &ds->tasks[ti].sub[j])) {
                    l = k;
                }
            }
            if (l < 0) {
                if (n_subs == SEG_NMI_MAX_LABELS) {
                    return gr_error(GR_EINVAL, "validation: more than %d "
                                               "distinct subtasks",
                                    SEG_NMI_MAX_LABELS);
                }
                subs[n_subs] = ds->tasks[ti].sub[j];
                l = n_subs++;
            }
            label[ti][j] = l;
        }
    }
    int64_t cap_rows = (int64_t)batch * ds->max_len;
    float *end = malloc((size_t)cap_rows * sizeof *end);
    float *pic = malloc((size_t)(cap_rows * (K > 0 ? K : 1)) * sizeof *pic);
    float *ap = malloc((size_t)cap_rows * sizeof *ap);
    int32_t *am = malloc((size_t)cap_rows * sizeof *am);
    if (end == NULL || pic == NULL || ap == NULL || am == NULL) {
        free(end);
        free(pic);
        free(ap);
        free(am);
        return gr_error(GR_ENOMEM, "validation: out of memory");
    }
    struct demo_batch b;
    memset(&b, 0, sizeof b);
    struct seg_nmi_acc *nmi = malloc(sizeof *nmi);
    if (nmi == NULL) {
        free(end);
        free(pic);
        free(ap);
        free(am);
        return gr_error(GR_ENOMEM, "validation: out of memory");
    }
    seg_nmi_init(nmi);
    double nll = 0.0, f1_0 = 0.0, f1_1 = 0.0;
    int64_t steps = 0, correct = 0, aligned = 0;
    int was = gr_set_grad_enabled(ctx, 0);
    int rc = 0;
    for (int64_t start = 0; start < n && rc == 0; start += batch) {
        int nb = (int)(n - start < batch ? n - start : batch);
        rc = demo_batch_build(&b, ds, ids + start, nb);
        if (rc < 0) {
            break;
        }
        gr_step_reset(ctx);
        struct ocn_forward_out fo;
        memset(&fo, 0, sizeof fo);
        fo.end = end;
        fo.pi_c = K > 0 ? pic : NULL;
        fo.act_prob = ap;
        fo.act_argmax = am;
        rc = pol->forward(pol->model, &b, &fo);
        if (rc < 0) {
            break;
        }
        for (int i = 0; i < b.B; i++) {
            int64_t d = b.demo[i];
            int T = b.len[i], ti = ds->task[d];
            const struct craft_task *task = &ds->tasks[ti];
            float score[1024];
            int truth[CRAFT_MAX_SUBTASKS + 1], pred[CRAFT_MAX_SUBTASKS + 1];
            int labels[1024], in_force[1024], seq[CRAFT_MAX_SUBTASKS];
            if (T > 1024) {
                rc = gr_error(GR_EINVAL, "validation: demonstration of %d "
                                         "steps (at most 1024)",
                              T);
                break;
            }
            int m_true = 0;
            for (int t = 0; t < T; t++) {
                int64_t s = ds->first[d] + t;
                int64_t r = b.row_off[t] + i;
                score[t] = end[r];
                if (ds->boundary[s] && m_true < CRAFT_MAX_SUBTASKS) {
                    truth[m_true++] = t;
                }
                labels[t] = label[ti][ds->subtask[s] < task->n
                                          ? ds->subtask[s]
                                          : task->n - 1];
                nll -= log(fmax((double)ap[r], 1e-12));
                correct += am[r] == ds->action[s];
                int best = 0;
                for (int k = 1; k < K; k++) {
                    if (pic[r * K + k] > pic[r * K + best]) {
                        best = k;
                    }
                }
                if (K > 0) {
                    seg_nmi_add(nmi, best, labels[t]);
                }
                in_force[t] = best;
                if (al != NULL) {
                    al->steps[best][labels[t]] += K > 0;
                    if (t >= 1 && ds->boundary[s - 1]) {
                        al->end_after_boundary += end[r];
                        al->n_after_boundary++;
                        al->sub_start[labels[t]] += end[r];
                        al->n_sub_start[labels[t]]++;
                    } else if (t >= 1) {
                        al->end_elsewhere += end[r];
                        al->n_elsewhere++;
                        al->sub_rest[labels[t]] += end[r];
                        al->n_sub_rest[labels[t]]++;
                    }
                }
            }
            if (al != NULL && K > 0) {
                add_segments(al, ds->boundary + ds->first[d], in_force,
                             labels, T, K);
            }
            int mm = m_true > 0 ? m_true : 1;
            int np = seg_boundaries_top(score, T, mm, pred);
            if (al != NULL) {
                add_placement(al, score, T, truth, m_true, pred, np);
            }
            f1_0 += seg_f1(pred, np, truth, m_true, 0, NULL, NULL);
            f1_1 += seg_f1(pred, np, truth, m_true, 1, NULL, NULL);
            for (int j = 0; j < task->n; j++) {
                seq[j] = label[ti][j];
            }
            aligned += seg_align_matches(pred, np, seq, labels, T);
            steps += T;
        }
    }
    gr_step_reset(ctx);
    gr_set_grad_enabled(ctx, was);
    if (rc == 0) {
        row->nll = nll / (double)steps;
        row->action_acc = (double)correct / (double)steps;
        row->f1_tol0 = f1_0 / (double)n;
        row->f1_tol1 = f1_1 / (double)n;
        row->align_acc = (double)aligned / (double)steps;
        row->nmi = K > 0 ? seg_nmi_value(nmi) : NAN;
    }
    if (rc == 0 && al != NULL) {
        al->n_options = K;
        al->n_subtasks = n_subs;
        memcpy(al->subtasks, subs, (size_t)al->n_subtasks * sizeof *subs);
        al->demos = n;
        al->total_steps = steps;
        al->nmi = row->nmi;
        al->f1_tol0 = row->f1_tol0;
        al->f1_tol1 = row->f1_tol1;
        al->align_acc = row->align_acc;
        for (int k = 0; k < 2 * BC_PLACE_MAX + 1; k++) {
            al->around[k] = mean_or_nan(al->around[k], al->n_around[k]);
        }
        for (int j = 0; j < n_subs; j++) {
            al->sub_start[j] = mean_or_nan(al->sub_start[j], al->n_sub_start[j]);
            al->sub_rest[j] = mean_or_nan(al->sub_rest[j], al->n_sub_rest[j]);
        }
        for (int k = 0; k < BC_PLACE_MAX; k++) {
            al->first[k] = mean_or_nan(al->first[k], al->n_first[k]);
        }
        /* the segment table's NMI, on the same accumulator */
        seg_nmi_init(nmi);
        for (int i = 0; i < K; i++) {
            for (int j = 0; j < al->n_subtasks; j++) {
                nmi->joint[i][j] = (uint64_t)al->segments[i][j];
                nmi->n += (uint64_t)al->segments[i][j];
            }
        }
        al->nmi_segments = seg_nmi_value(nmi);
    }
    free(nmi);
    free(end);
    free(pic);
    free(ap);
    free(am);
    demo_batch_free(&b);
    return rc;
}

int bc_validate_policy(const struct bc_policy *p, const struct demo_set *ds,
                       const int64_t *ids, int64_t n, int batch,
                       struct bc_row *row)
{
    return validate(p, ds, ids, n, batch, row, NULL);
}

int bc_validate(struct ocn_model *m, const struct demo_set *ds,
                const int64_t *ids, int64_t n, int batch, struct bc_row *row)
{
    struct bc_policy p;
    bc_policy_ocn(&p, m);
    return validate(&p, ds, ids, n, batch, row, NULL);
}

int bc_option_alignment(struct ocn_model *m, const struct craft_config *config,
                        int per_task, uint64_t base_seed,
                        struct bc_alignment *out)
{
    struct craft_task tasks[OCN_MAX_TASKS];
    int rc = check_craft_model(m, "alignment");
    if (rc == 0) {
        rc = model_tasks(m, tasks);
    }
    if (rc < 0) {
        return rc;
    }
    struct bc_policy pol;
    bc_policy_ocn(&pol, m);
    return bc_policy_alignment(&pol, tasks, m->cfg.n_tasks, config, per_task,
                               base_seed, out);
}

int bc_policy_alignment(const struct bc_policy *p,
                        const struct craft_task *tasks, int n_tasks,
                        const struct craft_config *config, int per_task,
                        uint64_t base_seed, struct bc_alignment *out)
{
    if (per_task < 1) {
        return gr_error(GR_EINVAL, "alignment: %d demonstrations per task",
                        per_task);
    }
    memset(out, 0, sizeof *out);
    struct demo_set ds;
    int rc = demo_set_generate(&ds, config, tasks, n_tasks, per_task,
                               base_seed, NULL, NULL);
    if (rc < 0) {
        return gr_error_wrap(rc, "alignment");
    }
    int64_t *ids = malloc((size_t)ds.n * sizeof *ids);
    if (ids == NULL) {
        demo_set_free(&ds);
        return gr_error(GR_ENOMEM, "alignment: out of memory");
    }
    for (int64_t i = 0; i < ds.n; i++) {
        ids[i] = i;
    }
    struct bc_row row;
    rc = validate(p, &ds, ids, ds.n, 512, &row, out);
    free(ids);
    demo_set_free(&ds);
    if (rc == 0) {
        out->end_after_boundary =
            mean_or_nan(out->end_after_boundary, out->n_after_boundary);
        out->end_elsewhere = mean_or_nan(out->end_elsewhere, out->n_elsewhere);
    }
    return rc;
}

/* ---- evaluation maps --------------------------------------------------------------- */

int bc_solvable_seeds(const struct craft_config *config,
                      const struct craft_task *task, int j, int episodes,
                      uint64_t base_seed, uint64_t *seeds, int *skipped)
{
    /* about 2.4 % of maps are unsolvable with n_each 4, 0.2 % with 1; a
     * world where no map in 64 per wanted one is solvable is a mistake */
    const uint64_t max_draws = (uint64_t)episodes * 64;
    uint8_t *actions = malloc((size_t)config->max_steps + 1);
    if (actions == NULL) {
        return gr_error(GR_ENOMEM, "evaluation maps: out of memory");
    }
    int kept = 0, skips = 0, rc = 0;
    for (uint64_t n = 0; kept < episodes && rc == 0; n++) {
        if (n >= max_draws) {
            rc = gr_error(GR_EINVAL,
                          "evaluation maps: only %d of the first %llu maps "
                          "of task %s can be solved by the expert",
                          kept, (unsigned long long)n, task->name);
            break;
        }
        uint64_t seed = craft_episode_seed(base_seed, (uint64_t)j, n);
        struct craft_world w;
        int length = 0;
        rc = craft_world_reset(&w, config, seed, task);
        if (rc == 0) {
            rc = craft_expert_rollout(&w, actions, config->max_steps + 1,
                                      &length);
        }
        if (rc == CRAFT_EXPERT_OK) {
            seeds[kept++] = seed;
        } else if (rc > 0) { /* unreachable or out of time: not a test */
            skips++;
            rc = 0;
        }
    }
    free(actions);
    if (skipped != NULL) {
        *skipped = skips;
    }
    return rc < 0 ? rc : 0;
}

/* ---- greedy returns -------------------------------------------------------------- */

int bc_greedy_returns(struct ocn_model *m, const struct craft_config *config,
                      int episodes, uint64_t base_seed, double *mean_return,
                      double *success, double *task_return,
                      double *task_success)
{
    const int n_tasks = m->cfg.n_tasks;
    struct craft_task tasks[OCN_MAX_TASKS];
    int rc = check_craft_model(m, "greedy returns");
    if (rc == 0) {
        rc = model_tasks(m, tasks);
    }
    if (rc < 0) {
        return rc;
    }
    if (episodes < 1) {
        return gr_error(GR_EINVAL, "greedy returns: %d episodes", episodes);
    }
    const int E = episodes * n_tasks;
    struct craft_world *w = malloc((size_t)E * sizeof *w);
    float *obs = malloc((size_t)E * CRAFT_OBS_SIZE * sizeof *obs);
    int32_t *act = malloc((size_t)E * sizeof *act);
    uint8_t *done = calloc((size_t)E, 1);
    if (w == NULL || obs == NULL || act == NULL || done == NULL) {
        free(w);
        free(obs);
        free(act);
        free(done);
        return gr_error(GR_ENOMEM, "greedy returns: out of memory");
    }
    struct ocn_act_state st;
    rc = ocn_act_state_init(&st, m, E);
    uint64_t *seeds = malloc((size_t)episodes * sizeof *seeds);
    if (seeds == NULL && rc == 0) {
        rc = gr_error(GR_ENOMEM, "greedy returns: out of memory");
    }
    for (int ti = 0; rc == 0 && ti < n_tasks; ti++) {
        struct craft_config cfg;
        craft_config_for_task(config, &tasks[ti], &cfg);
        rc = bc_solvable_seeds(&cfg, &tasks[ti], ti, episodes, base_seed,
                               seeds, NULL);
        for (int n = 0; rc == 0 && n < episodes; n++) {
            int j = ti * episodes + n;
            rc = craft_world_reset(&w[j], &cfg, seeds[n], &tasks[ti]);
            ocn_act_reset(&st, j, ti);
        }
    }
    free(seeds);
    int left = E;
    while (rc == 0 && left > 0) {
        for (int j = 0; j < E; j++) {
            craft_world_observe(&w[j], obs + (int64_t)j * CRAFT_OBS_SIZE);
        }
        rc = ocn_act(m, &st, obs, act, NULL, NULL, NULL);
        for (int j = 0; rc == 0 && j < E; j++) {
            if (done[j]) {
                continue;
            }
            struct craft_step s;
            rc = craft_world_step(&w[j], act[j], &s);
            if (s.terminated || s.truncated) {
                done[j] = 1;
                left--;
            }
        }
    }
    if (rc == 0) {
        double R = 0.0, S = 0.0;
        for (int ti = 0; ti < n_tasks; ti++) {
            double r = 0.0, s = 0.0;
            for (int n = 0; n < episodes; n++) {
                const struct craft_world *x = &w[ti * episodes + n];
                r += x->episode_return;
                s += x->k >= x->task.n;
            }
            if (task_return != NULL) {
                task_return[ti] = r / episodes;
            }
            if (task_success != NULL) {
                task_success[ti] = s / episodes;
            }
            R += r;
            S += s;
        }
        *mean_return = R / E;
        *success = S / E;
    }
    ocn_act_state_free(&st);
    free(w);
    free(obs);
    free(act);
    free(done);
    return rc;
}

/* ---- success matrix ----------------------------------------------------------------- */

int bc_success_matrix(struct ocn_model *m, const struct craft_config *config,
                      const struct craft_subtask *subs, int n_subs,
                      int episodes, uint64_t base_seed, double *rate)
{
    const int K = m->cfg.n_options, d = m->cfg.hidden, A = m->cfg.n_actions;
    if (n_subs < 1 || episodes < 1) {
        return gr_error(GR_EINVAL, "success matrix: %d subtasks, %d episodes",
                        n_subs, episodes);
    }
    if (check_craft_model(m, "success matrix") < 0) {
        return GR_EINVAL;
    }
    /* world (i, j, n): option i, subtask j, episode n */
    const int per = n_subs * episodes, E = K * per;
    struct craft_world *w = malloc((size_t)E * sizeof *w);
    float *obs = malloc((size_t)E * CRAFT_OBS_SIZE * sizeof *obs);
    float *ho = calloc((size_t)K * E * d, sizeof *ho);
    float *probs = malloc((size_t)K * E * A * sizeof *probs);
    uint8_t *done = calloc((size_t)E, 1);
    if (w == NULL || obs == NULL || ho == NULL || probs == NULL ||
        done == NULL) {
        free(w);
        free(obs);
        free(ho);
        free(probs);
        free(done);
        return gr_error(GR_ENOMEM, "success matrix: out of memory");
    }
    struct ocn_act_state st;
    int rc = ocn_act_state_init(&st, m, E);
    uint64_t *seeds = malloc((size_t)episodes * sizeof *seeds);
    if (seeds == NULL && rc == 0) {
        rc = gr_error(GR_ENOMEM, "success matrix: out of memory");
    }
    for (int j = 0; j < n_subs && rc == 0; j++) {
        struct craft_task task;
        rc = craft_task_from_subtasks(&subs[j], 1, NULL, &task);
        struct craft_config cfg;
        craft_config_for_task(config, &task, &cfg);
        if (rc == 0) {
            rc = bc_solvable_seeds(&cfg, &task, j, episodes, base_seed,
                                   seeds, NULL);
        }
        for (int n = 0; n < episodes && rc == 0; n++) {
            for (int i = 0; i < K && rc == 0; i++) {
                rc = craft_world_reset(&w[i * per + j * episodes + n], &cfg,
                                       seeds[n], &task);
            }
        }
    }
    free(seeds);
    int left = E;
    while (rc == 0 && left > 0) {
        for (int x = 0; x < E; x++) {
            craft_world_observe(&w[x], obs + (int64_t)x * CRAFT_OBS_SIZE);
        }
        /* every option on every world; world x uses its own option's row */
        rc = ocn_options_step(m, &st, obs, ho, probs, NULL);
        for (int x = 0; rc == 0 && x < E; x++) {
            if (done[x]) {
                continue;
            }
            int i = x / per;
            const float *p = probs + ((int64_t)i * E + x) * A;
            int a = 0;
            for (int k = 1; k < A; k++) {
                if (p[k] > p[a]) {
                    a = k;
                }
            }
            struct craft_step s;
            rc = craft_world_step(&w[x], a, &s);
            if (s.terminated || s.truncated) {
                done[x] = 1;
                left--;
            }
        }
    }
    if (rc == 0) {
        for (int i = 0; i < K; i++) {
            for (int j = 0; j < n_subs; j++) {
                int s = 0;
                for (int n = 0; n < episodes; n++) {
                    const struct craft_world *x = &w[i * per + j * episodes + n];
                    s += x->k >= x->task.n;
                }
                rate[i * n_subs + j] = (double)s / episodes;
            }
        }
    }
    ocn_act_state_free(&st);
    free(w);
    free(obs);
    free(ho);
    free(probs);
    free(done);
    return rc;
}

/* ---- training ------------------------------------------------------------------------ */

/* Permutation of 0..n-1 for `epoch` (Fisher-Yates on Philox). */
static void epoch_perm(uint64_t seed, uint64_t epoch, int64_t n, int64_t *p)
{
    for (int64_t i = 0; i < n; i++) {
        p[i] = i;
    }
    struct gr_philox_stream r =
        gr_philox_stream_init(gr_mix64(seed ^ 0xBC0000000000ull) ^ epoch, 0);
    for (int64_t i = n - 1; i > 0; i--) {
        uint64_t hi = gr_philox_next_u32(&r), lo = gr_philox_next_u32(&r);
        uint64_t u = (hi << 32) | lo;
        int64_t j = (int64_t)(u % (uint64_t)(i + 1));
        int64_t t = p[i];
        p[i] = p[j];
        p[j] = t;
    }
}

/* metrics.csv of a BC run (agents/README.md): the step key, then the
 * validation metrics, the training NLL since the previous row, the greedy
 * returns and the time. */
static const struct train_column bc_columns[] = {
    {"update", "%.0f"},     {"nll", "%.9g"},         {"action_acc", "%.9g"},
    {"f1_tol0", "%.9g"},    {"f1_tol1", "%.9g"},     {"align_acc", "%.9g"},
    {"nmi", "%.9g"},        {"train_nll", "%.9g"},   {"greedy_return", "%.9g"},
    {"greedy_success", "%.9g"}, {"wall_s", "%.9g"},
};

const struct train_column *bc_metrics_columns(int *n)
{
    *n = (int)(sizeof bc_columns / sizeof bc_columns[0]);
    return bc_columns;
}

static int append_row(struct train_run *run, const struct bc_row *r)
{
    struct train_cell c[] = {
        TRAIN_NUM(r->update),        TRAIN_NUM(r->nll),
        TRAIN_NUM(r->action_acc),    TRAIN_NUM(r->f1_tol0),
        TRAIN_NUM(r->f1_tol1),       TRAIN_NUM(r->align_acc),
        TRAIN_NUM(r->nmi),           TRAIN_NUM(r->train_nll),
        TRAIN_NUM(r->greedy_return), TRAIN_NUM(r->greedy_success),
        TRAIN_NUM(r->wall_s),
    };
    return train_metrics_row(run, c);
}

/* Training state kept in last.ckpt: update, best update, best NLL bits. */
static struct gr_tensor *state_buffer(struct gr_ctx *ctx)
{
    struct gr_tensor *t = gr_ctx_find(ctx, "bc.state");
    if (t == NULL) {
        t = gr_buffer_new(ctx, "bc.state", GR_I32, gr_shape1(4));
    }
    return t;
}

static int save_state(struct gr_tensor *t, int64_t update, int64_t best_update,
                      double best_nll)
{
    uint64_t bits;
    memcpy(&bits, &best_nll, sizeof bits);
    int32_t v[4] = {(int32_t)update, (int32_t)best_update,
                    (int32_t)(uint32_t)(bits & 0xFFFFFFFFu),
                    (int32_t)(uint32_t)(bits >> 32)};
    return gr_tensor_set_host(t, v);
}

int bc_train(struct ocn_model *m, struct gr_optim *opt, struct demo_set *ds,
             const struct bc_options *o, struct bc_result *res)
{
    struct bc_policy p;
    bc_policy_ocn(&p, m);
    return bc_train_policy(&p, opt, ds, o, res);
}

int bc_train_policy(const struct bc_policy *pol, struct gr_optim *opt,
                    struct demo_set *ds, const struct bc_options *o,
                    struct bc_result *res)
{
    struct gr_ctx *ctx = pol->ctx;
    if (ds->train == NULL || ds->n_train < 1 || ds->n_val < 1) {
        return gr_error(GR_EINVAL, "behaviour cloning: the demonstrations "
                                   "are not split (demo_set_split)");
    }
    if (o->batch < 1 || o->updates < 0 || o->eval_every < 1 ||
        o->return_every < 0 || o->val_batch < 1) {
        return gr_error(GR_EINVAL, "behaviour cloning: batch %d, updates %lld, "
                                   "eval every %d, returns every %d",
                        o->batch, (long long)o->updates, o->eval_every,
                        o->return_every);
    }
    if (ds->n_tasks != pol->n_tasks) {
        return gr_error(GR_EINVAL, "behaviour cloning: %d tasks in the "
                                   "demonstrations, %d in the model",
                        ds->n_tasks, pol->n_tasks);
    }
    /* With MPI every process trains and evaluates (the weights stay
     * identical); only process 0 writes. Another process has a run only to
     * resume from (o->run NULL on a fresh start). */
    struct train_run *run = o->run;
    int rank = train_mpi_rank(), n_ranks = train_mpi_size();
    int writer = rank == 0;
    if (run == NULL && writer) {
        return gr_error(GR_EINVAL, "behaviour cloning: no run folder "
                                   "(train_run_open first)");
    }
    struct train_run no_run;
    memset(&no_run, 0, sizeof no_run);
    no_run.last_saved_step = -1;
    struct gr_tensor *state = state_buffer(ctx);
    if (state == NULL) {
        return gr_error(GR_EINVAL, "behaviour cloning: %s",
                        gr_ctx_error(ctx));
    }
    int64_t update = 0, best_update = -1;
    double best_nll = INFINITY;
    int rc;
    if (run != NULL && run->spec.resume) {
        rc = gr_checkpoint_load(ctx, run->path_last, GR_CKPT_ALL, NULL);
        if (rc < 0) {
            return gr_error_wrap(rc, "resuming");
        }
        int32_t v[4];
        rc = gr_tensor_to_host(state, v);
        if (rc < 0) {
            return rc;
        }
        update = v[0];
        best_update = v[1];
        uint64_t bits = (uint64_t)(uint32_t)v[2] |
                        ((uint64_t)(uint32_t)v[3] << 32);
        memcpy(&best_nll, &bits, sizeof best_nll);
        if (update > o->updates) {
            return gr_error(GR_EINVAL, "resuming: %s is at update %lld, past "
                                       "--updates %lld",
                            run->path_last, (long long)update,
                            (long long)o->updates);
        }
        rc = writer ? train_metrics_resume(run, update) : 0;
        if (rc < 0) {
            return rc;
        }
        train_note_last_saved(run, update);
    }
    if (o->updates == 0 && !(run != NULL && run->spec.resume)) {
        /* --updates 0 (issue 21 §2): the initial model as best.ckpt and
         * last.ckpt, nothing evaluated, no metrics row; --resume from it
         * evaluates update 0 as a fresh run does (best_update -1) */
        rc = save_state(state, 0, -1, INFINITY);
        if (rc == 0 && writer) {
            rc = train_save(run, TRAIN_BEST, ctx, o->config_text,
                            GR_CKPT_PARAMS, 0);
        }
        if (rc == 0 && writer) {
            rc = train_save(run, TRAIN_LAST, ctx, o->config_text,
                            GR_CKPT_ALL, 0);
        }
        if (rc == 0 && res != NULL) {
            memset(res, 0, sizeof *res);
            res->best_update = -1;
            res->best_nll = NAN;
        }
        return rc;
    }
    int64_t n_train = ds->n_train;
    int64_t *perm = malloc((size_t)n_train * 2 * sizeof *perm);
    int64_t *ids = malloc((size_t)o->batch * sizeof *ids);
    if (perm == NULL || ids == NULL) {
        free(perm);
        free(ids);
        return gr_error(GR_ENOMEM, "behaviour cloning: out of memory");
    }
    int64_t perm_epoch[2] = {-1, -1};
    struct demo_batch b;
    memset(&b, 0, sizeof b);
    struct gr_progress prog;
    gr_progress_start(&prog, "bc", (uint64_t)o->updates, "updates", o->quiet);
    gr_progress_update(&prog, (uint64_t)update);
    double t0 = gr_now_seconds();
    double train_sum = 0.0;
    int64_t train_n = 0, start_update = update;
    int resumed = run != NULL && run->spec.resume;
    struct bc_row row;
    memset(&row, 0, sizeof row);
    int stopped = 0;
    rc = 0;
    for (;;) {
        /* validation, checkpoints, metrics row */
        int at_end = update == o->updates;
        int do_eval = (update % o->eval_every == 0) || at_end;
        if (do_eval &&
            !(resumed && update == start_update && best_update >= 0)) {
            row.update = update;
            row.nll = row.action_acc = row.f1_tol0 = row.f1_tol1 = NAN;
            row.align_acc = row.nmi = row.greedy_return = NAN;
            row.greedy_success = NAN;
            row.train_nll = train_n > 0 ? train_sum / train_n : NAN;
            rc = validate(pol, ds, ds->val, ds->n_val, o->val_batch, &row,
                          NULL);
            if (rc < 0) {
                break;
            }
            if (o->return_every > 0 && pol->greedy_returns != NULL &&
                (update % o->return_every == 0 || at_end)) {
                rc = pol->greedy_returns(pol->model, &ds->config,
                                         o->return_episodes, BC_EVAL_SEED,
                                         &row.greedy_return,
                                         &row.greedy_success);
                if (rc < 0) {
                    break;
                }
            }
            row.wall_s = gr_now_seconds() - t0;
            train_sum = 0.0;
            train_n = 0;
            if (row.nll < best_nll) {
                best_nll = row.nll;
                best_update = update;
                if (writer) {
                    rc = train_save(run, TRAIN_BEST, ctx, o->config_text,
                                    GR_CKPT_PARAMS, update);
                }
            }
            /* the row first, then last.ckpt: a run killed in between
             * resumes from the previous checkpoint and writes it again */
            if (rc == 0 && writer) {
                rc = append_row(run, &row);
            }
            if (rc == 0) {
                rc = save_state(state, update, best_update, best_nll);
            }
            if (rc == 0 && writer) {
                rc = train_save(run, TRAIN_LAST, ctx, o->config_text,
                                GR_CKPT_ALL, update);
            }
            if (rc < 0) {
                break;
            }
            char extra[96];
            int ne = snprintf(extra, sizeof extra, "val nll %.4f acc %.3f",
                              row.nll, row.action_acc);
            if (!isnan(row.nmi) && ne > 0 && (size_t)ne < sizeof extra) {
                snprintf(extra + ne, sizeof extra - (size_t)ne, " nmi %.3f",
                         row.nmi);
            }
            gr_progress_set_extra(&prog, extra);
            if (o->on_row != NULL && writer) {
                o->on_row(o->on_row_arg, &row);
            }
        }
        if (at_end) {
            break;
        }
        /* every process stops at the same update, or none does */
        if (train_allreduce_max_int(train_stop_requested() != 0)) {
            /* a signal: last.ckpt at this boundary (the metrics row of the
             * next evaluation counts the training NLL from here) */
            if (writer && run->last_saved_step != update) {
                rc = save_state(state, update, best_update, best_nll);
                if (rc == 0) {
                    rc = train_save(run, TRAIN_LAST, ctx, o->config_text,
                                    GR_CKPT_ALL, update);
                }
            }
            stopped = 1;
            break;
        }
        /* the batch of this update: positions u·B .. u·B + B - 1 of the
         * concatenated epoch permutations */
        /* with MPI, this process's share of the batch (train/mpi.h) */
        int j0 = (int)((int64_t)o->batch * rank / n_ranks);
        int j1 = (int)((int64_t)o->batch * (rank + 1) / n_ranks);
        for (int j = j0; j < j1; j++) {
            int64_t pos = update * o->batch + j;
            int64_t epoch = pos / n_train, k = pos % n_train;
            int slot = (int)(epoch & 1);
            if (perm_epoch[slot] != epoch) {
                epoch_perm(o->seed, (uint64_t)epoch, n_train,
                           perm + slot * n_train);
                perm_epoch[slot] = epoch;
            }
            ids[j - j0] = ds->train[perm[slot * n_train + k]];
        }
        rc = demo_batch_build(&b, ds, ids, j1 - j0);
        if (rc < 0) {
            break;
        }
        gr_step_reset(ctx);
        struct ocn_forward_out fo;
        memset(&fo, 0, sizeof fo);
        rc = pol->forward(pol->model, &b, &fo);
        /* the whole batch's NLL and steps (one process: as they are) */
        double part[2] = {fo.nll_sum, (double)b.rows};
        if (rc == 0) {
            rc = train_allreduce_sum(part, 2);
        }
        if (rc == 0) {
            rc = train_check_finite(run ? run : &no_run, part[0], update + 1);
            if (rc < 0) {
                break;
            }
        }
        if (rc == 0) {
            rc = gr_backward(ctx, fo.loss);
        }
        if (rc == 0 && n_ranks > 1) {
            /* each loss is its own steps' mean: weight by the share */
            rc = train_allreduce_grads(ctx, (double)b.rows / part[1]);
        }
        if (rc == 0) {
            rc = gr_clip_grad_norm(ctx, NULL, o->clip, NULL);
        }
        if (rc == 0) {
            rc = gr_optim_step(opt);
        }
        if (rc == 0) {
            rc = gr_zero_grad(ctx);
        }
        if (rc < 0) {
            gr_error_wrap(rc, "update %lld", (long long)update + 1);
            break;
        }
        train_sum += part[0] / part[1];
        train_n++;
        update++;
        gr_progress_update(&prog, (uint64_t)update);
    }
    gr_progress_finish(&prog);
    gr_step_reset(ctx);
    double secs = gr_now_seconds() - t0;
    free(perm);
    free(ids);
    demo_batch_free(&b);
    if (rc < 0) {
        return rc;
    }
    if (res != NULL) {
        res->last = row;
        res->stopped = stopped;
        res->stopped_at = update;
        res->best_update = best_update;
        res->best_nll = best_nll;
        res->seconds = secs;
        res->updates_per_s =
            secs > 0 ? (double)(update - start_update) / secs : 0.0;
    }
    return 0;
}
