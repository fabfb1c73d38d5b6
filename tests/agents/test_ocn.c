/* The OCN of ocn.md §3-6, 8 and the tests §11 asks for, on CPU:
 *   - forward (loss, π_t, e_t, Π^C_t) against an independent double
 *     precision implementation (ocn_ref.h) for OCN τ=10, τ=1, K=1, MoE;
 *   - a finite-difference check of the BC loss on the tiny configuration
 *     of §11 (O = 7, d = w = 4, K = 2, A = 5, T = 5): central differences
 *     of the reference (double) against the kernel layer's gradients;
 *   - π_t sums to 1; e ≡ 1 equals MoE; K = 1 gives Π^C ≡ 1; τ divides the
 *     controller's logits only;
 *   - acting online step by step equals the teacher-forced forward, with
 *     worlds starting episodes at different steps;
 *   - parameter counts of ocn.md §3 and the config text round trip;
 *   - a blind controller (docs/ocn's variant) equals zero weights on x;
 *   - the option-balance term (train bc --balance-options): loss and every
 *     gradient against the reference with finite differences. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents/ocn.h"
#include "core/error.h"
#include "kernels/ops.h"
#include "kernels/tape.h"
#include "tests/agents/ocn_ref.h"
#include "tests/agents/ocn_testutil.h"
#include "tests/test.h"

enum { ND = 3 };
static const int demo_len[ND] = {5, 3, 4};
static const int demo_task[ND] = {0, 1, 0};

/* The model's parameters copied into a reference model (double). */
static void to_ref(const struct ocn_model *m, struct ref_model *r)
{
    memset(r, 0, sizeof *r);
    r->K = m->cfg.n_options;
    r->d = m->cfg.hidden;
    r->w = m->cfg.width;
    r->O = m->cfg.obs_size;
    r->A = m->cfg.n_actions;
    r->n_tasks = m->cfg.n_tasks;
    r->tau = m->cfg.tau;
    r->balance = m->cfg.balance;
    r->moe = m->cfg.kind == OCN_KIND_MOE;
    for (int i = 0; i < 15; i++) {
        struct gr_tensor *t = tu_param(m, i);
        float *h = malloc((size_t)t->numel * sizeof *h);
        gr_tensor_to_host(t, h);
        r->n[i] = (long)t->numel;
        r->p[i] = malloc((size_t)t->numel * sizeof(double));
        for (long k = 0; k < r->n[i]; k++) {
            r->p[i][k] = h[k];
        }
        free(h);
    }
}

static void ref_free(struct ref_model *r)
{
    for (int i = 0; i < 15; i++) {
        free(r->p[i]);
    }
}

/* Reference loss over the demo set (mean NLL per step). */
static double ref_loss(const struct ref_model *r, const struct demo_set *ds,
                       const double *dense)
{
    double ll = 0.0, use[REF_MAX] = {0};
    int actions[64];
    for (int i = 0; i < ds->n; i++) {
        double pic[64 * REF_MAX];
        for (int t = 0; t < ds->len[i]; t++) {
            actions[t] = ds->action[ds->first[i] + t];
        }
        ll += ref_demo(r, dense + ds->first[i] * r->O, actions, ds->len[i],
                       ds->task[i], NULL, NULL, pic);
        for (int t = 0; t < ds->len[i]; t++) {
            for (int k = 0; k < r->K; k++) {
                use[k] += pic[t * r->K + k];
            }
        }
    }
    double loss = -ll / (double)ds->n_steps;
    if (r->balance > 0.0) {
        /* λ · KL(mean Π^C in force ‖ uniform) */
        double kl = 0.0;
        for (int k = 0; k < r->K; k++) {
            double u = use[k] / (double)ds->n_steps;
            kl += u * log(fmax(r->K * u, 1e-12));
        }
        loss += r->balance * kl;
    }
    return loss;
}

struct run {
    float loss;
    float *pi, *end, *pic, *ap;
    int32_t *am;
    float *grad[15];
};

static void run_free(struct run *r)
{
    free(r->pi);
    free(r->end);
    free(r->pic);
    free(r->ap);
    free(r->am);
    for (int i = 0; i < 15; i++) {
        free(r->grad[i]);
    }
}

