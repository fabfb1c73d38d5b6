/* The recurrent sentence encoders of nlp/models/encoder.h: an embedding
 * (U(-0.1, 0.1), on_lstm.md §11), ordinary dropout on it while training, one
 * LSTM or ON-LSTM layer (kernels/layers.h), and the output at the last real
 * token (right padding) or at the last step (left padding). The ON-LSTM
 * encoder is the logic classifier's of on_lstm.md §11; the LSTM is the
 * thesis's LSTM baseline on the same setup. The FastTrees family
 * (fasttrees.md §6.2-§6.3: ft, cft, fft) swaps the cell, as the paper
 * does; CFT's convolution is causal over time with zeros before the first
 * token, so the right padding never reaches a real token. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/fasttrees.h"
#include "kernels/layers.h"
#include "kernels/ops.h"
#include "nlp/models/encoder.h"

enum rnn_cell { CELL_LSTM, CELL_ONLSTM, CELL_FT, CELL_CFT, CELL_FFT };

struct rnn_encoder {
    struct gr_tensor *emb; /* [vocab, emsize] "enc.emb.weight" */
    struct gr_lstm lstm;
    struct gr_onlstm onlstm; /* ON-LSTM, or FT (master_from_x) */
    struct gr_cft cft;
    struct gr_fft fft;
    enum rnn_cell cell;
    /* ON-LSTM forget distances of the last encode, [T, B] (host copy) */
    float *dist;
    int64_t dist_cap, dist_n;
    /* the rows of the last real tokens, [B] (kept: no malloc per encode) */
    int32_t *rows;
    int32_t rows_cap;
};

static void lstm_defaults(struct nlp_encoder_config *c, const char *task)
{
    /* on_lstm.md §11 (logic): 128 -> 400, dropout 0.2 on the embeddings */
    c->emsize = 128;
    c->hidden = 400;
    c->dropout_in = 0.2f;
    if (task != NULL && strcmp(task, "listops") == 0) {
        /* ordered_memory.md §9's ListOps sizes; right padding read at the
         * last real token (left padding would feed the pads through the
         * recurrence, and the result would depend on the batch) */
        c->emsize = 128;
        c->hidden = 128;
        c->dropout_in = 0.1f;
    } else if (task != NULL && (strncmp(task, "sst", 3) == 0 ||
                                strcmp(task, "snli") == 0)) {
        c->emsize = 300; /* grove's choice: no GloVe here, random init */
        c->hidden = 300;
        c->dropout_in = 0.3f;
    }
}

static void onlstm_defaults(struct nlp_encoder_config *c, const char *task)
{
    lstm_defaults(c, task);
    c->chunk = 10;
    if (c->hidden % c->chunk != 0) {
        c->chunk = 1;
    }
}

/* The FastTrees family: the ON-LSTM's defaults; for SST the paper's
 * encoder, 256 -> 512 (fasttrees.md §6.3: the projection of the word
 * vectors is the embedding here, random init), chunk 8 (n = 64); a hidden
 * size not a multiple of 10 gets chunk 8 where it divides (ListOps 128:
 * n = 16, which CFT's convolution needs to fit the 128 inputs). */
static void fasttrees_defaults(struct nlp_encoder_config *c, const char *task)
{
    onlstm_defaults(c, task);
    if (task != NULL && strncmp(task, "sst", 3) == 0) {
        c->emsize = 256;
        c->hidden = 512;
        c->dropout_in = 0.5f;
    } else if (task != NULL && strcmp(task, "snli") == 0) {
        c->emsize = 256; /* §6.4: the SST-2 encoder, dropout 0.2 */
        c->hidden = 512;
        c->dropout_in = 0.2f;
    }
    if (c->hidden % 10 != 0 && c->hidden % 8 == 0) {
        c->chunk = 8;
    }
}

