/* StructFormer as a sentence encoder of the classifier harness (row
 * "structformer" of nlp/models/encoder.h, nlp/models/sf_encoder.c):
 * parameter names (no MLM output bias), config text round trip, refused
 * sizes; the per-sentence calibration of nlp/models/structformer.h (a
 * sentence parsed in a padded batch equals the sentence alone, where the
 * reference's batch-wide calibration does not; its gradient against
 * central differences); padding invariance of the pooled vector and of
 * the distances the encoder keeps for classify trees (and their trees,
 * nlp_parse_gaps); a batch
 * whose parent distribution is too large refused with a message; and a
 * seeded task it must learn in seconds (which of two marker tokens occurs
 * more often). */
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
#include "nlp/models/structformer.h"
#include "nlp/tasks/parse.h"
#include "tests/test.h"

static struct gr_ctx *cpu_ctx(void)
{
    struct gr_ctx_config cfg = gr_ctx_config_default();
    cfg.device = GR_DEVICE_CPU;
    cfg.step_chunk_bytes = 1 << 22;
    struct gr_ctx *ctx = NULL;
    if (gr_ctx_new(&ctx, &cfg) < 0) {
        fprintf(stderr, "context: %s\n", gr_last_error());
        return NULL;
    }
    return ctx;
}

static void small_config(struct nlp_encoder_config *c, const char *task)
{
    CHECK(nlp_encoder_config_default(c, "structformer", task) == 0);
    c->vocab = 12;
    c->pad_id = 0;
    c->emsize = c->hidden = 16;
    c->heads = 4;
    c->ffn = 24;
    c->layers = 2;
}

static void check_names_and_config(void)
{
    struct gr_ctx *ctx = cpu_ctx();
    struct nlp_encoder_config c, back;
    small_config(&c, "logic");
    struct nlp_encoder e;
    CHECK_MSG(nlp_encoder_init(&e, ctx, &c, gr_rng_make(1, 0)) == 0,
              "init: %s", gr_last_error());
    const char *names[] = {"enc.emb.weight", "enc.pos_emb.weight",
                           "enc.pool.queries",
                           "enc.parser.layers.2.weight",
                           "enc.parser.distance.conv.weight",
                           "enc.parser.height.out.bias", "enc.rel_weight",
                           "enc.layers.1.self_attn.in_proj_weight",
                           "enc.layers.0.linear2.bias",
                           "enc.layers.1.norm2.weight", "enc.norm.bias"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        CHECK_MSG(gr_ctx_find(ctx, names[i]) != NULL, "no parameter %s",
                  names[i]);
    }
    CHECK_MSG(gr_ctx_find(ctx, "enc.output_bias") == NULL,
              "the classifier's StructFormer has no MLM output bias");
    CHECK(nlp_encoder_out_dim(&e) == 32);
    char text[2048];
    int len = 0;
    CHECK(nlp_encoder_config_format(&c, text, sizeof text, &len) == 0);
    CHECK(nlp_encoder_config_parse(text, "test", &back) == 0);
    CHECK(strcmp(back.model, "structformer") == 0 && back.layers == 2 &&
          back.heads == 4 && back.ffn == 24 && back.emsize == 16 &&
          back.hidden == 16 &&
          fabsf(back.dropout_attn - c.dropout_attn) < 1e-7f);
    nlp_encoder_free(&e);
    /* bad sizes, refused by the config check (before a run folder) */
    small_config(&c, NULL);
    c.heads = 5;
    CHECK(nlp_encoder_config_check(&c) < 0);
    CHECK_STR_CONTAINS(gr_last_error(),
                       "structformer: --nhid 16 is not a multiple of "
                       "--heads 5");
    small_config(&c, NULL);
    c.emsize = 12;
    CHECK(nlp_encoder_init(&e, ctx, &c, gr_rng_make(1, 0)) < 0);
    CHECK_STR_CONTAINS(gr_last_error(), "--emsize 12 must equal --nhid 16");
    gr_ctx_free(ctx);
}

enum { T = 6, B = 3, D = 8 };
static const int32_t LENS[B] = {6, 4, 3};

static int32_t token(int t, int b)
{
    return 1 + (t * 5 + b * 3) % 11;
}

static struct nlp_structformer_config model_config(int per_sentence)
{
    struct nlp_structformer_config c = nlp_structformer_config_default(12);
    c.d = D;
    c.layers = 1;
    c.heads = 2;
    c.ffn = 16;
    c.parser_layers = 2;
    c.conv = 3;
    c.pos_emb = 0;
    c.sentence_calibration = per_sentence;
    c.encoder_only = 1;
    return c;
}

