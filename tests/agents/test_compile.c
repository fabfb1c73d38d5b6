/* compILE (agents/compile.h, ocn.md §8) on CPU:
 *   - the segment shares of every step sum to 1 over the segments, in
 *     training (concrete boundaries, drawn noise) and in evaluation (hard
 *     boundaries: each step in exactly one segment, segments in order);
 *     π_t sums to 1; the boundary score is 1 at t = 0 and at most
 *     (S-1)(1 + 10⁻³) (the inferred boundaries plus their soft mass);
 *   - the training noise: a forward draws from (seed, counter) and steps
 *     the counter (cmp.draws); the same counter gives the same loss, the
 *     next one another; evaluation draws nothing;
 *   - central finite differences of the training loss with fixed noise (a
 *     sample of entries of every parameter);
 *   - config text round trip, an OCN config refused, the parameter count;
 *   - learning: on real expert demonstrations of AC and CD (tiny model),
 *     60 Adam updates lower the validation NLL by at least 20 %, through
 *     bc_validate_policy (nmi empty). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents/bc.h"
#include "agents/compile.h"
#include "core/error.h"
#include "core/random.h"
#include "kernels/optim.h"
#include "kernels/tape.h"
#include "tests/agents/ocn_testutil.h"
#include "tests/test.h"

#define ND 5
static const int demo_len[ND] = {9, 3, 6, 1, 7};
static const int demo_task[ND] = {0, 1, 1, 0, 1};

static void tiny(struct compile_config *c)
{
    compile_config_default(c);
    c->hidden = 4;
    c->obs_size = 7;
    c->n_tasks = 2;
    strcpy(c->task_names[0], "AC");
    strcpy(c->task_names[1], "CD");
}

static int32_t draws(const struct compile_model *m)
{
    int32_t c[2];
    gr_tensor_to_host(m->draws, c);
    return c[0];
}

static void test_shares(void)
{
    struct compile_config cfg;
    tiny(&cfg);
    const int S = cfg.max_segs;
    struct gr_ctx *ctx = tu_ctx(GR_DEVICE_CPU);
    struct compile_model m;
    CHECK(compile_model_init(&m, ctx, &cfg, 3) == 0);
    struct demo_set ds;
    tu_make_demos(&ds, ND, demo_len, demo_task, 2, 7, 5, 17, NULL);
    struct demo_batch b;
    memset(&b, 0, sizeof b);
    int64_t ids[ND] = {0, 1, 2, 3, 4};
    CHECK(demo_batch_build(&b, &ds, ids, ND) == 0);
    float *seg = malloc((size_t)(b.rows * S) * sizeof *seg);
    float *pi = malloc((size_t)(b.rows * 5) * sizeof *pi);
    float *end = malloc((size_t)b.rows * sizeof *end);
    /* training: soft shares */
    struct ocn_forward_out fo;
    memset(&fo, 0, sizeof fo);
    CHECK(draws(&m) == 0);
    gr_step_reset(ctx);
    CHECK(compile_forward(&m, &b, NULL, &fo, seg) == 0);
    CHECK(draws(&m) == 1);
    double l1 = gr_tensor_item(fo.loss);
    double worst = 0;
    int soft = 0;
    for (int64_t r = 0; r < b.rows; r++) {
        double s = 0;
        for (int k = 0; k < S; k++) {
            s += seg[r * S + k];
            CHECK(seg[r * S + k] >= -1e-6f);
            soft += seg[r * S + k] > 0.01f && seg[r * S + k] < 0.99f;
        }
        worst = fmax(worst, fabs(s - 1.0));
    }
    CHECK_MSG(worst < 1e-5, "training shares sum off by %.3g", worst);
    CHECK(soft > 0); /* concrete, not hard */
    /* the next forward draws other noise; the same counter the same */
    gr_step_reset(ctx);
    CHECK(compile_forward(&m, &b, NULL, &fo, NULL) == 0);
    double l2 = gr_tensor_item(fo.loss);
    int32_t back[2] = {0, 0};
    gr_tensor_set_host(m.draws, back);
    gr_step_reset(ctx);
    CHECK(compile_forward(&m, &b, NULL, &fo, NULL) == 0);
    double l3 = gr_tensor_item(fo.loss);
    printf("training losses: draw 0 %.7g, draw 1 %.7g, draw 0 again %.7g\n",
           l1, l2, l3);
    CHECK(l1 != l2 && l1 == l3);
    /* evaluation: hard, ordered segments */
    int was = gr_set_grad_enabled(ctx, 0);
    memset(&fo, 0, sizeof fo);
    fo.pi = pi;
    fo.end = end;
    int32_t before = draws(&m);
    gr_step_reset(ctx);
    CHECK(compile_forward(&m, &b, NULL, &fo, seg) == 0);
    CHECK(draws(&m) == before);
    gr_set_grad_enabled(ctx, was);
    worst = 0;
    double worst_pi = 0;
    for (int j = 0; j < b.B; j++) {
        int prev = 0;
        for (int t = 0; t < b.len[j]; t++) {
            int64_t r = b.row_off[t] + j;
            int ones = 0, which = -1;
            for (int k = 0; k < S; k++) {
                CHECK(seg[r * S + k] == 0.0f || seg[r * S + k] == 1.0f);
                if (seg[r * S + k] == 1.0f) {
                    ones++;
                    which = k;
                }
            }
            CHECK(ones == 1 && which >= prev);
            prev = which;
            double sp = 0;
            for (int a = 0; a < 5; a++) {
                sp += pi[r * 5 + a];
            }
            worst_pi = fmax(worst_pi, fabs(sp - 1.0));
            if (t == 0) {
                CHECK(end[r] == 1.0f && which == 0);
            } else {
                /* at most S-1 inferred boundaries, plus 1e-3 of soft mass */
                CHECK(end[r] >= 0.0f && end[r] <= (float)(S - 1) * 1.001f + 1e-5f);
            }
        }
    }
    CHECK_MSG(worst_pi < 1e-5, "pi sums off by %.3g", worst_pi);
    free(seg);
    free(pi);
    free(end);
    demo_batch_free(&b);
    demo_set_free(&ds);
    gr_ctx_free(ctx);
}

