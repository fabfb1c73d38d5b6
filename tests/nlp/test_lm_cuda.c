/* The language model on CUDA against the same model on the CPU: the same
 * seed gives the same initial weights and the same Philox dropout masks on
 * both devices, so one training window (forward with every dropout,
 * backward, clip, SGD step) and an evaluation window must agree: losses,
 * distances, every gradient and the updated weights, to 1e-4 relative.
 * Exits 77 (skipped) when no GPU is visible or CUDA is not compiled in. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/device.h"
#include "kernels/ops.h"
#include "kernels/optim.h"
#include "kernels/tape.h"
#include "nlp/models/onlstm.h"
#include "tests/test.h"

struct side {
    struct gr_ctx *ctx;
    struct nlp_lm lm;
    struct nlp_lm_state st;
    struct gr_optim *opt;
    float loss[2], ce[2];
};

static int setup(struct side *s, enum gr_device dev,
                 const struct nlp_lm_config *cfg, int B)
{
    struct gr_ctx_config cc = gr_ctx_config_default();
    cc.device = dev;
    if (gr_ctx_new(&s->ctx, &cc) < 0 || nlp_lm_init(&s->lm, s->ctx, cfg, 9) < 0 ||
        nlp_lm_state_init(&s->st, &s->lm, "t", B) < 0) {
        return -1;
    }
    struct gr_optim_config oc = gr_optim_config_default(GR_OPTIM_SGD);
    oc.lr = 30.0f;
    oc.weight_decay = 1.2e-6f;
    return gr_optim_new(&s->opt, s->ctx, "sgd", &oc);
}

static void run(struct side *s, const int32_t *ids, int T, int B)
{
    struct gr_ctx *ctx = s->ctx;
    for (int w = 0; w < 2; w++) {
        gr_step_reset(ctx);
        gr_zero_grad(ctx);
        struct gr_tensor *in = gr_tensor_from_host(ctx, GR_I32,
                                                   gr_shape2(T, B), ids);
        struct gr_tensor *tg = gr_tensor_from_host(ctx, GR_I32,
                                                   gr_shape1(T * B), ids + B);
        struct nlp_lm_drop d = w == 0 ? nlp_lm_drop_train(3, 1, 0)
                                      : nlp_lm_drop_eval();
        struct nlp_lm_out o;
        CHECK_MSG(nlp_lm_forward(&s->lm, &s->st, in, tg, &d, &o) == 0, "%s",
                  gr_last_error());
        s->loss[w] = gr_tensor_item(o.loss);
        s->ce[w] = gr_tensor_item(o.ce);
        if (w == 0) {
            CHECK(gr_backward(ctx, o.loss) == 0);
            CHECK(gr_clip_grad_norm(ctx, NULL, 0.25f, NULL) == 0);
            CHECK(gr_optim_step(s->opt) == 0);
        }
    }
}

static double rel_diff(const struct gr_tensor *a, const struct gr_tensor *b)
{
    float *x = malloc((size_t)a->numel * sizeof *x);
    float *y = malloc((size_t)b->numel * sizeof *y);
    gr_tensor_to_host(a, x);
    gr_tensor_to_host(b, y);
    double scale = 1e-12, worst = 0.0;
    for (int64_t i = 0; i < a->numel; i++) {
        scale = fmax(scale, fabs(x[i]));
    }
    for (int64_t i = 0; i < a->numel; i++) {
        worst = fmax(worst, fabs((double)x[i] - y[i]) / scale);
    }
    free(x);
    free(y);
    return worst;
}

int main(void)
{
    if (!gr_cuda_compiled()) {
        return test_skip("nlp_lm_cuda", NULL,
                         "CUDA is not compiled into this build");
    }
    if (gr_cuda_device_count() == 0) {
        char why[256];
        gr_cuda_status(why, sizeof why);
        return test_skip("nlp_lm_cuda", TEST_NEED_GPU, "no GPU visible (%s)",
                         why);
    }
    struct nlp_lm_config cfg;
    nlp_lm_config_default(&cfg, NLP_LM_ONLSTM, 300);
    cfg.emsize = 40;
    cfg.nhid = 60;
    cfg.nlayers = 3;
    cfg.chunk = 10;
    const int T = 12, B = 5;
    int32_t ids[13 * 5];
    for (int i = 0; i < (T + 1) * B; i++) {
        ids[i] = (i * 37 + 11) % 300;
    }
    struct side cpu, gpu;
    memset(&cpu, 0, sizeof cpu);
    memset(&gpu, 0, sizeof gpu);
    CHECK(setup(&cpu, GR_DEVICE_CPU, &cfg, B) == 0);
    CHECK_MSG(setup(&gpu, GR_DEVICE_CUDA, &cfg, B) == 0, "%s",
              gr_last_error());
    run(&cpu, ids, T, B);
    run(&gpu, ids, T, B);
    for (int w = 0; w < 2; w++) {
        CHECK_MSG(fabs(cpu.loss[w] - gpu.loss[w]) <= 1e-4 * fabs(cpu.loss[w]),
                  "window %d loss: cpu %.7g cuda %.7g", w, (double)cpu.loss[w],
                  (double)gpu.loss[w]);
    }
    double worst = 0.0;
    for (int i = 0; i < gr_ctx_n_named(cpu.ctx); i++) {
        struct gr_tensor *a = gr_ctx_named(cpu.ctx, i);
        struct gr_tensor *b = gr_ctx_find(gpu.ctx, a->name);
        CHECK(b != NULL);
        if (b == NULL || a->kind == GR_KIND_OPTIM) {
            continue;
        }
        double d = rel_diff(a, b);
        CHECK_MSG(d <= 1e-4, "%s differs by %.3g of its scale", a->name, d);
        worst = fmax(worst, d);
    }
    printf("cpu vs cuda: losses %.6f / %.6f, worst tensor difference %.3g\n",
           (double)cpu.loss[0], (double)gpu.loss[0], worst);
    gr_optim_free(cpu.opt);
    gr_optim_free(gpu.opt);
    gr_ctx_free(cpu.ctx);
    gr_ctx_free(gpu.ctx);
    return test_report("nlp_lm_cuda");
}
