/* One training forward and backward of compILE (agents/compile.h, ocn.md
 * §8) against PyTorch: the fixture tests/fixtures/agents/compile_fixture.txt
 * (made by make_compile_fixture.py in float64 from the header's equations,
 * padded and masked, with its Gumbel and Gaussian noise written out) holds
 * the parameters, observations, actions, noise, the loss, the NLL term, the
 * segment shares and every gradient; then, in evaluation mode (hard
 * boundaries, z = mu), the mixed π_t, the boundary score and the shares.
 * grove runs the same batch (packed, sparse encoder, f32, the same noise)
 * and must match to 1e-5 relative; a gradient scaled by 1.001 must fail.
 * Also: the shares of every step sum to 1 over the segments.
 * Usage: test_agents_compile_fixture FIXTURE. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents/compile.h"
#include "core/error.h"
#include "kernels/tape.h"
#include "tests/agents/ocn_testutil.h"
#include "tests/test.h"
#include "tests/agents/fixture_util.h"

/* max |grove - ref| over the valid steps, grove per packed row [N, w],
 * the reference in (demo, step) order */
static double step_diff(const struct demo_batch *b, const int *len, int n,
                        const float *x, const double *ref, int w)
{
    double mx = 0;
    int r = 0;
    for (int i = 0; i < n; i++) {
        for (int t = 0; t < len[i]; t++, r++) {
            int64_t row = b->row_off[t] + i; /* packed order = file order */
            for (int k = 0; k < w; k++) {
                mx = fmax(mx, fabs(x[row * w + k] - ref[r * w + k]));
            }
        }
    }
    return mx;
}

