/* The Transformer encoder (nlp/models/transformer.h) and its row in the
 * encoder table: PyTorch's parameter names in both norm placements, config
 * text round trip, padding invariance of the pooled sentence vector (a
 * padded batch equals each sentence alone), causality of the stack with
 * causal = 1 (perturbing token t+1 leaves outputs 0..t unchanged), bad
 * input, and a seeded task it must learn (which of two marker tokens
 * occurs more often: needs attention over the whole sequence) with the
 * label-smoothed loss; with a fixture folder as argument, two
 * nn.TransformerEncoderLayer layers (pre-norm with the final norm, and
 * post-norm) with key padding, and two nn.TransformerDecoderLayer layers
 * (causal targets, memory key padding) against float64 PyTorch
 * (tests/fixtures/nlp/make_transformer_fixture.py): outputs and every
 * gradient to 1e-5 relative. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/attention.h"
#include "kernels/layers.h"
#include "kernels/ops.h"
#include "kernels/optim.h"
#include "kernels/tape.h"
#include "nlp/models/encoder.h"
#include "nlp/models/hybrid.h"
#include "nlp/models/transformer.h"
#include "tests/test.h"

static struct gr_ctx *cpu_ctx(void)
{
    struct gr_ctx_config cfg = gr_ctx_config_default();
    cfg.device = GR_DEVICE_CPU;
    cfg.step_chunk_bytes = 1 << 20;
    struct gr_ctx *ctx = NULL;
    if (gr_ctx_new(&ctx, &cfg) < 0) {
        return NULL;
    }
    return ctx;
}

static void small_config(struct nlp_encoder_config *c, const char *task)
{
    CHECK(nlp_encoder_config_default(c, "transformer", task) == 0);
    c->vocab = 12;
    c->pad_id = 0;
    c->emsize = 12; /* != hidden: the projection is used */
    c->hidden = 16;
    c->heads = 4;
    c->ffn = 24;
    c->layers = 2;
}

static void check_names_and_config(void)
{
    struct nlp_encoder_config c, back;
    for (int post = 0; post < 2; post++) {
        struct gr_ctx *ctx = cpu_ctx();
        small_config(&c, "logic");
        c.post_norm = post;
        struct nlp_encoder e;
        CHECK_MSG(nlp_encoder_init(&e, ctx, &c, gr_rng_make(1, 0)) == 0,
                  "init: %s", gr_last_error());
        const char *names[] = {"enc.emb.weight", "enc.proj.weight",
                               "enc.pool.queries",
                               "enc.layers.0.self_attn.in_proj_weight",
                               "enc.layers.1.self_attn.out_proj.bias",
                               "enc.layers.1.linear1.weight",
                               "enc.layers.0.linear2.bias",
                               "enc.layers.1.norm2.weight"};
        for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
            CHECK_MSG(gr_ctx_find(ctx, names[i]) != NULL, "no parameter %s",
                      names[i]);
        }
        CHECK_MSG((gr_ctx_find(ctx, "enc.norm.weight") != NULL) == !post,
                  "the final norm exists exactly in pre-norm");
        CHECK(nlp_encoder_out_dim(&e) == 32);
        char text[2048];
        int len = 0;
        CHECK(nlp_encoder_config_format(&c, text, sizeof text, &len) == 0);
        CHECK(nlp_encoder_config_parse(text, "test", &back) == 0);
        CHECK(back.layers == 2 && back.heads == 4 && back.ffn == 24 &&
              back.post_norm == post && back.emsize == 12 &&
              back.hidden == 16 &&
              fabsf(back.dropout_attn - c.dropout_attn) < 1e-7f);
        nlp_encoder_free(&e);
        gr_ctx_free(ctx);
    }
    /* bad sizes: heads must divide the width */
    struct gr_ctx *ctx = cpu_ctx();
    small_config(&c, NULL);
    c.heads = 5;
    struct nlp_encoder e;
    CHECK(nlp_encoder_init(&e, ctx, &c, gr_rng_make(1, 0)) < 0);
    CHECK_STR_CONTAINS(gr_last_error(), "not a multiple of --heads 5");
    gr_ctx_free(ctx);
}

/* Encodes ids [T, B] (eval mode) into out [B, 2D]. */
static int encode(struct gr_ctx *ctx, struct nlp_encoder *e,
                  const int32_t *ids, const int32_t *lens, int T, int B,
                  float *out)
{
    gr_step_reset(ctx);
    struct gr_tensor *it = gr_tensor_from_host(ctx, GR_I32, gr_shape2(T, B),
                                               ids);
    struct nlp_encoder_batch b = {it, lens, T, B, NULL};
    struct gr_tensor *u = nlp_encoder_encode(e, &b, 0, gr_rng_make(3, 3));
    if (u == NULL || gr_tensor_to_host(u, out) < 0) {
        fprintf(stderr, "encode: %s / %s\n", gr_ctx_error(ctx),
                gr_last_error());
        return -1;
    }
    return 0;
}

