/* The language models of nlp/models/onlstm.h and the schedule pieces of
 * nlp/tasks/lm.h (on_lstm.md §2-§8, §12-§13):
 *   - parameter counts of the PTB configurations (25,232,180 ON-LSTM,
 *     24,221,600 AWD-LSTM), by formula and by building the models;
 *   - configuration checks (layer sizes a multiple of the chunk);
 *   - DropConnect semantics: ON-LSTM not rescaled / scaled by 1-p at
 *     evaluation, AWD-LSTM inverted;
 *   - cumax: monotone, last element 1, backward vs finite differences;
 *   - quirk 2: the top chunk of every ON-LSTM layer is dead (outputs ~0),
 *     a one-chunk layer stores nothing;
 *   - AR on the undropped output (ON-LSTM) vs the dropped one (AWD-LSTM);
 *   - evaluation: exact mean vs the reference's row divisor, and the exact
 *     mean equal to the per-token log-probabilities of one long window
 *     (state carried correctly across windows);
 *   - the NT-ASGD trigger against a direct reading of the rule, and the
 *     window-length draw's distribution;
 *   - configuration text and checkpoint round trips, and their errors.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "core/files.h"
#include "kernels/checkpoint.h"
#include "kernels/layers.h"
#include "kernels/ops.h"
#include "kernels/tape.h"
#include "nlp/models/onlstm.h"
#include "nlp/tasks/lm.h"
#include "tests/test.h"

static struct gr_ctx *cpu_ctx(void)
{
    struct gr_ctx_config cc = gr_ctx_config_default();
    cc.device = GR_DEVICE_CPU;
    struct gr_ctx *ctx = NULL;
    if (gr_ctx_new(&ctx, &cc) < 0) {
        fprintf(stderr, "context: %s\n", gr_last_error());
        return NULL;
    }
    return ctx;
}

static void test_param_counts(void)
{
    struct nlp_lm_config cfg;
    nlp_lm_config_default(&cfg, NLP_LM_ONLSTM, 10000);
    CHECK(nlp_lm_param_count(&cfg) == 25232180);
    struct gr_ctx *ctx = cpu_ctx();
    struct nlp_lm lm;
    CHECK(ctx && nlp_lm_init(&lm, ctx, &cfg, 141) == 0);
    CHECK_MSG(gr_param_count(ctx, NULL) == 25232180, "%lld",
              (long long)gr_param_count(ctx, NULL));
    /* names are the reference's state-dict keys; the tied decoder weight
     * is the encoder */
    CHECK(gr_ctx_find(ctx, "rnn.cells.1.ih.0.weight") != NULL);
    CHECK(gr_ctx_find(ctx, "rnn.cells.2.hh.bias") != NULL);
    CHECK(gr_ctx_find(ctx, "decoder.weight") == NULL);
    struct gr_tensor *w = gr_ctx_find(ctx, "rnn.cells.0.hh.weight");
    CHECK(w && w->shape[0] == 2 * 115 + 4 * 1150 && w->shape[1] == 1150);
    gr_ctx_free(ctx);

    nlp_lm_config_default(&cfg, NLP_LM_LSTM, 10000);
    CHECK(nlp_lm_param_count(&cfg) == 24221600);
    ctx = cpu_ctx();
    CHECK(ctx && nlp_lm_init(&lm, ctx, &cfg, 141) == 0);
    CHECK(gr_param_count(ctx, NULL) == 24221600);
    gr_ctx_free(ctx);
}

