/* Layers: the fused LSTM and ON-LSTM cells against second implementations
 * composed from primitive ops (values and gradients), the ON-LSTM's dead
 * top chunk (on_lstm.md §12 quirk 2), chunk-size errors, parameter counts
 * of the PTB model (§4), DropConnect modes (§6.4), and initialisation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/layers.h"
#include "kernels/ops.h"
#include "kernels/tape.h"
#include "kernels/tensor.h"
#include "tests/test.h"

static struct gr_ctx *cpu_ctx(void)
{
    struct gr_ctx_config cfg = gr_ctx_config_default();
    cfg.device = GR_DEVICE_CPU;
    cfg.step_chunk_bytes = 1 << 20;
    struct gr_ctx *ctx = NULL;
    gr_ctx_new(&ctx, &cfg);
    return ctx;
}

static struct gr_tensor *input(struct gr_ctx *ctx, struct gr_shape s,
                               uint64_t stream)
{
    struct gr_tensor *t = gr_zeros(ctx, s);
    gr_tensor_rand_uniform(t, -1.5f, 1.5f, gr_rng_make(3, stream));
    gr_tensor_set_requires_grad(t, 1);
    return t;
}

/* max |a - b| / (max |b| + 1e-12) */
static double rel_diff(const struct gr_tensor *a, const struct gr_tensor *b)
{
    float *u = malloc((size_t)a->numel * 4), *v = malloc((size_t)b->numel * 4);
    gr_tensor_to_host(a, u);
    gr_tensor_to_host(b, v);
    double m = 1e-12, d = 0;
    for (int64_t i = 0; i < a->numel; i++) {
        m = fmax(m, fabs(v[i]));
        d = fmax(d, fabs((double)u[i] - v[i]));
    }
    free(u);
    free(v);
    return d / m;
}

/* The ON-LSTM cell from primitive ops (split, cumax, broadcasting). */
static void onlstm_composed(struct gr_ctx *ctx, struct gr_tensor *z,
                            struct gr_tensor *cp, int chunk,
                            struct gr_tensor **h, struct gr_tensor **c)
{
    int64_t b = cp->shape[0], hd = cp->shape[1], n = hd / chunk;
    struct gr_tensor *parts[6];
    const int64_t sizes[6] = {n, n, hd, hd, hd, hd};
    gr_split(ctx, z, 1, 6, sizes, parts);
    struct gr_shape bn1 = gr_shape3(b, n, 1), bnc = gr_shape3(b, n, chunk);
    struct gr_tensor *mi = gr_reshape(
        ctx, gr_affine(ctx, gr_cumax(ctx, parts[0]), -1, 1), bn1);
    struct gr_tensor *mf = gr_reshape(ctx, gr_cumax(ctx, parts[1]), bn1);
    struct gr_tensor *om = gr_mul(ctx, mf, mi);
    struct gr_tensor *o = gr_sigmoid(ctx, parts[2]);
    struct gr_tensor *ch = gr_reshape(ctx, gr_tanh(ctx, parts[3]), bnc);
    struct gr_tensor *ig = gr_reshape(ctx, gr_sigmoid(ctx, parts[4]), bnc);
    struct gr_tensor *fg = gr_reshape(ctx, gr_sigmoid(ctx, parts[5]), bnc);
    /* f̂ = f·ω + (f̃ - ω), written as broadcasting ops: (f·ω) + (f̃ - ω) */
    struct gr_tensor *fh = gr_add(ctx, gr_mul(ctx, fg, om),
                                  gr_sub(ctx, mf, om));
    struct gr_tensor *ih = gr_add(ctx, gr_mul(ctx, ig, om),
                                  gr_sub(ctx, mi, om));
    struct gr_tensor *cn = gr_add(
        ctx, gr_mul(ctx, fh, gr_reshape(ctx, cp, bnc)), gr_mul(ctx, ih, ch));
    *c = gr_reshape(ctx, cn, gr_shape2(b, hd));
    *h = gr_mul(ctx, o, gr_tanh(ctx, *c));
}

