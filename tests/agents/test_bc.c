/* Behaviour cloning for real, small: expert demonstrations of AC and CD
 * (200 per task, 160/40 split), an OCN with K = 3, d = w = 32, batch 32,
 * Adam lr 3e-3, 100 updates, seeded. The validation NLL must fall by at
 * least 40 % from its value at update 0 (about ln 5 = 1.61; it reaches
 * about 0.68, 58 % lower), the metrics file must have its columns and
 * rows, the best checkpoint must be the lowest NLL, and a run stopped at
 * update 40 and resumed to 100 must end with the same checkpoint bytes and
 * the same metrics as the uninterrupted run. Also: every cell of the
 * option x subtask success matrix equals that option's own greedy
 * rollouts on the same maps, and every task's greedy return and success
 * equal the OCN's rollouts, both played by a double-precision
 * implementation of ocn.md §3, §5 and §6 written here (check_rollouts);
 * and the option alignment counts every demonstration step once (MoE:
 * e ≡ 1; one option: NMI 0). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agents/bc.h"
#include "agents/segment.h"
#include "core/error.h"
#include "core/files.h"
#include "envs/expert.h"
#include "kernels/checkpoint.h"
#include "kernels/tape.h"
#include "tests/test.h"

#define N_UPDATES 100
#define N_ROWS (N_UPDATES / 20 + 1)

static struct gr_ctx *new_ctx(void)
{
    struct gr_ctx_config cc = gr_ctx_config_default();
    cc.device = GR_DEVICE_CPU;
    cc.threads = 1;
    struct gr_ctx *ctx = NULL;
    if (gr_ctx_new(&ctx, &cc) < 0) {
        fprintf(stderr, "context: %s\n", gr_last_error());
    }
    return ctx;
}

static void small_config(struct ocn_config *c)
{
    ocn_config_default(c);
    c->hidden = 32;
    c->width = 32;
    c->n_tasks = 2;
    strcpy(c->task_names[0], "AC");
    strcpy(c->task_names[1], "CD");
}

/* > 0: the metrics row of this update asks training to stop, as SIGINT
 * would (train/train.h). */
static int64_t stop_update = -1;

static void stop_at_row(void *arg, const struct bc_row *row)
{
    if (row->update == *(const int64_t *)arg) {
        train_request_stop(SIGINT);
    }
}

/* One training run into `dir` (fresh, or resumed) up to `updates`. */
static int train(struct demo_set *ds, const char *dir, int64_t updates,
                 int resume, struct bc_result *res)
{
    struct gr_ctx *ctx = new_ctx();
    if (ctx == NULL) {
        return -1;
    }
    struct ocn_config cfg;
    small_config(&cfg);
    struct ocn_model m;
    struct gr_optim *opt = NULL;
    char text[OCN_CONFIG_TEXT_CAP];
    int rc = ocn_model_init(&m, ctx, &cfg, 42);
    if (rc == 0) {
        rc = bc_optimizer_new(&opt, &m, 3e-3f);
    }
    if (rc == 0) {
        rc = ocn_config_format(&cfg, text, sizeof text) < 0 ? -1 : 0;
    }
    struct bc_options o;
    bc_options_default(&o);
    o.batch = 32;
    o.updates = updates;
    o.lr = 3e-3f;
    o.eval_every = 20;
    o.return_every = N_UPDATES;
    o.return_episodes = 3;
    o.val_batch = 16;
    o.seed = 9;
    o.quiet = 1;
    o.config_text = text;
    o.on_row = stop_at_row;
    o.on_row_arg = &stop_update;
    struct train_run run;
    struct train_run_spec spec = train_run_spec_default();
    char *argv[] = {"bc", "--out", (char *)dir};
    spec.dir = dir;
    spec.force = !resume;
    spec.resume = resume;
    spec.argc = 3;
    spec.argv = argv;
    spec.config_text = text;
    spec.check_config = 1;
    spec.columns = bc_metrics_columns(&spec.n_columns);
    spec.what = "train bc";
    if (rc == 0) {
        rc = train_run_open(&run, &spec);
        if (rc == 0) {
            o.run = &run;
            rc = bc_train(&m, opt, ds, &o, res);
            train_run_close(&run);
        }
    }
    train_request_stop(0);
    if (rc < 0) {
        fprintf(stderr, "train %s: %s\n", dir, gr_last_error());
    }
    gr_optim_free(opt);
    gr_ctx_free(ctx);
    return rc;
}

/* The metrics rows: update and the 7 deterministic metric columns. */
static int read_rows(const char *dir, double rows[][8], int cap)
{
    char path[512];
    snprintf(path, sizeof path, "%s/metrics.csv", dir);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return -1;
    }
    char line[1024];
    int n = 0;
    if (fgets(line, sizeof line, f) == NULL ||
        strcmp(line, "update,nll,action_acc,f1_tol0,f1_tol1,align_acc,nmi,"
                     "train_nll,greedy_return,greedy_success,wall_s\n") != 0) {
        fclose(f);
        return -2;
    }
    while (n < cap && fgets(line, sizeof line, f) != NULL) {
        char *p = line;
        for (int k = 0; k < 8; k++) {
            char *end;
            rows[n][k] = strtod(p, &end);
            if (end == p) {
                rows[n][k] = NAN; /* empty cell */
            }
            p = strchr(p, ',');
            if (p == NULL) {
                break;
            }
            p++;
        }
        n++;
    }
    fclose(f);
    return n;
}