/* Forward + backward of model m on the whole demo set (one batch). */
static int run_model(struct ocn_model *m, const struct demo_set *ds,
                     struct demo_batch *b, float force_end, struct run *out)
{
    memset(out, 0, sizeof *out);
    int64_t ids[ND];
    for (int i = 0; i < ds->n; i++) {
        ids[i] = i;
    }
    if (demo_batch_build(b, ds, ids, (int)ds->n) < 0) {
        return -1;
    }
    int K = m->cfg.n_options, A = m->cfg.n_actions;
    struct ocn_forward_out fo;
    memset(&fo, 0, sizeof fo);
    fo.pi = out->pi = malloc((size_t)(b->rows * A) * sizeof(float));
    fo.end = out->end = malloc((size_t)b->rows * sizeof(float));
    fo.pi_c = out->pic = malloc((size_t)(b->rows * K) * sizeof(float));
    fo.act_prob = out->ap = malloc((size_t)b->rows * sizeof(float));
    fo.act_argmax = out->am = malloc((size_t)b->rows * sizeof(int32_t));
    gr_step_reset(m->ctx);
    gr_zero_grad(m->ctx);
    int rc = ocn_forward_forced(m, b, force_end, &fo);
    if (rc < 0) {
        fprintf(stderr, "forward: %s\n", gr_last_error());
        return rc;
    }
    out->loss = gr_tensor_item(fo.loss);
    rc = gr_backward(m->ctx, fo.loss);
    if (rc < 0) {
        fprintf(stderr, "backward: %s\n", gr_last_error());
        return rc;
    }
    for (int i = 0; i < 15; i++) {
        struct gr_tensor *p = tu_param(m, i);
        out->grad[i] = malloc((size_t)p->numel * sizeof(float));
        gr_tensor_to_host(p->grad, out->grad[i]);
    }
    return 0;
}

/* Row of the packed batch holding step t of demonstration `demo`. */
static int64_t packed_row(const struct demo_batch *b, int64_t demo, int t)
{
    for (int i = 0; i < b->B; i++) {
        if (b->demo[i] == demo) {
            return b->row_off[t] + i;
        }
    }
    return -1;
}

/* Compares the forward of one model with the reference, and (fd) its
 * gradients with central differences of the reference. */
static void check_against_reference(const struct ocn_config *cfg,
                                    uint64_t seed, int fd)
{
    struct gr_ctx *ctx = tu_ctx(GR_DEVICE_CPU);
    CHECK(ctx != NULL);
    if (ctx == NULL) {
        return;
    }
    struct ocn_model m;
    CHECK(ocn_model_init(&m, ctx, cfg, seed) == 0);
    struct demo_set ds;
    double *dense;
    tu_make_demos(&ds, ND, demo_len, demo_task, 2, cfg->obs_size,
                  cfg->n_actions, seed + 1, &dense);
    struct demo_batch b;
    memset(&b, 0, sizeof b);
    struct run r;
    CHECK(run_model(&m, &ds, &b, -1.0f, &r) == 0);
    struct ref_model ref;
    to_ref(&m, &ref);
    double want = ref_loss(&ref, &ds, dense);
    CHECK_MSG(fabs(r.loss - want) <= 1e-5 * fabs(want), "%s K=%d tau=%g: "
              "loss %.9g, reference %.9g",
              ocn_kind_name(cfg->kind), cfg->n_options, (double)cfg->tau,
              (double)r.loss, want);
    /* per step π_t, e_t, Π^C_t */
    int K = cfg->n_options, A = cfg->n_actions;
    double max_pi = 0, max_e = 0, max_pic = 0;
    for (int i = 0; i < ND; i++) {
        double pi[64 * 8], e[64], pic[64 * 32];
        int actions[64];
        for (int t = 0; t < ds.len[i]; t++) {
            actions[t] = ds.action[ds.first[i] + t];
        }
        ref_demo(&ref, dense + ds.first[i] * cfg->obs_size, actions,
                 ds.len[i], ds.task[i], pi, e, pic);
        for (int t = 0; t < ds.len[i]; t++) {
            int64_t row = packed_row(&b, i, t);
            for (int a = 0; a < A; a++) {
                max_pi = fmax(max_pi, fabs(r.pi[row * A + a] - pi[t * A + a]));
            }
            max_e = fmax(max_e, fabs(r.end[row] - e[t]));
            for (int k = 0; k < K; k++) {
                max_pic = fmax(max_pic,
                               fabs(r.pic[row * K + k] - pic[t * K + k]));
            }
            CHECK(fabs(r.ap[row] - pi[t * A + actions[t]]) < 1e-6);
        }
    }
    CHECK_MSG(max_pi < 1e-6 && max_e < 1e-6 && max_pic < 1e-6,
              "max differences: pi %.3g, e %.3g, Pi^C %.3g", max_pi, max_e,
              max_pic);
    if (fd) {
        /* central differences of the reference loss, every parameter */
        double worst = 0.0;
        int bad = 0, checked = 0;
        for (int i = 0; i < 15; i++) {
            for (long k = 0; k < ref.n[i]; k++) {
                double keep = ref.p[i][k], h = 1e-5;
                ref.p[i][k] = keep + h;
                double lp = ref_loss(&ref, &ds, dense);
                ref.p[i][k] = keep - h;
                double lm = ref_loss(&ref, &ds, dense);
                ref.p[i][k] = keep;
                double g_fd = (lp - lm) / (2 * h);
                double g = r.grad[i][k];
                double err = fabs(g - g_fd);
                double tol = 2e-6 + 1e-3 * fabs(g_fd);
                checked++;
                if (err > tol) {
                    if (bad < 10) {
                        fprintf(stderr, "%s[%ld]: grad %.9g, finite "
                                        "differences %.9g\n",
                                tu_param_names[i], k, g, g_fd);
                    }
                    bad++;
                }
                worst = fmax(worst, err / (1e-6 + fabs(g_fd)));
            }
        }
        CHECK_MSG(bad == 0, "%d of %d gradients off", bad, checked);
        printf("finite differences (%s, K=%d, tau=%g): %d gradients, worst "
               "relative error %.2e\n",
               ocn_kind_name(cfg->kind), K, (double)cfg->tau, checked, worst);
    }
    ref_free(&ref);
    run_free(&r);
    demo_batch_free(&b);
    demo_set_free(&ds);
    free(dense);
    gr_ctx_free(ctx);
}