static void lstm_composed(struct gr_ctx *ctx, struct gr_tensor *g,
                          struct gr_tensor *cp, struct gr_tensor **h,
                          struct gr_tensor **c)
{
    int64_t hd = cp->shape[1];
    struct gr_tensor *p[4];
    const int64_t sizes[4] = {hd, hd, hd, hd};
    gr_split(ctx, g, 1, 4, sizes, p);
    *c = gr_add(ctx, gr_mul(ctx, gr_sigmoid(ctx, p[1]), cp),
                gr_mul(ctx, gr_sigmoid(ctx, p[0]), gr_tanh(ctx, p[2])));
    *h = gr_mul(ctx, gr_sigmoid(ctx, p[3]), gr_tanh(ctx, *c));
}

static void test_fused_vs_composed(void)
{
    struct gr_ctx *ctx = cpu_ctx();
    const int b = 4, hd = 12;
    for (int variant = 0; variant < 4; variant++) {
        int chunk = variant == 0 ? 3 : (variant == 1 ? 1 : 12);
        int lstm = variant == 3;
        int64_t n = hd / chunk, w = lstm ? 4 * hd : 2 * n + 4 * hd;
        struct gr_tensor *out[2][4]; /* h, c, gz, gcp */
        for (int impl = 0; impl < 2; impl++) {
            gr_step_reset(ctx);
            struct gr_tensor *z = input(ctx, gr_shape2(b, w), 10 + variant);
            struct gr_tensor *cp = input(ctx, gr_shape2(b, hd), 20 + variant);
            struct gr_tensor *h, *c, *df, *di;
            if (lstm) {
                if (impl) {
                    lstm_composed(ctx, z, cp, &h, &c);
                } else {
                    gr_lstm_cell(ctx, z, cp, &h, &c);
                }
            } else if (impl) {
                onlstm_composed(ctx, z, cp, chunk, &h, &c);
            } else {
                gr_onlstm_cell(ctx, z, cp, chunk, &h, &c, &df, &di);
            }
            struct gr_tensor *rh = input(ctx, gr_shape2(b, hd), 30);
            struct gr_tensor *rc = input(ctx, gr_shape2(b, hd), 31);
            struct gr_tensor *loss =
                gr_add(ctx, gr_sum(ctx, gr_mul(ctx, h, rh)),
                       gr_sum(ctx, gr_mul(ctx, c, rc)));
            CHECK_MSG(gr_backward(ctx, loss) == 0, "%s", gr_last_error());
            /* keep copies in buffers (step tensors die at reset) */
            struct gr_tensor *src[4] = {h, c, z->grad, cp->grad};
            for (int k = 0; k < 4; k++) {
                char nm[32];
                snprintf(nm, sizeof nm, "v%d.i%d.k%d", variant, impl, k);
                out[impl][k] = gr_buffer_new(ctx, nm, GR_F32,
                                             gr_tensor_shape(src[k]));
                gr_tensor_copy(out[impl][k], src[k]);
            }
        }
        const char *what[4] = {"h", "c", "dL/dz", "dL/dc_prev"};
        for (int k = 0; k < 4; k++) {
            double d = rel_diff(out[0][k], out[1][k]);
            CHECK_MSG(d < 2e-6, "%s chunk %d: fused vs composed %s differ by "
                      "%.3g", lstm ? "lstm" : "onlstm", chunk, what[k], d);
        }
    }
    gr_ctx_free(ctx);
}