static void check_padding_invariance(void)
{
    struct gr_ctx *ctx = cpu_ctx();
    struct nlp_encoder_config c;
    small_config(&c, "listops");
    struct nlp_encoder e;
    CHECK(nlp_encoder_init(&e, ctx, &c, gr_rng_make(2, 0)) == 0);
    enum { T = 6, B = 3 };
    const int32_t lens[B] = {6, 2, 4};
    int32_t ids[T * B];
    for (int t = 0; t < T; t++) {
        for (int b = 0; b < B; b++) {
            /* real tokens 1..11; the pads are garbage ids, not pad_id */
            ids[t * B + b] = 1 + (t * 5 + b * 3) % 11;
        }
    }
    float all[B * 32], one[32];
    CHECK(encode(ctx, &e, ids, lens, T, B, all) == 0);
    double worst = 0.0;
    for (int b = 0; b < B; b++) {
        int32_t sid[T];
        for (int t = 0; t < lens[b]; t++) {
            sid[t] = ids[t * B + b];
        }
        CHECK(encode(ctx, &e, sid, &lens[b], lens[b], 1, one) == 0);
        for (int k = 0; k < 32; k++) {
            worst = fmax(worst, fabs(one[k] - all[b * 32 + k]));
        }
    }
    CHECK_MSG(worst <= 2e-6, "padded batch vs sentences alone: %.3g", worst);
    /* a length outside [1, T] is refused */
    const int32_t bad[B] = {6, 0, 4};
    CHECK(encode(ctx, &e, ids, bad, T, B, all) < 0);
    CHECK_STR_CONTAINS(gr_last_error(), "sequence 1 has length 0");
    nlp_encoder_free(&e);
    gr_ctx_free(ctx);
}

static void check_causal_stack(void)
{
    struct gr_ctx *ctx = cpu_ctx();
    struct nlp_transformer_config tc = nlp_transformer_config_default(8);
    tc.heads = 2;
    tc.ffn = 16;
    for (int post = 0; post < 3; post++) {
        /* 2: pre-norm with the Conv. FastTrees gate (causal conv) */
        tc.post_norm = post == 1;
        tc.ft_gate = tc.ft_conv = post == 2;
        struct nlp_transformer t;
        char prefix[16];
        snprintf(prefix, sizeof prefix, "dec%d", post);
        CHECK(nlp_transformer_init(&t, ctx, prefix, &tc, gr_rng_make(4, 1)) ==
              0);
        enum { T = 5, B = 2, D = 8 };
        float x[T * B * D], x0[T * B * D], y0[T * B * D], y1[T * B * D];
        for (int i = 0; i < T * B * D; i++) {
            x0[i] = x[i] = sinf(0.7f * (float)i);
        }
        int leaks = 0, changed = 0;
        for (int tp = -1; tp < T; tp++) {
            gr_step_reset(ctx);
            if (tp >= 0) {
                for (int i = tp * B * D; i < (tp + 1) * B * D; i++) {
                    x[i] += 0.5f;
                }
            }
            struct gr_tensor *xt = gr_tensor_from_host(
                ctx, GR_F32, gr_shape3(T, B, D), x);
            struct gr_tensor *y = nlp_transformer_forward(
                ctx, &t, xt, NULL, 1, 0, gr_rng_make(1, 1));
            CHECK(y != NULL && gr_tensor_to_host(y, tp < 0 ? y0 : y1) == 0);
            if (tp >= 0) {
                for (int i = 0; i < T * B * D; i++) {
                    int pos = i / (B * D);
                    leaks += pos < tp && y1[i] != y0[i];
                    changed |= pos == tp && y1[i] != y0[i];
                }
                memcpy(x, x0, sizeof x); /* exactly the original again */
            }
        }
        CHECK_MSG(leaks == 0 && changed, "causal stack %d (pre, post, "
                  "conv-ftt): %d earlier outputs changed (changed at t: %d)",
                  post, leaks, changed);
        nlp_transformer_free(&t);
    }
    gr_ctx_free(ctx);
}

/* Does marker 1 occur more often than marker 2 in a sequence of 3 to 7
 * tokens (others 3..9)? Seeded data; 200 Adam steps of batch 32. */
