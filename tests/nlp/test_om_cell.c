/* The fused Ordered Memory cell gr_om_cell (kernels/ops.h):
 *   - against the composition of ops it replaces (concat, dropout, linear,
 *     ReLU, dropout, linear, gr_om_gate, layer norm) with dropout on and
 *     off: output and the gradient of all eight inputs, to 1e-5;
 *   - central finite differences in double of the loss Σ w⊙y in v, h and
 *     entries of every parameter (the dropout masks are fixed by their
 *     keys, so the loss is a smooth function away from ReLU kinks);
 *   - v and h the same tensor (gradients add), shape errors;
 *   - gr_lerp (the memory and candidate updates) against affine, mul and
 *     add, values and gradients; gr_lerp_rows against loops written here;
 *   - with --cuda: the op on CUDA against CPU (exit 77 without a GPU).
 *
 *   test_nlp_om_cell [--cuda]
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/random.h"
#include "kernels/device.h"
#include "kernels/ops.h"
#include "kernels/tape.h"
#include "tests/test.h"

#define R 5
#define D 6

struct inputs {
    float v[R * D], h[R * D], w1[8 * D * D], b1[4 * D], w2[16 * D * D];
    float b2[4 * D], g[D], b[D], w[R * D];
};

/* Outputs of one run: y and the gradients of the 8 inputs. */
struct outs {
    float y[R * D], gv[R * D], gh[R * D], gw1[8 * D * D], gb1[4 * D];
    float gw2[16 * D * D], gb2[4 * D], gg[D], gb[D];
    double loss;
};

static void fill(struct gr_philox_stream *ps, float *x, int n, float s)
{
    for (int i = 0; i < n; i++) {
        x[i] = s * (2.0f * gr_u32_to_uniform(gr_philox_next_u32(ps)) - 1.0f);
    }
}

static void make_inputs(struct inputs *in, uint64_t seed)
{
    struct gr_philox_stream ps = gr_philox_stream_init(seed, 0);
    fill(&ps, in->v, R * D, 1.0f);
    fill(&ps, in->h, R * D, 1.0f);
    fill(&ps, in->w1, 8 * D * D, 0.4f);
    fill(&ps, in->b1, 4 * D, 0.2f);
    fill(&ps, in->w2, 16 * D * D, 0.3f);
    fill(&ps, in->b2, 4 * D, 0.2f);
    fill(&ps, in->g, D, 0.5f);
    for (int i = 0; i < D; i++) {
        in->g[i] += 1.0f;
    }
    fill(&ps, in->b, D, 0.1f);
    fill(&ps, in->w, R * D, 1.0f);
}

static struct gr_ctx *new_ctx(enum gr_device dev)
{
    struct gr_ctx_config cc = gr_ctx_config_default();
    cc.device = dev;
    struct gr_ctx *ctx = NULL;
    if (gr_ctx_new(&ctx, &cc) < 0) {
        fprintf(stderr, "context: %s\n", gr_last_error());
        return NULL;
    }
    return ctx;
}

static struct gr_tensor *leaf(struct gr_ctx *ctx, const float *x,
                              struct gr_shape s)
{
    struct gr_tensor *t = gr_tensor_from_host(ctx, GR_F32, s, x);
    gr_tensor_set_requires_grad(t, 1);
    return t;
}

static void grad(struct gr_tensor *t, float *out)
{
    if (t->grad == NULL) {
        memset(out, 0, (size_t)t->numel * sizeof *out);
        return;
    }
    CHECK(gr_tensor_to_host(t->grad, out) == 0);
}

/* One context per device for every run (a context per finite difference
 * is slow under the sanitizers); freed at the end of main. */
static struct gr_ctx *run_ctx[2];

static void free_run_ctx(void)
{
    for (int i = 0; i < 2; i++) {
        if (run_ctx[i] != NULL) {
            gr_ctx_free(run_ctx[i]);
            run_ctx[i] = NULL;
        }
    }
}

/* One forward and backward: fused (gr_om_cell) or the composition;
 * same_vh: h is v. */
