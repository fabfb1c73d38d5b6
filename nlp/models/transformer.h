/* nlp/models/transformer.h — the Transformer encoder stack (Vaswani et
 * al. 2017) on the attention ops of kernels/attention.h, and its row in
 * the encoder table (nlp/models/encoder.h, model "transformer").
 *
 * A layer is PyTorch's TransformerEncoderLayer (ReLU feed-forward, layer
 * norms with eps 1e-5):
 *   pre-norm (default, T2T's):  x = x + drop(MHA(LN1(x)))
 *                               x = x + drop(FFN(LN2(x)))
 *                               and one final LN after the last layer;
 *   post-norm (post_norm = 1):  x = LN1(x + drop(MHA(x)))
 *                               x = LN2(x + drop(FFN(x))), no final LN.
 * Parameter names under `prefix`: layers.L.self_attn.{in_proj_weight,
 * in_proj_bias, out_proj.weight, out_proj.bias}, layers.L.linear1/linear2.
 * {weight, bias}, layers.L.norm1/norm2.{weight, bias}, norm.{weight, bias}
 * (pre-norm only): PyTorch's state-dict names.
 *
 * Memory: parameters in the context's persistent arena; activations in the
 * step arena (the attention keeps O(T) per head, kernels/attention.h).
 * Errors: init returns 0 or a negative code (gr_last_error); forward
 * returns NULL with the context's error set. One thread per context.
 *
 *   struct nlp_transformer_config c = nlp_transformer_config_default(128);
 *   struct nlp_transformer t;
 *   nlp_transformer_init(&t, ctx, "enc", &c, gr_rng_make(seed, 3));
 *   y = nlp_transformer_forward(ctx, &t, x, key_len, 0, training, rng);
 *   nlp_transformer_free(&t);
 */
#ifndef GROVE_NLP_MODELS_TRANSFORMER_H
#define GROVE_NLP_MODELS_TRANSFORMER_H

#include "kernels/attention.h"
#include "kernels/rng.h"
#include "kernels/tensor.h"

struct nlp_transformer_config {
    int d;              /* model width */
    int layers, heads, ffn;
    float dropout;      /* residual dropout (after attention and FFN) */
    float dropout_attn; /* attention dropout */
    float dropout_ffn;  /* between the FFN's linears */
    int post_norm;
};

/* T2T "tiny"-like defaults at width d: 2 layers, 4 heads, ffn 4d, dropout
 * 0.1 (attention and FFN 0.1), pre-norm. */
struct nlp_transformer_config nlp_transformer_config_default(int d);

struct nlp_transformer_layer {
    struct gr_mha attn;
    struct gr_ffn ffn;
    struct gr_tensor *n1w, *n1b, *n2w, *n2b;
};

struct nlp_transformer {
    struct nlp_transformer_config cfg;
    struct nlp_transformer_layer *layer; /* cfg.layers, malloc'd */
    struct gr_tensor *nw, *nb;           /* final norm (pre-norm) or NULL */
};

int nlp_transformer_init(struct nlp_transformer *t, struct gr_ctx *ctx,
                         const char *prefix,
                         const struct nlp_transformer_config *c,
                         struct gr_rng rng);

/* x [T, B, D] -> [T, B, D]. key_len: NULL or i32 [B] (keys t >= len are
 * padding); causal: each position sees only itself and the past. Dropout
 * only when `training`. */
struct gr_tensor *nlp_transformer_forward(struct gr_ctx *ctx,
                                          const struct nlp_transformer *t,
                                          struct gr_tensor *x,
                                          struct gr_tensor *key_len,
                                          int causal, int training,
                                          struct gr_rng rng);

void nlp_transformer_free(struct nlp_transformer *t);

#endif
