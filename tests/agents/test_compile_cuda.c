/* CUDA parity of compILE (agents/compile.h): the same model (same seed,
 * the same initial bits on both devices) on the same batch with the same
 * noise, a training forward and backward on CPU and on CUDA: loss and
 * segment shares to 1e-5, every parameter gradient to 1e-4 relative to the
 * tensor's largest magnitude; then an evaluation forward: π_t, the
 * boundary score and the (hard) shares. A tiny configuration on random
 * observations and a small one on real Craft demonstrations. Skips (exit
 * 77) with a message when no GPU is visible or the build has no CUDA. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents/compile.h"
#include "core/error.h"
#include "core/random.h"
#include "kernels/device.h"
#include "kernels/tape.h"
#include "tests/agents/ocn_testutil.h"
#include "tests/test.h"
#include "tests/agents/cuda_util.h"

struct result {
    float loss;
    float *seg, *pi, *end, *seg_eval;
    float *grad[COMPILE_N_PARAMS];
};

static int run(struct gr_ctx *ctx, const struct compile_config *cfg,
               const struct demo_batch *b, const struct compile_noise *nz,
               struct result *r)
{
    struct compile_model m;
    if (compile_model_init(&m, ctx, cfg, 77) < 0) {
        return -1;
    }
    int S = cfg->max_segs, A = cfg->n_actions;
    r->seg = malloc((size_t)(b->rows * S) * sizeof(float));
    r->seg_eval = malloc((size_t)(b->rows * S) * sizeof(float));
    r->pi = malloc((size_t)(b->rows * A) * sizeof(float));
    r->end = malloc((size_t)b->rows * sizeof(float));
    struct ocn_forward_out fo;
    memset(&fo, 0, sizeof fo);
    gr_step_reset(ctx);
    if (compile_forward(&m, b, nz, &fo, r->seg) < 0 ||
        gr_backward(ctx, fo.loss) < 0) {
        fprintf(stderr, "%s\n", gr_last_error());
        return -1;
    }
    r->loss = gr_tensor_item(fo.loss);
    for (int i = 0; i < COMPILE_N_PARAMS; i++) {
        r->grad[i] = malloc((size_t)m.p[i]->numel * sizeof(float));
        gr_tensor_to_host(m.p[i]->grad, r->grad[i]);
    }
    memset(&fo, 0, sizeof fo);
    fo.pi = r->pi;
    fo.end = r->end;
    int was = gr_set_grad_enabled(ctx, 0);
    gr_step_reset(ctx);
    int rc = compile_forward(&m, b, NULL, &fo, r->seg_eval);
    gr_set_grad_enabled(ctx, was);
    return rc;
}

static void compare(const char *what, const struct compile_config *cfg,
                    const struct demo_batch *b)
{
    const int S = cfg->max_segs, L = b->T + 1;
    const int64_t ng = (int64_t)(S - 1) * b->B * L,
                  ne = (int64_t)S * b->B * cfg->hidden;
    float *g = malloc((size_t)ng * sizeof *g), *e = malloc((size_t)ne * sizeof *e);
    struct gr_philox_stream st = gr_philox_stream_init(99, 0);
    for (int64_t i = 0; i < ng; i++) {
        g[i] = (float)-log(-log(((double)gr_philox_next_u32(&st) + 0.5) /
                                4294967296.0));
    }
    for (int64_t i = 0; i < ne; i++) {
        e[i] = 2.0f * gr_philox_next_uniform(&st) - 1.0f;
    }
    struct compile_noise nz = {g, e};
    struct gr_ctx *cpu = tu_ctx(GR_DEVICE_CPU), *gpu = tu_ctx(GR_DEVICE_CUDA);
    CHECK(cpu != NULL && gpu != NULL);
    struct result rc, rg;
    memset(&rc, 0, sizeof rc);
    memset(&rg, 0, sizeof rg);
    int ok = cpu != NULL && gpu != NULL && run(cpu, cfg, b, &nz, &rc) == 0 &&
             run(gpu, cfg, b, &nz, &rg) == 0;
    CHECK(ok);
    if (ok) {
        int A = cfg->n_actions;
        double dl = fabs(rc.loss - rg.loss) / fabs(rc.loss);
        double ds = cu_max_diff(rc.seg, rg.seg, b->rows * S);
        double dp = cu_max_diff(rc.pi, rg.pi, b->rows * A);
        double de = cu_max_diff(rc.end, rg.end, b->rows);
        double dh = cu_max_diff(rc.seg_eval, rg.seg_eval, b->rows * S);
        printf("%s: loss cpu %.7g cuda %.7g; max diff shares %.2e, eval pi "
               "%.2e, score %.2e, hard shares %.2e\n",
               what, (double)rc.loss, (double)rg.loss, ds, dp, de, dh);
        CHECK(dl < 1e-5 && ds < 1e-5 && dp < 1e-5 && de < 1e-5 && dh == 0.0);
        struct gr_ctx *tmp = tu_ctx(GR_DEVICE_CPU);
        struct compile_model m;
        compile_model_init(&m, tmp, cfg, 77);
        for (int i = 0; i < COMPILE_N_PARAMS; i++) {
            int64_t cnt = m.p[i]->numel;
            double scale = 0;
            for (int64_t k = 0; k < cnt; k++) {
                scale = fmax(scale, fabs(rc.grad[i][k]));
            }
            double diff = cu_max_diff(rc.grad[i], rg.grad[i], cnt);
            /* cmp.b2.bias's gradient is 0 in exact arithmetic */
            CHECK_MSG(diff < 1e-4 * scale || diff < 1e-6,
                      "%s: gradient of %s differs by %.2e (scale %.2e)",
                      what, compile_param_name(i), diff, scale);
        }
        gr_ctx_free(tmp);
    }
    for (int i = 0; i < COMPILE_N_PARAMS; i++) {
        free(rc.grad[i]);
        free(rg.grad[i]);
    }
    free(rc.seg);
    free(rc.seg_eval);
    free(rc.pi);
    free(rc.end);
    free(rg.seg);
    free(rg.seg_eval);
    free(rg.pi);
    free(rg.end);
    free(g);
    free(e);
    gr_ctx_free(cpu);
    gr_ctx_free(gpu);
}

int main(void)
{
    int skip = cu_need_gpu("agents_compile_cuda");
    if (skip >= 0) {
        return skip;
    }
    struct compile_config cfg;
    compile_config_default(&cfg);
    cfg.hidden = 4;
    cfg.obs_size = 7;
    cfg.n_tasks = 2;
    strcpy(cfg.task_names[0], "AC");
    strcpy(cfg.task_names[1], "CD");
    struct demo_set ds;
    struct demo_batch b;
    memset(&b, 0, sizeof b);
    cu_tiny_batch(&ds, &b);
    compare("tiny, S = 4", &cfg, &b);
    demo_set_free(&ds);

    struct craft_config cc;
    struct craft_task tasks[2];
    cu_craft_batch(&ds, &b, &cc, tasks);
    compile_config_default(&cfg);
    cfg.hidden = 32;
    cfg.n_tasks = 2;
    strcpy(cfg.task_names[0], "AC");
    strcpy(cfg.task_names[1], "CD");
    compare("craft, S = 4, d = 32", &cfg, &b);
    demo_batch_free(&b);
    demo_set_free(&ds);
    return test_report("agents_compile_cuda");
}