static int run(enum gr_device dev, const struct inputs *in, int fused,
               float p, int same_vh, struct outs *o)
{
    int slot = dev == GR_DEVICE_CPU ? 0 : 1;
    if (run_ctx[slot] == NULL) {
        run_ctx[slot] = new_ctx(dev);
    }
    struct gr_ctx *ctx = run_ctx[slot];
    if (ctx == NULL) {
        return -1;
    }
    gr_step_reset(ctx);
    struct gr_tensor *v = leaf(ctx, in->v, gr_shape2(R, D));
    struct gr_tensor *h = same_vh ? v : leaf(ctx, in->h, gr_shape2(R, D));
    struct gr_tensor *w1 = leaf(ctx, in->w1, gr_shape2(4 * D, 2 * D));
    struct gr_tensor *b1 = leaf(ctx, in->b1, gr_shape1(4 * D));
    struct gr_tensor *w2 = leaf(ctx, in->w2, gr_shape2(4 * D, 4 * D));
    struct gr_tensor *b2 = leaf(ctx, in->b2, gr_shape1(4 * D));
    struct gr_tensor *g = leaf(ctx, in->g, gr_shape1(D));
    struct gr_tensor *b = leaf(ctx, in->b, gr_shape1(D));
    struct gr_rng r1 = gr_rng_make(11, 1), r2 = gr_rng_make(11, 2);
    struct gr_tensor *y;
    if (fused) {
        y = gr_om_cell(ctx, v, h, w1, b1, w2, b2, g, b, 1e-5f, p, r1, r2);
    } else {
        struct gr_tensor *vh[2] = {v, h};
        struct gr_tensor *x = gr_concat(ctx, 2, vh, 1);
        if (p > 0.0f) {
            x = gr_dropout(ctx, x, p, r1);
        }
        struct gr_tensor *a = gr_relu(ctx, gr_linear(ctx, x, w1, b1));
        if (p > 0.0f) {
            a = gr_dropout(ctx, a, p, r2);
        }
        struct gr_tensor *z = gr_linear(ctx, a, w2, b2);
        y = gr_layer_norm(ctx, gr_om_gate(ctx, z, v, h), g, b, 1e-5f);
    }
    struct gr_tensor *wt = gr_tensor_from_host(ctx, GR_F32, gr_shape2(R, D),
                                               in->w);
    struct gr_tensor *loss = gr_sum(ctx, gr_mul(ctx, y, wt));
    CHECK_MSG(loss != NULL, "%s", gr_ctx_error(ctx));
    if (loss == NULL) {
        gr_ctx_free(ctx);
        run_ctx[slot] = NULL;
        return -1;
    }
    o->loss = gr_tensor_item(loss);
    CHECK_MSG(gr_backward(ctx, loss) == 0, "%s", gr_last_error());
    CHECK(gr_tensor_to_host(y, o->y) == 0);
    grad(v, o->gv);
    if (same_vh) {
        memset(o->gh, 0, sizeof o->gh);
    } else {
        grad(h, o->gh);
    }
    grad(w1, o->gw1);
    grad(b1, o->gb1);
    grad(w2, o->gw2);
    grad(b2, o->gb2);
    grad(g, o->gg);
    grad(b, o->gb);
    return 0;
}

/* Largest difference relative to the larger array's scale. */
static double rel(const float *a, const float *b, int n)
{
    double scale = 1e-6, worst = 0.0;
    for (int i = 0; i < n; i++) {
        scale = fmax(scale, fabs(b[i]));
    }
    for (int i = 0; i < n; i++) {
        worst = fmax(worst, fabs((double)a[i] - b[i]) / scale);
    }
    return worst;
}

static double compare(const struct outs *a, const struct outs *b)
{
    double w = rel(a->y, b->y, R * D);
    w = fmax(w, rel(a->gv, b->gv, R * D));
    w = fmax(w, rel(a->gh, b->gh, R * D));
    w = fmax(w, rel(a->gw1, b->gw1, 8 * D * D));
    w = fmax(w, rel(a->gb1, b->gb1, 4 * D));
    w = fmax(w, rel(a->gw2, b->gw2, 16 * D * D));
    w = fmax(w, rel(a->gb2, b->gb2, 4 * D));
    w = fmax(w, rel(a->gg, b->gg, D));
    w = fmax(w, rel(a->gb, b->gb, D));
    return w;
}