/* π_t sums to 1 and Π^C_t sums to 1 on every step. */
static void check_sums(const struct run *r, int64_t rows, int K, int A)
{
    double worst_pi = 0, worst_pic = 0;
    for (int64_t i = 0; i < rows; i++) {
        double s = 0, sc = 0;
        for (int a = 0; a < A; a++) {
            s += r->pi[i * A + a];
        }
        for (int k = 0; k < K; k++) {
            sc += r->pic[i * K + k];
        }
        worst_pi = fmax(worst_pi, fabs(s - 1.0));
        worst_pic = fmax(worst_pic, fabs(sc - 1.0));
    }
    CHECK_MSG(worst_pi < 1e-6, "pi sums off by %.3g", worst_pi);
    CHECK_MSG(worst_pic < 1e-6, "Pi^C sums off by %.3g", worst_pic);
}

/* Two models of configs a and b in contexts of their own, initialised
 * from the same seed (so with the same weights where their shapes agree). */
static void same_weights(const struct ocn_config *a,
                         const struct ocn_config *b, uint64_t seed,
                         struct gr_ctx **ca, struct gr_ctx **cb,
                         struct ocn_model *ma, struct ocn_model *mb)
{
    *ca = tu_ctx(GR_DEVICE_CPU);
    *cb = tu_ctx(GR_DEVICE_CPU);
    CHECK(ocn_model_init(ma, *ca, a, seed) == 0);
    CHECK(ocn_model_init(mb, *cb, b, seed) == 0);
}

/* The ND hand-made demonstrations (O = 7, A = 5) from `seed`, and an
 * empty batch for run_model. */
static void tiny_demos(struct demo_set *ds, struct demo_batch *b,
                       uint64_t seed)
{
    tu_make_demos(ds, ND, demo_len, demo_task, 2, 7, 5, seed, NULL);
    memset(b, 0, sizeof *b);
}