static void check_learns(void)
{
    struct gr_ctx *ctx = cpu_ctx();
    struct nlp_encoder_config c;
    small_config(&c, "listops");
    c.vocab = 10;
    c.emsize = c.hidden = 32;
    c.heads = 4;
    c.ffn = 64;
    c.layers = 1;
    c.dropout_in = c.dropout_cell = c.dropout_attn = 0.0f;
    struct nlp_encoder e;
    CHECK(nlp_encoder_init(&e, ctx, &c, gr_rng_make(5, 0)) == 0);
    struct gr_linear_layer head;
    CHECK(gr_linear_init(&head, ctx, "head", 64, 2, 1, gr_rng_make(5, 1)) ==
          0);
    struct gr_optim *opt;
    struct gr_optim_config oc = gr_optim_config_default(GR_OPTIM_ADAM);
    oc.lr = 3e-3f;
    CHECK(gr_optim_new(&opt, ctx, "adam", &oc) == 0);
    enum { T = 7, B = 32 };
    uint64_t s = 12345;
    int32_t ids[T * B], lens[B], y[B];
    int correct = 0, seen = 0;
    for (int step = 0; step < 200; step++) {
        for (int b = 0; b < B; b++) {
            int n1 = 0, n2 = 0;
            lens[b] = 3 + (int)((s >> 33) % 5);
            for (int t = 0; t < T; t++) {
                s = s * 6364136223846793005ull + 1442695040888963407ull;
                int r = (int)((s >> 33) % 10);
                int tok = r < 3 ? 1 : (r < 6 ? 2 : 3 + (r % 7));
                if (t >= lens[b]) {
                    tok = 0;
                } else {
                    n1 += tok == 1;
                    n2 += tok == 2;
                }
                ids[t * B + b] = tok;
            }
            y[b] = n1 > n2 ? 1 : 0;
        }
        gr_step_reset(ctx);
        gr_zero_grad(ctx);
        struct gr_tensor *it = gr_tensor_from_host(ctx, GR_I32,
                                                   gr_shape2(T, B), ids);
        struct gr_tensor *yt = gr_tensor_from_host(ctx, GR_I32, gr_shape1(B),
                                                   y);
        struct nlp_encoder_batch bt = {it, lens, T, B, NULL};
        struct gr_tensor *logits = gr_linear_forward(
            ctx, &head,
            nlp_encoder_encode(&e, &bt, 1, gr_rng_make(9, (uint64_t)step)));
        struct gr_tensor *loss = gr_cross_entropy_smoothed(ctx, logits, yt,
                                                           -1, 0.1f);
        if (loss == NULL || gr_backward(ctx, loss) < 0) {
            CHECK_MSG(0, "step %d: %s", step, gr_ctx_error(ctx));
            break;
        }
        gr_optim_step(opt);
        if (step >= 150) {
            float lg[2 * B];
            gr_tensor_to_host(logits, lg);
            for (int b = 0; b < B; b++) {
                correct += (lg[2 * b + 1] > lg[2 * b]) == (y[b] == 1);
                seen++;
            }
        }
    }
    double acc = seen ? (double)correct / seen : 0.0;
    printf("majority-marker task: training accuracy over the last 50 steps "
           "%.3f\n", acc);
    CHECK_MSG(acc >= 0.9, "the transformer did not learn the majority "
              "marker: %.3f", acc);
    gr_optim_free(opt);
    nlp_encoder_free(&e);
    gr_ctx_free(ctx);
}

/* The FastTrees module (fasttrees.md §7) against a double computation of
 * its formula, and the ftt encoder: its gate parameters and padding
 * invariance. */