static void test_against_composition(void)
{
    static struct inputs in;
    static struct outs f, c;
    make_inputs(&in, 5);
    const float rates[2] = {0.0f, 0.3f};
    for (int k = 0; k < 2; k++) {
        for (int same = 0; same < 2; same++) {
            if (run(GR_DEVICE_CPU, &in, 1, rates[k], same, &f) < 0 ||
                run(GR_DEVICE_CPU, &in, 0, rates[k], same, &c) < 0) {
                return;
            }
            double w = compare(&f, &c);
            CHECK_MSG(w < 1e-5, "fused vs composition (p %g, v = h %d): %g",
                      (double)rates[k], same, w);
            CHECK_NEAR(f.loss, c.loss, 1e-5 * fmax(1.0, fabs(c.loss)));
        }
    }
    /* the comparison can fail: a different dropout rate changes it */
    run(GR_DEVICE_CPU, &in, 1, 0.3f, 0, &f);
    run(GR_DEVICE_CPU, &in, 0, 0.2f, 0, &c);
    CHECK(compare(&f, &c) > 1e-3);
}

static float fd_eps = 1e-3f;

/* Central differences of the fused op's loss in one input element. */
static double fd(struct inputs *in, float *x, float p)
{
    static struct outs o;
    const float eps = fd_eps, x0 = *x;
    *x = x0 + eps;
    run(GR_DEVICE_CPU, in, 1, p, 0, &o);
    double lp = o.loss;
    *x = x0 - eps;
    run(GR_DEVICE_CPU, in, 1, p, 0, &o);
    double lm = o.loss;
    *x = x0;
    return (lp - lm) / (2.0 * eps);
}

static void test_finite_differences(void)
{
    static struct inputs in;
    static struct outs o;
    make_inputs(&in, 9);
    const float rates[2] = {0.0f, 0.25f};
    for (int k = 0; k < 2; k++) {
        float p = rates[k];
        if (run(GR_DEVICE_CPU, &in, 1, p, 0, &o) < 0) {
            return;
        }
        struct {
            float *x;
            const float *g;
            int n;
            const char *name;
        } cases[8] = {
            {in.v, o.gv, R * D, "v"},          {in.h, o.gh, R * D, "h"},
            {in.w1, o.gw1, 8 * D * D, "w1"},   {in.b1, o.gb1, 4 * D, "b1"},
            {in.w2, o.gw2, 16 * D * D, "w2"},  {in.b2, o.gb2, 4 * D, "b2"},
            {in.g, o.gg, D, "gamma"},          {in.b, o.gb, D, "beta"},
        };
        int checked = 0, bad = 0;
        double worst = 0.0;
        for (int c = 0; c < 8; c++) {
            /* a spread of entries of each input */
            for (int j = 0; j < 7; j++) {
                int e = (j * 37 + c * 11) % cases[c].n;
                double num = fd(&in, cases[c].x + e, p);
                double ana = cases[c].g[e];
                double err = fabs(num - ana) / fmax(0.1, fabs(num));
                worst = fmax(worst, err);
                /* a ReLU kink inside ±eps can break one difference */
                bad += err > 2e-2;
                checked++;
                if (err > 2e-2) {
                    fprintf(stderr, "  p %g %s[%d]: analytic %.6g, "
                            "numeric %.6g\n", (double)p, cases[c].name, e,
                            ana, num);
                }
            }
        }
        CHECK_MSG(checked == 56 && bad <= 1, "p %g: %d of %d differences "
                  "off (worst %g)", (double)p, bad, checked, worst);
    }
}

static void test_errors(void)
{
    struct gr_ctx *ctx = new_ctx(GR_DEVICE_CPU);
    gr_step_reset(ctx);
    struct gr_tensor *v = gr_zeros(ctx, gr_shape2(3, 4));
    struct gr_tensor *w1 = gr_zeros(ctx, gr_shape2(16, 8));
    struct gr_tensor *b1 = gr_zeros(ctx, gr_shape1(16));
    struct gr_tensor *w2bad = gr_zeros(ctx, gr_shape2(16, 8));
    struct gr_tensor *g = gr_zeros(ctx, gr_shape1(4));
    struct gr_rng r = gr_rng_make(1, 1);
    CHECK(gr_om_cell(ctx, v, v, w1, b1, w2bad, b1, g, g, 1e-5f, 0.0f, r, r) ==
          NULL);
    CHECK_STR_CONTAINS(gr_ctx_error(ctx), "w2 [4D, 4D]");
    gr_ctx_free(ctx);
    ctx = new_ctx(GR_DEVICE_CPU);
    gr_step_reset(ctx);
    v = gr_zeros(ctx, gr_shape2(3, 4));
    struct gr_tensor *h = gr_zeros(ctx, gr_shape2(2, 4));
    CHECK(gr_om_cell(ctx, v, h, NULL, NULL, NULL, NULL, NULL, NULL, 1e-5f,
                     0.0f, r, r) == NULL);
    CHECK_STR_CONTAINS(gr_ctx_error(ctx), "gr_om_cell");
    gr_ctx_free(ctx);
}