static void test_config_checks(void)
{
    struct nlp_lm_config cfg;
    nlp_lm_config_default(&cfg, NLP_LM_ONLSTM, 100);
    CHECK(nlp_lm_config_check(&cfg) == 0);
    cfg.nhid = 1155;
    CHECK(nlp_lm_config_check(&cfg) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "chunk-size 10");
    cfg.nhid = 1150;
    cfg.emsize = 405;
    CHECK(nlp_lm_config_check(&cfg) == GR_EINVAL);
    cfg.emsize = 400;
    cfg.wdrop = 1.0f;
    CHECK(nlp_lm_config_check(&cfg) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "wdrop");
    cfg.wdrop = 0.45f;
    cfg.kind = NLP_LM_LSTM;
    cfg.nhid = 1155; /* no chunks in the LSTM */
    CHECK(nlp_lm_config_check(&cfg) == 0);
    enum nlp_lm_kind k;
    CHECK(nlp_lm_kind_parse("gru", &k) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "gru");
}

static void test_dropconnect(void)
{
    struct gr_ctx *ctx = cpu_ctx();
    struct gr_tensor *w = gr_param_new(ctx, "w", gr_shape2(300, 200));
    gr_tensor_rand_uniform(w, 0.5f, 1.5f, gr_rng_make(3, 4));
    int64_t n = w->numel;
    float *wv = malloc((size_t)n * sizeof *wv);
    float *dv = malloc((size_t)n * sizeof *dv);
    float *dv2 = malloc((size_t)n * sizeof *dv2);
    gr_tensor_to_host(w, wv);
    const float p = 0.45f;
    for (int mode = 0; mode < 2; mode++) {
        enum gr_wdrop_mode m = mode ? GR_WDROP_AWD : GR_WDROP_ONLSTM;
        float kept_scale = mode ? 1.0f / (1.0f - p) : 1.0f;
        gr_step_reset(ctx);
        struct gr_rng r = nlp_lm_rng(7, 1, 2, NLP_LM_RNG_WEIGHT, 0);
        struct gr_tensor *d = gr_dropconnect(ctx, w, p, m, 1, r);
        gr_tensor_to_host(d, dv);
        int64_t dropped = 0, bad = 0;
        for (int64_t i = 0; i < n; i++) {
            if (dv[i] == 0.0f) {
                dropped++;
            } else if (fabsf(dv[i] - wv[i] * kept_scale) >
                       1e-6f * fabsf(wv[i])) {
                bad++;
            }
        }
        CHECK_MSG(bad == 0, "mode %d: %lld kept weights wrongly scaled", mode,
                  (long long)bad);
        double frac = (double)dropped / (double)n;
        CHECK_MSG(fabs(frac - p) < 0.01, "mode %d: dropped fraction %.4f",
                  mode, frac);
        /* same key, same mask; another window, another mask */
        gr_tensor_to_host(gr_dropconnect(ctx, w, p, m, 1, r), dv2);
        CHECK(memcmp(dv, dv2, (size_t)n * sizeof *dv) == 0);
        gr_tensor_to_host(
            gr_dropconnect(ctx, w, p, m, 1,
                           nlp_lm_rng(7, 1, 3, NLP_LM_RNG_WEIGHT, 0)),
            dv2);
        CHECK(memcmp(dv, dv2, (size_t)n * sizeof *dv) != 0);
        /* evaluation: U·(1-p) for the ON-LSTM, U for the AWD-LSTM */
        gr_tensor_to_host(gr_dropconnect(ctx, w, p, m, 0, r), dv);
        bad = 0;
        for (int64_t i = 0; i < n; i++) {
            float want = mode ? wv[i] : wv[i] * (1.0f - p);
            bad += fabsf(dv[i] - want) > 1e-6f * fabsf(want);
        }
        CHECK_MSG(bad == 0, "mode %d evaluation: %lld wrong", mode,
                  (long long)bad);
    }
    free(wv);
    free(dv);
    free(dv2);
    gr_ctx_free(ctx);
}

