/* OMPN (agents/ompn.h, ocn.md §8) on CPU:
 *   - the expansion distribution p_t sums to 1 on every step and is
 *     exactly the top slot at t = 0; the boundary score is 1 there and
 *     (n - Σ (i+1) p_t[i]) / (n - 1) elsewhere; π_t sums to 1; act_prob is
 *     π_t[a_t] and the loss is -mean log act_prob;
 *   - central finite differences of the loss (f32 model, loss summed in
 *     double on the host; a sample of entries of every parameter);
 *   - acting online, with worlds starting episodes at different steps,
 *     gives the teacher-forced π_t and p_t;
 *   - config text round trip, an OCN config refused, the parameter count;
 *   - learning: on real expert demonstrations of AC and CD (tiny model),
 *     40 Adam updates lower the validation NLL by at least 30 %, through
 *     bc_validate_policy, whose metrics have an empty (NaN) nmi. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents/bc.h"
#include "agents/ompn.h"
#include "core/error.h"
#include "kernels/optim.h"
#include "kernels/tape.h"
#include "tests/agents/ocn_testutil.h"
#include "tests/test.h"

static void tiny(struct ompn_config *c, int n)
{
    ompn_config_default(c);
    c->n_slots = n;
    c->hidden = 4;
    c->obs_size = 7;
    c->n_actions = 5;
    c->n_tasks = 2;
    strcpy(c->task_names[0], "AC");
    strcpy(c->task_names[1], "CD");
}

static int64_t packed_row(const struct demo_batch *b, int demo, int t)
{
    for (int j = 0; j < b->B; j++) {
        if (b->demo[j] == demo) {
            return b->row_off[t] + j;
        }
    }
    return -1;
}

#define ND 4
static const int demo_len[ND] = {6, 3, 5, 1};
static const int demo_task[ND] = {0, 1, 1, 0};

static void test_properties(int n)
{
    struct ompn_config cfg;
    tiny(&cfg, n);
    struct gr_ctx *ctx = tu_ctx(GR_DEVICE_CPU);
    struct ompn_model m;
    CHECK(ompn_model_init(&m, ctx, &cfg, 5) == 0);
    struct demo_set ds;
    tu_make_demos(&ds, ND, demo_len, demo_task, 2, 7, 5, 11, NULL);
    struct demo_batch b;
    memset(&b, 0, sizeof b);
    int64_t ids[ND] = {0, 1, 2, 3};
    CHECK(demo_batch_build(&b, &ds, ids, ND) == 0);
    int64_t N = b.rows;
    float *pi = malloc((size_t)(N * 5) * sizeof *pi);
    float *end = malloc((size_t)N * sizeof *end);
    float *ap = malloc((size_t)N * sizeof *ap);
    int32_t *am = malloc((size_t)N * sizeof *am);
    float *sp = malloc((size_t)(N * n) * sizeof *sp);
    struct ocn_forward_out fo;
    memset(&fo, 0, sizeof fo);
    fo.pi = pi;
    fo.end = end;
    fo.act_prob = ap;
    fo.act_argmax = am;
    CHECK(ompn_forward(&m, &b, &fo, sp) == 0);
    double nll = 0.0, worst_p = 0.0, worst_pi = 0.0;
    int interior = 0;
    for (int i = 0; i < ND; i++) {
        for (int t = 0; t < demo_len[i]; t++) {
            int64_t r = packed_row(&b, i, t);
            double s = 0.0, depth = 0.0, spi = 0.0;
            for (int k = 0; k < n; k++) {
                s += sp[r * n + k];
                depth += (k + 1) * (double)sp[r * n + k];
                CHECK(sp[r * n + k] >= 0.0f);
            }
            for (int a = 0; a < 5; a++) {
                spi += pi[r * 5 + a];
            }
            worst_p = fmax(worst_p, fabs(s - 1.0));
            worst_pi = fmax(worst_pi, fabs(spi - 1.0));
            if (t == 0) {
                /* forced to the top slot, exactly */
                CHECK(sp[r * n] == 1.0f && end[r] == 1.0f);
                for (int k = 1; k < n; k++) {
                    CHECK(sp[r * n + k] == 0.0f);
                }
            } else {
                CHECK_NEAR(end[r], (n - depth) / (n - 1), 1e-6);
                interior += sp[r * n] < 0.999f;
            }
            int a = ds.action[ds.first[i] + t];
            CHECK_NEAR(ap[r], pi[r * 5 + a], 1e-7);
            int best = 0;
            for (int k = 1; k < 5; k++) {
                best = pi[r * 5 + k] > pi[r * 5 + best] ? k : best;
            }
            CHECK(am[r] == best);
            nll -= log(fmax((double)ap[r], 1e-12));
        }
    }
    CHECK_MSG(worst_p < 1e-6, "p_t sums off by %.3g", worst_p);
    CHECK_MSG(worst_pi < 1e-6, "pi_t sums off by %.3g", worst_pi);
    CHECK(interior > 0); /* p_t is not stuck at the top after t = 0 */
    CHECK_NEAR(gr_tensor_item(fo.loss), nll / (double)N, 1e-6);
    CHECK_NEAR(fo.nll_sum, nll, 1e-4);
    printf("properties (n = %d): p_t sums within %.2e, pi_t within %.2e\n", n,
           worst_p, worst_pi);
    free(pi);
    free(end);
    free(ap);
    free(am);
    free(sp);
    demo_batch_free(&b);
    demo_set_free(&ds);
    gr_ctx_free(ctx);
}

