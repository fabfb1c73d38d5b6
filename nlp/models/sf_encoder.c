/* The StructFormer row of the encoder table (nlp/models/encoder.h, model
 * "structformer"): the model of nlp/models/structformer.h (udgn.md §7) as a
 * sentence encoder for the classifier harness, wired as the transformer row
 * (nlp/models/transformer.c):
 *
 *   parser   δ, η and the parent distribution Par of the sentence
 *            (nlp_structformer_parse; no parser dropout, as
 *            google-research), the calibration shift μ per sentence;
 *   layers   x = drop_in(E[x] + learned positions), the L gated
 *            sigmoid-attention layers (nlp_structformer_layer_forward,
 *            their dropouts as the MLM's), the final LayerNorm;
 *   pooling  two-query attention pooling over the real positions
 *            (hybrid_and_trees.md §1.3, the transformer row's) -> [B, 2d];
 *   trees    an evaluation encode keeps δ on the host
 *            (nlp_sf_encoder_distances): grove nlp classify trees splits
 *            each span at its largest gap (nlp_parse_gaps).
 *
 * The tied output layer of the MLM is not used (encoder_only: no
 * output_bias). Sizes: --nhid is d (--emsize must equal it: the parser and
 * the layers read the same d-wide embedding), --layers, --heads, --ffn;
 * --dropout is the residual/FFN dropout, --dropouti the embeddings',
 * --dropout-attn the gated attention's. Fixed: 3 parser layers, conv 9,
 * affine LayerNorms (google-research's defaults), a position table of
 * SF_ENC_POSITIONS.
 *
 * Per-sentence calibration is grove's choice here (udgn.md §7 takes μ over
 * the whole batch): with it, a sentence's vector does not depend on the
 * other sentences of its batch, so evaluation does not depend on the
 * evaluation batch and a pair's premise and hypothesis (encoded in one
 * batch) do not shift each other's parse.
 *
 * Memory: the parent distribution keeps O(B·T³) floats (two [B, T, T, T]
 * tensors per step): a batch above SF_ENC_MAX_CUBE floats per tensor is
 * refused with a message naming B and T (ListOps' long sequences need a
 * small --batch and --eval-batch). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/attention.h"
#include "kernels/layers.h"
#include "kernels/ops.h"
#include "nlp/models/encoder.h"
#include "nlp/models/structformer.h"
#include "nlp/models/transformer.h"

enum { SF_ENC_PARSER_LAYERS = 3, SF_ENC_CONV = 9, SF_ENC_POSITIONS = 512 };
/* B·T³ floats in one [B, T, T, T] tensor of the parent distribution: at
 * most 2^28 (1 GiB). */
#define SF_ENC_MAX_CUBE ((double)(1 << 28))

struct sf_encoder {
    struct nlp_structformer m;  /* under "enc" */
    struct gr_tensor *queries;  /* [2, d] enc.pool.queries */
    /* δ of the last evaluation-mode encode, [B, T] (host copy; trees) */
    float *dist;
    int64_t dist_cap;
    int32_t dist_T, dist_B;
};

static void sf_defaults(struct nlp_encoder_config *c, const char *task)
{
    /* the transformer row's sizes per task (nlp/models/transformer.c),
     * with emsize = hidden */
    c->emsize = c->hidden = 128;
    c->layers = 2;
    c->heads = 4;
    c->ffn = 512;
    c->dropout_in = c->dropout_cell = c->dropout_attn = 0.1f;
    c->left_pad = 0;
    if (task != NULL && strcmp(task, "logic") == 0) {
        c->emsize = c->hidden = 256;
        c->ffn = 1024;
        c->dropout_in = c->dropout_cell = 0.2f;
    } else if (task != NULL && strncmp(task, "sst", 3) == 0) {
        c->emsize = c->hidden = 300;
        c->heads = 6;
        c->ffn = 600;
        c->dropout_in = c->dropout_cell = 0.3f;
    }
}

static int sf_init(struct nlp_encoder *e, struct gr_ctx *ctx,
                   struct gr_rng rng)
{
    const struct nlp_encoder_config *c = &e->cfg; /* checked: emsize =
                                                      hidden (encoder.c) */
    struct sf_encoder *s = calloc(1, sizeof *s);
    if (s == NULL) {
        return gr_error(GR_ENOMEM, "structformer: out of memory");
    }
    e->impl = s;
    struct nlp_structformer_config sc =
        nlp_structformer_config_default(c->vocab);
    sc.d = c->hidden;
    sc.layers = c->layers;
    sc.heads = c->heads;
    sc.ffn = c->ffn;
    sc.parser_layers = SF_ENC_PARSER_LAYERS;
    sc.conv = SF_ENC_CONV;
    sc.dropout = c->dropout_cell;
    sc.dropout_attn = c->dropout_attn;
    sc.parser_dropout = 0.0f;
    sc.pos_emb = SF_ENC_POSITIONS;
    sc.norm_affine = 1;
    sc.sentence_calibration = 1;
    sc.encoder_only = 1;
    int rc = nlp_structformer_init(
        &s->m, ctx, "enc", &sc,
        gr_rng_make(rng.seed, gr_rng_stream(rng.stream, 1, 0, 0)));
    if (rc < 0) {
        return rc;
    }
    s->queries = gr_param_new(ctx, "enc.pool.queries",
                              gr_shape2(2, c->hidden));
    float qb = 1.0f / sqrtf((float)c->hidden);
    if (s->queries == NULL ||
        gr_init_uniform(s->queries, -qb, qb,
                        gr_rng_make(rng.seed,
                                    gr_rng_stream(rng.stream, 2, 0, 0))) <
            0) {
        return gr_error(GR_EINVAL, "structformer: %s", gr_ctx_error(ctx));
    }
    return 0;
}