static void test_cumax(void)
{
    struct gr_ctx *ctx = cpu_ctx();
    enum { R = 3, N = 7 };
    float x[R * N], g[R * N], y[R * N], dx[R * N];
    struct gr_philox_stream s = gr_philox_stream_init(11, 0);
    for (int i = 0; i < R * N; i++) {
        x[i] = 4.0f * gr_philox_next_uniform(&s) - 2.0f;
        g[i] = 2.0f * gr_philox_next_uniform(&s) - 1.0f;
    }
    gr_step_reset(ctx);
    struct gr_tensor *xt = gr_tensor_from_host(ctx, GR_F32, gr_shape2(R, N), x);
    gr_tensor_set_requires_grad(xt, 1);
    struct gr_tensor *gt = gr_tensor_from_host(ctx, GR_F32, gr_shape2(R, N), g);
    struct gr_tensor *yt = gr_cumax(ctx, xt);
    gr_tensor_to_host(yt, y);
    for (int r = 0; r < R; r++) {
        for (int k = 0; k < N; k++) {
            float v = y[r * N + k];
            CHECK(v > 0.0f && v <= 1.0f + 1e-6f);
            if (k > 0) {
                CHECK(v >= y[r * N + k - 1]);
            }
        }
        CHECK_NEAR(y[r * N + N - 1], 1.0, 1e-6);
    }
    CHECK(gr_backward(ctx, gr_sum(ctx, gr_mul(ctx, yt, gt))) == 0);
    gr_tensor_to_host(xt->grad, dx);
    /* central differences of L(x) = Σ cumax(x)·g, computed in double */
    for (int i = 0; i < R * N; i++) {
        int r = i / N;
        double lp = 0.0, lm = 0.0;
        for (int sgn = 0; sgn < 2; sgn++) {
            double xs[N], mx = -1e300, z = 0.0, acc = 0.0, l = 0.0;
            for (int k = 0; k < N; k++) {
                xs[k] = x[r * N + k];
            }
            xs[i % N] += sgn ? -1e-5 : 1e-5;
            for (int k = 0; k < N; k++) {
                mx = fmax(mx, xs[k]);
            }
            for (int k = 0; k < N; k++) {
                z += exp(xs[k] - mx);
            }
            for (int k = 0; k < N; k++) {
                acc += exp(xs[k] - mx) / z;
                l += acc * g[r * N + k];
            }
            if (sgn) {
                lm = l;
            } else {
                lp = l;
            }
        }
        double fd = (lp - lm) / 2e-5;
        CHECK_MSG(fabs(fd - dx[i]) <= 1e-4 + 1e-3 * fabs(fd),
                  "cumax grad %d: %.7g vs finite difference %.7g", i,
                  (double)dx[i], fd);
    }
    gr_ctx_free(ctx);
}

static void test_dead_top_chunk(void)
{
    struct gr_ctx *ctx = cpu_ctx();
    const int IN = 5, T = 6, B = 4;
    struct {
        int h, c;
    } cases[2] = {{12, 3}, {4, 4}};
    for (int k = 0; k < 2; k++) {
        int H = cases[k].h, C = cases[k].c;
        char prefix[16];
        snprintf(prefix, sizeof prefix, "dead%d", k);
        struct gr_onlstm l;
        CHECK(gr_onlstm_init(&l, ctx, prefix, IN, H, C, gr_rng_make(9, 1)) ==
              0);
        gr_step_reset(ctx);
        struct gr_tensor *x = gr_tensor_new(ctx, GR_F32, gr_shape3(T, B, IN));
        gr_tensor_rand_normal(x, 0.0f, 2.0f, gr_rng_make(9, 2));
        struct gr_rnn_out o;
        CHECK(gr_onlstm_forward(ctx, &l, x, NULL, NULL, NULL, &o) == 0);
        float *y = malloc((size_t)T * B * H * sizeof *y);
        gr_tensor_to_host(o.y, y);
        float top = 0.0f, rest = 0.0f;
        for (int i = 0; i < T * B; i++) {
            for (int u = 0; u < H; u++) {
                float v = fabsf(y[i * H + u]);
                if (u >= H - C) {
                    top = fmaxf(top, v);
                } else {
                    rest = fmaxf(rest, v);
                }
            }
        }
        CHECK_MSG(top <= 1e-5f, "H %d C %d: top chunk output %g", H, C,
                  (double)top);
        if (H > C) {
            CHECK_MSG(rest > 1e-2f, "other chunks output only %g",
                      (double)rest);
        }
        free(y);
    }
    gr_ctx_free(ctx);
}

