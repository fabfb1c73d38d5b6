/* CUDA parity of the OCN (ocn.md §11): the same model (same seed, so the
 * same initial bits on both devices) on the same batch of real Craft
 * demonstrations, forward and backward on CPU and on CUDA: loss, π_t, e_t
 * and Π^C_t to 1e-5, every parameter gradient to 1e-4 relative to the
 * tensor's largest magnitude; then acting online on both devices gives the
 * same actions. Also the §11 tiny configuration (O = 7, d = w = 4, K = 2).
 * Skips (exit 77) with a message when no GPU is visible or the build has
 * no CUDA. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents/ocn.h"
#include "core/error.h"
#include "kernels/device.h"
#include "kernels/tape.h"
#include "tests/agents/ocn_testutil.h"
#include "tests/test.h"
#include "tests/agents/cuda_util.h"

struct result {
    float loss;
    float *pi, *end, *pic;
    float *grad[15];
};

static int run(struct gr_ctx *ctx, const struct ocn_config *cfg,
               const struct demo_batch *b, struct result *r)
{
    struct ocn_model m;
    if (ocn_model_init(&m, ctx, cfg, 77) < 0) {
        return -1;
    }
    int K = cfg->n_options, A = cfg->n_actions;
    r->pi = malloc((size_t)(b->rows * A) * sizeof(float));
    r->end = malloc((size_t)b->rows * sizeof(float));
    r->pic = malloc((size_t)(b->rows * K) * sizeof(float));
    struct ocn_forward_out fo;
    memset(&fo, 0, sizeof fo);
    fo.pi = r->pi;
    fo.end = r->end;
    fo.pi_c = r->pic;
    gr_step_reset(ctx);
    if (ocn_forward(&m, b, &fo) < 0 || gr_backward(ctx, fo.loss) < 0) {
        fprintf(stderr, "%s\n", gr_last_error());
        return -1;
    }
    r->loss = gr_tensor_item(fo.loss);
    for (int i = 0; i < 15; i++) {
        struct gr_tensor *p = tu_param(&m, i);
        r->grad[i] = malloc((size_t)p->numel * sizeof(float));
        gr_tensor_to_host(p->grad, r->grad[i]);
    }
    return 0;
}

static void compare(const char *what, const struct ocn_config *cfg,
                    const struct demo_batch *b)
{
    struct gr_ctx *cpu = tu_ctx(GR_DEVICE_CPU), *gpu = tu_ctx(GR_DEVICE_CUDA);
    CHECK(cpu != NULL && gpu != NULL);
    if (cpu == NULL || gpu == NULL) {
        gr_ctx_free(cpu);
        gr_ctx_free(gpu);
        return;
    }
    struct result rc, rg;
    memset(&rc, 0, sizeof rc);
    memset(&rg, 0, sizeof rg);
    CHECK(run(cpu, cfg, b, &rc) == 0);
    CHECK(run(gpu, cfg, b, &rg) == 0);
    int K = cfg->n_options, A = cfg->n_actions;
    double dl = fabs(rc.loss - rg.loss) / fabs(rc.loss);
    double dp = cu_max_diff(rc.pi, rg.pi, b->rows * A);
    double de = cu_max_diff(rc.end, rg.end, b->rows);
    double dc = cu_max_diff(rc.pic, rg.pic, b->rows * K);
    printf("%s: loss cpu %.7g cuda %.7g; max diff pi %.2e e %.2e Pi^C %.2e\n",
           what, (double)rc.loss, (double)rg.loss, dp, de, dc);
    CHECK(dl < 1e-5 && dp < 1e-5 && de < 1e-5 && dc < 1e-5);
    struct gr_ctx *tmp = tu_ctx(GR_DEVICE_CPU);
    struct ocn_model m;
    ocn_model_init(&m, tmp, cfg, 77);
    for (int i = 0; i < 15; i++) {
        int64_t n = tu_param(&m, i)->numel;
        double scale = 0;
        for (int64_t k = 0; k < n; k++) {
            scale = fmax(scale, fabs(rc.grad[i][k]));
        }
        double rel = cu_max_diff(rc.grad[i], rg.grad[i], n) / (scale + 1e-30);
        CHECK_MSG(rel < 1e-4, "%s: gradient of %s differs by %.2e relative",
                  what, tu_param_names[i], rel);
        free(rc.grad[i]);
        free(rg.grad[i]);
    }
    gr_ctx_free(tmp);
    free(rc.pi);
    free(rc.end);
    free(rc.pic);
    free(rg.pi);
    free(rg.end);
    free(rg.pic);
    gr_ctx_free(cpu);
    gr_ctx_free(gpu);
}

int main(void)
{
    int skip = cu_need_gpu("agents_ocn_cuda");
    if (skip >= 0) {
        return skip;
    }
    /* §11's tiny configuration */
    struct ocn_config cfg;
    tu_tiny_config(&cfg, 2, 10.0f, OCN_KIND_OCN);
    struct demo_set ds;
    struct demo_batch b;
    memset(&b, 0, sizeof b);
    cu_tiny_batch(&ds, &b);
    compare("tiny ocn", &cfg, &b);
    cfg.kind = OCN_KIND_MOE;
    compare("tiny moe", &cfg, &b);
    demo_set_free(&ds);

    /* real Craft demonstrations, K = 3, d = w = 32, 64 of them */
    struct craft_config cc;
    struct craft_task tasks[2];
    cu_craft_batch(&ds, &b, &cc, tasks);
    ocn_config_default(&cfg);
    cfg.hidden = 32;
    cfg.width = 32;
    cfg.n_tasks = 2;
    strcpy(cfg.task_names[0], "AC");
    strcpy(cfg.task_names[1], "CD");
    compare("craft ocn", &cfg, &b);
    cfg.balance = 0.1f; /* the option-balance term (gr_sum_dim, gr_log) */
    compare("craft ocn, option balance", &cfg, &b);
    cfg.balance = 0.0f;

    /* acting: the same greedy actions on both devices */
    struct gr_ctx *cpu = tu_ctx(GR_DEVICE_CPU), *gpu = tu_ctx(GR_DEVICE_CUDA);
    struct ocn_model mc, mg;
    CHECK(ocn_model_init(&mc, cpu, &cfg, 77) == 0);
    CHECK(ocn_model_init(&mg, gpu, &cfg, 77) == 0);
    struct ocn_act_state sc, sg;
    CHECK(ocn_act_state_init(&sc, &mc, 8) == 0);
    CHECK(ocn_act_state_init(&sg, &mg, 8) == 0);
    struct craft_world w[8];
    for (int j = 0; j < 8; j++) {
        craft_world_reset(&w[j], &cc, craft_episode_seed(3, (uint64_t)j, 0),
                          &tasks[j % 2]);
        ocn_act_reset(&sc, j, j % 2);
        ocn_act_reset(&sg, j, j % 2);
    }
    static float obs[8 * CRAFT_OBS_SIZE];
    int same = 1;
    double worst = 0;
    for (int t = 0; t < 20; t++) {
        for (int j = 0; j < 8; j++) {
            craft_world_observe(&w[j], obs + j * CRAFT_OBS_SIZE);
        }
        int32_t ac[8], ag[8];
        float pc[8 * 5], pg[8 * 5];
        CHECK(ocn_act(&mc, &sc, obs, ac, pc, NULL, NULL) == 0);
        CHECK(ocn_act(&mg, &sg, obs, ag, pg, NULL, NULL) == 0);
        worst = fmax(worst, cu_max_diff(pc, pg, 40));
        for (int j = 0; j < 8; j++) {
            same &= ac[j] == ag[j];
            if (!craft_world_done(&w[j])) {
                struct craft_step st;
                craft_world_step(&w[j], ac[j], &st);
            }
        }
    }
    printf("acting: 20 steps x 8 worlds, max pi difference %.2e\n", worst);
    CHECK(same && worst < 1e-5);
    ocn_act_state_free(&sc);
    ocn_act_state_free(&sg);
    gr_ctx_free(cpu);
    gr_ctx_free(gpu);
    demo_batch_free(&b);
    demo_set_free(&ds);
    return test_report("agents_ocn_cuda");
}