/* The loss summed in double from the per-row probabilities (f32). */
static double host_loss(struct ompn_model *m, const struct demo_batch *b,
                        float *ap)
{
    struct ocn_forward_out fo;
    memset(&fo, 0, sizeof fo);
    fo.act_prob = ap;
    int was = gr_set_grad_enabled(m->ctx, 0);
    gr_step_reset(m->ctx);
    double s = 0.0;
    if (ompn_forward(m, b, &fo, NULL) == 0) {
        for (int64_t r = 0; r < b->rows; r++) {
            s -= log(fmax((double)ap[r], 1e-12));
        }
    }
    gr_step_reset(m->ctx);
    gr_set_grad_enabled(m->ctx, was);
    return s / (double)b->rows;
}

static void test_finite_differences(void)
{
    struct ompn_config cfg;
    tiny(&cfg, 3);
    struct gr_ctx *ctx = tu_ctx(GR_DEVICE_CPU);
    struct ompn_model m;
    CHECK(ompn_model_init(&m, ctx, &cfg, 9) == 0);
    struct demo_set ds;
    tu_make_demos(&ds, ND, demo_len, demo_task, 2, 7, 5, 21, NULL);
    struct demo_batch b;
    memset(&b, 0, sizeof b);
    int64_t ids[ND] = {0, 1, 2, 3};
    CHECK(demo_batch_build(&b, &ds, ids, ND) == 0);
    float *ap = malloc((size_t)b.rows * sizeof *ap);
    gr_zero_grad(ctx);
    gr_step_reset(ctx);
    struct ocn_forward_out fo;
    memset(&fo, 0, sizeof fo);
    CHECK(ompn_forward(&m, &b, &fo, NULL) == 0);
    CHECK(gr_backward(ctx, fo.loss) == 0);
    gr_step_reset(ctx);
    int checked = 0, bad = 0, nonzero = 0;
    double worst = 0.0;
    for (int i = 0; i < OMPN_N_PARAMS; i++) {
        struct gr_tensor *p = ompn_param(&m, i);
        int64_t cnt = p->numel;
        float *v = malloc((size_t)cnt * sizeof *v);
        float *g = malloc((size_t)cnt * sizeof *g);
        gr_tensor_to_host(p, v);
        gr_tensor_to_host(p->grad, g);
        /* up to 6 entries spread over the tensor */
        int64_t stride = cnt > 6 ? cnt / 6 : 1;
        for (int64_t k = 0; k < cnt; k += stride) {
            const float h = 2e-3f;
            float keep = v[k];
            v[k] = keep + h;
            gr_tensor_set_host(p, v);
            double lp = host_loss(&m, &b, ap);
            v[k] = keep - h;
            gr_tensor_set_host(p, v);
            double lm = host_loss(&m, &b, ap);
            v[k] = keep;
            gr_tensor_set_host(p, v);
            double fd = (lp - lm) / (2.0 * (double)h);
            double err = fabs(fd - g[k]);
            checked++;
            nonzero += fabs(fd) > 1e-4;
            /* f32 noise ~1e-7 / h plus the O(h²) term of a smooth loss */
            if (err > 5e-4 + 2e-2 * fabs(fd)) {
                if (bad < 10) {
                    fprintf(stderr, "%s[%lld]: grad %.7g, finite differences "
                                    "%.7g\n",
                            ompn_param_name(i), (long long)k, (double)g[k],
                            fd);
                }
                bad++;
            }
            worst = fmax(worst, err);
        }
        free(v);
        free(g);
    }
    CHECK_MSG(bad == 0, "%d of %d gradients off", bad, checked);
    CHECK(nonzero > checked / 2);
    printf("finite differences: %d entries (%d non-zero), worst absolute "
           "error %.2e\n",
           checked, nonzero, worst);
    free(ap);
    demo_batch_free(&b);
    demo_set_free(&ds);
    gr_ctx_free(ctx);
}

