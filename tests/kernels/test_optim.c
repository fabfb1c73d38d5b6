/* Optimizers against hand-computed numbers and a double-precision
 * re-implementation of PyTorch's update rules; clipping; schedules;
 * freezing and prefixes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/optim.h"
#include "kernels/tape.h"
#include "kernels/tensor.h"
#include "tests/test.h"

#define N 5

static struct gr_ctx *cpu_ctx(void)
{
    struct gr_ctx_config cfg = gr_ctx_config_default();
    cfg.device = GR_DEVICE_CPU;
    cfg.step_chunk_bytes = 1 << 16;
    struct gr_ctx *ctx = NULL;
    gr_ctx_new(&ctx, &cfg);
    return ctx;
}

static void set_grad(struct gr_tensor *p, const float *g)
{
    gr_tensor_set_host(p->grad, g);
}

static float get1(struct gr_tensor *t, int i)
{
    float v[64];
    gr_tensor_to_host(t, v);
    return v[i];
}

/* Literal numbers worked out by hand. */
static void test_hand(void)
{
    struct gr_ctx *ctx = cpu_ctx();
    struct gr_tensor *p = gr_param_new(ctx, "p", gr_shape1(1));
    struct gr_optim *o;
    float one = 1.0f, half = 0.5f;
    /* SGD momentum 0.9, lr 0.1, g = 1: buf 1 -> p 0.9; buf 1.9 -> 0.71 */
    struct gr_optim_config c = gr_optim_config_default(GR_OPTIM_SGD);
    c.lr = 0.1f;
    c.momentum = 0.9f;
    gr_tensor_set_host(p, &one);
    CHECK(gr_optim_new(&o, ctx, "sgd", &c) == 0);
    set_grad(p, &one);
    gr_optim_step(o);
    CHECK_NEAR(get1(p, 0), 0.9, 1e-7);
    gr_optim_step(o);
    CHECK_NEAR(get1(p, 0), 0.71, 1e-7);
    CHECK(gr_optim_steps(o) == 2);
    gr_optim_free(o);
    /* Adam lr 0.1, g = 0.5 at step 1: m̂ = 0.5, v̂ = 0.25 -> p -= 0.1 */
    c = gr_optim_config_default(GR_OPTIM_ADAM);
    c.lr = 0.1f;
    gr_tensor_set_host(p, &one);
    CHECK(gr_optim_new(&o, ctx, "adam", &c) == 0);
    set_grad(p, &half);
    gr_optim_step(o);
    CHECK_NEAR(get1(p, 0), 0.9, 1e-6);
    gr_optim_free(o);
    /* AdamW lr 0.1, wd 0.5: p = 1·(1 - 0.05) - 0.1 = 0.85 */
    c = gr_optim_config_default(GR_OPTIM_ADAMW);
    c.lr = 0.1f;
    c.weight_decay = 0.5f;
    gr_tensor_set_host(p, &one);
    CHECK(gr_optim_new(&o, ctx, "adamw", &c) == 0);
    set_grad(p, &half);
    gr_optim_step(o);
    CHECK_NEAR(get1(p, 0), 0.85, 1e-6);
    gr_optim_free(o);
    /* SGD with L2 0.5, lr 0.1, g = 0.5, p = 1: p -= 0.1·(0.5 + 0.5) */
    c = gr_optim_config_default(GR_OPTIM_SGD);
    c.lr = 0.1f;
    c.weight_decay = 0.5f;
    gr_tensor_set_host(p, &one);
    CHECK(gr_optim_new(&o, ctx, "sgdl2", &c) == 0);
    set_grad(p, &half);
    gr_optim_step(o);
    CHECK_NEAR(get1(p, 0), 0.9, 1e-7);
    gr_optim_free(o);
    /* bad configurations */
    c = gr_optim_config_default(GR_OPTIM_SGD);
    c.nesterov = 1;
    CHECK(gr_optim_new(&o, ctx, "bad", &c) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "Nesterov");
    c = gr_optim_config_default(GR_OPTIM_SGD);
    CHECK(gr_optim_new(&o, ctx, "sgd", &c) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "named 'sgd' exists");
    c.prefix = "nothing.";
    CHECK(gr_optim_new(&o, ctx, "x", &c) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "no parameter matches");
    gr_ctx_free(ctx);
}

