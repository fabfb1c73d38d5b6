/* CUDA parity of one PPO iteration (agents/ppo.h): the same trainer (seed,
 * oracle options, DCA) on a CPU and on a CUDA context. Acting runs on the
 * host from the same initial weights, so the rollouts must be identical
 * (frames, episodes, returns); the update runs on each device, so its
 * statistics and the controller's parameters after it must agree to 1e-4
 * relative (the sums of a GEMM are ordered differently on cuBLAS). Then
 * the checkpoint of the CUDA trainer loads into a CPU trainer. Skips (exit
 * 77) with a message when no GPU is visible or the build has no CUDA. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agents/ppo.h"
#include "core/error.h"
#include "kernels/device.h"
#include "tests/test.h"

static struct gr_ctx *new_ctx(enum gr_device dev)
{
    struct gr_ctx_config cc = gr_ctx_config_default();
    cc.device = dev;
    cc.threads = 1;
    struct gr_ctx *ctx = NULL;
    if (gr_ctx_new(&ctx, &cc) < 0) {
        fprintf(stderr, "context: %s\n", gr_last_error());
    }
    return ctx;
}

static const char *const names[] = {
    "ctrl.l1.wx",    "ctrl.l1.wh",       "ctrl.l1.bias",   "ctrl.l2.weight",
    "ctrl.l2.bias",  "ctrl.head.weight", "ctrl.head.bias", "ctrl.h_init",
    "ctrl.value.weight", "ctrl.value.bias"};

int main(void)
{
    if (!gr_cuda_compiled()) {
        return test_skip("agents_ppo_cuda", NULL, "CUDA is not compiled into "
                         "this build (-DGROVE_CUDA=ON)");
    }
    if (gr_cuda_device_count() == 0) {
        char why[256];
        gr_cuda_status(why, sizeof why);
        return test_skip("agents_ppo_cuda", TEST_NEED_GPU,
                         "no GPU visible (%s)", why);
    }
    struct ppo_config c;
    ppo_config_default(&c);
    c.policy = PPO_POLICY_ORACLE;
    strcpy(c.task, "DCA");
    c.hidden = 32;
    c.width = 32;
    c.num_envs = 8;
    c.num_steps = 32;
    c.learning_rate = 1e-3f;
    struct gr_ctx *cpu = new_ctx(GR_DEVICE_CPU), *gpu = new_ctx(GR_DEVICE_CUDA);
    struct ppo_trainer *tc = NULL, *tg = NULL;
    CHECK(cpu != NULL && gpu != NULL);
    CHECK(ppo_trainer_new(&tc, cpu, &c, NULL, 0) == 0);
    CHECK(ppo_trainer_new(&tg, gpu, &c, NULL, 0) == 0);
    if (tc == NULL || tg == NULL) {
        return test_report("agents_ppo_cuda");
    }
    struct ppo_stats sc, sg;
    CHECK_MSG(ppo_iteration(tc, &sc) == 0, "%s", gr_last_error());
    CHECK_MSG(ppo_iteration(tg, &sg) == 0, "%s", gr_last_error());
    CHECK(sc.frames == sg.frames && sc.episodes == sg.episodes);
    CHECK(sc.episodic_return == sg.episodic_return ||
          (isnan(sc.episodic_return) && isnan(sg.episodic_return)));
    CHECK(sc.explained_variance == sg.explained_variance ||
          (isnan(sc.explained_variance) && isnan(sg.explained_variance)));
    const double a[4] = {sc.policy_loss, sc.value_loss, sc.entropy,
                         sc.approx_kl};
    const double b[4] = {sg.policy_loss, sg.value_loss, sg.entropy,
                         sg.approx_kl};
    for (int i = 0; i < 4; i++) {
        CHECK_MSG(fabs(a[i] - b[i]) <= 1e-4 * fmax(fabs(a[i]), 1e-2),
                  "stat %d: cpu %.9g, cuda %.9g", i, a[i], b[i]);
    }
    double worst = 0.0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        struct gr_tensor *x = gr_ctx_find(cpu, names[i]);
        struct gr_tensor *y = gr_ctx_find(gpu, names[i]);
        float *hx = malloc((size_t)x->numel * sizeof *hx);
        float *hy = malloc((size_t)y->numel * sizeof *hy);
        gr_tensor_to_host(x, hx);
        gr_tensor_to_host(y, hy);
        double mx = 0.0, err = 0.0;
        for (int64_t j = 0; j < x->numel; j++) {
            mx = fmax(mx, fabs(hx[j]));
            err = fmax(err, fabs(hx[j] - hy[j]));
        }
        double rel = err / fmax(mx, 1e-12);
        worst = fmax(worst, rel);
        CHECK_MSG(rel <= 1e-4, "%s: cpu vs cuda %.2e", names[i], rel);
        free(hx);
        free(hy);
    }
    printf("agents_ppo_cuda: parameters after one update agree to %.2e\n",
           worst);
    /* a checkpoint written on CUDA resumes on CPU */
    char path[256];
    snprintf(path, sizeof path, "/tmp/grove_test_ppo_cuda_%ld.ckpt",
             (long)getpid());
    CHECK_MSG(ppo_save(tg, path, 1) == 0, "%s", gr_last_error());
    struct gr_ctx *cpu2 = new_ctx(GR_DEVICE_CPU);
    struct ppo_trainer *t2 = NULL;
    CHECK(ppo_trainer_new(&t2, cpu2, &c, NULL, 0) == 0);
    CHECK_MSG(t2 != NULL && ppo_load(t2, path) == 0, "%s", gr_last_error());
    CHECK(t2 != NULL && ppo_global_step(t2) == sg.global_step);
    remove(path);
    ppo_trainer_free(t2);
    gr_ctx_free(cpu2);
    ppo_trainer_free(tc);
    ppo_trainer_free(tg);
    gr_ctx_free(cpu);
    gr_ctx_free(gpu);
    return test_report("agents_ppo_cuda");
}