/* World 0 plays demonstration 0 (6 steps) from step 0; world 1 waits two
 * steps on other observations, then plays demonstration 2 (5 steps): its
 * episode starts while world 0 is mid-episode. */
static void test_acting(void)
{
    struct ompn_config cfg;
    tiny(&cfg, 3);
    struct gr_ctx *ctx = tu_ctx(GR_DEVICE_CPU);
    struct ompn_model m;
    CHECK(ompn_model_init(&m, ctx, &cfg, 13) == 0);
    struct demo_set ds;
    double *dense;
    tu_make_demos(&ds, ND, demo_len, demo_task, 2, 7, 5, 31, &dense);
    struct demo_batch b;
    memset(&b, 0, sizeof b);
    int64_t ids[ND] = {0, 1, 2, 3};
    CHECK(demo_batch_build(&b, &ds, ids, ND) == 0);
    float *pi = malloc((size_t)(b.rows * 5) * sizeof *pi);
    float *sp = malloc((size_t)(b.rows * 3) * sizeof *sp);
    struct ocn_forward_out fo;
    memset(&fo, 0, sizeof fo);
    fo.pi = pi;
    gr_step_reset(ctx);
    CHECK(ompn_forward(&m, &b, &fo, sp) == 0);
    gr_step_reset(ctx);
    struct ompn_act_state st;
    CHECK(ompn_act_state_init(&st, &m, 2) == 0);
    ompn_act_reset(&st, 0, ds.task[0]);
    ompn_act_reset(&st, 1, 0);
    float obs[2 * 7], probs[2 * 5], slot[2 * 3];
    int32_t act[2];
    double worst = 0.0;
    for (int s = 0; s < 7; s++) {
        int t1 = s - 2; /* world 1's step in demonstration 2 */
        if (t1 == 0) {
            ompn_act_reset(&st, 1, ds.task[2]);
        }
        for (int o = 0; o < 7; o++) {
            obs[o] = s < 6 ? (float)dense[(ds.first[0] + s) * 7 + o] : 0.0f;
            obs[7 + o] = t1 >= 0 ? (float)dense[(ds.first[2] + t1) * 7 + o]
                                 : (float)dense[(ds.first[3]) * 7 + o];
        }
        CHECK(ompn_act(&m, &st, obs, act, probs, slot) == 0);
        if (s < 6) {
            int64_t r = packed_row(&b, 0, s);
            for (int a = 0; a < 5; a++) {
                worst = fmax(worst, fabs(probs[a] - pi[r * 5 + a]));
            }
            for (int k = 0; k < 3; k++) {
                worst = fmax(worst, fabs(slot[k] - sp[r * 3 + k]));
            }
        }
        if (t1 >= 0) {
            int64_t r = packed_row(&b, 2, t1);
            for (int a = 0; a < 5; a++) {
                worst = fmax(worst, fabs(probs[5 + a] - pi[r * 5 + a]));
            }
            for (int k = 0; k < 3; k++) {
                worst = fmax(worst, fabs(slot[3 + k] - sp[r * 3 + k]));
            }
        }
    }
    CHECK_MSG(worst < 1e-5, "acting vs teacher forcing: %.3g", worst);
    printf("acting = teacher forcing within %.2e\n", worst);
    ompn_act_state_free(&st);
    free(pi);
    free(sp);
    free(dense);
    demo_batch_free(&b);
    demo_set_free(&ds);
    gr_ctx_free(ctx);
}