static int same_file(const char *a, const char *b)
{
    char *x = NULL, *y = NULL;
    size_t nx = 0, ny = 0;
    int same = gr_read_file(a, 64u << 20, &x, &nx) == 0 &&
               gr_read_file(b, 64u << 20, &y, &ny) == 0 && nx == ny &&
               memcmp(x, y, nx) == 0;
    free(x);
    free(y);
    return same;
}

/* The NMI of a 3 x 3 count table (option, subtask) through seg_nmi_add,
 * pair by pair, and its column sums. */
static double table_nmi(const int64_t tab[][BC_ALIGN_MAX_SUBTASKS],
                        int64_t col[3])
{
    struct seg_nmi_acc *acc = malloc(sizeof *acc);
    if (acc == NULL) {
        return NAN;
    }
    seg_nmi_init(acc);
    for (int j = 0; j < 3; j++) {
        col[j] = 0;
        for (int i = 0; i < 3; i++) {
            col[j] += tab[i][j];
            for (int64_t c = 0; c < tab[i][j]; c++) {
                seg_nmi_add(acc, i, j);
            }
        }
    }
    double v = seg_nmi_value(acc);
    free(acc);
    return v;
}

/* bc_option_alignment on 20 demonstrations per task of the trained
 * model, against counts taken from the same demonstrations generated
 * here: every step counted once, in its subtask's column; one boundary per
 * AC / CD demonstration; the NMI of the counted pairs recomputed from the
 * table. */
static void check_alignment(struct ocn_model *m,
                            const struct craft_config *cc)
{
    struct bc_alignment al;
    CHECK(bc_option_alignment(m, cc, 20, BC_ALIGN_SEED, &al) == 0);
    struct demo_set ds;
    struct craft_task tasks[2];
    craft_task_parse("AC", &tasks[0]);
    craft_task_parse("CD", &tasks[1]);
    CHECK(demo_set_generate(&ds, cc, tasks, 2, 20, BC_ALIGN_SEED, NULL,
                            NULL) == 0);
    CHECK(al.n_options == 3 && al.n_subtasks == 3 && al.demos == ds.n &&
          al.total_steps == ds.n_steps);
    CHECK(craft_subtask_letter(&al.subtasks[0]) == 'A' &&
          craft_subtask_letter(&al.subtasks[1]) == 'C' &&
          craft_subtask_letter(&al.subtasks[2]) == 'D');
    /* steps per subtask letter, from the demonstrations */
    int64_t want[3] = {0, 0, 0};
    for (int64_t d = 0; d < ds.n; d++) {
        for (int t = 0; t < ds.len[d]; t++) {
            int k = ds.subtask[ds.first[d] + t];
            /* AC: A, C; CD: C, D (the last step keeps its subtask) */
            int col = ds.task[d] == 0 ? (k == 0 ? 0 : 1) : (k == 0 ? 1 : 2);
            want[col]++;
        }
    }
    /* steps: each in its subtask's column */
    int64_t col[3];
    double nmi = table_nmi(al.steps, col);
    for (int j = 0; j < 3; j++) {
        CHECK_MSG(col[j] == want[j], "subtask %d: %lld steps, want %lld", j,
                  (long long)col[j], (long long)want[j]);
    }
    CHECK(fabs(nmi - al.nmi) < 1e-12);
    /* segments: 20 AC (A, C) and 20 CD (C, D) */
    nmi = table_nmi(al.segments, col);
    CHECK(col[0] == ds.n / 2 && col[1] == ds.n && col[2] == ds.n / 2);
    CHECK(fabs(nmi - al.nmi_segments) < 1e-12);
    CHECK(al.n_after_boundary == ds.n);
    CHECK(al.n_after_boundary + al.n_elsewhere == ds.n_steps - ds.n);
    CHECK(al.end_after_boundary >= 0.0 && al.end_after_boundary <= 1.0 &&
          al.end_elsewhere >= 0.0 && al.end_elsewhere <= 1.0);
    printf("alignment of the trained model: NMI %.3f (segments %.3f), e_t "
           "%.3f after a boundary, %.3f elsewhere\n",
           al.nmi, al.nmi_segments, al.end_after_boundary, al.end_elsewhere);
    demo_set_free(&ds);
}

/* A scripted policy for bc_policy_alignment's boundary placement: it
 * knows the demonstrations (generated here as bc_policy_alignment does)
 * and scores b_t = 1 exactly at t = g + 1 + offset for every true
 * boundary g before the last step, 0 elsewhere; it copies the actions. */
struct scripted {
    struct demo_set ds;
    int offset;
};