/* gr_lerp(a, b, w) against (1 - w)·a + w·b from affine, mul and add on
 * [3, 4, 5] with w [3, 4, 1]: values and the three gradients. */
static void lerp_run(enum gr_device dev, int fused, float *out)
{
    struct gr_ctx *ctx = new_ctx(dev);
    if (ctx == NULL) {
        return;
    }
    float a[60], b[60], w[12], gw[60];
    struct gr_philox_stream ps = gr_philox_stream_init(21, 0);
    fill(&ps, a, 60, 1.0f);
    fill(&ps, b, 60, 1.0f);
    fill(&ps, w, 12, 1.0f);
    fill(&ps, gw, 60, 1.0f);
    gr_step_reset(ctx);
    struct gr_tensor *ta = leaf(ctx, a, gr_shape3(3, 4, 5));
    struct gr_tensor *tb = leaf(ctx, b, gr_shape3(3, 4, 5));
    struct gr_tensor *tw = leaf(ctx, w, gr_shape3(3, 4, 1));
    struct gr_tensor *y =
        fused ? gr_lerp(ctx, ta, tb, tw)
              : gr_add(ctx, gr_mul(ctx, ta, gr_affine(ctx, tw, -1.0f, 1.0f)),
                       gr_mul(ctx, tb, tw));
    struct gr_tensor *loss = gr_sum(
        ctx, gr_mul(ctx, y,
                    gr_tensor_from_host(ctx, GR_F32, gr_shape3(3, 4, 5), gw)));
    CHECK_MSG(loss != NULL, "%s", gr_ctx_error(ctx));
    if (loss != NULL) {
        CHECK(gr_backward(ctx, loss) == 0);
        CHECK(gr_tensor_to_host(y, out) == 0);
        grad(ta, out + 60);
        grad(tb, out + 120);
        grad(tw, out + 180);
    }
    gr_ctx_free(ctx);
}

static void test_lerp(void)
{
    float f[192], c[192];
    lerp_run(GR_DEVICE_CPU, 1, f);
    lerp_run(GR_DEVICE_CPU, 0, c);
    CHECK_MSG(rel(f, c, 192) < 1e-6, "gr_lerp vs composition: %g",
              rel(f, c, 192));
    /* the w gradient is not trivially zero (the check has teeth) */
    double s = 0.0;
    for (int i = 180; i < 192; i++) {
        s += fabs(c[i]);
    }
    CHECK(s > 0.1);
    struct gr_ctx *ctx = new_ctx(GR_DEVICE_CPU);
    gr_step_reset(ctx);
    struct gr_tensor *a = gr_zeros(ctx, gr_shape2(3, 4));
    struct gr_tensor *w = gr_zeros(ctx, gr_shape2(3, 4));
    CHECK(gr_lerp(ctx, a, a, w) == NULL);
    CHECK_STR_CONTAINS(gr_ctx_error(ctx), "gr_lerp: a [3, 4]");
    gr_ctx_free(ctx);
}

/* gr_lerp_rows on a [4, 5], b [2, 5], idx (1, -1, 0, -1): values and
 * gradients of Σ g⊙y against the formula evaluated here. */
static void lerp_rows_run(enum gr_device dev, const int32_t *idx, float *out)
{
    struct gr_ctx *ctx = new_ctx(dev);
    if (ctx == NULL) {
        return;
    }
    float a[20], b[10], w[4], g[20];
    struct gr_philox_stream ps = gr_philox_stream_init(23, 0);
    fill(&ps, a, 20, 1.0f);
    fill(&ps, b, 10, 1.0f);
    fill(&ps, w, 4, 1.0f);
    fill(&ps, g, 20, 1.0f);
    gr_step_reset(ctx);
    struct gr_tensor *ta = leaf(ctx, a, gr_shape2(4, 5));
    struct gr_tensor *tb = leaf(ctx, b, gr_shape2(2, 5));
    struct gr_tensor *tw = leaf(ctx, w, gr_shape2(4, 1));
    struct gr_tensor *y = gr_lerp_rows(
        ctx, ta, tb, tw, gr_tensor_from_host(ctx, GR_I32, gr_shape1(4), idx));
    struct gr_tensor *loss = gr_sum(
        ctx,
        gr_mul(ctx, y, gr_tensor_from_host(ctx, GR_F32, gr_shape2(4, 5), g)));
    CHECK_MSG(loss != NULL, "%s", gr_ctx_error(ctx));
    if (loss != NULL) {
        CHECK(gr_backward(ctx, loss) == 0);
        CHECK(gr_tensor_to_host(y, out) == 0);
        grad(ta, out + 20);
        grad(tb, out + 40);
        grad(tw, out + 50);
    }
    /* the expected numbers after them */
    float *e = out + 54;
    memset(e, 0, 54 * sizeof *e);
    for (int r = 0; r < 4; r++) {
        for (int c = 0; c < 5; c++) {
            int k = r * 5 + c;
            if (idx[r] < 0) {
                e[k] = a[k];
                e[20 + k] = g[k];
                continue;
            }
            const float bv = b[idx[r] * 5 + c];
            e[k] = (1.0f - w[r]) * a[k] + w[r] * bv;
            e[20 + k] = g[k] * (1.0f - w[r]);
            e[40 + idx[r] * 5 + c] = g[k] * w[r];
            e[50 + r] += g[k] * (bv - a[k]);
        }
    }
    gr_ctx_free(ctx);
}

