/* Real learning, seeded, on the kernel layer (CPU):
 *  - a 2-layer MLP (2 -> 32 -> 2, tanh) learns "inside the circle of
 *    radius 0.7" on points of [-1, 1]²: held-out accuracy >= 95% after 400
 *    Adam steps (chance is ~62%);
 *  - an LSTM (embedding 8, hidden 24) reads 8 random symbols of 4 and must
 *    output the FIRST one from its last state (a memory over 8 steps):
 *    held-out accuracy >= 95% after 1000 Adam steps (chance 25%).
 * Each also checks that its loss fell. Both run in about a second. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/layers.h"
#include "kernels/ops.h"
#include "kernels/optim.h"
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

static int argmax_row(const float *v, int n)
{
    int k = 0;
    for (int i = 1; i < n; i++) {
        if (v[i] > v[k]) {
            k = i;
        }
    }
    return k;
}

/* points: xy [n, 2], label = inside the circle of radius 0.7 */
static void circle_data(uint64_t stream, int n, float *xy, int32_t *y)
{
    uint64_t key = gr_rng_key(gr_rng_make(2024, stream));
    for (int i = 0; i < n; i++) {
        float a = 2.0f * gr_rng_uniform(key, 2 * (uint64_t)i) - 1.0f;
        float b = 2.0f * gr_rng_uniform(key, 2 * (uint64_t)i + 1) - 1.0f;
        xy[2 * i] = a;
        xy[2 * i + 1] = b;
        y[i] = a * a + b * b < 0.49f;
    }
}

static void test_mlp(void)
{
    struct gr_ctx *ctx = cpu_ctx();
    struct gr_mlp m;
    const int sizes[3] = {2, 32, 2};
    CHECK(gr_mlp_init(&m, ctx, "mlp", 2, sizes, GR_ACT_TANH, 0,
                      gr_rng_make(7, 0)) == 0);
    struct gr_optim_config oc = gr_optim_config_default(GR_OPTIM_ADAM);
    oc.lr = 0.02f;
    struct gr_optim *opt;
    CHECK(gr_optim_new(&opt, ctx, "adam", &oc) == 0);
    const int batch = 64, steps = 400, n_test = 1000;
    float xy[2 * 1000];
    int32_t y[1000];
    float first = 0, last = 0;
    for (int s = 0; s < steps; s++) {
        circle_data(1 + (uint64_t)s, batch, xy, y);
        gr_step_reset(ctx);
        gr_zero_grad(ctx);
        struct gr_tensor *x = gr_tensor_from_host(ctx, GR_F32,
                                                  gr_shape2(batch, 2), xy);
        struct gr_tensor *t = gr_tensor_from_host(ctx, GR_I32,
                                                  gr_shape1(batch), y);
        struct gr_tensor *loss =
            gr_cross_entropy(ctx, gr_mlp_forward(ctx, &m, x), t, -1);
        if (gr_backward(ctx, loss) < 0) {
            CHECK_MSG(0, "step %d: %s", s, gr_last_error());
            break;
        }
        gr_optim_step(opt);
        float l = gr_tensor_item(loss);
        if (s < 10) {
            first += l / 10;
        }
        if (s >= steps - 10) {
            last += l / 10;
        }
    }
    circle_data(100000, n_test, xy, y);
    gr_step_reset(ctx);
    gr_set_grad_enabled(ctx, 0);
    struct gr_tensor *logits = gr_mlp_forward(
        ctx, &m, gr_tensor_from_host(ctx, GR_F32, gr_shape2(n_test, 2), xy));
    float out[2 * 1000];
    gr_tensor_to_host(logits, out);
    int correct = 0, inside = 0;
    for (int i = 0; i < n_test; i++) {
        correct += argmax_row(out + 2 * i, 2) == y[i];
        inside += y[i];
    }
    double acc = correct / (double)n_test;
    printf("mlp: loss %.3f -> %.3f, held-out accuracy %.1f%% (majority "
           "class %.1f%%)\n", first, last, 100 * acc,
           100.0 * (inside > n_test / 2 ? inside : n_test - inside) / n_test);
    CHECK_MSG(acc >= 0.95, "MLP held-out accuracy %.3f < 0.95", acc);
    CHECK(last < 0.5 * first);
    gr_optim_free(opt);
    gr_ctx_free(ctx);
}