/* The parser's distances [B, T] and parents [B, T, T] of sentences sel
 * (-1: the padded batch of all three), on the host. */
static int parse(struct gr_ctx *ctx, const struct nlp_structformer *m,
                 int sel, float *dist, float *par)
{
    gr_step_reset(ctx);
    int nb = sel < 0 ? B : 1, nt = sel < 0 ? T : LENS[sel];
    int32_t ids[T * B], lens[B];
    for (int t = 0; t < nt; t++) {
        for (int b = 0; b < nb; b++) {
            ids[t * nb + b] = token(t, sel < 0 ? b : sel);
        }
    }
    for (int b = 0; b < nb; b++) {
        lens[b] = LENS[sel < 0 ? b : sel];
    }
    struct gr_tensor *it = gr_tensor_from_host(ctx, GR_I32,
                                               gr_shape2(nt, nb), ids);
    struct nlp_structformer_out o;
    if (nlp_structformer_parse(ctx, m, it, lens, &o) < 0 ||
        gr_tensor_to_host(o.distance, dist) < 0 ||
        gr_tensor_to_host(o.head, par) < 0) {
        fprintf(stderr, "parse: %s\n", gr_last_error());
        return -1;
    }
    return 0;
}

/* The largest difference between each sentence parsed alone and its rows
 * in the padded batch (real gaps of δ; Par over real tokens). */
static double batch_vs_alone(struct gr_ctx *ctx,
                             const struct nlp_structformer *m)
{
    float dist[B * T], par[B * T * T], d1[T], p1[T * T];
    if (parse(ctx, m, -1, dist, par) < 0) {
        return INFINITY;
    }
    double worst = 0.0;
    for (int b = 0; b < B; b++) {
        int n = LENS[b];
        if (parse(ctx, m, b, d1, p1) < 0) {
            return INFINITY;
        }
        for (int i = 0; i + 1 < n; i++) {
            worst = fmax(worst, fabs(d1[i] - dist[b * T + i]));
        }
        for (int i = 0; i < n; i++) {
            for (int k = 0; k < n; k++) {
                worst = fmax(worst, fabs(p1[i * n + k] -
                                         par[(b * T + i) * T + k]));
            }
        }
    }
    return worst;
}

static void check_sentence_calibration(void)
{
    struct gr_ctx *ctx = cpu_ctx();
    double diff[2];
    for (int per = 0; per < 2; per++) {
        struct nlp_structformer_config c = model_config(per);
        struct nlp_structformer m;
        char prefix[8];
        snprintf(prefix, sizeof prefix, "sf%d", per);
        CHECK(nlp_structformer_init(&m, ctx, prefix, &c,
                                    gr_rng_make(21, 4)) == 0);
        diff[per] = batch_vs_alone(ctx, &m);
        nlp_structformer_free(&m);
    }
    printf("parse of a padded batch vs each sentence alone: %.3g with the "
           "batch-wide calibration, %.3g per sentence\n", diff[0], diff[1]);
    CHECK_MSG(diff[1] <= 1e-5, "per-sentence calibration: a sentence's "
              "parse depends on its batch (%.3g)", diff[1]);
    /* the reference's calibration does depend on it: the comparison can
     * see a batch-wide shift */
    CHECK_MSG(diff[0] > 1e-3, "batch-wide calibration: no difference "
              "(%.3g); the test would not see one", diff[0]);
    gr_ctx_free(ctx);
}

/* Σ w·δ over the real gaps of the padded batch, and its gradient with
 * respect to the distance and height output biases against central
 * differences (through μ per sentence: the height bias moves μ, the
 * distance bias moves δ and μ together). */
static double gap_loss(struct gr_ctx *ctx, const struct nlp_structformer *m,
                       int backward)
{
    gr_step_reset(ctx);
    gr_zero_grad(ctx);
    int32_t ids[T * B];
    float w[B * T];
    for (int t = 0; t < T; t++) {
        for (int b = 0; b < B; b++) {
            ids[t * B + b] = token(t, b);
            w[b * T + t] = t + 1 < LENS[b] ? sinf(1.3f * (float)(b * T + t))
                                            : 0.0f;
        }
    }
    struct gr_tensor *it = gr_tensor_from_host(ctx, GR_I32, gr_shape2(T, B),
                                               ids);
    struct nlp_structformer_out o;
    if (nlp_structformer_parse(ctx, m, it, LENS, &o) < 0) {
        return NAN;
    }
    struct gr_tensor *wt = gr_tensor_from_host(ctx, GR_F32, gr_shape2(B, T),
                                               w);
    struct gr_tensor *loss = gr_sum(ctx, gr_mul(ctx, o.distance, wt));
    if (loss == NULL || (backward && gr_backward(ctx, loss) < 0)) {
        return NAN;
    }
    return (double)gr_tensor_item(loss);
}