static double loss_at(struct compile_model *m, const struct demo_batch *b,
                      const struct compile_noise *nz)
{
    struct ocn_forward_out fo;
    memset(&fo, 0, sizeof fo);
    gr_step_reset(m->ctx);
    double l = NAN;
    if (compile_forward(m, b, nz, &fo, NULL) == 0) {
        l = gr_tensor_item(fo.loss);
    }
    gr_step_reset(m->ctx);
    return l;
}

static void test_finite_differences(void)
{
    struct compile_config cfg;
    tiny(&cfg);
    cfg.max_segs = 3;
    struct gr_ctx *ctx = tu_ctx(GR_DEVICE_CPU);
    struct compile_model m;
    CHECK(compile_model_init(&m, ctx, &cfg, 5) == 0);
    struct demo_set ds;
    tu_make_demos(&ds, ND, demo_len, demo_task, 2, 7, 5, 23, NULL);
    struct demo_batch b;
    memset(&b, 0, sizeof b);
    int64_t ids[ND] = {0, 1, 2, 3, 4};
    CHECK(demo_batch_build(&b, &ds, ids, ND) == 0);
    const int L = b.T + 1, S = cfg.max_segs;
    float *g = malloc((size_t)((S - 1) * ND * L) * sizeof *g);
    float *e = malloc((size_t)(S * ND * cfg.hidden) * sizeof *e);
    struct gr_philox_stream st = gr_philox_stream_init(7, 0);
    for (int i = 0; i < (S - 1) * ND * L; i++) {
        g[i] = (float)-log(-log(((double)gr_philox_next_u32(&st) + 0.5) /
                                4294967296.0));
    }
    for (int i = 0; i < S * ND * cfg.hidden; i++) {
        e[i] = 2.0f * gr_philox_next_uniform(&st) - 1.0f;
    }
    struct compile_noise nz = {g, e};
    gr_zero_grad(ctx);
    gr_step_reset(ctx);
    struct ocn_forward_out fo;
    memset(&fo, 0, sizeof fo);
    CHECK(compile_forward(&m, &b, &nz, &fo, NULL) == 0);
    CHECK(gr_backward(ctx, fo.loss) == 0);
    gr_step_reset(ctx);
    int checked = 0, bad = 0, nonzero = 0;
    double worst = 0;
    for (int i = 0; i < COMPILE_N_PARAMS; i++) {
        struct gr_tensor *p = m.p[i];
        int64_t cnt = p->numel;
        float *v = malloc((size_t)cnt * sizeof *v);
        float *gr = malloc((size_t)cnt * sizeof *gr);
        gr_tensor_to_host(p, v);
        gr_tensor_to_host(p->grad, gr);
        int64_t stride = cnt > 5 ? cnt / 5 : 1;
        for (int64_t k = 0; k < cnt; k += stride) {
            const float h = 4e-3f;
            float keep = v[k];
            v[k] = keep + h;
            gr_tensor_set_host(p, v);
            double lp = loss_at(&m, &b, &nz);
            v[k] = keep - h;
            gr_tensor_set_host(p, v);
            double lm = loss_at(&m, &b, &nz);
            v[k] = keep;
            gr_tensor_set_host(p, v);
            double fd = (lp - lm) / (2.0 * (double)h);
            double err = fabs(fd - gr[k]);
            checked++;
            nonzero += fabs(fd) > 1e-3;
            if (err > 2e-3 + 3e-2 * fabs(fd)) {
                if (bad < 10) {
                    fprintf(stderr, "%s[%lld]: grad %.7g, finite differences "
                                    "%.7g\n",
                            compile_param_name(i), (long long)k, (double)gr[k],
                            fd);
                }
                bad++;
            }
            worst = fmax(worst, err);
        }
        free(v);
        free(gr);
    }
    CHECK_MSG(bad == 0, "%d of %d gradients off", bad, checked);
    CHECK(nonzero > checked / 2);
    printf("finite differences: %d entries (%d non-zero), worst absolute "
           "error %.2e\n",
           checked, nonzero, worst);
    free(g);
    free(e);
    demo_batch_free(&b);
    demo_set_free(&ds);
    gr_ctx_free(ctx);
}