/* AR is alpha·mean(y²) of the undropped output for the ON-LSTM, of the
 * dropped one for the AWD-LSTM (on_lstm.md §6.5). */
static void test_ar_source(void)
{
    for (int kind = 0; kind < 2; kind++) {
        struct gr_ctx *ctx = cpu_ctx();
        struct nlp_lm_config cfg;
        nlp_lm_config_default(&cfg, kind ? NLP_LM_LSTM : NLP_LM_ONLSTM, 17);
        cfg.emsize = 6;
        cfg.nhid = 9;
        cfg.chunk = 3;
        cfg.nlayers = 2;
        struct nlp_lm lm;
        CHECK(nlp_lm_init(&lm, ctx, &cfg, 3) == 0);
        const int T = 5, B = 2;
        int32_t ids[(5 + 1) * 2];
        for (int i = 0; i < (T + 1) * B; i++) {
            ids[i] = (i * 7 + 3) % 17;
        }
        float outmask[2 * 6];
        for (int i = 0; i < B * cfg.emsize; i++) {
            outmask[i] = (i % 3 == 0) ? 0.0f : 1.0f / (1.0f - cfg.dropout);
        }
        struct nlp_lm_masks mk;
        memset(&mk, 0, sizeof mk);
        mk.output = outmask;
        struct nlp_lm_drop drop = nlp_lm_drop_train(1, 1, 1);
        drop.masks = &mk;
        gr_step_reset(ctx);
        struct nlp_lm_out o;
        CHECK(nlp_lm_forward(
                  &lm, NULL,
                  gr_tensor_from_host(ctx, GR_I32, gr_shape2(T, B), ids),
                  gr_tensor_from_host(ctx, GR_I32, gr_shape1(T * B), ids + B),
                  &drop, &o) == 0);
        float y[5 * 2 * 6];
        gr_tensor_to_host(o.output, y);
        double sq = 0.0, sqd = 0.0, tar = 0.0;
        for (int i = 0; i < T * B * cfg.emsize; i++) {
            double d = y[i] * outmask[i % (B * cfg.emsize)];
            sq += (double)y[i] * y[i];
            sqd += d * d;
        }
        for (int i = B * cfg.emsize; i < T * B * cfg.emsize; i++) {
            double d = (double)y[i] - y[i - B * cfg.emsize];
            tar += d * d;
        }
        double n = T * B * cfg.emsize;
        double want = cfg.alpha * (kind ? sqd : sq) / n;
        CHECK_MSG(fabs(gr_tensor_item(o.ar) - want) <= 1e-5 * want,
                  "kind %d: AR %.9g, want %.9g", kind,
                  (double)gr_tensor_item(o.ar), want);
        double want_tar = cfg.beta * tar / ((T - 1) * B * cfg.emsize);
        CHECK_NEAR(gr_tensor_item(o.tar), want_tar, 1e-5 * want_tar + 1e-9);
        gr_ctx_free(ctx);
    }
}