static void check_calibration_gradient(void)
{
    struct gr_ctx *ctx = cpu_ctx();
    struct nlp_structformer_config c = model_config(1);
    struct nlp_structformer m;
    CHECK(nlp_structformer_init(&m, ctx, "sf", &c, gr_rng_make(21, 4)) == 0);
    struct gr_tensor *ps[2] = {m.hout_b, m.dout_b};
    const char *pn[2] = {"height bias", "distance bias"};
    for (int k = 0; k < 2; k++) {
        CHECK(!isnan(gap_loss(ctx, &m, 1)));
        float g = 0.0f, v0 = 0.0f;
        gr_tensor_to_host(ps[k]->grad, &g);
        gr_tensor_to_host(ps[k], &v0);
        const float h = 1e-2f;
        float v = v0 + h;
        gr_tensor_set_host(ps[k], &v);
        double lp = gap_loss(ctx, &m, 0);
        v = v0 - h;
        gr_tensor_set_host(ps[k], &v);
        double lm = gap_loss(ctx, &m, 0);
        gr_tensor_set_host(ps[k], &v0);
        double fd = (lp - lm) / (2.0 * h);
        printf("d loss / d %s: %.6f analytic, %.6f central difference\n",
               pn[k], (double)g, fd);
        CHECK_MSG(fabs(fd - g) <= 1e-2 * fmax(1.0, fabs(fd)),
                  "%s: analytic %g vs central difference %g", pn[k],
                  (double)g, fd);
        /* δ itself does not read η: the height bias reaches the loss only
         * through some sentence's μ > 0 */
        CHECK_MSG(k != 0 || fabs(g) > 1e-3, "no sentence has a positive "
                  "margin: the check does not reach μ (%g)", (double)g);
    }
    nlp_structformer_free(&m);
    gr_ctx_free(ctx);
}

