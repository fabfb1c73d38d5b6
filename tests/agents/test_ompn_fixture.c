/* One forward and backward of OMPN (agents/ompn.h, ocn.md §8) against
 * PyTorch: the fixture tests/fixtures/agents/ompn_fixture.txt (made by
 * make_ompn_fixture.py in float64, a port from the spec, padded and masked)
 * holds the parameters, observations, actions, π_t, the boundary score
 * b_t, the slot distribution p_t, the loss and every parameter's gradient.
 * grove runs the same batch (packed, sparse encoder, f32) and must match to
 * 1e-5 relative: the loss, π_t, b_t and p_t element-wise, each gradient
 * relative to the tensor's largest magnitude; a gradient scaled by 1.001
 * must fail the same comparison. Usage: test_agents_ompn_fixture FIXTURE. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents/ompn.h"
#include "core/error.h"
#include "kernels/tape.h"
#include "tests/agents/ocn_testutil.h"
#include "tests/test.h"
#include "tests/agents/fixture_util.h"

int main(int argc, char **argv)
{
    if (argc < 2 || fx_load(argv[1]) < 0) {
        fprintf(stderr, "usage: test_agents_ompn_fixture FIXTURE\n");
        return 1;
    }
    const struct entry *cf = fx_find("config"), *lens = fx_find("lens"),
                       *tk = fx_find("tasks"), *act = fx_find("actions"),
                       *pi_ref = fx_find("pi"), *end_ref = fx_find("end"),
                       *p_ref = fx_find("p"), *loss_ref = fx_find("loss");
    if (!cf || !lens || !tk || !act || !pi_ref || !end_ref || !p_ref ||
        !loss_ref) {
        return 1;
    }
    struct ompn_config cfg;
    ompn_config_default(&cfg);
    cfg.n_slots = (int)cf->v[0];
    cfg.hidden = (int)cf->v[1];
    cfg.obs_size = (int)cf->v[2];
    cfg.n_actions = (int)cf->v[3];
    cfg.n_tasks = (int)cf->v[4];
    for (int i = 0; i < cfg.n_tasks; i++) {
        snprintf(cfg.task_names[i], CRAFT_TASK_NAME_CAP, "T%d", i);
    }
    const int A = cfg.n_actions, O = cfg.obs_size, NS = cfg.n_slots;
    struct gr_ctx *ctx = tu_ctx(GR_DEVICE_CPU);
    struct ompn_model m;
    CHECK(ompn_model_init(&m, ctx, &cfg, 0) == 0);
    for (int i = 0; i < OMPN_N_PARAMS; i++) {
        char key[64];
        snprintf(key, sizeof key, "param %s", ompn_param_name(i));
        const struct entry *e = fx_find(key);
        struct gr_tensor *p = ompn_param(&m, i);
        CHECK(e != NULL && e->n == p->numel);
        if (e == NULL || e->n != p->numel) {
            return test_report("agents_ompn_fixture");
        }
        float *h = malloc((size_t)e->n * sizeof *h);
        for (int k = 0; k < e->n; k++) {
            h[k] = (float)e->v[k];
        }
        gr_tensor_set_host(p, h);
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
    float *pi = malloc((size_t)(b.rows * A) * sizeof *pi);
    float *end = malloc((size_t)b.rows * sizeof *end);
    float *sp = malloc((size_t)(b.rows * NS) * sizeof *sp);
    struct ocn_forward_out fo;
    memset(&fo, 0, sizeof fo);
    fo.pi = pi;
    fo.end = end;
    gr_zero_grad(ctx);
    CHECK(ompn_forward(&m, &b, &fo, sp) == 0);
    double loss = gr_tensor_item(fo.loss);
    CHECK(gr_backward(ctx, fo.loss) == 0);
    double lerr = fabs(loss - loss_ref->v[0]) / fabs(loss_ref->v[0]);
    printf("loss: grove %.9g, PyTorch %.9g (relative %.2e)\n", loss,
           loss_ref->v[0], lerr);
    CHECK(lerr <= 1e-5);
    double pmax = 0, emax = 0, smax = 0;
    int r = 0;
    for (int i = 0; i < n; i++) {
        for (int t = 0; t < len[i]; t++, r++) {
            int64_t row = -1;
            for (int j = 0; j < b.B; j++) {
                if (b.demo[j] == i) {
                    row = b.row_off[t] + j;
                }
            }
            for (int a = 0; a < A; a++) {
                pmax = fmax(pmax, fabs(pi[row * A + a] - pi_ref->v[r * A + a]));
            }
            for (int k = 0; k < NS; k++) {
                smax = fmax(smax, fabs(sp[row * NS + k] - p_ref->v[r * NS + k]));
            }
            emax = fmax(emax, fabs(end[row] - end_ref->v[r]));
        }
    }
    printf("pi_t: max difference %.2e; b_t: %.2e; p_t: %.2e\n", pmax, emax,
           smax);
    CHECK(pmax <= 1e-5 && emax <= 1e-5 && smax <= 1e-5);
    for (int i = 0; i < OMPN_N_PARAMS; i++) {
        char key[64];
        snprintf(key, sizeof key, "grad %s", ompn_param_name(i));
        const struct entry *e = fx_find(key);
        struct gr_tensor *p = ompn_param(&m, i);
        if (e == NULL || e->n != p->numel) {
            CHECK(0);
            continue;
        }
        float *g = malloc((size_t)e->n * sizeof *g);
        gr_tensor_to_host(p->grad, g);
        double rel = fx_rel_diff(g, e->v, e->n, 1.0);
        double scaled = fx_rel_diff(g, e->v, e->n, 1.001);
        printf("grad %-20s relative difference %.2e (scaled by 1.001: "
               "%.2e)\n",
               ompn_param_name(i), rel, scaled);
        CHECK_MSG(rel <= 1e-5, "%s", ompn_param_name(i));
        CHECK_MSG(scaled > 1e-5, "%s: a scaled gradient passes",
                  ompn_param_name(i));
        free(g);
    }
    free(pi);
    free(end);
    free(sp);
    demo_batch_free(&b);
    demo_set_free(&ds);
    gr_ctx_free(ctx);
    fx_free();
    return test_report("agents_ompn_fixture");
}