static void check_fasttrees_gate(void)
{
    struct gr_ctx *ctx = cpu_ctx();
    enum { R = 3, D = 5 };
    float x[R * D], w[3 * D * D], b[3 * D], got[R * D];
    uint64_t s = 99;
    for (int i = 0; i < 3 * D * D + 3 * D + R * D; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        float v = -1.0f + 2.0f * (float)(s >> 40) / (float)(1 << 24);
        if (i < 3 * D * D) {
            w[i] = v;
        } else if (i < 3 * D * D + 3 * D) {
            b[i - 3 * D * D] = v;
        } else {
            x[i - 3 * D * D - 3 * D] = v;
        }
    }
    gr_step_reset(ctx);
    struct gr_tensor *xt = gr_tensor_from_host(ctx, GR_F32, gr_shape2(R, D), x);
    struct gr_tensor *wt = gr_tensor_from_host(ctx, GR_F32,
                                               gr_shape2(3 * D, D), w);
    struct gr_tensor *bt = gr_tensor_from_host(ctx, GR_F32, gr_shape1(3 * D),
                                               b);
    struct gr_tensor *y = nlp_fasttrees_gate(ctx, xt, wt, bt);
    CHECK(y != NULL && gr_tensor_to_host(y, got) == 0);
    double worst = 0.0, spread = 0.0;
    for (int r = 0; r < R; r++) {
        double z[3][D], cum[2][D];
        for (int k = 0; k < 3; k++) {
            for (int o = 0; o < D; o++) {
                double acc = b[k * D + o];
                for (int i = 0; i < D; i++) {
                    acc += (double)w[(k * D + o) * D + i] * x[r * D + i];
                }
                z[k][o] = acc;
            }
        }
        for (int k = 0; k < 2; k++) {
            double m = -INFINITY, sum = 0.0, run = 0.0;
            for (int o = 0; o < D; o++) {
                m = fmax(m, z[k][o]);
            }
            for (int o = 0; o < D; o++) {
                sum += exp(z[k][o] - m);
            }
            for (int o = 0; o < D; o++) {
                run += exp(z[k][o] - m) / sum;
                cum[k][o] = run;
            }
        }
        for (int o = 0; o < D; o++) {
            double a = cum[0][o], bb = 1.0 - cum[1][o];
            double g = 1.0 / (1.0 + exp(-z[2][o])) * (a * bb) + (a - a * bb);
            double ref = g * x[r * D + o];
            spread = fmax(spread, fmin(g, 1.0 - g));
            worst = fmax(worst, fabs(got[r * D + o] - ref));
        }
    }
    CHECK_MSG(worst <= 1e-6, "FastTrees gate vs its formula: %.3g", worst);
    CHECK(spread > 0.05); /* the gate is not stuck at 0 or 1 */

    struct nlp_encoder_config c;
    CHECK(nlp_encoder_config_default(&c, "ftt", "listops") == 0);
    c.vocab = 12;
    c.pad_id = 0;
    c.emsize = c.hidden = 16;
    c.heads = 2;
    c.ffn = 16;
    struct nlp_encoder e;
    CHECK_MSG(nlp_encoder_init(&e, ctx, &c, gr_rng_make(3, 0)) == 0, "%s",
              gr_last_error());
    CHECK(gr_ctx_find(ctx, "enc.layers.1.ft.weight") != NULL &&
          gr_ctx_find(ctx, "enc.layers.0.ft.bias") != NULL);
    enum { T = 4, B = 2 };
    const int32_t ids[T * B] = {3, 4, 5, 6, 7, 8, 9, 9};
    const int32_t lens[B] = {4, 2};
    float all[B * 32], one[32];
    CHECK(encode(ctx, &e, ids, lens, T, B, all) == 0);
    const int32_t sid[2] = {4, 6};
    CHECK(encode(ctx, &e, sid, &lens[1], 2, 1, one) == 0);
    worst = 0.0;
    for (int k = 0; k < 32; k++) {
        worst = fmax(worst, fabs(one[k] - all[32 + k]));
    }
    CHECK_MSG(worst <= 2e-6, "ftt: padded batch vs alone %.3g", worst);
    nlp_encoder_free(&e);
    /* the Conv. FastTrees form: a width-3 convolution over positions with
     * same padding, the padded positions zeroed first */
    struct gr_ctx *ctx3 = cpu_ctx();
    CHECK(nlp_encoder_config_default(&c, "ftt-conv", "listops") == 0);
    c.vocab = 12;
    c.pad_id = 0;
    c.emsize = c.hidden = 16;
    c.heads = 2;
    c.ffn = 16;
    CHECK_MSG(nlp_encoder_init(&e, ctx3, &c, gr_rng_make(3, 0)) == 0, "%s",
              gr_last_error());
    struct gr_tensor *cw = gr_ctx_find(ctx3, "enc.layers.0.ft.conv.weight");
    CHECK(cw != NULL && cw->ndim == 3 && cw->shape[0] == 48 &&
          cw->shape[1] == 16 && cw->shape[2] == 3);
    CHECK(encode(ctx3, &e, ids, lens, T, B, all) == 0);
    CHECK(encode(ctx3, &e, sid, &lens[1], 2, 1, one) == 0);
    worst = 0.0;
    for (int k = 0; k < 32; k++) {
        worst = fmax(worst, fabs(one[k] - all[32 + k]));
    }
    CHECK_MSG(worst <= 2e-6, "ftt-conv: padded batch vs alone %.3g", worst);
    nlp_encoder_free(&e);
    gr_ctx_free(ctx3);
    gr_ctx_free(ctx);
}

/* The hybrid ON-LSTM + SAN encoder (hybrid_and_trees.md §4): shapes,
 * names, padding invariance, and the identity test: with the SAN layers'
 * output projections (attention out_proj and FFN linear2) zeroed, each
 * pre-norm SAN layer is the identity, so H = H_R + LN_final(H_R + P) (the
 * spec's H = 2·H_R, with grove's positions on the SAN input and its final
 * layer norm, hybrid_assumptions 2 and 4). */
