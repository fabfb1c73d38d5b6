/* The hybrid ON-LSTM + SAN encoder with short-cut (Hao et al. 2019;
 * hybrid_and_trees.md §1) as the "hybrid" row of the encoder table
 * (nlp/models/encoder.h):
 *
 *   X   = E[ids]                                  (token embeddings)
 *   H_R = ON-LSTM^K(X)                            (eq. 1; on_lstm.md cells)
 *   H_S = SAN^L(H_R + positions)                  (eq. 2; transformer.h)
 *   H   = H_R + H_S                               (eq. 10, the short-cut)
 *   u   = two-query attention pooling of H        (§1.3) -> [B, 2D]
 *
 * K = L = --layers (1 each for logic, as §1.3's hybrid), width --nhid for
 * both, --emsize the embedding. What the paper leaves open is decided in
 * `hybrid_assumptions` below (§1.4), in one place, so that a reading of the
 * authors' code can replace it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/attention.h"
#include "kernels/layers.h"
#include "kernels/ops.h"
#include "nlp/models/encoder.h"
#include "nlp/models/hybrid.h"
#include "nlp/models/transformer.h"

/* hybrid_assumptions (hybrid_and_trees.md §1.4, each a choice where the
 * paper is silent):
 *  1. ON-LSTM layers are unidirectional, chunk size 8 (--chunk-size),
 *     without DropConnect, with ordinary dropout (--dropout) between
 *     layers and on the ON-LSTM output.
 *  2. Sinusoidal positions are added to the SAN input only; the recurrent
 *     part reads plain embeddings (U(-0.1, 0.1), as grove's recurrent
 *     encoders).
 *  3. SAN layers are grove's Transformer encoder layers, pre-norm with the
 *     final layer norm (as the Transformer baseline here).
 *  4. The short-cut is a plain sum taken after the SAN's final layer norm;
 *     it adds no parameters.
 *  5. The classifier readout is §1.3's two-query attention pooling over
 *     the real positions.
 *  6. The encoder-order variant SAN -> ON-LSTM (row "hybrid-san", §1.2's
 *     encoder-strategy table) reads the embeddings with positions into
 *     the SAN stack, the ON-LSTM layers read H_S, and keeps the short-cut
 *     H = H_S + H_R (the paper's strategy rows compare the orders without
 *     it; the short-cut here isolates the order within grove's hybrid).
 *     Its embedding width must equal the SAN width (--emsize = --nhid). */
static const char hybrid_assumptions[] =
    "onlstm unidirectional chunk 8 no-dropconnect; positions on SAN input "
    "only; SAN pre-norm + final LN; short-cut after final LN; two-query "
    "pooling; hybrid-san: SAN on embeddings + positions, short-cut kept";

struct hybrid_encoder {
    struct gr_tensor *emb;     /* [V, E] enc.emb.weight */
    struct gr_onlstm *rnn;     /* K layers enc.rnn.K */
    struct gr_tensor *queries; /* [2, D] enc.pool.queries */
    struct nlp_transformer san;
    int san_first; /* row "hybrid-san": SAN -> ON-LSTM */
};

static void hybrid_defaults(struct nlp_encoder_config *c, const char *task)
{
    c->emsize = c->hidden = 128;
    c->layers = 1;
    c->heads = 4;
    c->ffn = 512;
    c->chunk = 8;
    c->dropout_in = c->dropout_cell = c->dropout_attn = 0.1f;
    c->left_pad = 0;
    if (task != NULL && strcmp(task, "logic") == 0) {
        /* §1.3: embedding = hidden = 256, one ON-LSTM + one SAN layer,
         * dropout 0.2 */
        c->emsize = c->hidden = 256;
        c->ffn = 1024;
        c->dropout_in = c->dropout_cell = 0.2f;
    } else if (task != NULL && strncmp(task, "sst", 3) == 0) {
        c->emsize = c->hidden = 320; /* a multiple of chunk 8 and 4 heads */
        c->ffn = 640;
        c->dropout_in = c->dropout_cell = 0.3f;
    }
}

