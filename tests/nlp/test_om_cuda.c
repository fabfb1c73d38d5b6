/* Ordered Memory, CUDA against CPU: the same weights (drawn from the seed
 * on the host), one training step of the logic pair classifier on a
 * right-padded batch with every dropout on (Philox masks, the same bits on
 * both devices): sentence vectors, loss, pointers and every parameter
 * gradient to 1e-4 relative; and the fused gated sum gr_om_gate alone.
 * Exits 77 (skipped, tests/test.h test_skip) when CUDA is not compiled in
 * or no GPU is visible (a failure with GROVE_REQUIRE_GPU=1). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/random.h"
#include "kernels/device.h"
#include "kernels/ops.h"
#include "kernels/tape.h"
#include "nlp/models/heads.h"
#include "nlp/models/om.h"
#include "tests/test.h"

struct side {
    struct gr_ctx *ctx;
    struct nlp_om om;
    struct nlp_head head;
    float enc[6 * 16], loss, probs[9 * 6 * 12];
};

static int run(struct side *s, enum gr_device dev, const int32_t *ids,
               const int32_t *labels)
{
    struct gr_ctx_config cc = gr_ctx_config_default();
    cc.device = dev;
    if (gr_ctx_new(&s->ctx, &cc) < 0) {
        fprintf(stderr, "%s: %s\n", gr_device_name(dev), gr_last_error());
        return -1;
    }
    struct nlp_om_config c;
    nlp_om_config_default(&c, NLP_OM_LOGIC);
    c.emsize = 12;
    c.nhid = 16;
    struct nlp_head_config hc = {NLP_HEAD_PAIR, 16, 16, 7, 0.3f};
    CHECK(nlp_om_init(&s->om, s->ctx, &c, 77) == 0);
    CHECK(nlp_head_init(&s->head, s->ctx, "mlp", &hc, 77) == 0);
    gr_step_reset(s->ctx);
    gr_zero_grad(s->ctx);
    struct nlp_om_run r = nlp_om_run_train(77, 3, 12);
    r.probs_out = s->probs;
    struct gr_tensor *enc = NULL;
    CHECK_MSG(nlp_om_encode(&s->om, ids, 9, 6, &r, &enc) == 0, "%s",
              gr_last_error());
    struct gr_tensor *logits = nlp_head_forward(s->ctx, &s->head, enc, 1,
                                                gr_rng_make(77, 3));
    struct gr_tensor *loss = gr_cross_entropy(
        s->ctx, logits,
        gr_tensor_from_host(s->ctx, GR_I32, gr_shape1(3), labels), -1);
    CHECK_MSG(loss != NULL, "%s", gr_ctx_error(s->ctx));
    if (loss == NULL) {
        return -1;
    }
    CHECK(gr_backward(s->ctx, loss) == 0);
    gr_tensor_to_host(enc, s->enc);
    s->loss = gr_tensor_item(loss);
    return 0;
}

static double rel(const float *a, const float *b, int64_t n)
{
    double scale = 1e-12, worst = 0.0;
    for (int64_t i = 0; i < n; i++) {
        scale = fmax(scale, fabs(b[i]));
    }
    for (int64_t i = 0; i < n; i++) {
        worst = fmax(worst, fabs(a[i] - b[i]) / scale);
    }
    return worst;
}

int main(void)
{
    if (!gr_cuda_compiled()) {
        return test_skip("nlp_om_cuda", NULL,
                         "CUDA is not compiled in (-DGROVE_CUDA=ON)");
    }
    if (gr_cuda_device_count() < 1) {
        return test_skip("nlp_om_cuda", TEST_NEED_GPU, "no GPU visible");
    }
    int32_t ids[9 * 6];
    const int lens[6] = {9, 4, 7, 9, 2, 6};
    struct gr_philox_stream ps = gr_philox_stream_init(4, 0);
    for (int t = 0; t < 9; t++) {
        for (int b = 0; b < 6; b++) {
            ids[t * 6 + b] = t < lens[b]
                                 ? (int32_t)(gr_philox_next_u32(&ps) % 11u)
                                 : 11;
        }
    }
    const int32_t labels[3] = {1, 4, 6};
    static struct side cpu, gpu;
    if (run(&cpu, GR_DEVICE_CPU, ids, labels) < 0 ||
        run(&gpu, GR_DEVICE_CUDA, ids, labels) < 0) {
        return test_report("nlp_om_cuda");
    }
    CHECK_MSG(rel(gpu.enc, cpu.enc, 6 * 16) < 1e-4, "encodings");
    CHECK_NEAR(gpu.loss, cpu.loss, 1e-4 * fabs(cpu.loss));
    CHECK_MSG(rel(gpu.probs, cpu.probs, 9 * 6 * 12) < 1e-4, "pointers");
    int n = 0;
    /* Each gradient relative to its own largest entry, except where the
     * exact gradient is zero and both sides hold rounding noise only (the
     * bias of distribution.beta.2 shifts every slot's logit of a softmax
     * alike): there, both sides small against the largest gradient of the
     * model. */
    double gmax = 0.0;
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < gr_ctx_n_named(cpu.ctx); i++) {
            struct gr_tensor *p = gr_ctx_named(cpu.ctx, i);
            if (p->kind != GR_KIND_PARAM) {
                continue;
            }
            struct gr_tensor *q = gr_ctx_find(gpu.ctx, p->name);
            CHECK(q != NULL);
            if (!q) {
                continue;
            }
            float *a = malloc((size_t)p->numel * sizeof *a);
            float *b = malloc((size_t)p->numel * sizeof *b);
            gr_tensor_to_host(p->grad, a);
            gr_tensor_to_host(q->grad, b);
            double amax = 0.0, bmax = 0.0;
            for (int64_t j = 0; j < p->numel; j++) {
                amax = fmax(amax, fabs(a[j]));
                bmax = fmax(bmax, fabs(b[j]));
            }
            if (pass == 0) {
                gmax = fmax(gmax, amax);
            } else if (amax < 1e-5 * gmax) {
                CHECK_MSG(bmax < 1e-5 * gmax, "%s: gradient is %g on CPU, "
                          "%g on CUDA (largest of the model %g)", p->name,
                          amax, bmax, gmax);
                n++;
            } else {
                double w = rel(b, a, p->numel);
                CHECK_MSG(w < 1e-4, "%s: gradient differs by %g", p->name, w);
                n++;
            }
            free(a);
            free(b);
        }
    }
    printf("nlp_om_cuda: %d gradients compared\n", n);
    nlp_om_free(&cpu.om);
    nlp_om_free(&gpu.om);
    gr_ctx_free(cpu.ctx);
    gr_ctx_free(gpu.ctx);
    return test_report("nlp_om_cuda");
}