static void check_hybrid(void)
{
    struct gr_ctx *ctx = cpu_ctx();
    struct nlp_encoder_config c;
    CHECK(nlp_encoder_config_default(&c, "hybrid", "logic") == 0);
    CHECK(c.layers == 1 && c.hidden == 256 && c.chunk == 8);
    c.vocab = 12;
    c.pad_id = 0;
    c.emsize = 8;
    c.hidden = 16;
    c.chunk = 4;
    c.heads = 2;
    c.ffn = 16;
    c.layers = 2;
    struct nlp_encoder e;
    CHECK_MSG(nlp_encoder_init(&e, ctx, &c, gr_rng_make(6, 0)) == 0, "%s",
              gr_last_error());
    const char *names[] = {"enc.emb.weight", "enc.rnn.0.ih.0.weight",
                           "enc.rnn.1.hh.weight",
                           "enc.san.layers.1.self_attn.in_proj_weight",
                           "enc.san.norm.weight", "enc.pool.queries"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        CHECK_MSG(gr_ctx_find(ctx, names[i]) != NULL, "hybrid: no %s",
                  names[i]);
    }
    CHECK(nlp_encoder_out_dim(&e) == 32);
    enum { T = 5, B = 2, D = 16 };
    const int32_t ids[T * B] = {3, 4, 5, 6, 7, 8, 9, 10, 11, 2};
    const int32_t lens[B] = {5, 3};
    float all[B * 32], one[32];
    CHECK(encode(ctx, &e, ids, lens, T, B, all) == 0);
    const int32_t sid[3] = {4, 6, 8};
    CHECK(encode(ctx, &e, sid, &lens[1], 3, 1, one) == 0);
    double worst = 0.0;
    for (int k = 0; k < 32; k++) {
        worst = fmax(worst, fabs(one[k] - all[32 + k]));
    }
    CHECK_MSG(worst <= 2e-6, "hybrid: padded batch vs alone %.3g", worst);
    /* the identity test */
    const char *zero[] = {"self_attn.out_proj.weight", "self_attn.out_proj.bias",
                          "linear2.weight", "linear2.bias"};
    for (int l = 0; l < 2; l++) {
        for (int k = 0; k < 4; k++) {
            char nm[128];
            snprintf(nm, sizeof nm, "enc.san.layers.%d.%s", l, zero[k]);
            struct gr_tensor *p = gr_ctx_find(ctx, nm);
            CHECK_MSG(p != NULL && gr_tensor_fill(p, 0.0f) == 0, "%s", nm);
        }
    }
    gr_step_reset(ctx);
    struct gr_tensor *it = gr_tensor_from_host(ctx, GR_I32, gr_shape2(T, B),
                                               ids);
    struct nlp_encoder_batch bt = {it, lens, T, B, NULL};
    struct gr_tensor *hr = NULL;
    struct gr_tensor *h = nlp_hybrid_states(&e, &bt, 0, gr_rng_make(1, 1),
                                            &hr);
    CHECK(h != NULL && hr != NULL && h->ndim == 3 && h->shape[0] == T &&
          h->shape[1] == B && h->shape[2] == D && hr->shape[2] == D);
    struct gr_tensor *want = gr_add(
        ctx, hr,
        gr_layer_norm(ctx,
                      gr_add(ctx, hr, gr_positions_sinusoidal(ctx, T, D, 0)),
                      gr_ctx_find(ctx, "enc.san.norm.weight"),
                      gr_ctx_find(ctx, "enc.san.norm.bias"), 1e-5f));
    float hv[T * B * D], wv[T * B * D], rv[T * B * D];
    CHECK(want != NULL && gr_tensor_to_host(h, hv) == 0 &&
          gr_tensor_to_host(want, wv) == 0 && gr_tensor_to_host(hr, rv) == 0);
    worst = 0.0;
    double mag = 0.0;
    for (int i = 0; i < T * B * D; i++) {
        worst = fmax(worst, fabs(hv[i] - wv[i]));
        mag = fmax(mag, fabs(rv[i]));
    }
    CHECK_MSG(worst <= 1e-6 && mag > 1e-3, "hybrid identity: H differs from "
              "H_R + LN(H_R + P) by %.3g (max |H_R| %.3g)", worst, mag);
    /* not a hybrid encoder: refused */
    struct nlp_encoder_config tcfg;
    small_config(&tcfg, NULL);
    struct nlp_encoder te;
    struct gr_ctx *ctx2 = cpu_ctx();
    CHECK(nlp_encoder_init(&te, ctx2, &tcfg, gr_rng_make(1, 0)) == 0);
    CHECK(nlp_hybrid_states(&te, &bt, 0, gr_rng_make(1, 1), NULL) == NULL);
    CHECK_STR_CONTAINS(gr_last_error(), "not hybrid");
    nlp_encoder_free(&te);
    gr_ctx_free(ctx2);
    nlp_encoder_free(&e);
    gr_ctx_free(ctx);
}

/* The encoder-order variant SAN -> ON-LSTM (row "hybrid-san",
 * hybrid_assumptions 6): names, the ON-LSTM reading the SAN width,
 * padding invariance, and the order: with the SAN's output projections
 * zeroed the SAN is LN_final(E[ids] + P), so H - H_R must equal it (the
 * SAN reads the embeddings, not the ON-LSTM output) and H_R must differ
 * from the plain hybrid's; --emsize != --nhid refused. */