static int hybrid_init_any(struct nlp_encoder *e, struct gr_ctx *ctx,
                           struct gr_rng rng, int san_first)
{
    const struct nlp_encoder_config *c = &e->cfg;
    if (c->chunk < 1 || c->hidden % c->chunk != 0) {
        return gr_error(GR_EINVAL, "hybrid: --nhid %d is not a multiple of "
                        "--chunk-size %d", (int)c->hidden, (int)c->chunk);
    }
    if (san_first && c->emsize != c->hidden) {
        return gr_error(GR_EINVAL, "hybrid-san: --emsize %d must equal "
                        "--nhid %d (the SAN reads the embeddings)",
                        (int)c->emsize, (int)c->hidden);
    }
    struct hybrid_encoder *h = calloc(1, sizeof *h);
    if (h == NULL) {
        return gr_error(GR_ENOMEM, "hybrid: out of memory");
    }
    e->impl = h;
    h->san_first = san_first;
    h->rnn = calloc((size_t)c->layers, sizeof *h->rnn);
    h->emb = gr_param_new(ctx, "enc.emb.weight",
                          gr_shape2(c->vocab, c->emsize));
    h->queries = gr_param_new(ctx, "enc.pool.queries",
                              gr_shape2(2, c->hidden));
    if (h->rnn == NULL || h->emb == NULL || h->queries == NULL) {
        return gr_error(GR_EINVAL, "hybrid: %s", gr_ctx_error(ctx));
    }
    struct gr_rng r1 = gr_rng_make(rng.seed,
                                   gr_rng_stream(rng.stream, 1, 0, 0));
    float qb = 1.0f / sqrtf((float)c->hidden);
    if (gr_init_uniform(h->emb, -0.1f, 0.1f, r1) < 0 ||
        gr_init_uniform(h->queries, -qb, qb, r1) < 0) {
        return GR_EINVAL;
    }
    char name[64];
    for (int l = 0; l < c->layers; l++) {
        snprintf(name, sizeof name, "enc.rnn.%d", l);
        int rc = gr_onlstm_init(&h->rnn[l], ctx, name,
                                l == 0 && !san_first ? c->emsize : c->hidden,
                                c->hidden,
                                c->chunk,
                                gr_rng_make(rng.seed,
                                            gr_rng_stream(rng.stream, 2, l,
                                                          0)));
        if (rc < 0) {
            return rc;
        }
    }
    struct nlp_transformer_config tc =
        nlp_transformer_config_default(c->hidden);
    tc.layers = c->layers;
    tc.heads = c->heads;
    tc.ffn = c->ffn;
    tc.dropout = tc.dropout_ffn = c->dropout_cell;
    tc.dropout_attn = c->dropout_attn;
    tc.post_norm = 0; /* hybrid_assumptions 3 */
    return nlp_transformer_init(&h->san, ctx, "enc.san", &tc,
                                gr_rng_make(rng.seed,
                                            gr_rng_stream(rng.stream, 3, 0,
                                                          0)));
}

static int hybrid_init(struct nlp_encoder *e, struct gr_ctx *ctx,
                       struct gr_rng rng)
{
    return hybrid_init_any(e, ctx, rng, 0);
}

static int hybrid_san_init(struct nlp_encoder *e, struct gr_ctx *ctx,
                           struct gr_rng rng)
{
    return hybrid_init_any(e, ctx, rng, 1);
}

static struct gr_tensor *drop(struct gr_ctx *ctx, struct gr_tensor *x,
                              float p, int training, struct gr_rng rng,
                              int site, int layer)
{
    if (!training || p <= 0.0f || x == NULL) {
        return x;
    }
    return gr_dropout(ctx, x, p,
                      gr_rng_make(rng.seed, gr_rng_stream(rng.stream, site,
                                                          layer, 0)));
}