/* Exact vs compat evaluation, and state carried across windows. */
static void test_evaluate(void)
{
    struct gr_ctx *ctx = cpu_ctx();
    struct nlp_lm_config cfg;
    nlp_lm_config_default(&cfg, NLP_LM_ONLSTM, 23);
    cfg.emsize = 8;
    cfg.nhid = 10;
    cfg.chunk = 2;
    cfg.nlayers = 3;
    struct nlp_lm lm;
    CHECK(nlp_lm_init(&lm, ctx, &cfg, 4) == 0);
    enum { ROWS = 29 };
    int32_t data[ROWS];
    for (int i = 0; i < ROWS; i++) {
        data[i] = (i * i + 5 * i + 1) % 23;
    }
    struct nlp_lm_eval_result ev;
    CHECK(nlp_lm_evaluate(&lm, data, ROWS, 1, 4, "ev", NULL, 1, &ev) == 0);
    CHECK(ev.n_predictions == ROWS - 1 && ev.rows == ROWS);
    CHECK_NEAR(ev.loss_compat, ev.loss * (ROWS - 1) / ROWS, 1e-12);
    CHECK_NEAR(ev.ppl, exp(ev.loss), 1e-9 * ev.ppl);
    float logp[ROWS - 1];
    CHECK(nlp_lm_sentences(&lm, data, ROWS, 1, NULL, logp) == 0);
    double s = 0.0;
    for (int i = 0; i < ROWS - 1; i++) {
        s -= logp[i];
    }
    CHECK_MSG(fabs(s / (ROWS - 1) - ev.loss) <= 1e-5 * ev.loss,
              "one window %.9g vs windows of 4 %.9g", s / (ROWS - 1),
              ev.loss);
    /* batch 2 of the same sentence twice: the same log-probabilities */
    int32_t two[ROWS * 2];
    float logp2[(ROWS - 1) * 2];
    float df[3 * ROWS * 2];
    for (int i = 0; i < ROWS; i++) {
        two[2 * i] = two[2 * i + 1] = data[i];
    }
    CHECK(nlp_lm_sentences(&lm, two, ROWS, 2, df, logp2) == 0);
    for (int i = 0; i < ROWS - 1; i++) {
        CHECK_NEAR(logp2[2 * i], logp[i], 1e-5);
        CHECK(logp2[2 * i] == logp2[2 * i + 1]);
    }
    for (int i = 0; i < 3 * ROWS; i++) {
        CHECK(df[2 * i] >= 0.0f && df[2 * i] <= 1.0f &&
              df[2 * i] == df[2 * i + 1]);
    }
    gr_ctx_free(ctx);
}

/* nlp_lm_run_sequences (length groups, batches, reordering) gives every
 * sequence the log-probability and distances it has when run alone. */
static void test_run_sequences(void)
{
    struct gr_ctx *ctx = cpu_ctx();
    struct nlp_lm_config cfg;
    nlp_lm_config_default(&cfg, NLP_LM_ONLSTM, 31);
    cfg.emsize = 8;
    cfg.nhid = 12;
    cfg.chunk = 4;
    cfg.nlayers = 3;
    struct nlp_lm lm;
    CHECK(nlp_lm_init(&lm, ctx, &cfg, 8) == 0);
    enum { N = 9 };
    int32_t lens[N] = {5, 3, 5, 7, 3, 5, 1, 7, 5};
    int32_t store[N][7];
    const int32_t *ids[N];
    float dbuf[N][7];
    float *df[N];
    for (int i = 0; i < N; i++) {
        for (int t = 0; t < lens[i]; t++) {
            store[i][t] = (i * 7 + t * 3 + 1) % 31;
        }
        ids[i] = store[i];
        df[i] = dbuf[i];
    }
    double lp[N];
    CHECK(nlp_lm_run_sequences(&lm, N, ids, lens, 2, lp, 1, df, NULL) == 0);
    for (int i = 0; i < N; i++) {
        float one[6], d1[3 * 7];
        CHECK(nlp_lm_sentences(&lm, store[i], lens[i], 1, d1,
                               lens[i] > 1 ? one : NULL) == 0);
        double want = 0.0;
        for (int t = 0; t + 1 < lens[i]; t++) {
            want += one[t];
        }
        CHECK_MSG(fabs(lp[i] - want) <= 1e-5 * (1.0 + fabs(want)),
                  "sequence %d: %.7g in a batch, %.7g alone", i, lp[i], want);
        for (int t = 0; t < lens[i]; t++) {
            CHECK_NEAR(df[i][t], d1[1 * lens[i] + t], 1e-6);
        }
    }
    gr_ctx_free(ctx);
}

