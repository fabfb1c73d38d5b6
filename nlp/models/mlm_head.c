/* The shared MLM output layer (nlp/models/mlm_head.h). */
#include "nlp/models/mlm_head.h"

#include <stdlib.h>

#include "core/error.h"
#include "kernels/ops.h"

int nlp_mlm_head(struct gr_ctx *ctx, struct gr_tensor *x,
                 struct gr_tensor *emb, struct gr_tensor *norm_w,
                 struct gr_tensor *norm_b, struct gr_tensor *out_bias,
                 const int32_t *targets, int32_t B, int32_t n, float dropout,
                 int training, struct gr_rng rng, struct gr_tensor **logits,
                 struct gr_tensor **loss, int32_t *n_masked)
{
    *logits = NULL;
    *loss = NULL;
    *n_masked = 0;
    if (!x) {
        return gr_ctx_status(ctx) < 0 ? gr_ctx_status(ctx) : GR_EINVAL;
    }
    int64_t N = 0, BN = (int64_t)B * n, d = x->shape[2];
    for (int64_t i = 0; i < BN; i++) {
        N += targets[i] >= 0;
    }
    if (N == 0) {
        return 0;
    }
    int32_t *rows = malloc((size_t)N * sizeof *rows);
    int32_t *tg = malloc((size_t)N * sizeof *tg);
    if (!rows || !tg) {
        free(rows);
        free(tg);
        return gr_error(GR_ENOMEM, "mlm head: out of memory");
    }
    int64_t k = 0;
    for (int64_t i = 0; i < BN; i++) {
        if (targets[i] >= 0) {
            rows[k] = (int32_t)i;
            tg[k++] = targets[i];
        }
    }
    struct gr_tensor *rt =
        gr_tensor_from_host(ctx, GR_I32, gr_shape1(N), rows);
    struct gr_tensor *tt = gr_tensor_from_host(ctx, GR_I32, gr_shape1(N), tg);
    free(rows);
    free(tg);
    struct gr_tensor *z = gr_embedding(
        ctx, gr_reshape(ctx, x, gr_shape2(BN, d)), rt); /* [N, d] */
    if (norm_w || norm_b) {
        z = gr_layer_norm(ctx, z, norm_w, norm_b, 1e-5f);
    }
    z = (training && dropout > 0.0f) ? gr_dropout(ctx, z, dropout, rng) : z;
    struct gr_tensor *lg = gr_linear(ctx, z, emb, out_bias);
    struct gr_tensor *ls = gr_cross_entropy(ctx, lg, tt, -1);
    if (!ls) {
        return gr_ctx_status(ctx);
    }
    *logits = lg;
    *loss = ls;
    *n_masked = (int32_t)N;
    return 0;
}