/* A reference in double of each rule, run side by side for 6 steps with
 * varying gradients and a learning rate changed between steps. */
struct ref {
    double p[N], s1[N], s2[N], ax[N];
    double eta, mu;
    int t;
};

static void ref_step(struct ref *r, const struct gr_optim_config *c,
                     const float *g, double lr)
{
    r->t++;
    for (int i = 0; i < N; i++) {
        double d = g[i];
        switch (c->kind) {
        case GR_OPTIM_SGD:
            d += c->weight_decay * r->p[i];
            if (c->momentum != 0) {
                r->s1[i] = r->t == 1 ? d
                                     : c->momentum * r->s1[i] +
                                           (1 - c->dampening) * d;
                d = c->nesterov ? d + c->momentum * r->s1[i] : r->s1[i];
            }
            r->p[i] -= lr * d;
            break;
        case GR_OPTIM_ADAM:
        case GR_OPTIM_ADAMW: {
            if (c->kind == GR_OPTIM_ADAMW) {
                r->p[i] *= 1 - lr * c->weight_decay;
            } else {
                d += c->weight_decay * r->p[i];
            }
            r->s1[i] = c->beta1 * r->s1[i] + (1 - c->beta1) * d;
            r->s2[i] = c->beta2 * r->s2[i] + (1 - c->beta2) * d * d;
            double mh = r->s1[i] / (1 - pow(c->beta1, r->t));
            double vh = r->s2[i] / (1 - pow(c->beta2, r->t));
            r->p[i] -= lr * mh / (sqrt(vh) + c->eps);
            break;
        }
        case GR_OPTIM_ASGD:
            d += c->weight_decay * r->p[i];
            r->p[i] *= 1 - c->asgd_lambd * r->eta;
            r->p[i] -= r->eta * d;
            r->ax[i] = r->mu == 1.0 ? r->p[i]
                                    : r->ax[i] + (r->p[i] - r->ax[i]) * r->mu;
            break;
        }
    }
    if (c->kind == GR_OPTIM_ASGD) {
        r->eta = lr / pow(1 + c->asgd_lambd * lr * r->t, c->asgd_alpha);
        double dd = r->t - c->asgd_t0;
        r->mu = 1.0 / (dd > 1 ? dd : 1);
    }
}

static void run_rule(const char *label, struct gr_optim_config c)
{
    struct gr_ctx *ctx = cpu_ctx();
    struct gr_tensor *p = gr_param_new(ctx, "w", gr_shape1(N));
    float pv[N] = {0.5f, -1.0f, 2.0f, 0.0f, 1.5f};
    gr_tensor_set_host(p, pv);
    struct ref r;
    memset(&r, 0, sizeof r);
    for (int i = 0; i < N; i++) {
        r.p[i] = pv[i];
    }
    r.eta = c.lr;
    r.mu = 1.0;
    struct gr_optim *o;
    CHECK(gr_optim_new(&o, ctx, "opt", &c) == 0);
    double lr = c.lr;
    double worst = 0;
    for (int step = 0; step < 6; step++) {
        float g[N];
        for (int i = 0; i < N; i++) {
            g[i] = (float)sin(1.3 * step + 0.7 * i) * (i == 3 ? 0.0f : 1.0f);
        }
        set_grad(p, g);
        if (step == 3) {
            lr *= 0.5; /* a schedule changes the lr between steps */
        }
        gr_optim_set_lr(o, (float)lr);
        gr_optim_step(o);
        ref_step(&r, &c, g, lr);
        float got[N];
        gr_tensor_to_host(p, got);
        for (int i = 0; i < N; i++) {
            worst = fmax(worst, fabs(got[i] - r.p[i]) / (1e-3 + fabs(r.p[i])));
        }
    }
    CHECK_MSG(worst < 2e-6, "%s: parameters differ from the reference by "
              "%.3g (relative)", label, worst);
    if (c.kind == GR_OPTIM_ASGD) {
        float before[N], avg[N], after[N];
        gr_tensor_to_host(p, before);
        CHECK(gr_optim_swap_average(o) == 0);
        gr_tensor_to_host(p, avg);
        double wa = 0;
        for (int i = 0; i < N; i++) {
            wa = fmax(wa, fabs(avg[i] - r.ax[i]) / (1e-3 + fabs(r.ax[i])));
        }
        CHECK_MSG(wa < 2e-6, "%s: average differs by %.3g", label, wa);
        CHECK(gr_optim_swap_average(o) == 0);
        gr_tensor_to_host(p, after);
        CHECK(memcmp(before, after, sizeof before) == 0);
    } else {
        CHECK(gr_optim_swap_average(o) == GR_EINVAL);
    }
    gr_optim_free(o);
    gr_ctx_free(ctx);
}