static void test_properties(void)
{
    struct gr_ctx *ca, *cb;
    struct ocn_config cfg_ocn, cfg_moe;
    tu_tiny_config(&cfg_ocn, 3, 10.0f, OCN_KIND_OCN);
    tu_tiny_config(&cfg_moe, 3, 10.0f, OCN_KIND_MOE);
    struct ocn_model mo, mm;
    struct demo_set ds;
    struct demo_batch b;
    same_weights(&cfg_ocn, &cfg_moe, 11, &ca, &cb, &mo, &mm);
    tiny_demos(&ds, &b, 3);
    struct run ro, rf, rm;
    CHECK(run_model(&mo, &ds, &b, -1.0f, &ro) == 0);
    check_sums(&ro, b.rows, 3, 5);
    /* e_t is a probability, 1 at t = 0 */
    for (int64_t i = 0; i < b.rows; i++) {
        CHECK(ro.end[i] >= 0.0f && ro.end[i] <= 1.0f);
    }
    for (int i = 0; i < b.active[0]; i++) {
        CHECK(ro.end[i] == 1.0f);
    }
    /* e ≡ 1 equals MoE: forward bit for bit, gradients too */
    CHECK(run_model(&mo, &ds, &b, 1.0f, &rf) == 0);
    CHECK(run_model(&mm, &ds, &b, -1.0f, &rm) == 0);
    check_sums(&rm, b.rows, 3, 5);
    CHECK_MSG(rf.loss == rm.loss, "forced e=1 loss %.9g vs MoE %.9g",
              (double)rf.loss, (double)rm.loss);
    CHECK(memcmp(rf.pi, rm.pi, (size_t)(b.rows * 5) * sizeof(float)) == 0);
    CHECK(memcmp(rf.pic, rm.pic, (size_t)(b.rows * 3) * sizeof(float)) == 0);
    double worst = 0;
    for (int i = 0; i < 15; i++) {
        struct gr_tensor *p = tu_param(&mo, i);
        for (int64_t k = 0; k < p->numel; k++) {
            worst = fmax(worst, fabs(rf.grad[i][k] - rm.grad[i][k]) /
                                    (1e-6 + fabs(rm.grad[i][k])));
        }
    }
    CHECK_MSG(worst < 1e-5, "forced e=1 vs MoE gradients differ by %.3g",
              worst);
    /* and the free-running OCN differs from MoE (the test can fail) */
    CHECK(ro.loss != rm.loss);
    for (int64_t i = 0; i < b.rows; i++) {
        CHECK(rm.end[i] == 1.0f);
    }
    run_free(&ro);
    run_free(&rf);
    run_free(&rm);
    gr_ctx_free(ca);
    gr_ctx_free(cb);

    /* K = 1: Π^C ≡ 1 */
    struct gr_ctx *c1 = tu_ctx(GR_DEVICE_CPU);
    struct ocn_config cfg1;
    tu_tiny_config(&cfg1, 1, 10.0f, OCN_KIND_OCN);
    struct ocn_model m1;
    CHECK(ocn_model_init(&m1, c1, &cfg1, 5) == 0);
    struct run r1;
    CHECK(run_model(&m1, &ds, &b, -1.0f, &r1) == 0);
    for (int64_t i = 0; i < b.rows; i++) {
        CHECK_NEAR(r1.pic[i], 1.0, 1e-7);
    }
    check_sums(&r1, b.rows, 1, 5);
    run_free(&r1);
    gr_ctx_free(c1);

    /* τ divides the controller's logits only: same weights with τ = 1 and
     * τ = 10; at t = 0 log Π^C differences shrink tenfold, and the
     * options' own distributions (ocn_options_step) do not change */
    struct gr_ctx *ct1 = tu_ctx(GR_DEVICE_CPU), *ct10 = tu_ctx(GR_DEVICE_CPU);
    struct ocn_config c_t1, c_t10;
    tu_tiny_config(&c_t1, 3, 1.0f, OCN_KIND_OCN);
    tu_tiny_config(&c_t10, 3, 10.0f, OCN_KIND_OCN);
    struct ocn_model mt1, mt10;
    CHECK(ocn_model_init(&mt1, ct1, &c_t1, 21) == 0);
    CHECK(ocn_model_init(&mt10, ct10, &c_t10, 21) == 0);
    struct run rt1, rt10;
    CHECK(run_model(&mt1, &ds, &b, -1.0f, &rt1) == 0);
    CHECK(run_model(&mt10, &ds, &b, -1.0f, &rt10) == 0);
    double worst_ratio = 0, spread = 0;
    for (int i = 0; i < b.active[0]; i++) {
        for (int k = 1; k < 3; k++) {
            double l1 = log(rt1.pic[i * 3 + k]) - log(rt1.pic[i * 3]);
            double l10 = log(rt10.pic[i * 3 + k]) - log(rt10.pic[i * 3]);
            worst_ratio = fmax(worst_ratio, fabs(l10 - l1 / 10.0));
            spread = fmax(spread, fabs(l1));
        }
    }
    CHECK_MSG(worst_ratio < 1e-5, "controller logits not divided by tau: "
              "%.3g", worst_ratio);
    CHECK(spread > 1e-3); /* the check above is not vacuous */
    float obs[2 * 7] = {1, 0, 0, 2, 0, 1, 0, 0, 1, 1, 0, 0, 0, 1};
    float ho1[3 * 2 * 4] = {0}, ho10[3 * 2 * 4] = {0};
    float p1[3 * 2 * 5], p10[3 * 2 * 5], e1[6], e10[6];
    struct ocn_act_state s1, s10;
    CHECK(ocn_act_state_init(&s1, &mt1, 2) == 0);
    CHECK(ocn_act_state_init(&s10, &mt10, 2) == 0);
    CHECK(ocn_options_step(&mt1, &s1, obs, ho1, p1, e1) == 0);
    CHECK(ocn_options_step(&mt10, &s10, obs, ho10, p10, e10) == 0);
    ocn_act_state_free(&s1);
    ocn_act_state_free(&s10);
    CHECK(memcmp(p1, p10, sizeof p1) == 0 && memcmp(e1, e10, sizeof e1) == 0);
    CHECK(memcmp(ho1, ho10, sizeof ho1) == 0);
    /* an option's probabilities are a softmax at temperature 1 of its own
     * logits: compare with the reference cell */
    struct ref_model ref;
    to_ref(&mt10, &ref);
    for (int k = 0; k < 3; k++) {
        for (int j = 0; j < 2; j++) {
            double x[7], h[4] = {0, 0, 0, 0}, pi[5], hn[4], e;
            for (int o = 0; o < 7; o++) {
                x[o] = obs[j * 7 + o];
            }
            ref_cell(&ref, k, x, h, pi, hn, &e);
            for (int a = 0; a < 5; a++) {
                CHECK_NEAR(p10[(k * 2 + j) * 5 + a], pi[a], 1e-6);
            }
            CHECK_NEAR(e10[k * 2 + j], e, 1e-6);
            for (int i = 0; i < 4; i++) {
                CHECK_NEAR(ho10[(k * 2 + j) * 4 + i], hn[i], 1e-6);
            }
        }
    }
    ref_free(&ref);
    run_free(&rt1);
    run_free(&rt10);
    gr_ctx_free(ct1);
    gr_ctx_free(ct10);
    demo_batch_free(&b);
    demo_set_free(&ds);
}