static void check_hybrid_san(void)
{
    struct gr_ctx *ctx = cpu_ctx();
    struct nlp_encoder_config c;
    CHECK(nlp_encoder_config_default(&c, "hybrid-san", "logic") == 0);
    c.vocab = 12;
    c.pad_id = 0;
    c.emsize = c.hidden = 16;
    c.chunk = 4;
    c.heads = 2;
    c.ffn = 16;
    c.layers = 2;
    struct nlp_encoder e;
    CHECK_MSG(nlp_encoder_init(&e, ctx, &c, gr_rng_make(6, 0)) == 0, "%s",
              gr_last_error());
    struct gr_tensor *w0 = gr_ctx_find(ctx, "enc.rnn.0.ih.0.weight");
    CHECK(w0 != NULL && gr_ctx_find(ctx, "enc.san.norm.weight") != NULL);
    enum { T = 5, B = 2, D = 16 };
    const int32_t ids[T * B] = {3, 4, 5, 6, 7, 8, 9, 10, 11, 2};
    const int32_t lens[B] = {5, 3};
    float all[B * 32], one[32];
    CHECK(encode(ctx, &e, ids, lens, T, B, all) == 0);
    const int32_t sid[3] = {4, 6, 8};
    CHECK(encode(ctx, &e, sid, &lens[1], 3, 1, one) == 0);
    double worst = 0.0;
    for (int k = 0; k < 32; k++) {
        worst = fmax(worst, fabs(one[k] - all[32 + k]));
    }
    CHECK_MSG(worst <= 2e-6, "hybrid-san: padded batch vs alone %.3g", worst);
    const char *zero[] = {"self_attn.out_proj.weight", "self_attn.out_proj.bias",
                          "linear2.weight", "linear2.bias"};
    for (int l = 0; l < 2; l++) {
        for (int k = 0; k < 4; k++) {
            char nm[128];
            snprintf(nm, sizeof nm, "enc.san.layers.%d.%s", l, zero[k]);
            struct gr_tensor *p = gr_ctx_find(ctx, nm);
            CHECK_MSG(p != NULL && gr_tensor_fill(p, 0.0f) == 0, "%s", nm);
        }
    }
    gr_step_reset(ctx);
    struct gr_tensor *it = gr_tensor_from_host(ctx, GR_I32, gr_shape2(T, B),
                                               ids);
    struct nlp_encoder_batch bt = {it, lens, T, B, NULL};
    struct gr_tensor *hr = NULL;
    struct gr_tensor *h = nlp_hybrid_states(&e, &bt, 0, gr_rng_make(1, 1),
                                            &hr);
    CHECK(h != NULL && hr != NULL && h->shape[2] == D);
    struct gr_tensor *hs = gr_layer_norm(
        ctx,
        gr_add(ctx, gr_embedding(ctx, gr_ctx_find(ctx, "enc.emb.weight"), it),
               gr_positions_sinusoidal(ctx, T, D, 0)),
        gr_ctx_find(ctx, "enc.san.norm.weight"),
        gr_ctx_find(ctx, "enc.san.norm.bias"), 1e-5f);
    float hv[T * B * D], sv[T * B * D], rv[T * B * D];
    CHECK(hs != NULL && gr_tensor_to_host(h, hv) == 0 &&
          gr_tensor_to_host(hs, sv) == 0 && gr_tensor_to_host(hr, rv) == 0);
    worst = 0.0;
    double mag = 0.0;
    for (int i = 0; i < T * B * D; i++) {
        worst = fmax(worst, fabs(hv[i] - rv[i] - sv[i]));
        mag = fmax(mag, fabs(rv[i]));
    }
    CHECK_MSG(worst <= 1e-5 && mag > 1e-3, "hybrid-san: H - H_R differs "
              "from LN(E[ids] + P) by %.3g (max |H_R| %.3g)", worst, mag);
    nlp_encoder_free(&e);
    gr_ctx_free(ctx);
    /* the SAN reads the embeddings: widths must agree */
    struct gr_ctx *ctx2 = cpu_ctx();
    c.emsize = 8;
    CHECK(nlp_encoder_init(&e, ctx2, &c, gr_rng_make(6, 0)) < 0);
    CHECK_STR_CONTAINS(gr_last_error(), "--emsize 8 must equal --nhid 16");
    nlp_encoder_free(&e);
    gr_ctx_free(ctx2);
}

/* ---- PyTorch fixture (tests/fixtures/nlp/make_transformer_fixture.py) ---- */

#define FX_MAX 256

struct fx {
    int n;
    char name[FX_MAX][96];
    int64_t numel[FX_MAX];
    double *data[FX_MAX];
};

static int fx_load(struct fx *f, const char *path)
{
    memset(f, 0, sizeof *f);
    FILE *fp = fopen(path, "r");
    if (fp == NULL) {
        return -1;
    }
    char line[128];
    if (fgets(line, sizeof line, fp) == NULL ||
        strcmp(line, "grove-fixture 1\n") != 0) {
        fclose(fp);
        return -1;
    }
    while (f->n < FX_MAX) {
        int k = f->n, nd = 0;
        if (fscanf(fp, "%95s %d", f->name[k], &nd) != 2 || nd < 0 || nd > 4) {
            break;
        }
        f->numel[k] = 1;
        for (int d = 0; d < nd; d++) {
            long long v = 0;
            if (fscanf(fp, "%lld", &v) != 1) {
                fclose(fp);
                return -1;
            }
            f->numel[k] *= v;
        }
        f->data[k] = malloc((size_t)f->numel[k] * sizeof(double));
        for (int64_t i = 0; i < f->numel[k]; i++) {
            if (fscanf(fp, "%lf", &f->data[k][i]) != 1) {
                fclose(fp);
                return -1;
            }
        }
        f->n++;
    }
    fclose(fp);
    return 0;
}

static const double *fx_get(const struct fx *f, const char *name,
                            int64_t *numel)
{
    for (int i = 0; i < f->n; i++) {
        if (strcmp(f->name[i], name) == 0) {
            *numel = f->numel[i];
            return f->data[i];
        }
    }
    return NULL;
}

/* |got - ref| <= 1e-5 |ref| + 1e-6 max|ref| for every element; a copy
 * scaled by 1.0001 must fail. */