static void test_config(void)
{
    struct compile_config c, back;
    compile_config_default(&c);
    c.n_tasks = 1;
    strcpy(c.task_names[0], "AC");
    c.beta_b = 0.25f;
    char text[1024];
    CHECK(compile_config_format(&c, text, sizeof text) > 0);
    CHECK(compile_config_parse(text, &back) == 0);
    CHECK(back.max_segs == 4 && back.hidden == 128 && back.beta_b == 0.25f &&
          back.beta_z == 0.1f && back.prior_rate == 3.0f && back.n_tasks == 1);
    struct ocn_config oc;
    ocn_config_default(&oc);
    oc.n_tasks = 1;
    strcpy(oc.task_names[0], "AC");
    char otext[OCN_CONFIG_TEXT_CAP];
    CHECK(ocn_config_format(&oc, otext, sizeof otext) > 0);
    CHECK(compile_config_parse(otext, &back) == GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "kind 'ocn' is not compile");
    int64_t d = 128, O = 1075, A = 5;
    int64_t want = O * d + d + (A + 1) * d + 2 * d * d + d + 8 * d * d +
                   8 * d + d * d + d + d + 1 + d * d + d + 2 * d * d + 2 * d +
                   2 * d * d + d + A * d + A;
    CHECK(compile_param_count(&c) == want);
    char *at = strstr(text, "max_segs 4");
    CHECK(at != NULL);
    if (at != NULL) {
        memcpy(at, "max_segs x", 10);
        CHECK(compile_config_parse(text, &back) == GR_EFORMAT);
        CHECK_STR_CONTAINS(gr_last_error(), "max_segs 'x' is not an integer");
    }
    c.max_segs = 1;
    CHECK(compile_config_validate(&c) == GR_EINVAL);
}

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
    struct compile_config cfg;
    compile_config_default(&cfg);
    cfg.hidden = 16;
    cfg.n_tasks = 2;
    strcpy(cfg.task_names[0], "AC");
    strcpy(cfg.task_names[1], "CD");
    struct gr_ctx *ctx = tu_ctx(GR_DEVICE_CPU);
    struct compile_model m;
    CHECK(compile_model_init(&m, ctx, &cfg, 1) == 0);
    struct bc_policy pol;
    compile_bc_policy(&m, &pol);
    struct gr_optim *opt = NULL;
    CHECK(bc_optimizer_ctx(&opt, ctx, 1e-2f) == 0);
    struct bc_row r0, r1;
    CHECK(bc_validate_policy(&pol, &ds, ds.val, ds.n_val, 64, &r0) == 0);
    CHECK(isnan(r0.nmi));
    struct demo_batch b;
    memset(&b, 0, sizeof b);
    for (int u = 0; u < 60; u++) {
        int64_t ids[32];
        for (int j = 0; j < 32; j++) {
            ids[j] = ds.train[(u * 32 + j) % ds.n_train];
        }
        CHECK(demo_batch_build(&b, &ds, ids, 32) == 0);
        gr_step_reset(ctx);
        struct ocn_forward_out fo;
        memset(&fo, 0, sizeof fo);
        int rc = compile_forward(&m, &b, NULL, &fo, NULL);
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
           "f1_tol1 %.3f -> %.3f, align_acc %.3f -> %.3f\n",
           r0.nll, r1.nll, r0.action_acc, r1.action_acc, r0.f1_tol1,
           r1.f1_tol1, r0.align_acc, r1.align_acc);
    CHECK_MSG(r1.nll <= 0.8 * r0.nll, "nll %.4f -> %.4f", r0.nll, r1.nll);
    gr_optim_free(opt);
    demo_batch_free(&b);
    demo_set_free(&ds);
    gr_ctx_free(ctx);
}

int main(void)
{
    test_shares();
    test_finite_differences();
    test_config();
    test_learning();
    return test_report("agents_compile");
}