/* Acting step by step equals the teacher-forced forward. World 0 plays
 * demonstration 0 (5 steps); world 1 plays demonstration 1 (3 steps) and
 * then demonstration 2 from step 3 on, so worlds start episodes at
 * different steps. */
static void test_acting(enum ocn_kind kind)
{
    struct gr_ctx *ctx = tu_ctx(GR_DEVICE_CPU);
    struct ocn_config cfg;
    tu_tiny_config(&cfg, 2, 10.0f, kind);
    struct ocn_model m;
    CHECK(ocn_model_init(&m, ctx, &cfg, 31) == 0);
    struct demo_set ds;
    double *dense;
    tu_make_demos(&ds, ND, demo_len, demo_task, 2, 7, 5, 8, &dense);
    struct demo_batch b;
    memset(&b, 0, sizeof b);
    struct run r;
    CHECK(run_model(&m, &ds, &b, -1.0f, &r) == 0);
    struct ocn_act_state st;
    CHECK(ocn_act_state_init(&st, &m, 2) == 0);
    ocn_act_reset(&st, 0, ds.task[0]);
    ocn_act_reset(&st, 1, ds.task[1]);
    double worst = 0;
    for (int step = 0; step < 7; step++) {
        int demo[2], t[2];
        demo[0] = step < 5 ? 0 : -1;
        t[0] = step;
        demo[1] = step < 3 ? 1 : 2;
        t[1] = step < 3 ? step : step - 3;
        if (step == 3) {
            ocn_act_reset(&st, 1, ds.task[2]);
        }
        float obs[2 * 7];
        for (int j = 0; j < 2; j++) {
            int d = demo[j] < 0 ? 0 : demo[j];
            int tt = demo[j] < 0 ? 0 : t[j];
            for (int o = 0; o < 7; o++) {
                obs[j * 7 + o] = (float)dense[(ds.first[d] + tt) * 7 + o];
            }
        }
        int32_t act[2];
        float probs[2 * 5], end[2], pic[2 * 2];
        CHECK(ocn_act(&m, &st, obs, act, probs, end, pic) == 0);
        for (int j = 0; j < 2; j++) {
            if (demo[j] < 0) {
                continue;
            }
            int64_t row = packed_row(&b, demo[j], t[j]);
            for (int a = 0; a < 5; a++) {
                worst = fmax(worst, fabs(probs[j * 5 + a] - r.pi[row * 5 + a]));
            }
            worst = fmax(worst, fabs(end[j] - r.end[row]));
            for (int k = 0; k < 2; k++) {
                worst = fmax(worst, fabs(pic[j * 2 + k] - r.pic[row * 2 + k]));
            }
            CHECK(act[j] == r.am[row]);
        }
        /* the acting state is a real recurrence, not the teacher's actions:
         * it must still follow the demo because the observations do */
    }
    CHECK_MSG(worst < 1e-6, "%s acting differs from teacher forcing by %.3g",
              ocn_kind_name(kind), worst);
    ocn_act_state_free(&st);
    run_free(&r);
    demo_batch_free(&b);
    demo_set_free(&ds);
    free(dense);
    gr_ctx_free(ctx);
}