struct gr_tensor *nlp_hybrid_states(struct nlp_encoder *e,
                                    const struct nlp_encoder_batch *b,
                                    int training, struct gr_rng rng,
                                    struct gr_tensor **h_r)
{
    if (e->kind != &nlp_encoder_hybrid && e->kind != &nlp_encoder_hybrid_san) {
        gr_error(GR_EINVAL, "nlp_hybrid_states: the encoder is '%s', not "
                 "hybrid", e->kind ? e->kind->name : "(none)");
        return NULL;
    }
    struct hybrid_encoder *h = e->impl;
    struct gr_ctx *ctx = e->ctx;
    const struct nlp_encoder_config *c = &e->cfg;
    for (int32_t j = 0; j < b->B; j++) {
        if (b->lengths[j] < 1 || b->lengths[j] > b->T) {
            gr_error(GR_EINVAL, "hybrid: sequence %d has length %d of %d",
                     (int)j, (int)b->lengths[j], (int)b->T);
            return NULL;
        }
    }
    (void)hybrid_assumptions;
    struct gr_tensor *kl = gr_tensor_from_host(ctx, GR_I32, gr_shape1(b->B),
                                               b->lengths);
    struct gr_tensor *x = gr_embedding(ctx, h->emb, b->ids);
    x = drop(ctx, x, c->dropout_in, training, rng, 30, 0);
    if (h->san_first) { /* hybrid_assumptions 6 */
        struct gr_tensor *hs = gr_add(
            ctx, x, gr_positions_sinusoidal(ctx, b->T, c->hidden, 0));
        hs = nlp_transformer_forward(ctx, &h->san, hs, kl, 0, training, rng);
        struct gr_tensor *r = hs;
        for (int l = 0; l < c->layers && r != NULL; l++) {
            struct gr_rnn_out o;
            if (gr_onlstm_forward(ctx, &h->rnn[l], r, NULL, NULL, NULL, &o) <
                0) {
                return NULL;
            }
            r = drop(ctx, o.y, c->dropout_cell, training, rng, 31, l);
        }
        if (h_r != NULL) {
            *h_r = r;
        }
        return gr_add(ctx, hs, r);
    }
    for (int l = 0; l < c->layers && x != NULL; l++) {
        struct gr_rnn_out o;
        if (gr_onlstm_forward(ctx, &h->rnn[l], x, NULL, NULL, NULL, &o) < 0) {
            return NULL;
        }
        x = drop(ctx, o.y, c->dropout_cell, training, rng, 31, l);
    }
    struct gr_tensor *hr = x; /* H_R, eq. 1 */
    struct gr_tensor *hs = gr_add(ctx, hr,
                                  gr_positions_sinusoidal(ctx, b->T,
                                                          c->hidden, 0));
    hs = nlp_transformer_forward(ctx, &h->san, hs, kl, 0, training, rng);
    if (h_r != NULL) {
        *h_r = hr;
    }
    return gr_add(ctx, hr, hs); /* eq. 10, the short-cut */
}

static struct gr_tensor *hybrid_encode(struct nlp_encoder *e,
                                       const struct nlp_encoder_batch *b,
                                       int training, struct gr_rng rng)
{
    struct hybrid_encoder *h = e->impl;
    struct gr_ctx *ctx = e->ctx;
    struct gr_tensor *hh = nlp_hybrid_states(e, b, training, rng, NULL);
    if (hh == NULL) {
        return NULL;
    }
    struct gr_tensor *kl = gr_tensor_from_host(ctx, GR_I32, gr_shape1(b->B),
                                               b->lengths);
    return nlp_two_query_pool(ctx, h->queries, hh, kl, rng);
}

static int32_t hybrid_out_dim(const struct nlp_encoder *e)
{
    return 2 * e->cfg.hidden;
}

static void hybrid_free(struct nlp_encoder *e)
{
    struct hybrid_encoder *h = e->impl;
    if (h != NULL) {
        nlp_transformer_free(&h->san);
        free(h->rnn);
        free(h);
    }
}

const struct nlp_encoder_kind nlp_encoder_hybrid = {
    "hybrid",
    "ON-LSTM then SAN layers with the short-cut H_R + H_S (Hao et al. "
    "2019), two-query attention pooling",
    hybrid_defaults,
    hybrid_init,
    hybrid_encode,
    hybrid_out_dim,
    hybrid_free,
    NULL,
};

const struct nlp_encoder_kind nlp_encoder_hybrid_san = {
    "hybrid-san",
    "the hybrid with the encoder order reversed: SAN then ON-LSTM layers, "
    "short-cut H_S + H_R (Hao et al. 2019's strategy table)",
    hybrid_defaults,
    hybrid_san_init,
    hybrid_encode,
    hybrid_out_dim,
    hybrid_free,
    NULL,
};
