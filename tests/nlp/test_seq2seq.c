/* The Transformer encoder-decoder (nlp/models/seq2seq.h): a seeded
 * reversal task it must learn (label-smoothed loss, Adam; sequence
 * accuracy of greedy decoding on fresh inputs >= 3/4, where chance is
 * ~0), beam search with beam 1 equal to greedy decoding token for token,
 * beam 4 (length penalty 0.6) at least as accurate a threshold, the
 * key/value cache's decoding equal token for token to recomputing the
 * prefix (greedy and beam, on the trained model and on untrained
 * 2-layer pre-norm, post-norm, FastTrees and Conv. FastTrees decoders),
 * the source-length and bad-argument errors, and the noam schedule's hand
 * values. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/ops.h"
#include "kernels/optim.h"
#include "kernels/tape.h"
#include "nlp/models/seq2seq.h"
#include "tests/test.h"

enum { V = 10, TMAX = 6, B = 32 };

static uint64_t lcg = 777;
static int32_t rnd(int32_t n)
{
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return (int32_t)((lcg >> 33) % (uint64_t)n);
}

/* Cached and uncached decoding agree (greedy, and beam `beam`) on the
 * first NS sources (kept few: beam search runs source by source). */
static int cache_agrees(struct gr_ctx *ctx, struct nlp_s2s *m,
                        const int32_t *src, const int32_t *len, int beam)
{
    enum { ML = 8, NS = 8 };
    static int32_t a[NS * ML], al[NS], u[NS * ML], ul[NS], s8[TMAX * NS];
    for (int t = 0; t < TMAX; t++) {
        for (int b = 0; b < NS; b++) {
            s8[t * NS + b] = src[t * B + b];
        }
    }
    int same = 1;
    for (int pass = 0; pass < 2; pass++) {
        for (int nc = 0; nc < 2; nc++) {
            m->no_cache = nc;
            gr_step_reset(ctx);
            int rc = pass == 0
                         ? nlp_s2s_greedy(ctx, m, s8, len, TMAX, NS, ML,
                                          nc ? u : a, nc ? ul : al)
                         : nlp_s2s_beam(ctx, m, s8, len, TMAX, NS, beam,
                                        0.6f, ML, nc ? u : a, nc ? ul : al);
            if (rc < 0) {
                fprintf(stderr, "decode: %s\n", gr_last_error());
                same = 0;
            }
        }
        for (int b = 0; b < NS; b++) {
            same &= al[b] == ul[b];
            for (int t = 0; same && t < al[b]; t++) {
                same &= a[b * ML + t] == u[b * ML + t];
            }
        }
    }
    m->no_cache = 0;
    return same;
}

/* src [TMAX, B] padded, len [B]; tgt_in/out [TMAX + 1, B]: reversed. */
static void batch(int32_t *src, int32_t *len, int32_t *tin, int32_t *tout)
{
    memset(src, 0, sizeof(int32_t) * TMAX * B);
    memset(tin, 0, sizeof(int32_t) * (TMAX + 1) * B);
    memset(tout, 0, sizeof(int32_t) * (TMAX + 1) * B);
    for (int b = 0; b < B; b++) {
        len[b] = 2 + rnd(TMAX - 1);
        for (int t = 0; t < len[b]; t++) {
            src[t * B + b] = 3 + rnd(V - 3);
        }
        tin[b] = 1; /* bos */
        for (int t = 0; t < len[b]; t++) {
            int32_t y = src[(len[b] - 1 - t) * B + b];
            tout[t * B + b] = y;
            tin[(t + 1) * B + b] = y;
        }
        tout[len[b] * B + b] = 2; /* eos */
    }
}