static int rnn_init(struct nlp_encoder *e, struct gr_ctx *ctx,
                    struct gr_rng rng, enum rnn_cell cell)
{
    const struct nlp_encoder_config *c = &e->cfg;
    struct rnn_encoder *r = calloc(1, sizeof *r);
    if (r == NULL) {
        return gr_error(GR_ENOMEM, "encoder: out of memory");
    }
    e->impl = r;
    r->cell = cell;
    r->emb = gr_param_new(ctx, "enc.emb.weight", gr_shape2(c->vocab, c->emsize));
    if (r->emb == NULL) {
        return gr_error(GR_EINVAL, "encoder: %s", gr_ctx_error(ctx));
    }
    int rc = gr_init_uniform(r->emb, -0.1f, 0.1f,
                             gr_rng_make(rng.seed, gr_rng_stream(rng.stream,
                                                                 1, 0, 0)));
    if (rc < 0) {
        return rc;
    }
    struct gr_rng lr =
        gr_rng_make(rng.seed, gr_rng_stream(rng.stream, 2, 0, 0));
    switch (cell) {
    case CELL_ONLSTM:
        return gr_onlstm_init(&r->onlstm, ctx, "enc.rnn", c->emsize,
                              c->hidden, c->chunk, lr);
    case CELL_FT:
        return gr_ft_init(&r->onlstm, ctx, "enc.rnn", c->emsize, c->hidden,
                          c->chunk, lr);
    case CELL_CFT:
        return gr_cft_init(&r->cft, ctx, "enc.rnn", c->emsize, c->hidden,
                           c->chunk, GR_CONV_TIME, lr);
    case CELL_FFT:
        return gr_fft_init(&r->fft, ctx, "enc.rnn", c->emsize, c->hidden,
                           c->chunk, lr);
    default:
        return gr_lstm_init(&r->lstm, ctx, "enc.rnn", c->emsize, c->hidden,
                            lr);
    }
}

static int lstm_init(struct nlp_encoder *e, struct gr_ctx *ctx,
                     struct gr_rng rng)
{
    return rnn_init(e, ctx, rng, CELL_LSTM);
}

static int chunked_init(struct nlp_encoder *e, struct gr_ctx *ctx,
                        struct gr_rng rng, enum rnn_cell cell)
{
    if (e->cfg.chunk < 1 || e->cfg.hidden % e->cfg.chunk != 0) {
        return gr_error(GR_EINVAL, "%s: hidden %d is not a multiple of "
                                   "chunk %d",
                        e->kind->name, (int)e->cfg.hidden,
                        (int)e->cfg.chunk);
    }
    return rnn_init(e, ctx, rng, cell);
}

static int onlstm_init(struct nlp_encoder *e, struct gr_ctx *ctx,
                       struct gr_rng rng)
{
    return chunked_init(e, ctx, rng, CELL_ONLSTM);
}

static int ft_init(struct nlp_encoder *e, struct gr_ctx *ctx,
                   struct gr_rng rng)
{
    return chunked_init(e, ctx, rng, CELL_FT);
}

static int cft_init(struct nlp_encoder *e, struct gr_ctx *ctx,
                    struct gr_rng rng)
{
    return chunked_init(e, ctx, rng, CELL_CFT);
}

static int fft_init(struct nlp_encoder *e, struct gr_ctx *ctx,
                    struct gr_rng rng)
{
    return chunked_init(e, ctx, rng, CELL_FFT);
}