static int scripted_forward(void *model, const struct demo_batch *b,
                            struct ocn_forward_out *out)
{
    const struct scripted *sp = model;
    const struct demo_set *ds = &sp->ds;
    for (int i = 0; i < b->B; i++) {
        int64_t d = b->demo[i], first = ds->first[d];
        int T = b->len[i];
        for (int t = 0; t < T; t++) {
            int64_t r = b->row_off[t] + i;
            int g = t - 1 - sp->offset; /* the boundary this step marks */
            out->end[r] = g >= 0 && g < T - 1 && ds->boundary[first + g]
                              ? 1.0f
                              : 0.0f;
            out->act_prob[r] = 1.0f;
            out->act_argmax[r] = ds->action[first + t];
        }
    }
    return 0;
}

/* bc_policy_alignment's placement against the scripted truth: with offset
 * 0 every predicted boundary is a true one (F1 1 at tolerance 0); with +2
 * they sit two steps late (offset +2's bin, F1 at tolerance 1 below 1) and
 * the score profile is 1 there. */
static void check_placement(const struct craft_config *cc)
{
    struct craft_task tasks[2];
    craft_task_parse("AC", &tasks[0]);
    craft_task_parse("CD", &tasks[1]);
    struct scripted sp;
    CHECK(demo_set_generate(&sp.ds, cc, tasks, 2, 15, BC_ALIGN_SEED, NULL,
                            NULL) == 0);
    struct gr_ctx *ctx = new_ctx();
    struct bc_policy pol = {ctx, 2, 0, &sp, scripted_forward, NULL};
    const int W = BC_PLACE_MAX;
    struct bc_alignment al;
    /* one boundary before the last step per demonstration */
    const int64_t inner = sp.ds.n;
    for (int offset = 0; offset <= 2; offset += 2) {
        sp.offset = offset;
        CHECK(bc_policy_alignment(&pol, tasks, 2, cc, 15, BC_ALIGN_SEED,
                                  &al) == 0);
        int64_t total = 0;
        for (int k = 0; k <= 2 * W; k++) {
            total += al.place[k];
        }
        CHECK_MSG(total == inner, "%lld predicted inner boundaries, want %lld",
                  (long long)total, (long long)inner);
        CHECK(al.n_around[W] == inner && al.around[W + offset] == 1.0);
        CHECK(al.demos == sp.ds.n && al.n_options == 0);
        /* the expected bins, from the demonstrations: the scored step
         * t = g + 1 + offset predicts g + offset when it exists (t < T),
         * else the zero scores tie and P_top takes t = 1 (boundary 0);
         * the offset is to the nearest of g and T-1 */
        int64_t want[2 * BC_PLACE_MAX + 1] = {0}, want_first = 0;
        for (int64_t d = 0; d < sp.ds.n; d++) {
            int T = sp.ds.len[d], g = -1;
            for (int t = 0; t < T - 1; t++) {
                g = sp.ds.boundary[sp.ds.first[d] + t] ? t : g;
            }
            int pred = g + 1 + offset < T ? g + offset : 0;
            int off = abs(pred - g) <= abs(pred - (T - 1)) ? pred - g
                                                            : pred - (T - 1);
            want_first += pred == 0 && off != 0;
            want[(off < -W ? -W : (off > W ? W : off)) + W]++;
        }
        for (int k = 0; k <= 2 * W; k++) {
            CHECK_MSG(al.place[k] == want[k], "offset %d, bin %+d: %lld, "
                      "want %lld", offset, k - W, (long long)al.place[k],
                      (long long)want[k]);
        }
        CHECK(al.place_first == want_first);
        printf("scripted boundaries %d steps late: %lld at step 0\n", offset,
               (long long)want_first);
        if (offset == 0) {
            CHECK(al.place[W] == inner && al.f1_tol0 == 1.0 &&
                  al.f1_tol1 == 1.0 && al.align_acc == 1.0);
            /* per subtask (A, C, D): 1 on the first step of the second
             * subtask (C of AC, D of CD), 0 on every other step; A never
             * starts after a boundary */
            CHECK(al.n_subtasks == 3 && isnan(al.sub_start[0]) &&
                  al.sub_start[1] == 1.0 && al.sub_start[2] == 1.0);
            CHECK(al.sub_rest[0] == 0.0 && al.sub_rest[1] == 0.0 &&
                  al.sub_rest[2] == 0.0);
        } else {
            /* most boundaries two steps late, none on time */
            CHECK(al.place[W + 2] > inner / 2 && al.place[W] == 0);
            CHECK(al.f1_tol0 < 1.0 && al.f1_tol1 < 1.0 &&
                  al.align_acc < 1.0);
        }
    }
    gr_ctx_free(ctx);
    demo_set_free(&sp.ds);
}

/* ---- rollouts written here (ocn.md §3, §5, §6), for the success matrix
 * and the greedy returns: plain double-precision loops over the model's
 * parameters, one world at a time, sharing nothing with agents/ but the
 * parameter layout (the 15 tensors of ocn_model, read to the host). ---- */

struct roll_model {
    int K, d, w, O, A, blind, ig_lo, ig_hi;
    double tau;
    double *p[15]; /* ctrl.l1.wx, ctrl.l1.wh, ctrl.l1.bias, ctrl.l2.weight,
                      ctrl.l2.bias, ctrl.head.weight, ctrl.head.bias,
                      ctrl.h_init, opt.l1.wx, opt.l1.wh, opt.l1.bias,
                      opt.l2.weight, opt.l2.bias, opt.head.weight,
                      opt.head.bias */
};