int main(void)
{
    struct gr_ctx_config cfg = gr_ctx_config_default();
    cfg.device = GR_DEVICE_CPU;
    struct gr_ctx *ctx;
    CHECK(gr_ctx_new(&ctx, &cfg) == 0);
    struct nlp_s2s_config c = nlp_s2s_config_default(V, V);
    c.d = 32;
    c.layers = 1;
    c.heads = 4;
    c.ffn = 64;
    c.dropout = c.dropout_attn = 0.0f;
    struct nlp_s2s m;
    CHECK_MSG(nlp_s2s_init(&m, ctx, &c, gr_rng_make(11, 0)) == 0, "%s",
              gr_last_error());
    struct gr_optim *opt;
    struct gr_optim_config oc = gr_optim_config_default(GR_OPTIM_ADAM);
    oc.lr = 5e-3f;
    CHECK(gr_optim_new(&opt, ctx, "adam", &oc) == 0);
    int32_t src[TMAX * B], len[B], tin[(TMAX + 1) * B], tout[(TMAX + 1) * B];
    float first = 0, last = 0;
    for (int step = 0; step < 300; step++) {
        batch(src, len, tin, tout);
        gr_step_reset(ctx);
        gr_zero_grad(ctx);
        struct gr_tensor *s = gr_tensor_from_host(ctx, GR_I32,
                                                  gr_shape2(TMAX, B), src);
        struct gr_tensor *ti = gr_tensor_from_host(ctx, GR_I32,
                                                   gr_shape2(TMAX + 1, B),
                                                   tin);
        struct gr_tensor *to = gr_tensor_from_host(ctx, GR_I32,
                                                   gr_shape2(TMAX + 1, B),
                                                   tout);
        struct gr_tensor *loss = nlp_s2s_loss(ctx, &m, s, len, ti, to, 0.1f,
                                              1, gr_rng_make(5, step));
        if (loss == NULL || gr_backward(ctx, loss) < 0) {
            CHECK_MSG(0, "step %d: %s / %s", step, gr_ctx_error(ctx),
                      gr_last_error());
            break;
        }
        float lv = gr_tensor_item(loss);
        first = step == 0 ? lv : first;
        last = lv;
        gr_optim_step(opt);
    }
    printf("reversal: loss %.3f -> %.3f\n", first, last);
    /* greedy on fresh inputs */
    batch(src, len, tin, tout);
    int32_t g[B * 8], gl[B], bm[B * 8], bl[B], b4[B * 8], b4l[B];
    gr_step_reset(ctx);
    CHECK(nlp_s2s_greedy(ctx, &m, src, len, TMAX, B, 8, g, gl) == 0);
    gr_step_reset(ctx);
    CHECK(nlp_s2s_beam(ctx, &m, src, len, TMAX, B, 1, 0.0f, 8, bm, bl) == 0);
    gr_step_reset(ctx);
    CHECK(nlp_s2s_beam(ctx, &m, src, len, TMAX, B, 4, 0.6f, 8, b4, b4l) ==
          0);
    int right = 0, right4 = 0, same = 1;
    for (int b = 0; b < B; b++) {
        int ok = gl[b] == len[b], ok4 = b4l[b] == len[b];
        for (int t = 0; t < len[b]; t++) {
            ok &= ok && g[b * 8 + t] == src[(len[b] - 1 - t) * B + b];
            ok4 &= ok4 && b4[b * 8 + t] == src[(len[b] - 1 - t) * B + b];
        }
        right += ok;
        right4 += ok4;
        same &= gl[b] == bl[b];
        for (int t = 0; same && t < gl[b]; t++) {
            same &= g[b * 8 + t] == bm[b * 8 + t];
        }
    }
    printf("greedy sequence accuracy %d/%d, beam 4 %d/%d\n", right, B,
           right4, B);
    CHECK_MSG(last < 0.6f * first, "the loss did not fall: %.3f -> %.3f",
              first, last);
    CHECK_MSG(right >= (3 * B) / 4, "greedy reversal accuracy %d/%d", right,
              B);
    CHECK_MSG(right4 >= (3 * B) / 4, "beam 4 reversal accuracy %d/%d",
              right4, B);
    CHECK_MSG(same, "beam 1 differs from greedy decoding");
    CHECK_MSG(cache_agrees(ctx, &m, src, len, 4),
              "the key/value cache changes the trained model's decoding");
    /* untrained decoders of every kind: random weights, long outputs */
    for (int kind = 0; kind < 4; kind++) {
        struct gr_ctx *c2;
        CHECK(gr_ctx_new(&c2, &cfg) == 0);
        struct nlp_s2s_config k2 = c;
        k2.layers = 2;
        k2.post_norm = kind == 1;
        k2.ft_gate = kind >= 2;
        k2.ft_conv = kind == 3;
        struct nlp_s2s m2;
        CHECK(nlp_s2s_init(&m2, c2, &k2, gr_rng_make(40 + kind, 0)) == 0);
        CHECK_MSG(cache_agrees(c2, &m2, src, len, 3),
                  "the key/value cache changes decoding (kind %d: pre, "
                  "post, ftt, ftt-conv)", kind);
        nlp_s2s_free(&m2);
        gr_ctx_free(c2);
    }
    /* errors */
    int32_t bad_len[B];
    memcpy(bad_len, len, sizeof bad_len);
    bad_len[3] = 0;
    gr_step_reset(ctx);
    CHECK(nlp_s2s_greedy(ctx, &m, src, bad_len, TMAX, B, 8, g, gl) < 0);
    CHECK_STR_CONTAINS(gr_last_error(), "source 3 has length 0");
    CHECK(nlp_s2s_beam(ctx, &m, src, len, TMAX, B, 0, 0.0f, 8, g, gl) < 0);
    CHECK_STR_CONTAINS(gr_last_error(), "beam 0");
    /* noam: d 512, warmup 4000: peak at step 4000 = 512^-0.5 · 4000^-0.5 */
    CHECK(fabs(nlp_s2s_noam_lr(4000, 512, 4000, 1.0) -
               1.0 / sqrt(512.0 * 4000.0)) < 1e-15);
    CHECK(fabs(nlp_s2s_noam_lr(1, 512, 4000, 2.0) -
               2.0 / sqrt(512.0) * pow(4000.0, -1.5)) < 1e-15);
    CHECK(nlp_s2s_noam_lr(16000, 512, 4000, 1.0) <
          nlp_s2s_noam_lr(4000, 512, 4000, 1.0));
    gr_optim_free(opt);
    nlp_s2s_free(&m);
    gr_ctx_free(ctx);
    return test_report("nlp_seq2seq_model");
}