static struct gr_tensor *rnn_encode(struct nlp_encoder *e,
                                    const struct nlp_encoder_batch *b,
                                    int training, struct gr_rng rng)
{
    struct rnn_encoder *r = e->impl;
    struct gr_ctx *ctx = e->ctx;
    struct gr_tensor *x = gr_embedding(ctx, r->emb, b->ids); /* [T, B, E] */
    if (x != NULL && training && e->cfg.dropout_in > 0.0f) {
        x = gr_dropout(ctx, x, e->cfg.dropout_in,
                       gr_rng_make(rng.seed, gr_rng_stream(rng.stream, 11, 0,
                                                           0)));
    }
    if (x == NULL) {
        return NULL;
    }
    struct gr_rnn_out o;
    int rc;
    switch (r->cell) {
    case CELL_ONLSTM:
    case CELL_FT:
        rc = gr_onlstm_forward(ctx, &r->onlstm, x, NULL, NULL, NULL, &o);
        break;
    case CELL_CFT:
        rc = gr_cft_forward(ctx, &r->cft, x, NULL, NULL, NULL, NULL,
                            training,
                            gr_rng_make(rng.seed,
                                        gr_rng_stream(rng.stream, 12, 0, 0)),
                            &o, NULL);
        break;
    case CELL_FFT:
        rc = gr_fft_forward(ctx, &r->fft, x, NULL, &o);
        break;
    default:
        rc = gr_lstm_forward(ctx, &r->lstm, x, NULL, NULL, NULL, &o);
        break;
    }
    if (rc < 0) {
        return NULL;
    }
    if (r->cell != CELL_LSTM && o.df != NULL) {
        int64_t n = (int64_t)b->T * b->B;
        if (n > r->dist_cap) {
            float *d = realloc(r->dist, (size_t)n * sizeof *d);
            if (d == NULL) {
                gr_error(GR_ENOMEM, "encoder: out of memory");
                return NULL;
            }
            r->dist = d;
            r->dist_cap = n;
        }
        if (gr_tensor_to_host(o.df, r->dist) < 0) {
            return NULL;
        }
        r->dist_n = n;
    }
    if (e->cfg.left_pad) {
        return gr_select(ctx, o.y, b->T - 1);
    }
    /* the output at the last real token: row (len - 1) * B + b of y */
    if (b->B > r->rows_cap) {
        int32_t *grown = realloc(r->rows, (size_t)b->B * sizeof *grown);
        if (grown == NULL) {
            gr_error(GR_ENOMEM, "encoder: out of memory");
            return NULL;
        }
        r->rows = grown;
        r->rows_cap = b->B;
    }
    int32_t *rows = r->rows;
    for (int32_t j = 0; j < b->B; j++) {
        int32_t len = b->lengths[j];
        if (len < 1 || len > b->T) {
            gr_error(GR_EINVAL, "encoder: sequence %d has length %d of %d",
                     (int)j, (int)len, (int)b->T);
            return NULL;
        }
        rows[j] = (len - 1) * b->B + j;
    }
    struct gr_tensor *idx =
        gr_tensor_from_host(ctx, GR_I32, gr_shape1(b->B), rows);
    int32_t H = e->cfg.hidden;
    struct gr_tensor *flat =
        gr_reshape(ctx, o.y, gr_shape2((int64_t)b->T * b->B, H));
    if (idx == NULL || flat == NULL) {
        return NULL;
    }
    return gr_embedding(ctx, flat, idx);
}

static int32_t rnn_out_dim(const struct nlp_encoder *e)
{
    return e->cfg.hidden;
}

static void rnn_free(struct nlp_encoder *e)
{
    struct rnn_encoder *r = e->impl;
    if (r != NULL) {
        free(r->dist);
        free(r->rows);
        free(r);
    }
}

static int onlstm_distances(struct nlp_encoder *e, float *d)
{
    struct rnn_encoder *r = e->impl;
    if (r->dist == NULL) {
        return gr_error(GR_EINVAL, "%s: no encode to take distances of",
                        e->kind->name);
    }
    memcpy(d, r->dist, (size_t)r->dist_n * sizeof *d);
    return 0;
}

const struct nlp_encoder_kind nlp_encoder_lstm = {
    "lstm",
    "one LSTM layer (the thesis's LSTM baseline)",
    lstm_defaults,
    lstm_init,
    rnn_encode,
    rnn_out_dim,
    rnn_free,
    NULL,
};

const struct nlp_encoder_kind nlp_encoder_onlstm = {
    "onlstm",
    "one ON-LSTM layer, chunk 10 (the ON-LSTM paper's logic classifier)",
    onlstm_defaults,
    onlstm_init,
    rnn_encode,
    rnn_out_dim,
    rnn_free,
    onlstm_distances,
};

const struct nlp_encoder_kind nlp_encoder_ft = {
    "ft",
    "one FastTrees layer: master gates from x_t only (docs/models.md)",
    fasttrees_defaults,
    ft_init,
    rnn_encode,
    rnn_out_dim,
    rnn_free,
    onlstm_distances,
};

const struct nlp_encoder_kind nlp_encoder_cft = {
    "cft",
    "one Conv. FastTrees layer: causal conv (k 2, dilation 2) on the first "
    "2n inputs, then FastTrees (docs/models.md)",
    fasttrees_defaults,
    cft_init,
    rnn_encode,
    rnn_out_dim,
    rnn_free,
    onlstm_distances,
};

const struct nlp_encoder_kind nlp_encoder_fft = {
    "fft",
    "one Faster FastTrees layer: every gate from x_t, the recurrence a "
    "linear scan (docs/models.md)",
    fasttrees_defaults,
    fft_init,
    rnn_encode,
    rnn_out_dim,
    rnn_free,
    onlstm_distances,
};