/* Encodes ids [T, B] (eval mode) into out [B, out_dim]. */
static int encode(struct gr_ctx *ctx, struct nlp_encoder *e,
                  const int32_t *ids, const int32_t *lens, int nt, int nb,
                  float *out)
{
    gr_step_reset(ctx);
    struct gr_tensor *it = gr_tensor_from_host(ctx, GR_I32,
                                               gr_shape2(nt, nb), ids);
    struct nlp_encoder_batch b = {it, lens, nt, nb, NULL};
    struct gr_tensor *u = nlp_encoder_encode(e, &b, 0, gr_rng_make(3, 3));
    if (u == NULL || gr_tensor_to_host(u, out) < 0) {
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
    int32_t ids[T * B];
    for (int t = 0; t < T; t++) {
        for (int b = 0; b < B; b++) {
            /* the pads are garbage ids, not pad_id */
            ids[t * B + b] = token(t, b);
        }
    }
    float all[B * 32], one[32];
    const float *dp = NULL;
    int32_t dT = 0, dB = 0;
    /* no evaluation encode yet: no distances */
    CHECK(nlp_sf_encoder_distances(&e, &dp, &dT, &dB) < 0);
    CHECK(encode(ctx, &e, ids, LENS, T, B, all) == 0);
    /* the batch's δ [B, T] (classify trees reads them): kept on the host */
    float dall[B * T];
    CHECK(nlp_sf_encoder_distances(&e, &dp, &dT, &dB) == 0);
    CHECK(dT == T && dB == B);
    if (dT == T && dB == B) {
        memcpy(dall, dp, sizeof dall);
    }
    double worst = 0.0, mag = 0.0, dworst = 0.0;
    int trees_differ = 0, bad_ends = 0;
    for (int b = 0; b < B; b++) {
        int32_t sid[T];
        for (int t = 0; t < LENS[b]; t++) {
            sid[t] = ids[t * B + b];
        }
        CHECK(encode(ctx, &e, sid, &LENS[b], LENS[b], 1, one) == 0);
        for (int k = 0; k < 32; k++) {
            worst = fmax(worst, fabs(one[k] - all[b * 32 + k]));
            mag = fmax(mag, fabs(one[k]));
        }
        /* its δ alone: the batch row's on the real gaps (the calibration
         * is per sentence), +1e9 after the last token; the same tree */
        CHECK(nlp_sf_encoder_distances(&e, &dp, &dT, &dB) == 0 &&
              dT == LENS[b] && dB == 1);
        for (int i = 0; i + 1 < LENS[b]; i++) {
            dworst = fmax(dworst, fabs(dp[i] - dall[b * T + i]));
            bad_ends += !isfinite(dp[i]) || fabs(dp[i]) > 1e6;
        }
        bad_ends += dp[LENS[b] - 1] < 1e8f;
        struct nlp_span ta[T], tb[T];
        int32_t na = nlp_parse_gaps(dp, LENS[b], ta);
        int32_t nb = nlp_parse_gaps(dall + b * T, LENS[b], tb);
        trees_differ += na != LENS[b] - 1 || nb != na ||
                        memcmp(ta, tb, (size_t)na * sizeof *ta) != 0;
    }
    CHECK_MSG(worst <= 1e-5 * fmax(1.0, mag) && mag > 1e-3,
              "padded batch vs sentences alone: %.3g (magnitude %.3g)",
              worst, mag);
    CHECK_MSG(dworst <= 1e-5 && bad_ends == 0 && trees_differ == 0,
              "δ in the batch vs alone: %.3g, %d bad values, %d trees "
              "differ", dworst, bad_ends, trees_differ);
    /* a batch whose parent distribution is too large: refused, named */
    enum { LONG = 700 };
    int32_t *lid = malloc(LONG * sizeof *lid);
    int32_t llen = LONG;
    for (int t = 0; t < LONG && lid; t++) {
        lid[t] = 1 + t % 11;
    }
    CHECK(lid && encode(ctx, &e, lid, &llen, LONG, 1, one) < 0);
    CHECK_STR_CONTAINS(gr_last_error(),
                       "structformer: a batch of 1 sequences of 700 tokens");
    free(lid);
    nlp_encoder_free(&e);
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
    enum { TT = 7, BB = 32 };
    uint64_t s = 12345;
    int32_t ids[TT * BB], lens[BB], y[BB];
    int correct = 0, seen = 0;
    for (int step = 0; step < 200; step++) {
        for (int b = 0; b < BB; b++) {
            int n1 = 0, n2 = 0;
            lens[b] = 3 + (int)((s >> 33) % 5);
            for (int t = 0; t < TT; t++) {
                s = s * 6364136223846793005ull + 1442695040888963407ull;
                int r = (int)((s >> 33) % 10);
                int tok = r < 3 ? 1 : (r < 6 ? 2 : 3 + (r % 7));
                if (t >= lens[b]) {
                    tok = 0;
                } else {
                    n1 += tok == 1;
                    n2 += tok == 2;
                }
                ids[t * BB + b] = tok;
            }
            y[b] = n1 > n2 ? 1 : 0;
        }
        gr_step_reset(ctx);
        gr_zero_grad(ctx);
        struct gr_tensor *it = gr_tensor_from_host(ctx, GR_I32,
                                                   gr_shape2(TT, BB), ids);
        struct gr_tensor *yt = gr_tensor_from_host(ctx, GR_I32,
                                                   gr_shape1(BB), y);
        struct nlp_encoder_batch bt = {it, lens, TT, BB, NULL};
        struct gr_tensor *logits = gr_linear_forward(
            ctx, &head,
            nlp_encoder_encode(&e, &bt, 1, gr_rng_make(9, (uint64_t)step)));
        struct gr_tensor *loss = gr_cross_entropy(ctx, logits, yt, -1);
        if (loss == NULL || gr_backward(ctx, loss) < 0) {
            CHECK_MSG(0, "step %d: %s / %s", step, gr_ctx_error(ctx),
                      gr_last_error());
            break;
        }
        gr_clip_grad_norm(ctx, NULL, 1.0f, NULL);
        gr_optim_step(opt);
        if (step >= 150) {
            float lg[2 * BB];
            gr_tensor_to_host(logits, lg);
            for (int b = 0; b < BB; b++) {
                correct += (lg[2 * b + 1] > lg[2 * b]) == (y[b] == 1);
                seen++;
            }
        }
    }
    double acc = seen ? (double)correct / seen : 0.0;
    printf("majority-marker task: training accuracy over the last 50 steps "
           "%.3f\n", acc);
    CHECK_MSG(acc >= 0.9, "structformer did not learn the majority marker: "
              "%.3f", acc);
    gr_optim_free(opt);
    nlp_encoder_free(&e);
    gr_ctx_free(ctx);
}

int main(void)
{
    check_names_and_config();
    check_sentence_calibration();
    check_calibration_gradient();
    check_padding_invariance();
    check_learns();
    return test_report("nlp_structformer_classify");
}
