/* One forward and backward of ocn.md §5-6 against PyTorch: the fixture
 * tests/fixtures/agents/ocn_fixture.txt (made by make_fixture.py in float64
 * with the spec's literal parameterisation and a padded, masked batch)
 * holds the parameters, observations, actions, π_t, e_t, the loss and every
 * parameter's gradient. grove runs the same batch (packed, sparse first
 * layer, f32) and must match to 1e-5 relative: the loss element-wise, π_t
 * and e_t and each gradient tensor relative to the tensor's largest
 * magnitude. Usage: test_agents_ocn_fixture FIXTURE. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents/ocn.h"
#include "core/error.h"
#include "kernels/tape.h"
#include "tests/agents/ocn_testutil.h"
#include "tests/test.h"
#include "tests/agents/fixture_util.h"

int main(int argc, char **argv)
{
    if (argc < 2 || fx_load(argv[1]) < 0) {
        fprintf(stderr, "usage: test_agents_ocn_fixture FIXTURE\n");
        return 1;
    }
    const struct entry *cf = fx_find("config"), *lens = fx_find("lens"),
                       *tk = fx_find("tasks"), *act = fx_find("actions"),
                       *pi_ref = fx_find("pi"), *end_ref = fx_find("end"),
                       *loss_ref = fx_find("loss");
    if (!cf || !lens || !tk || !act || !pi_ref || !end_ref || !loss_ref) {
        return 1;
    }
    struct ocn_config cfg;
    ocn_config_default(&cfg);
    cfg.n_options = (int)cf->v[0];
    cfg.hidden = (int)cf->v[1];
    cfg.width = (int)cf->v[2];
    cfg.obs_size = (int)cf->v[3];
    cfg.n_actions = (int)cf->v[4];
    cfg.n_tasks = (int)cf->v[5];
    cfg.tau = (float)cf->v[6];
    for (int i = 0; i < cfg.n_tasks; i++) {
        snprintf(cfg.task_names[i], CRAFT_TASK_NAME_CAP, "T%d", i);
    }
    const int A = cfg.n_actions, O = cfg.obs_size;
    struct gr_ctx *ctx = tu_ctx(GR_DEVICE_CPU);
    struct ocn_model m;
    CHECK(ocn_model_init(&m, ctx, &cfg, 0) == 0);
    for (int i = 0; i < 15; i++) {
        char key[64];
        snprintf(key, sizeof key, "param %s", tu_param_names[i]);
        const struct entry *e = fx_find(key);
        struct gr_tensor *p = tu_param(&m, i);
        CHECK(e != NULL && e->n == p->numel);
        if (e == NULL || e->n != p->numel) {
            return test_report("agents_ocn_fixture");
        }
        float *h = malloc((size_t)e->n * sizeof *h);
        for (int k = 0; k < e->n; k++) {
            h[k] = (float)e->v[k];
        }
        gr_tensor_set_host(p, h);
        free(h);
    }
    /* the demonstrations, from the dense observations */
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
    struct ocn_forward_out fo;
    memset(&fo, 0, sizeof fo);
    fo.pi = pi;
    fo.end = end;
    gr_zero_grad(ctx);
    CHECK(ocn_forward(&m, &b, &fo) == 0);
    double loss = gr_tensor_item(fo.loss);
    CHECK(gr_backward(ctx, fo.loss) == 0);
    double lerr = fabs(loss - loss_ref->v[0]) / fabs(loss_ref->v[0]);
    printf("loss: grove %.9g, PyTorch %.9g (relative %.2e)\n", loss,
           loss_ref->v[0], lerr);
    CHECK(lerr <= 1e-5);
    /* π_t and e_t, in the fixture's (demo, step) order */
    double pmax = 0, emax = 0;
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
            emax = fmax(emax, fabs(end[row] - end_ref->v[r]));
        }
    }
    printf("pi_t: max difference %.2e; e_t: %.2e\n", pmax, emax);
    CHECK(pmax <= 1e-5 && emax <= 1e-5);
    /* gradients, per tensor relative to its largest magnitude */
    for (int i = 0; i < 15; i++) {
        char key[64];
        snprintf(key, sizeof key, "grad %s", tu_param_names[i]);
        const struct entry *e = fx_find(key);
        struct gr_tensor *p = tu_param(&m, i);
        if (e == NULL || e->n != p->numel) {
            CHECK(0);
            continue;
        }
        float *g = malloc((size_t)e->n * sizeof *g);
        gr_tensor_to_host(p->grad, g);
        double diff = 0, scale = 0;
        for (int k = 0; k < e->n; k++) {
            diff = fmax(diff, fabs(g[k] - e->v[k]));
            scale = fmax(scale, fabs(e->v[k]));
        }
        double rel = scale > 0 ? diff / scale : diff;
        printf("grad %-17s max |ref| %.3e, relative difference %.2e\n",
               tu_param_names[i], scale, rel);
        CHECK_MSG(rel <= 1e-5 && scale > 0, "%s", tu_param_names[i]);
        free(g);
    }
    free(pi);
    free(end);
    demo_batch_free(&b);
    demo_set_free(&ds);
    gr_ctx_free(ctx);
    fx_free();
    return test_report("agents_ocn_fixture");
}
