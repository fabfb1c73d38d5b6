/* nlp/models/mlm_head.h — the masked-language-modelling output layer
 * every MLM model of issue 24 shares (udgn.md §5 "Output and loss"; §7 for
 * StructFormer and the Transformer): the final states of the masked
 * positions only, an optional LayerNorm (eps 1e-5), dropout, the output
 * matrix tied to the input embedding E plus a bias, and the mean cross
 * entropy over the masked positions.
 *
 * Memory: step tensors; the gathered row indices are built on the host.
 * Errors: 0 or a negative code with the context's error. One thread per
 * context.
 *
 *   nlp_mlm_head(ctx, x, emb, norm_w, norm_b, out_bias, targets, B, n,
 *                0.2f, training, rng, &logits, &loss, &n_masked);
 */
#ifndef GROVE_NLP_MODELS_MLM_HEAD_H
#define GROVE_NLP_MODELS_MLM_HEAD_H

#include <stdint.h>

#include "kernels/rng.h"
#include "kernels/tensor.h"

/* x [B, n, d] final states; targets host [B, n] (-1 = not masked); emb
 * [V, d] the input embedding (tied output); norm_w, norm_b [d] or both
 * NULL (no LayerNorm, for an encoder that ends with its own); out_bias
 * [V]. Gathers the N masked rows -> *logits [N, V], *loss the mean cross
 * entropy (NULL when nothing is masked), *n_masked = N. Dropout on the
 * normalised rows only when training. */
int nlp_mlm_head(struct gr_ctx *ctx, struct gr_tensor *x,
                 struct gr_tensor *emb, struct gr_tensor *norm_w,
                 struct gr_tensor *norm_b, struct gr_tensor *out_bias,
                 const int32_t *targets, int32_t B, int32_t n, float dropout,
                 int training, struct gr_rng rng, struct gr_tensor **logits,
                 struct gr_tensor **loss, int32_t *n_masked);

#endif