static void test_lerp_rows(void)
{
    const int32_t idx[4] = {1, -1, 0, -1};
    float o[108];
    lerp_rows_run(GR_DEVICE_CPU, idx, o);
    CHECK_MSG(rel(o, o + 54, 54) < 1e-6, "gr_lerp_rows vs the formula: %g",
              rel(o, o + 54, 54));
    const int32_t dup[4] = {1, -1, 1, -1};
    struct gr_ctx *ctx = new_ctx(GR_DEVICE_CPU);
    gr_step_reset(ctx);
    struct gr_tensor *a = gr_zeros(ctx, gr_shape2(4, 5));
    struct gr_tensor *b = gr_zeros(ctx, gr_shape2(2, 5));
    struct gr_tensor *w = gr_zeros(ctx, gr_shape2(4, 1));
    CHECK(gr_lerp_rows(ctx, a, b, w,
                       gr_tensor_from_host(ctx, GR_I32, gr_shape1(4), dup)) ==
          NULL);
    CHECK_STR_CONTAINS(gr_ctx_error(ctx), "exactly once");
    gr_ctx_free(ctx);
}

static int cuda_parity(void)
{
    if (!gr_cuda_compiled()) {
        return test_skip("nlp_om_cell_cuda", NULL,
                         "CUDA is not compiled in (-DGROVE_CUDA=ON)");
    }
    if (gr_cuda_device_count() < 1) {
        return test_skip("nlp_om_cell_cuda", TEST_NEED_GPU,
                         "no GPU visible");
    }
    static struct inputs in;
    static struct outs c, g;
    make_inputs(&in, 13);
    const float rates[2] = {0.0f, 0.3f};
    for (int k = 0; k < 2; k++) {
        for (int same = 0; same < 2; same++) {
            if (run(GR_DEVICE_CPU, &in, 1, rates[k], same, &c) < 0 ||
                run(GR_DEVICE_CUDA, &in, 1, rates[k], same, &g) < 0) {
                free_run_ctx();
                return test_report("nlp_om_cell_cuda");
            }
            double w = compare(&g, &c);
            CHECK_MSG(w < 1e-4, "CUDA vs CPU (p %g, v = h %d): %g",
                      (double)rates[k], same, w);
        }
    }
    float lc[192], lg[192];
    lerp_run(GR_DEVICE_CPU, 1, lc);
    lerp_run(GR_DEVICE_CUDA, 1, lg);
    CHECK_MSG(rel(lg, lc, 192) < 1e-5, "gr_lerp CUDA vs CPU: %g",
              rel(lg, lc, 192));
    const int32_t idx[4] = {1, -1, 0, -1};
    float rc[108], rg[108];
    lerp_rows_run(GR_DEVICE_CPU, idx, rc);
    lerp_rows_run(GR_DEVICE_CUDA, idx, rg);
    CHECK_MSG(rel(rg, rc, 54) < 1e-5, "gr_lerp_rows CUDA vs CPU: %g",
              rel(rg, rc, 54));
    free_run_ctx();
    return test_report("nlp_om_cell_cuda");
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--cuda") == 0) {
        return cuda_parity();
    }
    test_against_composition();
    test_finite_differences();
    test_errors();
    test_lerp();
    test_lerp_rows();
    free_run_ctx();
    return test_report("nlp_om_cell");
}