int main(int argc, char **argv)
{
    if (argc < 2 || fx_load(argv[1]) < 0) {
        fprintf(stderr, "usage: test_agents_compile_fixture FIXTURE\n");
        return 1;
    }
    const struct entry *cf = fx_find("config"), *lens = fx_find("lens"),
                       *tk = fx_find("tasks"), *act = fx_find("actions"),
                       *gum = fx_find("gumbel"), *eps = fx_find("eps"),
                       *loss_ref = fx_find("loss"),
                       *nll_ref = fx_find("nll_sum"),
                       *sh_tr = fx_find("share_train"),
                       *pi_ref = fx_find("pi"), *end_ref = fx_find("end"),
                       *sh_ev = fx_find("share_eval");
    if (!cf || !lens || !tk || !act || !gum || !eps || !loss_ref || !nll_ref ||
        !sh_tr || !pi_ref || !end_ref || !sh_ev) {
        return 1;
    }
    struct compile_config cfg;
    compile_config_default(&cfg);
    cfg.max_segs = (int)cf->v[0];
    cfg.hidden = (int)cf->v[1];
    cfg.obs_size = (int)cf->v[2];
    cfg.n_actions = (int)cf->v[3];
    cfg.n_tasks = (int)cf->v[4];
    cfg.beta_b = (float)cf->v[5];
    cfg.beta_z = (float)cf->v[6];
    cfg.prior_rate = (float)cf->v[7];
    cfg.temp_b = (float)cf->v[8];
    for (int i = 0; i < cfg.n_tasks; i++) {
        snprintf(cfg.task_names[i], CRAFT_TASK_NAME_CAP, "T%d", i);
    }
    const int A = cfg.n_actions, O = cfg.obs_size, S = cfg.max_segs;
    struct gr_ctx *ctx = tu_ctx(GR_DEVICE_CPU);
    struct compile_model m;
    CHECK(compile_model_init(&m, ctx, &cfg, 0) == 0);
    for (int i = 0; i < COMPILE_N_PARAMS; i++) {
        char key[64];
        snprintf(key, sizeof key, "param %s", compile_param_name(i));
        const struct entry *e = fx_find(key);
        CHECK(e != NULL && e->n == m.p[i]->numel);
        if (e == NULL || e->n != m.p[i]->numel) {
            return test_report("agents_compile_fixture");
        }
        float *h = malloc((size_t)e->n * sizeof *h);
        for (int k = 0; k < e->n; k++) {
            h[k] = (float)e->v[k];
        }
        gr_tensor_set_host(m.p[i], h);
        free(h);
    }
    int n = lens->n, steps = 0;
    int len[16], task[16];
    for (int i = 0; i < n; i++) {
        len[i] = (int)lens->v[i];
        task[i] = (int)tk->v[i];
        steps += len[i];
    }
    struct demo_set ds;
    tu_make_demos(&ds, n, len, task, cfg.n_tasks, O, A, 1, NULL);
    int s = fx_demo_obs(&ds, O, act);
    CHECK(s == steps && act->n == steps);
    struct demo_batch b;
    memset(&b, 0, sizeof b);
    int64_t ids[16];
    for (int i = 0; i < n; i++) {
        ids[i] = i;
    }
    CHECK(demo_batch_build(&b, &ds, ids, n) == 0);
    for (int i = 0; i < n; i++) {
        CHECK(b.demo[i] == i); /* lengths non-increasing in the file */
    }
    float *g32 = malloc((size_t)gum->n * sizeof *g32);
    float *e32 = malloc((size_t)eps->n * sizeof *e32);
    for (int k = 0; k < gum->n; k++) {
        g32[k] = (float)gum->v[k];
    }
    for (int k = 0; k < eps->n; k++) {
        e32[k] = (float)eps->v[k];
    }
    CHECK(gum->n == (S - 1) * n * (b.T + 1) && eps->n == S * n * cfg.hidden);
    struct compile_noise noise = {g32, e32};
    float *seg = malloc((size_t)(b.rows * S) * sizeof *seg);
    struct ocn_forward_out fo;
    memset(&fo, 0, sizeof fo);
    gr_zero_grad(ctx);
    CHECK(compile_forward(&m, &b, &noise, &fo, seg) == 0);
    double loss = gr_tensor_item(fo.loss);
    CHECK(gr_backward(ctx, fo.loss) == 0);
    double lerr = fabs(loss - loss_ref->v[0]) / fabs(loss_ref->v[0]);
    double nerr = fabs(fo.nll_sum - nll_ref->v[0]) / fabs(nll_ref->v[0]);
    printf("loss: grove %.9g, PyTorch %.9g (relative %.2e); nll term "
           "relative %.2e\n",
           loss, loss_ref->v[0], lerr, nerr);
    CHECK(lerr <= 1e-5 && nerr <= 1e-5);
    double dsh = step_diff(&b, len, n, seg, sh_tr->v, S);
    double worst_sum = 0;
    for (int64_t r = 0; r < b.rows; r++) {
        double sum = 0;
        for (int k = 0; k < S; k++) {
            sum += seg[r * S + k];
        }
        worst_sum = fmax(worst_sum, fabs(sum - 1.0));
    }
    printf("training shares: max difference %.2e; sum over segments within "
           "%.2e of 1\n",
           dsh, worst_sum);
    CHECK(dsh <= 1e-5 && worst_sum <= 1e-5);
    for (int i = 0; i < COMPILE_N_PARAMS; i++) {
        char key[64];
        snprintf(key, sizeof key, "grad %s", compile_param_name(i));
        const struct entry *e = fx_find(key);
        if (e == NULL || e->n != m.p[i]->numel) {
            CHECK(0);
            continue;
        }
        float *g = malloc((size_t)e->n * sizeof *g);
        gr_tensor_to_host(m.p[i]->grad, g);
        double mx = 0;
        for (int k = 0; k < e->n; k++) {
            mx = fmax(mx, fabs(e->v[k]));
        }
        if (mx < 1e-12) {
            /* zero in exact arithmetic (cmp.b2.bias: a softmax over
             * positions does not see a shift of every logit): grove's f32
             * value must be rounding noise */
            double worst = 0;
            for (int k = 0; k < e->n; k++) {
                worst = fmax(worst, fabs(g[k]));
            }
            printf("grad %-20s zero in exact arithmetic; grove %.2e\n",
                   compile_param_name(i), worst);
            CHECK_MSG(worst <= 1e-6, "%s", compile_param_name(i));
            free(g);
            continue;
        }
        double rel = fx_rel_diff(g, e->v, e->n, 1.0);
        double scaled = fx_rel_diff(g, e->v, e->n, 1.001);
        printf("grad %-20s relative difference %.2e (scaled by 1.001: "
               "%.2e)\n",
               compile_param_name(i), rel, scaled);
        CHECK_MSG(rel <= 1e-5, "%s", compile_param_name(i));
        CHECK_MSG(scaled > 1e-5, "%s: a scaled gradient passes",
                  compile_param_name(i));
        free(g);
    }
    /* evaluation mode */
    float *pi = malloc((size_t)(b.rows * A) * sizeof *pi);
    float *end = malloc((size_t)b.rows * sizeof *end);
    memset(&fo, 0, sizeof fo);
    fo.pi = pi;
    fo.end = end;
    int was = gr_set_grad_enabled(ctx, 0);
    gr_step_reset(ctx);
    CHECK(compile_forward(&m, &b, NULL, &fo, seg) == 0);
    gr_set_grad_enabled(ctx, was);
    double dpi = step_diff(&b, len, n, pi, pi_ref->v, A);
    double den = step_diff(&b, len, n, end, end_ref->v, 1);
    double dse = step_diff(&b, len, n, seg, sh_ev->v, S);
    printf("evaluation: max difference pi %.2e, boundary score %.2e, shares "
           "%.2e\n",
           dpi, den, dse);
    CHECK(dpi <= 1e-5 && den <= 1e-5 && dse <= 1e-5);
    free(pi);
    free(end);
    free(seg);
    free(g32);
    free(e32);
    demo_batch_free(&b);
    demo_set_free(&ds);
    gr_ctx_free(ctx);
    fx_free();
    return test_report("agents_compile_fixture");
}