/* The rule of on_lstm.md §8.3, read directly: switch at the first epoch e
 * (1-based) with e > nonmono + 1 whose loss exceeds the best of epochs
 * 1 .. e - 1 - nonmono. */
static int direct_switch_epoch(const double *v, int n, int nonmono)
{
    for (int e = 1; e <= n; e++) {
        int m = e - 1 - nonmono; /* epochs before the last nonmono */
        if (e - 1 <= nonmono || m < 1) {
            continue;
        }
        double best = v[0];
        for (int j = 1; j < m; j++) {
            best = v[j] < best ? v[j] : best;
        }
        if (v[e - 1] > best) {
            return e;
        }
    }
    return 0;
}

static int rule_switch_epoch(const double *v, int n, int nonmono)
{
    for (int e = 1; e <= n; e++) {
        if (nlp_ntasgd_should_switch(v, e - 1, v[e - 1], nonmono)) {
            return e;
        }
    }
    return 0;
}

static void test_ntasgd(void)
{
    double rising[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    CHECK(rule_switch_epoch(rising, 10, 5) == 7); /* the earliest possible */
    double falling[10] = {10, 9, 8, 7, 6, 5, 4, 3, 2, 1};
    CHECK(rule_switch_epoch(falling, 10, 5) == 0);
    /* a plateau: best 8 at epoch 3; epoch 9's 8.95 > min(epochs 1-3) */
    double plateau[9] = {10, 9, 8, 8.5, 8.6, 8.7, 8.8, 8.9, 8.95};
    CHECK(rule_switch_epoch(plateau, 9, 5) == 9);
    CHECK(rule_switch_epoch(plateau, 8, 5) == 0);
    /* random walks against the direct reading */
    struct gr_philox_stream s = gr_philox_stream_init(5, 0);
    for (int trial = 0; trial < 200; trial++) {
        double v[40];
        double x = 6.0;
        for (int i = 0; i < 40; i++) {
            x += 0.3 * (gr_philox_next_uniform(&s) - 0.6);
            v[i] = x;
        }
        int nonmono = trial % 7;
        CHECK(rule_switch_epoch(v, 40, nonmono) ==
              direct_switch_epoch(v, 40, nonmono));
    }
}

static void test_window_length(void)
{
    struct gr_philox_stream s = nlp_lm_window_stream(141, 1);
    struct gr_philox_stream s2 = nlp_lm_window_stream(141, 1);
    struct gr_philox_stream s3 = nlp_lm_window_stream(141, 2);
    int n = 20000, short_n = 0, same = 1, differ = 0, below5 = 0;
    double sum_long = 0.0;
    int n_long = 0;
    for (int i = 0; i < n; i++) {
        int32_t t = nlp_lm_window_length(&s, 70);
        same &= t == nlp_lm_window_length(&s2, 70);
        differ |= t != nlp_lm_window_length(&s3, 70);
        below5 += t < 5;
        if (t < 53) {
            short_n++;
        } else {
            sum_long += t;
            n_long++;
        }
    }
    CHECK(same && differ && below5 == 0);
    double frac = (double)short_n / n;
    CHECK_MSG(fabs(frac - 0.05) < 0.007, "short windows %.4f", frac);
    /* trunc of N(70, 5²): mean 70 - ~0.5 */
    double mean = sum_long / n_long;
    CHECK_MSG(fabs(mean - 69.5) < 0.15, "mean long window %.3f", mean);
    struct gr_philox_stream s4 = nlp_lm_window_stream(1, 1);
    for (int i = 0; i < 1000; i++) {
        CHECK(nlp_lm_window_length(&s4, 6) >= 5);
    }
}

static void test_config_text_and_checkpoint(void)
{
    struct nlp_lm_config cfg, back;
    nlp_lm_config_default(&cfg, NLP_LM_ONLSTM, 5);
    cfg.emsize = 4;
    cfg.nhid = 6;
    cfg.chunk = 2;
    cfg.nlayers = 2;
    cfg.dropouth = 0.123456789f;
    struct nlp_text t = {0};
    CHECK(nlp_lm_config_write(&cfg, &t) == 0);
    CHECK(nlp_lm_config_read(t.s, "x", &back) == 0);
    CHECK(memcmp(&cfg, &back, sizeof cfg) == 0);
    CHECK(nlp_lm_config_read("model onlstm\nvocab 5\n", "f.ckpt", &back) ==
          GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "f.ckpt");
    CHECK_STR_CONTAINS(gr_last_error(), "emsize");
    nlp_text_free(&t);

    char dir[] = "/tmp/grove_test_lm_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256], other[256];
    snprintf(path, sizeof path, "%s/m.ckpt", dir);
    snprintf(other, sizeof other, "%s/other.ckpt", dir);
    struct gr_ctx *ctx = cpu_ctx();
    struct nlp_lm lm;
    CHECK(nlp_lm_init(&lm, ctx, &cfg, 77) == 0);
    struct nlp_vocab v;
    nlp_vocab_init(&v);
    const char *words[5] = {"the", "<eos>", "cat", "<unk>", "N"};
    for (int i = 0; i < 5; i++) {
        nlp_vocab_add(&v, words[i], strlen(words[i]), NULL);
    }
    CHECK(nlp_lm_save(&lm, path, &v, "note 1\n", 0, 0) == 0);
    CHECK(nlp_lm_save(&lm, path, &v, NULL, 0, 0) == GR_EEXIST);
    struct nlp_lm_loaded ld;
    struct gr_ctx_config cc = gr_ctx_config_default();
    cc.device = GR_DEVICE_CPU;
    CHECK_MSG(nlp_lm_load(&ld, path, &cc) == 0, "%s", gr_last_error());
    CHECK(memcmp(&ld.lm.cfg, &cfg, sizeof cfg) == 0);
    CHECK(ld.vocab.size == 5 && strcmp(nlp_vocab_word(&ld.vocab, 3),
                                       "<unk>") == 0);
    size_t len = 0;
    const char *note = nlp_config_value(ld.config, "note", &len);
    CHECK(note != NULL && len == 1 && note[0] == '1');
    for (int i = 0; i < gr_ctx_n_named(ctx); i++) {
        struct gr_tensor *a = gr_ctx_named(ctx, i);
        struct gr_tensor *b = gr_ctx_find(ld.ctx, a->name);
        CHECK(b != NULL && b->numel == a->numel);
        if (b != NULL && b->numel == a->numel) {
            float *x = malloc((size_t)a->numel * 4);
            float *y = malloc((size_t)a->numel * 4);
            gr_tensor_to_host(a, x);
            gr_tensor_to_host(b, y);
            CHECK(memcmp(x, y, (size_t)a->numel * 4) == 0);
            free(x);
            free(y);
        }
    }
    nlp_lm_loaded_free(&ld);
    /* a checkpoint that is not a language model */
    CHECK(gr_checkpoint_save(ctx, other, "something else", GR_CKPT_PARAMS,
                             0) == 0);
    CHECK(nlp_lm_load(&ld, other, &cc) == GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "other.ckpt");
    CHECK(nlp_lm_load(&ld, "/nonexistent/x.ckpt", &cc) < 0);
    nlp_vocab_free(&v);
    gr_ctx_free(ctx);
    unlink(path);
    unlink(other);
    rmdir(dir);
}

int main(void)
{
    test_param_counts();
    test_config_checks();
    test_dropconnect();
    test_cumax();
    test_dead_top_chunk();
    test_ar_source();
    test_evaluate();
    test_run_sequences();
    test_ntasgd();
    test_window_length();
    test_config_text_and_checkpoint();
    return test_report("nlp_lm_model");
}