static void test_rules(void)
{
    struct gr_optim_config c = gr_optim_config_default(GR_OPTIM_SGD);
    c.lr = 0.3f;
    run_rule("sgd", c);
    c.momentum = 0.9f;
    c.dampening = 0.1f;
    c.weight_decay = 0.01f;
    run_rule("sgd momentum dampening", c);
    c.dampening = 0.0f;
    c.nesterov = 1;
    run_rule("sgd nesterov", c);
    c = gr_optim_config_default(GR_OPTIM_ADAM);
    c.lr = 0.05f;
    c.weight_decay = 0.1f;
    run_rule("adam l2", c);
    c = gr_optim_config_default(GR_OPTIM_ADAMW);
    c.lr = 0.05f;
    c.beta1 = 0.8f;
    run_rule("adamw", c);
    /* AWD-LSTM's ASGD: lambd 0, t0 0, wd 1.2e-6; the lr change at step 3
     * reaches the update one step late (on_lstm.md §8.3) */
    c = gr_optim_config_default(GR_OPTIM_ASGD);
    c.lr = 0.5f;
    c.asgd_lambd = 0.0f;
    c.asgd_t0 = 0.0f;
    c.weight_decay = 1.2e-6f;
    run_rule("asgd awd", c);
    c = gr_optim_config_default(GR_OPTIM_ASGD);
    c.lr = 0.5f;
    c.asgd_t0 = 2.0f;
    run_rule("asgd torch defaults, t0 2", c);
}

