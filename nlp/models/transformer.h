/* nlp/models/transformer.h — the Transformer encoder stack (Vaswani et
 * al. 2017) on the attention ops of kernels/attention.h, and its row in
 * the encoder table (nlp/models/encoder.h, model "transformer").
 *
 * A layer is PyTorch's TransformerEncoderLayer (ReLU feed-forward, or
 * LeakyReLU with ffn_neg_slope > 0; layer norms with eps 1e-5):
 *   pre-norm (default, T2T's):  x = x + drop(MHA(LN1(x)))
 *                               x = x + drop(FFN(LN2(x)))
 *                               and one final LN after the last layer;
 *   post-norm (post_norm = 1):  x = LN1(x + drop(MHA(x)))
 *                               x = LN2(x + drop(FFN(x))), no final LN.
 * With ft_gate (the FastTrees-Transformer block), MHA(...) above becomes
 * FastTrees(MHA(...)) (nlp_fasttrees_gate; fasttrees.md §7's placement,
 * an assumption of the spec).
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
    float ffn_neg_slope; /* 0 (default): ReLU FFN, PyTorch's; > 0: LeakyReLU
                            with this slope (udgn.md §7's MLM baseline:
                            0.01) */
    int post_norm;
    int ft_gate;        /* 1: the FastTrees-Transformer block (fasttrees.md
                           §7): the FastTrees module on the (self-)
                           attention output, before the residual add */
    int ft_conv;        /* with ft_gate: the Conv. FastTrees form of F, a
                           width-3 convolution over positions (same padding
                           in the encoder, causal in the decoder) before
                           each position-wise linear (fasttrees.md §7) */
    int decoder;        /* 1: decoder layers (causal self-attention, then
                           attention over a memory; PyTorch's
                           TransformerDecoderLayer) */
};

/* T2T "tiny"-like defaults at width d: 2 layers, 4 heads, ffn 4d, dropout
 * 0.1 (attention and FFN 0.1), pre-norm. */
struct nlp_transformer_config nlp_transformer_config_default(int d);

struct nlp_transformer_layer {
    struct gr_mha attn;
    struct gr_ffn ffn;
    struct gr_tensor *n1w, *n1b, *n2w, *n2b;
    struct gr_tensor *ftw, *ftb; /* ft_gate: layers.L.ft.weight [3D, D]
                                    (rows: F_a, F_b, F_h), .bias [3D] */
    struct gr_tensor *ftcw, *ftcb; /* ft_conv: layers.L.ft.conv.weight
                                      [3D, D, 3], .bias [3D] */
    struct gr_mha cross;         /* decoder: layers.L.multihead_attn */
    struct gr_tensor *n3w, *n3b; /* decoder: layers.L.norm3 */
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

/* Two-query attention pooling of the encoder rows: queries [2, D] (learned)
 * attend over x [T, B, D], keys t >= key_len[b] masked -> [B, 2D]. Used by
 * the transformer, hybrid and structformer rows of the encoder table.
 * NULL on error (the context's error is set). */
struct gr_tensor *nlp_two_query_pool(struct gr_ctx *ctx,
                                     struct gr_tensor *queries,
                                     struct gr_tensor *x,
                                     struct gr_tensor *key_len,
                                     struct gr_rng rng);

/* A decoder stack (cfg.decoder = 1): y [Ty, B, D] (the shifted targets'
 * embeddings), memory [Tx, B, D] (the encoder's output), mem_len NULL or
 * i32 [B] (memory keys t >= mem_len[b] are padding) -> [Ty, B, D].
 * Self-attention is causal. Pre-norm: y += drop(SA(LN1 y)); y +=
 * drop(CA(LN2 y, memory)); y += drop(FFN(LN3 y)); final LN. Post-norm:
 * y = LN1(y + drop(SA y)); LN2(y + drop(CA(y, memory))); LN3(y +
 * drop(FFN y)). Names as PyTorch's TransformerDecoder. */
struct gr_tensor *nlp_transformer_decode(struct gr_ctx *ctx,
                                         const struct nlp_transformer *t,
                                         struct gr_tensor *y,
                                         struct gr_tensor *memory,
                                         struct gr_tensor *mem_len,
                                         int training, struct gr_rng rng);

/* Incremental decoding (evaluation only: no dropout, no gradient): the
 * decoder run one position at a time with a key/value cache. Per layer it
 * keeps the self-attention keys and values of the positions so far and
 * the cross-attention keys and values of the memory (computed at the
 * first step), and for the Conv. FastTrees gate the attention outputs so
 * far. Step t's output equals row t of nlp_transformer_decode over the
 * prefix up to t (to rounding: products over fewer rows), which
 * recomputes every position at every step. The cached tensors live in the
 * context's step arena: no gr_step_reset between steps. */
struct nlp_transformer_cache {
    int layers;
    int64_t t;                   /* positions cached */
    struct gr_tensor **k, **v;   /* [t, B, D] per layer */
    struct gr_tensor **ck, **cv; /* [Ts, B, D] per layer */
    struct gr_tensor **a;        /* ft_conv: attention outputs [t, B, D] */
};

int nlp_transformer_cache_init(struct nlp_transformer_cache *c,
                               const struct nlp_transformer *t);
void nlp_transformer_cache_free(struct nlp_transformer_cache *c);

/* y [1, B, D] (the embedded position t = c->t) -> [1, B, D]; appends to
 * the cache. memory [Ts, B, D], mem_len i32 [B]. */
struct gr_tensor *nlp_transformer_decode_step(
    struct gr_ctx *ctx, const struct nlp_transformer *t, struct gr_tensor *y,
    struct gr_tensor *memory, struct gr_tensor *mem_len,
    struct nlp_transformer_cache *c);

/* Reorders the cache's batch rows: row i becomes old row rows[i] (beam
 * search keeping the best hypotheses). */
int nlp_transformer_cache_select(struct gr_ctx *ctx,
                                 struct nlp_transformer_cache *c,
                                 const int32_t *rows);

void nlp_transformer_free(struct nlp_transformer *t);

/* The FastTrees module of fasttrees.md §7 on x [..., D] with the three
 * position-wise linear maps stacked in w [3D, D], b [3D] (rows F_a, F_b,
 * F_h): A = cumax(F_a x), B = 1 - cumax(F_b x) (cumax over the D features,
 * chunk size 1), G = σ(F_h x) ⊙ (A ⊙ B) + (A - A ⊙ B) -> G ⊙ x. */
struct gr_tensor *nlp_fasttrees_gate(struct gr_ctx *ctx, struct gr_tensor *x,
                                     struct gr_tensor *w, struct gr_tensor *b);

#endif