/* sequences [T, B] of symbols in 0..3; label = the first symbol */
static void seq_data(uint64_t stream, int t_len, int b, int32_t *tok,
                     int32_t *y)
{
    uint64_t key = gr_rng_key(gr_rng_make(77, stream));
    for (int i = 0; i < t_len * b; i++) {
        tok[i] = (int32_t)(gr_rng_u32(key, (uint64_t)i) % 4u);
    }
    for (int j = 0; j < b; j++) {
        y[j] = tok[j]; /* time 0, sequence j */
    }
}

static void test_lstm(void)
{
    struct gr_ctx *ctx = cpu_ctx();
    const int T = 8, B = 32, V = 4, E = 8, H = 24;
    struct gr_tensor *emb = gr_param_new(ctx, "emb", gr_shape2(V, E));
    gr_init_uniform(emb, -1.0f, 1.0f, gr_rng_make(5, 0));
    struct gr_lstm rnn;
    struct gr_linear_layer head;
    CHECK(gr_lstm_init(&rnn, ctx, "rnn", E, H, gr_rng_make(5, 1)) == 0);
    CHECK(gr_linear_init(&head, ctx, "head", H, V, 1, gr_rng_make(5, 2)) ==
          0);
    struct gr_optim_config oc = gr_optim_config_default(GR_OPTIM_ADAM);
    oc.lr = 0.02f;
    struct gr_optim *opt;
    CHECK(gr_optim_new(&opt, ctx, "adam", &oc) == 0);
    int32_t tok[8 * 512], y[512];
    float first = 0, last = 0;
    const int steps = 1000;
    for (int s = 0; s < steps; s++) {
        seq_data(1 + (uint64_t)s, T, B, tok, y);
        gr_step_reset(ctx);
        gr_zero_grad(ctx);
        struct gr_tensor *x = gr_embedding(
            ctx, emb, gr_tensor_from_host(ctx, GR_I32, gr_shape2(T, B), tok));
        struct gr_rnn_out o;
        gr_lstm_forward(ctx, &rnn, x, NULL, NULL, NULL, &o);
        struct gr_tensor *loss = gr_cross_entropy(
            ctx, gr_linear_forward(ctx, &head, o.h),
            gr_tensor_from_host(ctx, GR_I32, gr_shape1(B), y), -1);
        if (gr_backward(ctx, loss) < 0) {
            CHECK_MSG(0, "step %d: %s", s, gr_last_error());
            break;
        }
        gr_clip_grad_norm(ctx, NULL, 1.0f, NULL);
        gr_optim_step(opt);
        float l = gr_tensor_item(loss);
        if (s < 10) {
            first += l / 10;
        }
        if (s >= steps - 10) {
            last += l / 10;
        }
    }
    const int nt = 512;
    seq_data(999999, T, nt, tok, y);
    gr_step_reset(ctx);
    gr_set_grad_enabled(ctx, 0);
    struct gr_tensor *x = gr_embedding(
        ctx, emb, gr_tensor_from_host(ctx, GR_I32, gr_shape2(T, nt), tok));
    struct gr_rnn_out o;
    gr_lstm_forward(ctx, &rnn, x, NULL, NULL, NULL, &o);
    float out[4 * 512];
    gr_tensor_to_host(gr_linear_forward(ctx, &head, o.h), out);
    int correct = 0;
    for (int i = 0; i < nt; i++) {
        correct += argmax_row(out + 4 * i, 4) == y[i];
    }
    double acc = correct / (double)nt;
    printf("lstm: loss %.3f -> %.3f, held-out accuracy %.1f%% (chance "
           "25%%)\n", first, last, 100 * acc);
    CHECK_MSG(acc >= 0.95, "LSTM held-out accuracy %.3f < 0.95", acc);
    CHECK(last < 0.25 * first);
    gr_optim_free(opt);
    gr_ctx_free(ctx);
}

int main(void)
{
    test_mlp();
    test_lstm();
    return test_report("kernels_learn");
}