static void fx_compare(const char *what, const struct gr_tensor *t,
                       const struct fx *f, const char *name)
{
    int64_t n = 0;
    const double *ref = fx_get(f, name, &n);
    if (ref == NULL || t == NULL || t->numel != n) {
        CHECK_MSG(0, "fixture: %s (%s) missing or of the wrong size", what,
                  name);
        return;
    }
    float *got = malloc((size_t)n * sizeof *got);
    gr_tensor_to_host(t, got);
    double m = 0.0, worst = 0.0;
    int bad_scaled = 0;
    for (int64_t i = 0; i < n; i++) {
        m = fmax(m, fabs(ref[i]));
    }
    for (int64_t i = 0; i < n; i++) {
        double lim = 1e-5 * fabs(ref[i]) + 1e-6 * m;
        worst = fmax(worst, fabs(got[i] - ref[i]) / lim);
        bad_scaled |= fabs(got[i] * 1.0001 - ref[i]) > lim;
    }
    CHECK_MSG(worst <= 1.0, "%s differs from PyTorch: worst %.3g x the "
              "tolerance", what, worst);
    CHECK_MSG(bad_scaled, "%s: a 0.01%% error passes", what);
    free(got);
}

static void check_fixture(const char *dir)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/transformer_encoder.txt", dir);
    struct fx f;
    if (fx_load(&f, path) < 0) {
        CHECK_MSG(0, "cannot read %s", path);
        return;
    }
    enum { T = 5, B = 3, D = 8 };
    int64_t n = 0;
    const double *xd = fx_get(&f, "x", &n), *rd = fx_get(&f, "R", &n);
    const double *ld = fx_get(&f, "lengths", &n);
    float x[T * B * D], r[T * B * D];
    for (int i = 0; i < T * B * D; i++) {
        x[i] = (float)xd[i];
        r[i] = (float)rd[i];
    }
    const int32_t lens[B] = {(int32_t)ld[0], (int32_t)ld[1], (int32_t)ld[2]};
    for (int post = 0; post < 2; post++) {
        const char *tag = post ? "post" : "pre";
        struct gr_ctx *ctx = cpu_ctx();
        struct nlp_transformer_config tc = nlp_transformer_config_default(D);
        tc.heads = 2;
        tc.ffn = 12;
        tc.post_norm = post;
        struct nlp_transformer t;
        CHECK(nlp_transformer_init(&t, ctx, tag, &tc, gr_rng_make(1, 1)) ==
              0);
        int set = 0;
        for (int i = 0; i < gr_ctx_n_named(ctx); i++) {
            struct gr_tensor *p = gr_ctx_named(ctx, i);
            const double *v = fx_get(&f, p->name, &n);
            CHECK_MSG(v != NULL && n == p->numel, "fixture lacks %s",
                      p->name);
            if (v == NULL || n != p->numel) {
                continue;
            }
            float *h = malloc((size_t)n * sizeof *h);
            for (int64_t e = 0; e < n; e++) {
                h[e] = (float)v[e];
            }
            gr_tensor_set_host(p, h);
            free(h);
            set++;
        }
        CHECK_MSG(set == (post ? 24 : 26), "%s: %d parameters", tag, set);
        gr_step_reset(ctx);
        gr_zero_grad(ctx);
        struct gr_tensor *xt = gr_tensor_from_host(ctx, GR_F32,
                                                   gr_shape3(T, B, D), x);
        struct gr_tensor *kl = gr_tensor_from_host(ctx, GR_I32, gr_shape1(B),
                                                   lens);
        gr_tensor_set_requires_grad(xt, 1);
        struct gr_tensor *y = nlp_transformer_forward(ctx, &t, xt, kl, 0, 0,
                                                      gr_rng_make(1, 1));
        struct gr_tensor *seed = gr_tensor_from_host(ctx, GR_F32,
                                                     gr_shape3(T, B, D), r);
        CHECK_MSG(y != NULL && gr_backward_with(ctx, y, seed) == 0,
                  "%s: %s", tag, gr_ctx_error(ctx));
        char name[160], what[200];
        snprintf(name, sizeof name, "%s.y", tag);
        fx_compare(name, y, &f, name);
        snprintf(name, sizeof name, "%s.g.x", tag);
        fx_compare(name, xt->grad, &f, name);
        for (int i = 0; i < gr_ctx_n_named(ctx); i++) {
            struct gr_tensor *p = gr_ctx_named(ctx, i);
            if (p->kind != GR_KIND_PARAM) {
                continue;
            }
            snprintf(name, sizeof name, "%s.g.%s", tag,
                     p->name + strlen(tag) + 1);
            snprintf(what, sizeof what, "gradient %s", name);
            fx_compare(what, p->grad, &f, name);
        }
        nlp_transformer_free(&t);
        gr_ctx_free(ctx);
    }
    for (int i = 0; i < f.n; i++) {
        free(f.data[i]);
    }
    printf("two nn.TransformerEncoderLayer layers (pre-norm with the final "
           "norm, post-norm) with key padding against float64 PyTorch\n");
}