static void test_config(void)
{
    struct ompn_config c, back;
    ompn_config_default(&c);
    c.n_tasks = 2;
    strcpy(c.task_names[0], "AC");
    strcpy(c.task_names[1], "CD");
    char text[1024];
    CHECK(ompn_config_format(&c, text, sizeof text) > 0);
    CHECK(ompn_config_parse(text, &back) == 0);
    CHECK(back.n_slots == 3 && back.hidden == 128 && back.n_tasks == 2 &&
          strcmp(back.task_names[1], "CD") == 0 &&
          back.obs_size == CRAFT_OBS_SIZE);
    /* an OCN's config is not an OMPN's */
    struct ocn_config oc;
    ocn_config_default(&oc);
    oc.n_tasks = 1;
    strcpy(oc.task_names[0], "AC");
    char otext[OCN_CONFIG_TEXT_CAP];
    CHECK(ocn_config_format(&oc, otext, sizeof otext) > 0);
    CHECK(ompn_config_parse(otext, &back) == GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "kind 'ocn' is not ompn");
    /* and the OCN's parser refuses an OMPN config */
    CHECK(ocn_config_parse(text, &oc) < 0);
    /* parameters: d = 128, n = 3, O = 1075, A = 5, 2 tasks, by hand */
    int64_t d = 128, n = 3, O = 1075, A = 5;
    int64_t want = O * d + d + 2 * d +
                   n * (2 * 16 * d * d + 2 * 4 * d + 2 * 3 * d) +
                   (n - 1) * (12 * d * d + 4 * d + 12 * d * d + 3 * d +
                              2 * 2 * d) +
                   (4 * d * d + d + d + 1) + (A * 3 * d + A);
    CHECK(ompn_param_count(&c) == want);
    c.n_slots = 1;
    CHECK(ompn_config_validate(&c) == GR_EINVAL);
}

/* Real demonstrations, a tiny OMPN: the NLL falls. */
static void test_learning(void)
{
    struct craft_config cc;
    craft_config_default(&cc);
    struct craft_task tasks[2];
    CHECK(craft_task_parse("AC", &tasks[0]) == 0);
    CHECK(craft_task_parse("CD", &tasks[1]) == 0);
    struct demo_set ds;
    CHECK(demo_set_generate(&ds, &cc, tasks, 2, 60, 1, NULL, NULL) == 0);
    CHECK(demo_set_split(&ds, 0.8) == 0);
    struct ompn_config cfg;
    ompn_config_default(&cfg);
    cfg.hidden = 16;
    cfg.n_tasks = 2;
    strcpy(cfg.task_names[0], "AC");
    strcpy(cfg.task_names[1], "CD");
    struct gr_ctx *ctx = tu_ctx(GR_DEVICE_CPU);
    struct ompn_model m;
    CHECK(ompn_model_init(&m, ctx, &cfg, 1) == 0);
    struct bc_policy pol;
    ompn_bc_policy(&m, &pol);
    struct gr_optim *opt = NULL;
    CHECK(bc_optimizer_ctx(&opt, ctx, 1e-2f) == 0);
    struct bc_row r0, r1;
    CHECK(bc_validate_policy(&pol, &ds, ds.val, ds.n_val, 64, &r0) == 0);
    CHECK(isnan(r0.nmi));
    CHECK(r0.f1_tol1 >= 0.0 && r0.f1_tol1 <= 1.0);
    struct demo_batch b;
    memset(&b, 0, sizeof b);
    for (int u = 0; u < 40; u++) {
        int64_t ids[32];
        for (int j = 0; j < 32; j++) {
            ids[j] = ds.train[(u * 32 + j) % ds.n_train];
        }
        CHECK(demo_batch_build(&b, &ds, ids, 32) == 0);
        gr_step_reset(ctx);
        struct ocn_forward_out fo;
        memset(&fo, 0, sizeof fo);
        int rc = ompn_forward(&m, &b, &fo, NULL);
        if (rc == 0) {
            rc = gr_backward(ctx, fo.loss);
        }
        if (rc == 0) {
            rc = gr_clip_grad_norm(ctx, NULL, 0.2f, NULL);
        }
        if (rc == 0) {
            rc = gr_optim_step(opt);
        }
        gr_zero_grad(ctx);
        CHECK(rc == 0);
        if (rc < 0) {
            fprintf(stderr, "%s\n", gr_last_error());
            break;
        }
    }
    CHECK(bc_validate_policy(&pol, &ds, ds.val, ds.n_val, 64, &r1) == 0);
    printf("learning: validation nll %.4f -> %.4f, action_acc %.3f -> %.3f, "
           "f1_tol1 %.3f -> %.3f\n",
           r0.nll, r1.nll, r0.action_acc, r1.action_acc, r0.f1_tol1,
           r1.f1_tol1);
    CHECK_MSG(r1.nll <= 0.7 * r0.nll, "nll %.4f -> %.4f", r0.nll, r1.nll);
    gr_optim_free(opt);
    demo_batch_free(&b);
    demo_set_free(&ds);
    gr_ctx_free(ctx);
}

int main(void)
{
    test_properties(3);
    test_properties(2);
    test_finite_differences();
    test_acting();
    test_config();
    test_learning();
    return test_report("agents_ompn");
}