static void roll_load(const struct ocn_model *m, struct roll_model *r)
{
    struct gr_tensor *const t[15] = {m->c_wx, m->c_wh, m->c_b1, m->c_w2,
                                     m->c_b2, m->c_wo, m->c_bo, m->h_init,
                                     m->o_wx, m->o_wh, m->o_b1, m->o_w2,
                                     m->o_b2, m->o_wo, m->o_bo};
    r->K = m->cfg.n_options;
    r->d = m->cfg.hidden;
    r->w = m->cfg.width;
    r->O = m->cfg.obs_size;
    r->A = m->cfg.n_actions;
    r->tau = m->cfg.tau;
    r->blind = m->cfg.ctrl_blind;
    r->ig_lo = m->cfg.opt_ignore_lo;
    r->ig_hi = m->cfg.opt_ignore_hi;
    for (int i = 0; i < 15; i++) {
        float *h = malloc((size_t)t[i]->numel * sizeof *h);
        r->p[i] = malloc((size_t)t[i]->numel * sizeof(double));
        gr_tensor_to_host(t[i], h);
        for (int64_t k = 0; k < t[i]->numel; k++) {
            r->p[i][k] = h[k];
        }
        free(h);
    }
}

static void roll_free(struct roll_model *r)
{
    for (int i = 0; i < 15; i++) {
        free(r->p[i]);
    }
}

/* (π, h', e) = cell_c(x, h) of ocn.md §3; c = -1 the controller, else
 * option c. pi[N_c], h_new[d]; e may be NULL. */
static void roll_cell(const struct roll_model *m, int c, const float *x,
                      const double *h, double *pi, double *h_new, double *e)
{
    const int w = m->w, d = m->d, O = m->O, K = m->K;
    double z[128], u[128], out[256];
    for (int j = 0; j < w; j++) {
        double s = c < 0 ? m->p[2][j] : m->p[10][c * w + j];
        for (int col = 0; col < O; col++) {
            if (x[col] == 0.0f || (c < 0 && m->blind) ||
                (c >= 0 && col >= m->ig_lo && col < m->ig_hi)) {
                continue;
            }
            s += x[col] * (c < 0 ? m->p[0][(int64_t)col * w + j]
                                 : m->p[8][(int64_t)col * K * w + c * w + j]);
        }
        for (int k = 0; k < d; k++) {
            s += h[k] * (c < 0 ? m->p[1][j * d + k]
                               : m->p[9][(c * w + j) * d + k]);
        }
        z[j] = tanh(s);
    }
    for (int j = 0; j < w; j++) {
        double s = c < 0 ? m->p[4][j] : m->p[12][c * w + j];
        for (int k = 0; k < w; k++) {
            s += z[k] * (c < 0 ? m->p[3][j * w + k]
                               : m->p[11][(c * w + j) * w + k]);
        }
        u[j] = tanh(s);
    }
    const int N = c < 0 ? K : m->A, rows = c < 0 ? K + d : m->A + d + 1;
    for (int r = 0; r < rows; r++) {
        double s = c < 0 ? m->p[6][r] : m->p[14][c * rows + r];
        for (int k = 0; k < w; k++) {
            s += u[k] * (c < 0 ? m->p[5][r * w + k]
                               : m->p[13][(c * rows + r) * w + k]);
        }
        out[r] = s;
    }
    const double tau = c < 0 ? m->tau : 1.0;
    double mx = -INFINITY, sum = 0.0;
    for (int a = 0; a < N; a++) {
        mx = fmax(mx, out[a] / tau);
    }
    for (int a = 0; a < N; a++) {
        pi[a] = exp(out[a] / tau - mx);
        sum += pi[a];
    }
    for (int a = 0; a < N; a++) {
        pi[a] /= sum;
    }
    for (int k = 0; k < d; k++) {
        h_new[k] = tanh(out[N + k]);
    }
    if (e != NULL) {
        *e = 1.0 / (1.0 + exp(-out[N + d]));
    }
}

/* argmax (ties: the smallest); *gap gets min(*gap, best - second) */
static int roll_argmax(const double *p, int n, double *gap)
{
    int a = 0;
    for (int k = 1; k < n; k++) {
        if (p[k] > p[a]) {
            a = k;
        }
    }
    double second = -INFINITY;
    for (int k = 0; k < n; k++) {
        if (k != a && p[k] > second) {
            second = p[k];
        }
    }
    *gap = fmin(*gap, p[a] - second);
    return a;
}

/* Option i alone from z_i = 0 on world w, greedily, its end ignored, to
 * the end of the episode: 1 if the task was done. *gap: the smallest
 * margin of an argmax on the way. */
static int roll_option(const struct roll_model *m, int i,
                       struct craft_world *w, double *gap)
{
    double h[128] = {0}, hn[128], pi[16];
    float *obs = malloc(CRAFT_OBS_SIZE * sizeof *obs);
    struct craft_step s = {0};
    while (!s.terminated && !s.truncated) {
        craft_world_observe(w, obs);
        roll_cell(m, i, obs, h, pi, hn, NULL);
        memcpy(h, hn, sizeof h);
        if (craft_world_step(w, roll_argmax(pi, m->A, gap), &s) < 0) {
            break;
        }
    }
    free(obs);
    return w->k >= w->task.n;
}