static void test_counts_and_config(void)
{
    struct ocn_config c;
    ocn_config_default(&c);
    c.n_tasks = 2;
    strcpy(c.task_names[0], "AC");
    strcpy(c.task_names[1], "CD");
    /* ocn.md §3: 187,910 per option, 187,652 for the controller (K = 3)
     * plus d per task; grove skips the controller's end head (129
     * parameters, never used: ocn.md §4) */
    CHECK(ocn_param_count(&c) == 187652 - 129 + 2 * 128 + 3 * 187910);
    struct gr_ctx *ctx = tu_ctx(GR_DEVICE_CPU);
    struct ocn_model m;
    CHECK(ocn_model_init(&m, ctx, &c, 1) == 0);
    CHECK(gr_param_count(ctx, "") == ocn_param_count(&c));
    CHECK(gr_param_count(ctx, "opt.") == 3 * 187910);
    CHECK(gr_param_count(ctx, "ctrl.") == 187652 - 129 + 2 * 128);
    /* initial ranges: layer 1 within 1/sqrt(O + d) */
    float *h = malloc((size_t)m.c_wx->numel * sizeof *h);
    gr_tensor_to_host(m.c_wx, h);
    float bound = 1.0f / sqrtf(1075.0f + 128.0f), mx = 0;
    for (int64_t i = 0; i < m.c_wx->numel; i++) {
        mx = fmaxf(mx, fabsf(h[i]));
    }
    CHECK(mx <= bound && mx > 0.9f * bound);
    free(h);
    /* a second init in the same context is refused (duplicate names) */
    struct ocn_model m2;
    CHECK(ocn_model_init(&m2, ctx, &c, 1) < 0);
    /* bind finds the same tensors */
    CHECK(ocn_model_bind(&m2, ctx, &c) == 0 && m2.o_wo == m.o_wo);
    c.n_options = 4;
    CHECK(ocn_model_bind(&m2, ctx, &c) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "shape");
    c.n_options = 3;
    gr_ctx_free(ctx);

    char text[OCN_CONFIG_TEXT_CAP];
    c.kind = OCN_KIND_MOE;
    c.tau = 0.1f;
    CHECK(ocn_config_format(&c, text, sizeof text) > 0);
    struct ocn_config back;
    CHECK(ocn_config_parse(text, &back) == 0);
    CHECK(back.kind == OCN_KIND_MOE && back.n_options == 3 &&
          back.tau == 0.1f && back.n_tasks == 2 &&
          strcmp(back.task_names[1], "CD") == 0 && back.hidden == 128);
    CHECK(strstr(text, "controller") == NULL && back.ctrl_blind == 0);
    /* a blind controller is said in one line, read back */
    c.ctrl_blind = 1;
    CHECK(ocn_config_format(&c, text, sizeof text) > 0);
    CHECK_STR_CONTAINS(text, "\ncontroller blind\n");
    CHECK(ocn_config_parse(text, &back) == 0 && back.ctrl_blind == 1);
    c.ctrl_blind = 0;
    CHECK(strstr(text, "balance") == NULL); /* weight 0: no line */
    /* the option-balance weight: one line when set, read back exactly */
    c.balance = 0.1f;
    CHECK(ocn_config_format(&c, text, sizeof text) > 0);
    CHECK_STR_CONTAINS(text, "\nbalance 0.100000001\n");
    CHECK(ocn_config_parse(text, &back) == 0 && back.balance == 0.1f);
    c.balance = -1.0f;
    CHECK(ocn_config_validate(&c) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "balance");
    c.balance = 0.0f;
    CHECK(ocn_config_parse("kind ocn\nbalance lots\n", &back) ==
          GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "line 2");
    CHECK(ocn_config_parse("kind ocn\ncontroller deaf\n", &back) ==
          GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "line 2");
    CHECK(ocn_config_parse("kind ocn\noptions 3\n", &back) == GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "missing");
    CHECK(ocn_config_parse("kind xyz\n", &back) == GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "line 1");
    c.n_options = 0;
    CHECK(ocn_config_validate(&c) == GR_EINVAL);
}

/* Two runs of K = 3 models on the same batch agree bit for bit: loss, π,
 * Π^C and the gradient of every parameter but `except` (tu_param index),
 * the one a variant leaves partly untrained. */
