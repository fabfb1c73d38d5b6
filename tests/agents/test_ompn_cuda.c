/* CUDA parity of OMPN (agents/ompn.h): the same model (same seed, so the
 * same initial bits on both devices) on the same batch, forward and
 * backward on CPU and on CUDA: loss, π_t, the boundary score and the slot
 * distribution to 1e-5, every parameter gradient to 1e-4 relative to the
 * tensor's largest magnitude; then acting online (worlds starting episodes
 * at different steps) gives the same actions and π_t. A tiny configuration
 * on random observations and a small one on real Craft demonstrations.
 * Skips (exit 77) with a message when no GPU is visible or the build has
 * no CUDA. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents/ompn.h"
#include "core/error.h"
#include "kernels/device.h"
#include "kernels/tape.h"
#include "tests/agents/ocn_testutil.h"
#include "tests/test.h"
#include "tests/agents/cuda_util.h"

struct result {
    float loss;
    float *pi, *end, *sp;
    float *grad[OMPN_N_PARAMS];
};

static int run(struct gr_ctx *ctx, const struct ompn_config *cfg,
               const struct demo_batch *b, struct result *r)
{
    struct ompn_model m;
    if (ompn_model_init(&m, ctx, cfg, 77) < 0) {
        return -1;
    }
    int A = cfg->n_actions, n = cfg->n_slots;
    r->pi = malloc((size_t)(b->rows * A) * sizeof(float));
    r->end = malloc((size_t)b->rows * sizeof(float));
    r->sp = malloc((size_t)(b->rows * n) * sizeof(float));
    struct ocn_forward_out fo;
    memset(&fo, 0, sizeof fo);
    fo.pi = r->pi;
    fo.end = r->end;
    gr_step_reset(ctx);
    if (ompn_forward(&m, b, &fo, r->sp) < 0 ||
        gr_backward(ctx, fo.loss) < 0) {
        fprintf(stderr, "%s\n", gr_last_error());
        return -1;
    }
    r->loss = gr_tensor_item(fo.loss);
    for (int i = 0; i < OMPN_N_PARAMS; i++) {
        struct gr_tensor *p = ompn_param(&m, i);
        r->grad[i] = malloc((size_t)p->numel * sizeof(float));
        gr_tensor_to_host(p->grad, r->grad[i]);
    }
    return 0;
}

static void compare(const char *what, const struct ompn_config *cfg,
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
    int ok = run(cpu, cfg, b, &rc) == 0 && run(gpu, cfg, b, &rg) == 0;
    CHECK(ok);
    if (ok) {
        int A = cfg->n_actions, n = cfg->n_slots;
        double dl = fabs(rc.loss - rg.loss) / fabs(rc.loss);
        double dp = cu_max_diff(rc.pi, rg.pi, b->rows * A);
        double de = cu_max_diff(rc.end, rg.end, b->rows);
        double ds = cu_max_diff(rc.sp, rg.sp, b->rows * n);
        printf("%s: loss cpu %.7g cuda %.7g; max diff pi %.2e b %.2e p "
               "%.2e\n",
               what, (double)rc.loss, (double)rg.loss, dp, de, ds);
        CHECK(dl < 1e-5 && dp < 1e-5 && de < 1e-5 && ds < 1e-5);
        struct gr_ctx *tmp = tu_ctx(GR_DEVICE_CPU);
        struct ompn_model m;
        ompn_model_init(&m, tmp, cfg, 77);
        for (int i = 0; i < OMPN_N_PARAMS; i++) {
            int64_t cnt = ompn_param(&m, i)->numel;
            double scale = 0;
            for (int64_t k = 0; k < cnt; k++) {
                scale = fmax(scale, fabs(rc.grad[i][k]));
            }
            double rel =
                cu_max_diff(rc.grad[i], rg.grad[i], cnt) / (scale + 1e-30);
            CHECK_MSG(rel < 1e-4, "%s: gradient of %s differs by %.2e "
                                  "relative",
                      what, ompn_param_name(i), rel);
        }
        gr_ctx_free(tmp);
    }
    for (int i = 0; i < OMPN_N_PARAMS; i++) {
        free(rc.grad[i]);
        free(rg.grad[i]);
    }
    free(rc.pi);
    free(rc.end);
    free(rc.sp);
    free(rg.pi);
    free(rg.end);
    free(rg.sp);
    gr_ctx_free(cpu);
    gr_ctx_free(gpu);
}

int main(void)
{
    int skip = cu_need_gpu("agents_ompn_cuda");
    if (skip >= 0) {
        return skip;
    }
    struct ompn_config cfg;
    ompn_config_default(&cfg);
    cfg.hidden = 4;
    cfg.obs_size = 7;
    cfg.n_tasks = 2;
    strcpy(cfg.task_names[0], "AC");
    strcpy(cfg.task_names[1], "CD");
    struct demo_set ds;
    struct demo_batch b;
    memset(&b, 0, sizeof b);
    cu_tiny_batch(&ds, &b);
    compare("tiny, n = 3", &cfg, &b);
    cfg.n_slots = 2;
    compare("tiny, n = 2", &cfg, &b);
    demo_set_free(&ds);

    /* real Craft demonstrations, n = 3, d = 32, 64 of them */
    struct craft_config cc;
    struct craft_task tasks[2];
    cu_craft_batch(&ds, &b, &cc, tasks);
    ompn_config_default(&cfg);
    cfg.hidden = 32;
    cfg.n_tasks = 2;
    strcpy(cfg.task_names[0], "AC");
    strcpy(cfg.task_names[1], "CD");
    compare("craft, n = 3, d = 32", &cfg, &b);

    /* acting: the same greedy actions on both devices; worlds 4..7 start
     * their episodes at step 3 */
    struct gr_ctx *cpu = tu_ctx(GR_DEVICE_CPU), *gpu = tu_ctx(GR_DEVICE_CUDA);
    struct ompn_model mc, mg;
    CHECK(ompn_model_init(&mc, cpu, &cfg, 77) == 0);
    CHECK(ompn_model_init(&mg, gpu, &cfg, 77) == 0);
    struct ompn_act_state sc, sg;
    CHECK(ompn_act_state_init(&sc, &mc, 8) == 0);
    CHECK(ompn_act_state_init(&sg, &mg, 8) == 0);
    struct craft_world w[8];
    for (int j = 0; j < 8; j++) {
        craft_world_reset(&w[j], &cc, craft_episode_seed(3, (uint64_t)j, 0),
                          &tasks[j % 2]);
        ompn_act_reset(&sc, j, j % 2);
        ompn_act_reset(&sg, j, j % 2);
    }
    static float obs[8 * CRAFT_OBS_SIZE];
    int same = 1;
    double worst = 0;
    for (int t = 0; t < 20; t++) {
        if (t == 3) {
            for (int j = 4; j < 8; j++) {
                ompn_act_reset(&sc, j, j % 2);
                ompn_act_reset(&sg, j, j % 2);
            }
        }
        for (int j = 0; j < 8; j++) {
            craft_world_observe(&w[j], obs + j * CRAFT_OBS_SIZE);
        }
        int32_t ac[8], ag[8];
        float pc[8 * 5], pg[8 * 5];
        CHECK(ompn_act(&mc, &sc, obs, ac, pc, NULL) == 0);
        CHECK(ompn_act(&mg, &sg, obs, ag, pg, NULL) == 0);
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
    ompn_act_state_free(&sc);
    ompn_act_state_free(&sg);
    gr_ctx_free(cpu);
    gr_ctx_free(gpu);
    demo_batch_free(&b);
    demo_set_free(&ds);
    return test_report("agents_ompn_cuda");
}