static struct gr_tensor *sf_encode(struct nlp_encoder *e,
                                   const struct nlp_encoder_batch *b,
                                   int training, struct gr_rng rng)
{
    struct sf_encoder *s = e->impl;
    struct gr_ctx *ctx = e->ctx;
    const struct nlp_encoder_config *c = &e->cfg;
    const double cube = (double)b->B * b->T * (double)b->T * b->T;
    if (cube > SF_ENC_MAX_CUBE) {
        gr_error(GR_EINVAL, "structformer: a batch of %d sequences of %d "
                 "tokens needs %.3g floats per [B, T, T, T] tensor of the "
                 "parent distribution (at most %.3g; udgn.md §7): use a "
                 "smaller --batch / --eval-batch or shorter sequences",
                 (int)b->B, (int)b->T, cube, SF_ENC_MAX_CUBE);
        return NULL;
    }
    struct nlp_structformer_out po;
    if (nlp_structformer_parse(ctx, &s->m, b->ids, b->lengths, &po) < 0) {
        return NULL;
    }
    if (!training) {
        /* the parse of an evaluation encode, for classify trees */
        int64_t n = (int64_t)b->B * b->T;
        if (n > s->dist_cap) {
            float *d = realloc(s->dist, (size_t)n * sizeof *d);
            if (d == NULL) {
                gr_error(GR_ENOMEM, "structformer: out of memory");
                return NULL;
            }
            s->dist = d;
            s->dist_cap = n;
        }
        s->dist_T = s->dist_B = 0;
        if (gr_tensor_to_host(po.distance, s->dist) < 0) {
            return NULL;
        }
        s->dist_T = b->T;
        s->dist_B = b->B;
    }
    const int heads = s->m.cfg.heads;
    struct gr_tensor *gates = nlp_structformer_gates(ctx, &s->m, po.head);
    struct gr_tensor *kl = gr_tensor_from_host(ctx, GR_I32, gr_shape1(b->B),
                                               b->lengths);
    struct gr_tensor *x = gr_add(ctx, gr_embedding(ctx, s->m.emb, b->ids),
                                 gr_positions_learned(ctx, s->m.pos, b->T,
                                                      0));
    if (training && c->dropout_in > 0.0f) {
        x = gr_dropout(ctx, x, c->dropout_in,
                       gr_rng_make(rng.seed,
                                   gr_rng_stream(rng.stream, 30, 0, 0)));
    }
    for (int l = 0; l < s->m.cfg.layers; l++) {
        struct gr_tensor *gl = gr_slice(ctx, gates, 1, (int64_t)l * heads,
                                        heads);
        x = nlp_structformer_layer_forward(ctx, &s->m, l, x, gl, kl,
                                           training, rng);
    }
    x = gr_layer_norm(ctx, x, s->m.nw, s->m.nb, 1e-5f);
    return nlp_two_query_pool(ctx, s->queries, x, kl, rng);
}

static int32_t sf_out_dim(const struct nlp_encoder *e)
{
    return 2 * e->cfg.hidden;
}

static void sf_free(struct nlp_encoder *e)
{
    struct sf_encoder *s = e->impl;
    if (s != NULL) {
        nlp_structformer_free(&s->m);
        free(s->dist);
        free(s);
    }
}

int nlp_sf_encoder_distances(struct nlp_encoder *e, const float **d,
                             int32_t *T, int32_t *B)
{
    if (e == NULL || e->kind != &nlp_encoder_structformer ||
        e->impl == NULL) {
        return gr_error(GR_EINVAL, "not a StructFormer encoder");
    }
    struct sf_encoder *s = e->impl;
    if (s->dist_T == 0) {
        return gr_error(GR_EINVAL, "structformer encoder: no evaluation "
                                   "encode to take distances of");
    }
    *d = s->dist;
    *T = s->dist_T;
    *B = s->dist_B;
    return 0;
}

const struct nlp_encoder_kind nlp_encoder_structformer = {
    "structformer",
    "StructFormer (docs/models.md): distance/height parser, gated sigmoid "
    "attention, two-query attention pooling",
    sf_defaults,
    sf_init,
    sf_encode,
    sf_out_dim,
    sf_free,
    NULL, /* trees: nlp_sf_encoder_distances + nlp_parse_gaps (udgn.md §7) */
};