static void check_same_run(const struct run *a, const struct run *b,
                           const struct ocn_model *m, int64_t rows,
                           int except)
{
    CHECK_MSG(a->loss == b->loss, "loss %.9g vs %.9g", (double)a->loss,
              (double)b->loss);
    CHECK(memcmp(a->pi, b->pi, (size_t)(rows * 5) * sizeof(float)) == 0);
    CHECK(memcmp(a->pic, b->pic, (size_t)(rows * 3) * sizeof(float)) == 0);
    for (int i = 0; i < 15; i++) {
        CHECK_MSG(i == except ||
                      memcmp(a->grad[i], b->grad[i],
                             (size_t)tu_param(m, i)->numel * sizeof(float)) ==
                          0,
                  "parameter %d's gradient differs", i);
    }
}

/* A blind controller (cfg.ctrl_blind) is the same model with its
 * controller reading x through zero weights: loss, π_t, Π^C_t and every
 * gradient bit for bit; ctrl.l1.wx gets no gradient and its values do not
 * matter, while a controller that reads x does change with them. */
static void test_blind_controller(void)
{
    struct gr_ctx *ca, *cb;
    struct ocn_config cfg, blind;
    tu_tiny_config(&cfg, 3, 10.0f, OCN_KIND_OCN);
    blind = cfg;
    blind.ctrl_blind = 1;
    struct ocn_model mz, mb;
    struct demo_set ds;
    struct demo_batch b;
    same_weights(&cfg, &blind, 5, &ca, &cb, &mz, &mb);
    CHECK(gr_tensor_fill(mz.c_wx, 0.0f) == 0);
    tiny_demos(&ds, &b, 9);
    struct run rz, rb, r2;
    CHECK(run_model(&mz, &ds, &b, -1.0f, &rz) == 0);
    CHECK(run_model(&mb, &ds, &b, -1.0f, &rb) == 0);
    check_same_run(&rz, &rb, &mb, b.rows, 0);
    float gmax = 0.0f;
    for (int64_t k = 0; k < mb.c_wx->numel; k++) {
        gmax = fmaxf(gmax, fabsf(rb.grad[0][k]));
    }
    CHECK(gmax == 0.0f);
    /* the blind controller ignores ctrl.l1.wx; the seeing one does not */
    CHECK(gr_tensor_fill(mb.c_wx, 0.5f) == 0);
    CHECK(run_model(&mb, &ds, &b, -1.0f, &r2) == 0);
    CHECK(r2.loss == rb.loss);
    run_free(&r2);
    CHECK(gr_tensor_fill(mz.c_wx, 0.5f) == 0);
    CHECK(run_model(&mz, &ds, &b, -1.0f, &r2) == 0);
    CHECK(r2.loss != rz.loss);
    run_free(&r2);
    run_free(&rz);
    run_free(&rb);
    demo_batch_free(&b);
    demo_set_free(&ds);
    gr_ctx_free(ca);
    gr_ctx_free(cb);
}

/* Options that ignore observation features [2, 5) (train bc
 * --options-without-inventory hides Craft's inventory this way) equal
 * options whose opt.l1.wx rows 2..4 are zero, bit for bit: loss, π, Π^C,
 * every other gradient; those rows get no gradient and, whatever they
 * hold, change nothing, in training and in acting alone. */