/* Loads the parameters of ctx under `tag` from the fixture; the count. */
static int fx_set_params(struct gr_ctx *ctx, const struct fx *f)
{
    int set = 0;
    int64_t n = 0;
    for (int i = 0; i < gr_ctx_n_named(ctx); i++) {
        struct gr_tensor *p = gr_ctx_named(ctx, i);
        const double *v = fx_get(f, p->name, &n);
        CHECK_MSG(v != NULL && n == p->numel, "fixture lacks %s", p->name);
        if (v == NULL || n != p->numel) {
            continue;
        }
        float *h = malloc((size_t)n * sizeof *h);
        for (int64_t e = 0; e < n; e++) {
            h[e] = (float)v[e];
        }
        gr_tensor_set_host(p, h);
        free(h);
        set++;
    }
    return set;
}

static void check_decoder_fixture(const char *dir)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/transformer_decoder.txt", dir);
    struct fx f;
    if (fx_load(&f, path) < 0) {
        CHECK_MSG(0, "cannot read %s", path);
        return;
    }
    enum { TY = 4, TX = 5, B = 3, D = 8 };
    int64_t n = 0;
    const double *yd = fx_get(&f, "y", &n), *md = fx_get(&f, "memory", &n);
    const double *rd = fx_get(&f, "R", &n), *ld = fx_get(&f, "lengths", &n);
    float y[TY * B * D], m[TX * B * D], r[TY * B * D];
    for (int i = 0; i < TY * B * D; i++) {
        y[i] = (float)yd[i];
        r[i] = (float)rd[i];
    }
    for (int i = 0; i < TX * B * D; i++) {
        m[i] = (float)md[i];
    }
    const int32_t lens[B] = {(int32_t)ld[0], (int32_t)ld[1], (int32_t)ld[2]};
    for (int post = 0; post < 2; post++) {
        const char *tag = post ? "post" : "pre";
        struct gr_ctx *ctx = cpu_ctx();
        struct nlp_transformer_config tc = nlp_transformer_config_default(D);
        tc.heads = 2;
        tc.ffn = 12;
        tc.post_norm = post;
        tc.decoder = 1;
        struct nlp_transformer t;
        CHECK(nlp_transformer_init(&t, ctx, tag, &tc, gr_rng_make(1, 1)) ==
              0);
        int set = fx_set_params(ctx, &f);
        CHECK_MSG(set == (post ? 36 : 38), "decoder %s: %d parameters", tag,
                  set);
        gr_step_reset(ctx);
        gr_zero_grad(ctx);
        struct gr_tensor *yt = gr_tensor_from_host(ctx, GR_F32,
                                                   gr_shape3(TY, B, D), y);
        struct gr_tensor *mt = gr_tensor_from_host(ctx, GR_F32,
                                                   gr_shape3(TX, B, D), m);
        struct gr_tensor *kl = gr_tensor_from_host(ctx, GR_I32, gr_shape1(B),
                                                   lens);
        gr_tensor_set_requires_grad(yt, 1);
        gr_tensor_set_requires_grad(mt, 1);
        struct gr_tensor *o = nlp_transformer_decode(ctx, &t, yt, mt, kl, 0,
                                                     gr_rng_make(1, 1));
        struct gr_tensor *seed = gr_tensor_from_host(ctx, GR_F32,
                                                     gr_shape3(TY, B, D), r);
        CHECK_MSG(o != NULL && gr_backward_with(ctx, o, seed) == 0,
                  "decoder %s: %s", tag, gr_ctx_error(ctx));
        char name[160], what[200];
        snprintf(name, sizeof name, "%s.out", tag);
        fx_compare(name, o, &f, name);
        snprintf(name, sizeof name, "%s.g.y", tag);
        fx_compare(name, yt->grad, &f, name);
        snprintf(name, sizeof name, "%s.g.memory", tag);
        fx_compare(name, mt->grad, &f, name);
        for (int i = 0; i < gr_ctx_n_named(ctx); i++) {
            struct gr_tensor *p = gr_ctx_named(ctx, i);
            if (p->kind != GR_KIND_PARAM) {
                continue;
            }
            snprintf(name, sizeof name, "%s.g.%s", tag,
                     p->name + strlen(tag) + 1);
            snprintf(what, sizeof what, "decoder gradient %s", name);
            fx_compare(what, p->grad, &f, name);
        }
        /* the encoder entry point refuses a decoder stack */
        CHECK(nlp_transformer_forward(ctx, &t, yt, NULL, 0, 0,
                                      gr_rng_make(1, 1)) == NULL);
        nlp_transformer_free(&t);
        gr_ctx_free(ctx);
    }
    for (int i = 0; i < f.n; i++) {
        free(f.data[i]);
    }
    printf("two nn.TransformerDecoderLayer layers (causal targets, memory "
           "key padding; pre- and post-norm) against float64 PyTorch\n");
}

int main(int argc, char **argv)
{
    if (argc > 1) {
        check_fixture(argv[1]);
        check_decoder_fixture(argv[1]);
    }
    check_names_and_config();
    check_padding_invariance();
    check_causal_stack();
    check_fasttrees_gate();
    check_hybrid();
    check_hybrid_san();
    check_learns();
    return test_report("nlp_transformer");
}