static void test_clip_freeze_prefix(void)
{
    struct gr_ctx *ctx = cpu_ctx();
    struct gr_tensor *a = gr_param_new(ctx, "opt.a", gr_shape1(2));
    struct gr_tensor *b = gr_param_new(ctx, "ctrl.b", gr_shape1(2));
    float ga[2] = {3, 0}, gb[2] = {0, 4};
    set_grad(a, ga);
    set_grad(b, gb);
    float norm = 0;
    CHECK(gr_clip_grad_norm(ctx, NULL, 10.0f, &norm) == 0);
    CHECK_NEAR(norm, 5.0, 1e-6);
    CHECK(get1(a->grad, 0) == 3.0f); /* under the limit: untouched */
    CHECK(gr_clip_grad_norm(ctx, NULL, 1.0f, &norm) == 0);
    CHECK_NEAR(get1(a->grad, 0), 3.0 / (5.0 + 1e-6), 1e-6);
    CHECK_NEAR(get1(b->grad, 1), 4.0 / (5.0 + 1e-6), 1e-6);
    /* prefix: only ctrl. is measured and scaled */
    set_grad(a, ga);
    set_grad(b, gb);
    CHECK(gr_clip_grad_norm(ctx, "ctrl.", 2.0f, &norm) == 0);
    CHECK_NEAR(norm, 4.0, 1e-6);
    CHECK(get1(a->grad, 0) == 3.0f);
    CHECK_NEAR(get1(b->grad, 1), 2.0, 1e-5);
    /* frozen parameters are skipped by clipping and by the optimizer */
    set_grad(a, ga);
    set_grad(b, gb);
    gr_param_set_trainable(ctx, "opt.", 0);
    CHECK(gr_clip_grad_norm(ctx, NULL, 100.0f, &norm) == 0);
    CHECK_NEAR(norm, 4.0, 1e-6);
    struct gr_optim_config c = gr_optim_config_default(GR_OPTIM_ADAM);
    c.lr = 0.1f;
    struct gr_optim *o;
    CHECK(gr_optim_new(&o, ctx, "adam", &c) == 0);
    float a0 = get1(a, 0), b1 = get1(b, 1);
    gr_optim_step(o);
    CHECK(get1(a, 0) == a0);
    CHECK_NEAR(get1(b, 1), b1 - 0.1, 1e-6);
    /* unfrozen later: its first update is a first Adam step (-lr·sign) */
    gr_param_set_trainable(ctx, NULL, 1);
    set_grad(a, ga);
    gr_optim_step(o);
    CHECK_NEAR(get1(a, 0), a0 - 0.1, 1e-6);
    gr_optim_free(o);
    /* an optimizer over a prefix leaves the others alone */
    c.prefix = "ctrl.";
    CHECK(gr_optim_new(&o, ctx, "adam_ctrl", &c) == 0);
    a0 = get1(a, 0);
    gr_optim_step(o);
    CHECK(get1(a, 0) == a0);
    gr_optim_free(o);
    CHECK(gr_clip_grad_norm(ctx, NULL, 0.0f, NULL) == GR_EINVAL);
    gr_ctx_free(ctx);
}

static void test_schedules(void)
{
    struct gr_lr_linear lin = {1.0f, 0.1f, 10};
    CHECK_NEAR(gr_lr_linear_at(&lin, 0), 1.0, 1e-7);
    CHECK_NEAR(gr_lr_linear_at(&lin, 5), 0.55, 1e-6);
    CHECK_NEAR(gr_lr_linear_at(&lin, 10), 0.1, 1e-7);
    CHECK_NEAR(gr_lr_linear_at(&lin, 99), 0.1, 1e-7);
    /* The logic classifier's schedule (on_lstm.md §11): max, factor 0.5,
     * patience 2, threshold 0. Worked by hand: the 5th and 9th epochs are
     * the third non-improving ones in a row. */
    struct gr_lr_plateau s;
    gr_lr_plateau_init(&s, 1, 1e-3f);
    s.factor = 0.5f;
    s.patience = 2;
    s.threshold = 0.0f;
    const double acc[10] = {0.5, 0.6, 0.6, 0.6, 0.6, 0.7, 0.65, 0.65, 0.65,
                            0.71};
    const double want[10] = {1e-3, 1e-3, 1e-3, 1e-3, 5e-4, 5e-4, 5e-4, 5e-4,
                             2.5e-4, 2.5e-4};
    for (int e = 0; e < 10; e++) {
        float lr = gr_lr_plateau_step(&s, acc[e]);
        CHECK_MSG(fabs(lr - want[e]) < 1e-9, "epoch %d: lr %g, want %g", e + 1,
                  (double)lr, want[e]);
    }
    /* mode min with torch defaults (threshold 1e-4 relative, patience 10):
     * a 0.001% improvement does not count */
    gr_lr_plateau_init(&s, 0, 1.0f);
    gr_lr_plateau_step(&s, 1.0);
    for (int e = 0; e < 10; e++) {
        CHECK(gr_lr_plateau_step(&s, 0.99999) == 1.0f);
    }
    CHECK_NEAR(gr_lr_plateau_step(&s, 0.99999), 0.1, 1e-7);
}

int main(void)
{
    test_hand();
    test_rules();
    test_clip_freeze_prefix();
    test_schedules();
    return test_report("kernels_optim");
}