static void test_dead_top_chunk(void)
{
    struct gr_ctx *ctx = cpu_ctx();
    struct gr_onlstm l;
    CHECK(gr_onlstm_init(&l, ctx, "l", 5, 12, 3, gr_rng_make(4, 0)) == 0);
    CHECK(l.n_chunks == 4 && l.w_ih->shape[0] == 2 * 4 + 4 * 12);
    struct gr_tensor *x = input(ctx, gr_shape3(6, 2, 5), 1);
    struct gr_rnn_out o;
    CHECK(gr_onlstm_forward(ctx, &l, x, NULL, NULL, NULL, &o) == 0);
    float y[6 * 2 * 12], df[12], di[12];
    gr_tensor_to_host(o.y, y);
    gr_tensor_to_host(o.df, df);
    gr_tensor_to_host(o.di, di);
    double top = 0, rest = 0;
    for (int t = 0; t < 6; t++) {
        for (int b = 0; b < 2; b++) {
            for (int u = 0; u < 12; u++) {
                double v = fabs(y[(t * 2 + b) * 12 + u]);
                if (u >= 9) {
                    top = fmax(top, v);
                } else {
                    rest = fmax(rest, v);
                }
            }
        }
    }
    CHECK_MSG(top < 1e-5, "top chunk output %.3g, want ~0", top);
    CHECK(rest > 1e-2);
    int in_range = 1;
    for (int i = 0; i < 12; i++) {
        in_range &= df[i] >= 0 && df[i] <= 1 && di[i] >= 0 && di[i] <= 1;
    }
    CHECK(in_range);
    /* one chunk: a layer that never stores anything */
    struct gr_onlstm one;
    CHECK(gr_onlstm_init(&one, ctx, "one", 5, 4, 4, gr_rng_make(4, 0)) == 0);
    CHECK(gr_onlstm_forward(ctx, &one, x, NULL, NULL, NULL, &o) == 0);
    float y1[6 * 2 * 4];
    gr_tensor_to_host(o.y, y1);
    double m1 = 0;
    for (int i = 0; i < 48; i++) {
        m1 = fmax(m1, fabs(y1[i]));
    }
    CHECK_MSG(m1 < 1e-5, "one-chunk layer output %.3g", m1);
    /* H not a multiple of C */
    struct gr_onlstm bad;
    CHECK(gr_onlstm_init(&bad, ctx, "bad", 5, 10, 4, gr_rng_make(4, 0)) ==
          GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "hidden size 10 must be a positive "
                       "multiple of the chunk size 4");
    /* a wrong input size is named */
    CHECK(gr_onlstm_forward(ctx, &l, input(ctx, gr_shape3(2, 2, 4), 2), NULL,
                            NULL, NULL, &o) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_ctx_error(ctx), "x [2, 2, 4] must be [T, B, 5]");
    gr_ctx_free(ctx);
}

static void test_param_counts(void)
{
    /* PTB ON-LSTM LM: V 10000, emb 400, 1150 x 3 layers, C 10, tied:
     * 25,232,180 (on_lstm.md §4); the plain LSTM LM 24,221,600. Counted on
     * the layers as built (and initialised) in a context. */
    struct gr_ctx *ctx = cpu_ctx();
    struct gr_tensor *emb = gr_param_new(ctx, "encoder.weight",
                                         gr_shape2(10000, 400));
    struct gr_tensor *bias = gr_param_new(ctx, "decoder.bias",
                                          gr_shape1(10000));
    CHECK(emb && bias);
    const int sizes[4] = {400, 1150, 1150, 400};
    for (int l = 0; l < 3; l++) {
        struct gr_onlstm layer;
        char p[32];
        snprintf(p, sizeof p, "rnn.cells.%d", l);
        CHECK(gr_onlstm_init(&layer, ctx, p, sizes[l], sizes[l + 1], 10,
                             gr_rng_make(141, 0)) == 0);
    }
    CHECK_MSG(gr_param_count(ctx, NULL) == 25232180, "ON-LSTM LM: %lld",
              (long long)gr_param_count(ctx, NULL));
    CHECK(gr_ctx_find(ctx, "rnn.cells.1.ih.0.weight") != NULL);
    CHECK(gr_ctx_find(ctx, "rnn.cells.2.hh.bias")->shape[0] == 2 * 40 + 4 * 400);
    gr_ctx_free(ctx);
    ctx = cpu_ctx();
    gr_param_new(ctx, "encoder.weight", gr_shape2(10000, 400));
    gr_param_new(ctx, "decoder.bias", gr_shape1(10000));
    for (int l = 0; l < 3; l++) {
        struct gr_lstm layer;
        char p[32];
        snprintf(p, sizeof p, "rnn.%d", l);
        CHECK(gr_lstm_init(&layer, ctx, p, sizes[l], sizes[l + 1],
                           gr_rng_make(141, 0)) == 0);
    }
    CHECK_MSG(gr_param_count(ctx, NULL) == 24221600, "LSTM LM: %lld",
              (long long)gr_param_count(ctx, NULL));
    gr_ctx_free(ctx);
}