static void test_options_ignore(void)
{
    enum { LO = 2, HI = 5 };
    struct gr_ctx *ca, *cb;
    struct ocn_config cfg, ign;
    tu_tiny_config(&cfg, 3, 10.0f, OCN_KIND_OCN);
    ign = cfg;
    ign.opt_ignore_lo = LO;
    ign.opt_ignore_hi = HI;
    CHECK(ocn_config_validate(&ign) == 0);
    struct ocn_model mz, mi;
    struct demo_set ds;
    struct demo_batch b;
    same_weights(&cfg, &ign, 6, &ca, &cb, &mz, &mi);
    const int64_t cols = mz.o_wx->shape[1];
    float *w = malloc((size_t)mz.o_wx->numel * sizeof *w);
    CHECK(w != NULL && gr_tensor_to_host(mz.o_wx, w) == 0);
    for (int64_t k = LO * cols; k < HI * cols; k++) {
        w[k] = 0.0f;
    }
    CHECK(gr_tensor_set_host(mz.o_wx, w) == 0);
    tiny_demos(&ds, &b, 13);
    struct run rz, ri, r2;
    CHECK(run_model(&mz, &ds, &b, -1.0f, &rz) == 0);
    CHECK(run_model(&mi, &ds, &b, -1.0f, &ri) == 0);
    check_same_run(&rz, &ri, &mi, b.rows, 8);
    float gin = 0.0f, gout = 0.0f, gz = 0.0f;
    for (int64_t k = 0; k < mi.o_wx->numel; k++) {
        int ignored = k >= LO * cols && k < HI * cols;
        float g = fabsf(ri.grad[8][k]);
        gin = ignored ? fmaxf(gin, g) : gin;
        gout = ignored ? gout : fmaxf(gout, g);
        CHECK(ignored || ri.grad[8][k] == rz.grad[8][k]);
        gz = ignored ? fmaxf(gz, fabsf(rz.grad[8][k])) : gz;
    }
    /* the seeing model trains those rows, the ignoring one does not */
    CHECK(gin == 0.0f && gout > 0.0f && gz > 0.0f);
    /* junk in the ignored rows changes nothing */
    for (int64_t k = LO * cols; k < HI * cols; k++) {
        w[k] = 0.5f;
    }
    CHECK(gr_tensor_set_host(mi.o_wx, w) == 0);
    CHECK(run_model(&mi, &ds, &b, -1.0f, &r2) == 0);
    CHECK(r2.loss == ri.loss);
    run_free(&r2);
    /* acting alone (the success matrix's path): the same π and e */
    {
        enum { E = 4 };
        const int d = cfg.hidden;
        float obs[E * 7], hz[3 * E * 4] = {0}, hi[3 * E * 4] = {0};
        float pz[3 * E * 5], pi_[3 * E * 5], ez[3 * E], ei[3 * E];
        for (int i = 0; i < E * 7; i++) {
            obs[i] = (float)((i * 5) % 3); /* 0, 1, 2: nonzeros everywhere */
        }
        CHECK(d == 4);
        struct ocn_act_state sz, si;
        CHECK(ocn_act_state_init(&sz, &mz, E) == 0);
        CHECK(ocn_act_state_init(&si, &mi, E) == 0);
        for (int t = 0; t < 3; t++) {
            CHECK(ocn_options_step(&mz, &sz, obs, hz, pz, ez) == 0);
            CHECK(ocn_options_step(&mi, &si, obs, hi, pi_, ei) == 0);
            CHECK(memcmp(pz, pi_, sizeof pz) == 0);
            CHECK(memcmp(ez, ei, sizeof ez) == 0);
            CHECK(memcmp(hz, hi, sizeof hz) == 0);
        }
        ocn_act_state_free(&sz);
        ocn_act_state_free(&si);
    }
    /* the config line round-trips; a range past the observation is refused */
    char text[1024];
    CHECK(ocn_config_format(&ign, text, sizeof text) > 0);
    CHECK_STR_CONTAINS(text, "options_ignore 2:5\n");
    struct ocn_config back;
    CHECK(ocn_config_parse(text, &back) == 0);
    CHECK(back.opt_ignore_lo == LO && back.opt_ignore_hi == HI);
    CHECK(ocn_config_format(&cfg, text, sizeof text) > 0);
    CHECK(strstr(text, "options_ignore") == NULL);
    ign.opt_ignore_hi = 8;
    CHECK(ocn_config_validate(&ign) == GR_EINVAL);
    CHECK(ocn_config_parse("kind ocn\noptions_ignore 2-5\n", &back) ==
          GR_EFORMAT);
    free(w);
    run_free(&rz);
    run_free(&ri);
    demo_batch_free(&b);
    demo_set_free(&ds);
    gr_ctx_free(ca);
    gr_ctx_free(cb);
}

int main(void)
{
    struct ocn_config cfg;
    tu_tiny_config(&cfg, 2, 10.0f, OCN_KIND_OCN);
    check_against_reference(&cfg, 1, 1);
    tu_tiny_config(&cfg, 2, 1.0f, OCN_KIND_OCN);
    check_against_reference(&cfg, 2, 0);
    tu_tiny_config(&cfg, 1, 10.0f, OCN_KIND_OCN);
    check_against_reference(&cfg, 3, 0);
    tu_tiny_config(&cfg, 3, 10.0f, OCN_KIND_MOE);
    check_against_reference(&cfg, 4, 1);
    /* the option-balance term, with a weight large enough to matter */
    tu_tiny_config(&cfg, 3, 10.0f, OCN_KIND_OCN);
    cfg.balance = 0.7f;
    check_against_reference(&cfg, 5, 1);
    test_properties();
    test_acting(OCN_KIND_OCN);
    test_acting(OCN_KIND_MOE);
    test_counts_and_config();
    test_blind_controller();
    test_options_ignore();
    return test_report("agents_ocn");
}