/* The OCN of ocn.md §5 online with soft states, a_t = argmax π_t (§6), on
 * world w of task index `task` to the end of the episode. */
static void roll_ocn(const struct roll_model *m, int task,
                     struct craft_world *w, double *gap)
{
    enum { KM = 8 };
    const int K = m->K, d = m->d, A = m->A;
    double hc[128], pic[KM], ho[KM][128], zero[128] = {0};
    float *obs = malloc(CRAFT_OBS_SIZE * sizeof *obs);
    for (int k = 0; k < d; k++) {
        hc[k] = m->p[7][task * d + k];
    }
    struct craft_step s = {0};
    for (int t = 0; !s.terminated && !s.truncated; t++) {
        craft_world_observe(w, obs);
        double e = 1.0, pibar[16] = {0}, hbar[KM][128];
        if (t >= 1) { /* continue branch */
            e = 0.0;
            for (int i = 0; i < K; i++) {
                double pi_i[16], ei;
                roll_cell(m, i, obs, ho[i], pi_i, hbar[i], &ei);
                e += pic[i] * ei;
                for (int a = 0; a < A; a++) {
                    pibar[a] += pic[i] * pi_i[a];
                }
            }
        }
        /* switch branch */
        double pc[KM], hchat[128], pihat[16] = {0}, hhat[KM][128];
        roll_cell(m, -1, obs, hc, pc, hchat, NULL);
        for (int i = 0; i < K; i++) {
            double pi_i[16];
            roll_cell(m, i, obs, zero, pi_i, hhat[i], NULL);
            for (int a = 0; a < A; a++) {
                pihat[a] += pc[i] * pi_i[a];
            }
        }
        double pi[16];
        for (int a = 0; a < A; a++) {
            pi[a] = e * pihat[a] + (1.0 - e) * pibar[a];
        }
        for (int i = 0; i < K; i++) {
            pic[i] = t == 0 ? pc[i] : e * pc[i] + (1.0 - e) * pic[i];
            for (int k = 0; k < d; k++) {
                ho[i][k] = t == 0 ? hhat[i][k]
                                  : e * hhat[i][k] + (1.0 - e) * hbar[i][k];
            }
        }
        for (int k = 0; k < d; k++) {
            hc[k] = e * hchat[k] + (1.0 - e) * hc[k];
        }
        if (craft_world_step(w, roll_argmax(pi, A, gap), &s) < 0) {
            break;
        }
    }
    free(obs);
}

/* An argmax decided by less than this (in probability) may go either way
 * between float (grove) and double (here): such an episode is not
 * compared, and there must be few. */
#define ROLL_TIE 1e-5

/* bc_success_matrix and bc_greedy_returns of model m against the rollouts
 * above on the same maps (bc_solvable_seeds): every cell of the matrix is
 * option i's own rollouts (a row played by another option differs, which
 * the matrix must show: its rows are not all alike), and every task's
 * greedy return and success are the OCN's rollouts. */