static void test_dropconnect_and_init(void)
{
    struct gr_ctx *ctx = cpu_ctx();
    struct gr_tensor *w = gr_param_new(ctx, "w", gr_shape2(40, 50));
    gr_tensor_rand_uniform(w, 0.5f, 1.0f, gr_rng_make(1, 1));
    float wv[2000], a[2000];
    gr_tensor_to_host(w, wv);
    struct gr_rng r = gr_rng_make(2, 2);
    const float p = 0.45f;
    /* ON-LSTM training: dropped -> 0, kept unchanged */
    gr_tensor_to_host(gr_dropconnect(ctx, w, p, GR_WDROP_ONLSTM, 1, r), a);
    int ok = 1, kept = 0;
    for (int i = 0; i < 2000; i++) {
        ok &= a[i] == 0.0f || a[i] == wv[i];
        kept += a[i] != 0.0f;
    }
    CHECK(ok && abs(kept - 1100) < 100);
    gr_tensor_to_host(gr_dropconnect(ctx, w, p, GR_WDROP_ONLSTM, 0, r), a);
    ok = 1;
    for (int i = 0; i < 2000; i++) {
        ok &= fabsf(a[i] - wv[i] * (1.0f - p)) < 1e-6f;
    }
    CHECK(ok);
    /* AWD-LSTM: inverted at training, unchanged at evaluation */
    gr_tensor_to_host(gr_dropconnect(ctx, w, p, GR_WDROP_AWD, 1, r), a);
    ok = 1;
    for (int i = 0; i < 2000; i++) {
        ok &= a[i] == 0.0f || fabsf(a[i] - wv[i] / (1.0f - p)) < 1e-6f;
    }
    CHECK(ok);
    CHECK(gr_dropconnect(ctx, w, p, GR_WDROP_AWD, 0, r) == w);
    /* init: PyTorch's bounds, independent of creation order */
    struct gr_linear_layer l1, l2;
    struct gr_ctx *c2 = cpu_ctx();
    gr_param_new(c2, "something.else", gr_shape1(3));
    CHECK(gr_linear_init(&l1, ctx, "fc", 16, 5, 1, gr_rng_make(9, 0)) == 0);
    CHECK(gr_linear_init(&l2, c2, "fc", 16, 5, 1, gr_rng_make(9, 0)) == 0);
    float x1[80], x2[80];
    gr_tensor_to_host(l1.weight, x1);
    gr_tensor_to_host(l2.weight, x2);
    CHECK(memcmp(x1, x2, sizeof x1) == 0);
    int bounded = 1;
    for (int i = 0; i < 80; i++) {
        bounded &= fabsf(x1[i]) <= 0.25f;
    }
    CHECK(bounded);
    float b1[5];
    gr_tensor_to_host(l1.bias, b1);
    CHECK(b1[0] != x1[0]); /* its own stream */
    struct gr_mlp m;
    const int sizes[3] = {4, 8, 2};
    CHECK(gr_mlp_init(&m, ctx, "mlp", 2, sizes, GR_ACT_TANH, 0,
                      gr_rng_make(9, 1)) == 0);
    CHECK(gr_ctx_find(ctx, "mlp.1.bias") != NULL);
    struct gr_tensor *y = gr_mlp_forward(ctx, &m, gr_zeros(ctx,
                                                          gr_shape3(2, 3, 4)));
    CHECK(y && y->ndim == 3 && y->shape[2] == 2);
    gr_ctx_free(c2);
    gr_ctx_free(ctx);
}

int main(void)
{
    test_fused_vs_composed();
    test_dead_top_chunk();
    test_param_counts();
    test_dropconnect_and_init();
    return test_report("kernels_layers");
}