static void check_rollouts(struct ocn_model *m, const struct craft_config *cc,
                           int episodes)
{
    struct roll_model r;
    roll_load(m, &r);
    if (!(r.K <= 8 && r.d <= 128 && r.w <= 128 && r.A <= 16 &&
          r.A + r.d < 256 && r.O == CRAFT_OBS_SIZE &&
          m->cfg.kind == OCN_KIND_OCN)) {
        CHECK_MSG(0, "rollouts: model too large for this test");
        roll_free(&r);
        return;
    }
    struct craft_subtask subs[8];
    const int ns = bc_model_subtasks(m, subs, 8), K = r.K;
    double rate[8 * 8];
    uint64_t *seeds = malloc((size_t)episodes * sizeof *seeds);
    CHECK(bc_success_matrix(m, cc, subs, ns, episodes, BC_MATRIX_SEED,
                            rate) == 0);
    int compared = 0, ties = 0, rows_differ = 0;
    for (int j = 0; j < ns; j++) {
        struct craft_task task;
        CHECK(craft_task_from_subtasks(&subs[j], 1, NULL, &task) == 0);
        struct craft_config cfg;
        craft_config_for_task(cc, &task, &cfg);
        CHECK(bc_solvable_seeds(&cfg, &task, j, episodes, BC_MATRIX_SEED,
                                seeds, NULL) == 0);
        double want[8];
        for (int i = 0; i < K; i++) {
            int wins = 0, tie = 0;
            for (int n = 0; n < episodes; n++) {
                struct craft_world w;
                double gap = INFINITY;
                CHECK(craft_world_reset(&w, &cfg, seeds[n], &task) == 0);
                wins += roll_option(&r, i, &w, &gap);
                tie |= gap < ROLL_TIE;
            }
            want[i] = (double)wins / episodes;
            if (tie) {
                ties++;
                continue;
            }
            compared++;
            CHECK_MSG(rate[i * ns + j] == want[i],
                      "success matrix option %d, subtask %c: %.3f, its "
                      "rollouts here %.3f", i, craft_subtask_letter(&subs[j]),
                      rate[i * ns + j], want[i]);
        }
        for (int i = 1; i < K; i++) {
            rows_differ |= want[i] != want[0];
        }
    }
    printf("success matrix (options x");
    for (int j = 0; j < ns; j++) {
        printf(" %c", craft_subtask_letter(&subs[j]));
    }
    printf("), %d episodes:", episodes);
    for (int i = 0; i < K; i++) {
        printf("%s", i ? " /" : "");
        for (int j = 0; j < ns; j++) {
            printf(" %.2f", rate[i * ns + j]);
        }
    }
    printf("; %d cells compared with rollouts here, %d near ties\n",
           compared, ties);
    CHECK_MSG(rows_differ, "every option scores alike here: the check "
                           "cannot tell the options apart");
    CHECK(ties <= 1 && compared >= K * ns - 1);

    /* greedy returns: each task's return and success */
    double ret, succ, task_ret[OCN_MAX_TASKS], task_succ[OCN_MAX_TASKS];
    CHECK(bc_greedy_returns(m, cc, episodes, BC_EVAL_SEED, &ret, &succ,
                            task_ret, task_succ) == 0);
    int tied_tasks = 0;
    double any_return = 0.0;
    for (int ti = 0; ti < m->cfg.n_tasks; ti++) {
        struct craft_task task;
        CHECK(craft_task_parse(m->cfg.task_names[ti], &task) == 0);
        struct craft_config cfg;
        craft_config_for_task(cc, &task, &cfg);
        CHECK(bc_solvable_seeds(&cfg, &task, ti, episodes, BC_EVAL_SEED,
                                seeds, NULL) == 0);
        double R = 0.0, S = 0.0, gap = INFINITY;
        for (int n = 0; n < episodes; n++) {
            struct craft_world w;
            CHECK(craft_world_reset(&w, &cfg, seeds[n], &task) == 0);
            roll_ocn(&r, ti, &w, &gap);
            R += w.episode_return;
            S += w.k >= w.task.n;
        }
        any_return += fabs(R);
        printf("greedy returns, task %s: return %.3f success %.3f (here "
               "%.3f, %.3f)\n", task.name, task_ret[ti], task_succ[ti],
               R / episodes, S / episodes);
        if (gap < ROLL_TIE) {
            tied_tasks++;
            continue;
        }
        CHECK_NEAR(task_ret[ti], R / episodes, 1e-6);
        CHECK(task_succ[ti] == S / episodes);
    }
    CHECK(tied_tasks == 0);
    CHECK_MSG(any_return > 0.0, "no reward in any greedy episode: the "
                                "returns are not tested");
    free(seeds);
    roll_free(&r);
}

/* The evaluation maps (success matrix, greedy returns): the first
 * solvable seeds of the stream, in order, checked against the expert
 * stepped here one action at a time; in the four-copy world some maps are
 * passed over; a world with no wood has no map for A and is refused. */
static void check_solvable_seeds(void)
{
    enum { N = 300 };
    struct craft_config cc;
    craft_config_default(&cc);
    cc.n_each = 4;
    struct craft_task task;
    CHECK(craft_task_parse("A", &task) == 0);
    struct craft_config cfg;
    craft_config_for_task(&cc, &task, &cfg);
    uint64_t seeds[N];
    int skipped = -1;
    CHECK(bc_solvable_seeds(&cfg, &task, 2, N, BC_MATRIX_SEED, seeds,
                            &skipped) == 0);
    int kept = 0, passed = 0;
    for (uint64_t n = 0; kept < N; n++) {
        uint64_t seed = craft_episode_seed(BC_MATRIX_SEED, 2, n);
        struct craft_world w;
        CHECK(craft_world_reset(&w, &cfg, seed, &task) == 0);
        int a, st = CRAFT_EXPERT_OK;
        while (!craft_world_done(&w) &&
               (st = craft_expert_act(&w, &a, NULL)) == CRAFT_EXPERT_OK) {
            struct craft_step s;
            craft_world_step(&w, a, &s);
        }
        if (w.k == w.task.n) {
            CHECK_MSG(seeds[kept] == seed, "map %d is not the %d-th solvable",
                      kept, kept);
            kept++;
        } else {
            CHECK(st == CRAFT_EXPERT_UNREACHABLE);
            passed++;
        }
    }
    CHECK(skipped == passed && skipped > 0);
    cfg.n_each = 0;
    CHECK(bc_solvable_seeds(&cfg, &task, 0, 10, BC_MATRIX_SEED, seeds,
                            NULL) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "solved by the expert");
}

int main(void)
{
    struct demo_set ds;
    struct craft_config cc;
    craft_config_default(&cc);
    struct craft_task tasks[2];
    craft_task_parse("AC", &tasks[0]);
    craft_task_parse("CD", &tasks[1]);
    CHECK(demo_set_generate(&ds, &cc, tasks, 2, 200, 1, NULL, NULL) == 0);
    CHECK(demo_set_split(&ds, 0.8) == 0);

    char a[256], b[256];
    snprintf(a, sizeof a, "/tmp/grove_test_bc_a_%ld", (long)getpid());
    snprintf(b, sizeof b, "/tmp/grove_test_bc_b_%ld", (long)getpid());
    gr_mkdir_p(a);
    gr_mkdir_p(b);
    struct bc_result ra, rb;
    CHECK(train(&ds, a, N_UPDATES, 0, &ra) == 0);

    double rows[16][8];
    int n = read_rows(a, rows, 16);
    CHECK_MSG(n == N_ROWS, "%d metrics rows", n);
    if (n == N_ROWS) {
        for (int i = 0; i < N_ROWS; i++) {
            CHECK(rows[i][0] == 20.0 * i);
            for (int k = 1; k < 7; k++) {
                CHECK(rows[i][k] >= 0.0 && (k == 1 || rows[i][k] <= 1.0));
            }
        }
        CHECK(isnan(rows[0][7]) && rows[1][7] > 0.0); /* train_nll */
        double drop = 1.0 - rows[N_ROWS - 1][1] / rows[0][1];
        printf("validation NLL: update 0 %.4f, update %d %.4f (%.0f%% "
               "lower); action accuracy %.3f -> %.3f\n",
               rows[0][1], N_UPDATES, rows[N_ROWS - 1][1], 100 * drop, rows[0][2],
               rows[N_ROWS - 1][2]);
        CHECK_MSG(drop >= 0.40, "NLL fell by %.1f%% only", 100 * drop);
        CHECK(rows[0][1] > 1.3 && rows[0][1] < 2.0); /* about ln 5 */
        /* the best checkpoint is the lowest NLL */
        int best = 0;
        for (int i = 1; i < N_ROWS; i++) {
            if (rows[i][1] < rows[best][1]) {
                best = i;
            }
        }
        CHECK(ra.best_update == 20 * best);
        CHECK(fabs(ra.best_nll - rows[best][1]) < 1e-6 * rows[best][1]);
    }
    CHECK(ra.last.greedy_return >= 0.0 && ra.last.greedy_return <= 2.0);
    CHECK(ra.last.greedy_success >= 0.0 && ra.last.greedy_success <= 1.0);
    char p1[512], p2[512];
    snprintf(p1, sizeof p1, "%s/best.ckpt", a);
    CHECK(gr_path_exists(p1));
    char *cfg_text = NULL;
    CHECK(gr_checkpoint_read_config(p1, &cfg_text) == 0);
    struct ocn_config back;
    CHECK(cfg_text != NULL && ocn_config_parse(cfg_text, &back) == 0 &&
          back.hidden == 32 && back.n_tasks == 2);
    free(cfg_text);

    /* stopped at 40 by a signal, resumed to 100: the same checkpoint, the
     * same rows */
    stop_update = 40;
    CHECK(train(&ds, b, N_UPDATES, 0, &rb) == 0);
    stop_update = -1;
    CHECK(rb.stopped && rb.stopped_at == 40);
    CHECK(train(&ds, b, N_UPDATES, 1, &rb) == 0);
    CHECK(!rb.stopped);
    snprintf(p1, sizeof p1, "%s/last.ckpt", a);
    snprintf(p2, sizeof p2, "%s/last.ckpt", b);
    CHECK_MSG(same_file(p1, p2), "resumed last.ckpt differs");
    snprintf(p1, sizeof p1, "%s/best.ckpt", a);
    snprintf(p2, sizeof p2, "%s/best.ckpt", b);
    CHECK_MSG(same_file(p1, p2), "resumed best.ckpt differs");
    double rows_b[16][8];
    int nb = read_rows(b, rows_b, 16);
    CHECK(nb == n);
    for (int i = 0; i < n && i < nb; i++) {
        for (int k = 0; k < 8; k++) {
            CHECK((isnan(rows[i][k]) && isnan(rows_b[i][k])) ||
                  rows[i][k] == rows_b[i][k]);
        }
    }
    /* resuming past the end is refused */
    CHECK(train(&ds, b, 30, 1, &rb) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "past --updates");

    check_solvable_seeds();

    /* the success matrix: K x 3 shares in [0, 1] */
    {
        struct gr_ctx *ctx = new_ctx();
        struct ocn_config cfg;
        small_config(&cfg);
        struct ocn_model m;
        CHECK(ocn_model_init(&m, ctx, &cfg, 42) == 0);
        snprintf(p1, sizeof p1, "%s/best.ckpt", a);
        CHECK(gr_checkpoint_load(ctx, p1, GR_CKPT_PARAMS, NULL) == 0);
        struct craft_subtask subs[8];
        int ns = bc_model_subtasks(&m, subs, 8);
        CHECK(ns == 3);
        CHECK(craft_subtask_letter(&subs[0]) == 'A' &&
              craft_subtask_letter(&subs[1]) == 'C' &&
              craft_subtask_letter(&subs[2]) == 'D');
        double rate[9];
        CHECK(bc_success_matrix(&m, &cc, subs, ns, 4, BC_MATRIX_SEED, rate) ==
              0);
        for (int i = 0; i < 9; i++) {
            CHECK(rate[i] >= 0.0 && rate[i] <= 1.0 &&
                  rate[i] * 4 == floor(rate[i] * 4));
        }
        /* greedy returns play the expert's solvable maps too: shares of
         * 4 episodes per task, and a world without wood has none */
        double ret, succ, task_ret[2], task_succ[2];
        CHECK(bc_greedy_returns(&m, &cc, 4, BC_EVAL_SEED, &ret, &succ,
                                task_ret, task_succ) == 0);
        CHECK(succ >= 0.0 && succ <= 1.0 && succ * 8 == floor(succ * 8));
        CHECK(fabs(succ - 0.5 * (task_succ[0] + task_succ[1])) < 1e-12);
        CHECK(fabs(ret - 0.5 * (task_ret[0] + task_ret[1])) < 1e-12);
        struct craft_config no_wood = cc;
        no_wood.n_each = 0;
        CHECK(bc_greedy_returns(&m, &no_wood, 4, BC_EVAL_SEED, &ret, &succ,
                                NULL, NULL) == GR_EINVAL);
        CHECK_STR_CONTAINS(gr_last_error(), "solved by the expert");
        check_rollouts(&m, &cc, 8);
        check_alignment(&m, &cc);
        check_placement(&cc);
        gr_ctx_free(ctx);
    }
    /* the alignment of a MoE (e ≡ 1) and of a single option */
    {
        struct gr_ctx *ctx = new_ctx();
        struct ocn_config cfg;
        small_config(&cfg);
        cfg.kind = OCN_KIND_MOE;
        struct ocn_model m;
        CHECK(ocn_model_init(&m, ctx, &cfg, 7) == 0);
        struct bc_alignment al;
        CHECK(bc_option_alignment(&m, &cc, 10, BC_ALIGN_SEED, &al) == 0);
        CHECK(al.end_after_boundary == 1.0 && al.end_elsewhere == 1.0);
        CHECK(bc_option_alignment(&m, &cc, 0, BC_ALIGN_SEED, &al) ==
              GR_EINVAL);
        gr_ctx_free(ctx);
        ctx = new_ctx();
        small_config(&cfg);
        cfg.n_options = 1;
        CHECK(ocn_model_init(&m, ctx, &cfg, 7) == 0);
        CHECK(bc_option_alignment(&m, &cc, 10, BC_ALIGN_SEED, &al) == 0);
        int64_t in0 = 0;
        for (int j = 0; j < al.n_subtasks; j++) {
            in0 += al.steps[0][j];
        }
        /* one option is in force everywhere: H(O) = 0 < H(S), NMI 0 */
        CHECK(al.n_options == 1 && in0 == al.total_steps && al.nmi == 0.0);
        gr_ctx_free(ctx);
    }
    demo_set_free(&ds);

    /* the world kept in a checkpoint's config: only what differs from
     * craft.md §3's defaults, read back exactly; other lines ignored */
    {
        char text[512];
        struct craft_config w, wback;
        craft_config_default(&w);
        CHECK(bc_world_format(&w, text, sizeof text) == 0 && text[0] == '\0');
        w.n_each = 4;
        w.coarse_view = 0;
        w.primitives = (1u << CRAFT_KIND_WOOD) | (1u << CRAFT_KIND_IRON);
        int len = bc_world_format(&w, text, sizeof text);
        CHECK(len == (int)strlen(text));
        CHECK_STR_CONTAINS(text, "world n_each 4\n");
        CHECK_STR_CONTAINS(text, "world coarse_view off\n");
        CHECK_STR_CONTAINS(text, "world primitives iron,wood\n");
        char full[768];
        snprintf(full, sizeof full, "kind ocn\noptions 3\n%sseed 1\n", text);
        CHECK(bc_world_parse(full, &wback) == 0);
        CHECK(wback.n_each == 4 && !wback.coarse_view &&
              wback.primitives == w.primitives && wback.width == w.width &&
              wback.max_steps == w.max_steps);
        CHECK(bc_world_format(&w, text, 10) == GR_EINVAL);
        /* a config without world lines (every run before them) is the
         * default world */
        CHECK(bc_world_parse("kind ocn\nseed 1\n", &wback) == 0 &&
              wback.n_each == 1 && wback.coarse_view);
        CHECK(bc_world_parse("kind ocn\nworld n_each many\n", &wback) ==
              GR_EFORMAT);
        CHECK_STR_CONTAINS(gr_last_error(), "config line 2");
        CHECK(bc_world_parse("world colour red\n", &wback) == GR_EFORMAT);
        CHECK(bc_world_parse("world n_each\n", &wback) == GR_EFORMAT);
        CHECK_STR_CONTAINS(gr_last_error(), "not 'world KEY VALUE'");
        /* more objects than the 8x8 interior holds */
        CHECK(bc_world_parse("world n_each 30\n", &wback) == GR_EFORMAT);
    }
    const char *files[] = {"metrics.csv", "best.ckpt", "last.ckpt"};
    for (int i = 0; i < 3; i++) {
        snprintf(p1, sizeof p1, "%s/%s", a, files[i]);
        unlink(p1);
        snprintf(p1, sizeof p1, "%s/%s", b, files[i]);
        unlink(p1);
    }
    rmdir(a);
    rmdir(b);
    return test_report("agents_bc");
}
