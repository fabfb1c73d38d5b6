/* nlp/models/structformer.h — StructFormer (Shen et al., ACL 2021), the
 * masked-language-model baseline of udgn.md §7: a syntactic-distance and
 * height parser whose parent distribution gates the sigmoid self-attention
 * of a pre-norm Transformer (kernels/attention.h gr_attention_gated).
 *
 * Forward (udgn.md §7; dropout only when `training`):
 *   parser  g⁰ = E[x]; for each parser layer: zero the padded rows,
 *           g = tanh(LN'(Conv₉(g))) (width-`conv` "same" convolution, LN'
 *           without gain/bias); height η_i = w_η·tanh(LN'(W g_i + c)) + c_η
 *           (−1e9 at padding); distance δ_i = w_δ·tanh(LN'(Conv₂(g)_i)) +
 *           c_δ over positions i, i+1 (+1e9 at the last real token and at
 *           padding); calibration δ −= μ, μ the largest margin over the
 *           whole batch (differentiated through its arg-max entry, as
 *           PyTorch's max is), or over each sentence with
 *           sentence_calibration.
 *   parents γ(i,k) = σ(−(δ_k − η_i)·e^θ₀), the span distributions pL, pR
 *           by cumulative minima, B(i,l,r) = pL·pR, span heads Hd(l,r,k) =
 *           softmax_{k∈[l,r]}(η_k·e^θ₁), Par(i,k) = Σ_{l,r} B·Hd with a zero
 *           diagonal (O(B·T³) floats: two [B, T, T, T] tensors per step);
 *           the gate of layer λ, head h: ω₀·Par + ω₁·Parᵀ, ω = softmax(ρ_λh).
 *   layers  x = drop(E[x] (+ learned positions)); per layer
 *           x += drop(W_o·Att(LN₁x)), Att = gr_attention_gated with the gate;
 *           x += drop(W₂·drop(LeakyReLU(W₁·LN₂x + c₁)) + c₂);
 *           z = drop(LN(x)); logits = z Eᵀ + c_out (tied to E).
 *
 * Tensors are time-major as the rest of nlp/: ids [T, B] i32 with right
 * padding (ids[t, b] for t >= lengths[b] are ignored; the pad id is not
 * needed), lengths on the host. The parser's outputs are batch-major:
 * distance, height [B, T], head [B, T, T] with head[b, i, k] = P(k is the
 * parent of i).
 *
 * Parameters, under `prefix` (gr_param_count(ctx, prefix) counts them):
 *   emb.weight [V, d] U(±0.1) (tied output), output_bias [V] 0 (not with
 *   encoder_only),
 *   pos_emb.weight [P, d] U(±0.1) (when pos_emb = P > 0),
 *   parser.layers.L.{weight [d, d, conv], bias [d]},
 *   parser.distance.conv.{weight [d, d, 2], bias}, parser.distance.out.
 *   {weight [1, d], bias [1]}, parser.height.linear.{weight [d, d], bias},
 *   parser.height.out.{weight [1, d], bias [1]}, parser.size [2] (θ, 0),
 *   rel_weight [L, H, 2] N(0, 0.1²),
 *   layers.L.self_attn.{in_proj_weight [3d, d], in_proj_bias [3d],
 *   out_proj.weight [d, d], out_proj.bias [d]}, layers.L.linear1/linear2.
 *   {weight, bias}, layers.L.norm1/norm2.{weight, bias} (norm_affine),
 *   norm.{weight, bias}.
 * Weights Xavier-uniform (in_proj per q, k, v block), biases 0.
 *
 * Errors: init and forward return 0 or a negative code with the message
 * in gr_last_error() / the context. One thread per context.
 *
 *   struct nlp_structformer_config c = nlp_structformer_config_default(V);
 *   struct nlp_structformer m;
 *   nlp_structformer_init(&m, ctx, "sf", &c, gr_rng_make(seed, 11));
 *   struct nlp_structformer_out o;
 *   nlp_structformer_forward(ctx, &m, ids, lengths, rows, 1, rng, &o);
 *   loss = gr_cross_entropy(ctx, o.logits, targets, -1);
 *   nlp_structformer_free(&m);
 */
#ifndef GROVE_NLP_MODELS_STRUCTFORMER_H
#define GROVE_NLP_MODELS_STRUCTFORMER_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/rng.h"
#include "kernels/tensor.h"

struct nlp_structformer_config {
    int32_t vocab;
    int d, layers, heads, ffn;
    int parser_layers, conv; /* parser depth, convolution width (odd) */
    float dropout;           /* embeddings, residuals, FFN, final states */
    float dropout_attn;      /* on the gated attention weights */
    float parser_dropout;    /* the UDGN copy's dropout on the parser's
                                input and after each parser layer (0:
                                google-research's, none) */
    int pos_emb;             /* learned absolute positions (table size), 0:
                                none */
    int norm_affine;         /* 1: the layers' LayerNorms have gain/bias
                                (google-research); 0: not (the UDGN copy) */
    /* The two below are not in the config text: the MLM leaves both 0;
     * the classifier's encoder row (nlp/models/sf_encoder.c) sets both. */
    int sentence_calibration; /* 1: the calibration shift μ per sentence
                                 (the max over that sentence's margins), so
                                 that a sentence's parse does not depend on
                                 its batch; 0: one μ over the whole batch
                                 (udgn.md §7, the reference) */
    int encoder_only;        /* 1: no output_bias (the model as an encoder;
                                logits, if asked for, have no bias) */
};

/* google-research's defaults at vocabulary V: d 512, 8 layers, 8 heads,
 * ffn 2048, 3 parser layers, conv 9, dropout 0.1, dropatt 0, positions
 * 500, affine norms. */
struct nlp_structformer_config nlp_structformer_config_default(int32_t vocab);

/* The config as "sf-KEY VALUE" lines appended to out[cap] at *len (for a
 * checkpoint's config text), and back: parse starts from `c` as given
 * (defaults) and overwrites the fields it finds; a malformed value is
 * GR_EINVAL naming the key and `what` (the file). */
int nlp_structformer_config_format(const struct nlp_structformer_config *c,
                                   char *out, size_t cap, int *len);
int nlp_structformer_config_parse(const char *text, const char *what,
                                  struct nlp_structformer_config *c);

struct nlp_structformer_layer {
    struct gr_tensor *in_w, *in_b, *out_w, *out_b;
    struct gr_tensor *w1, *b1, *w2, *b2;
    struct gr_tensor *n1w, *n1b, *n2w, *n2b; /* NULL without norm_affine */
};

struct nlp_structformer {
    struct nlp_structformer_config cfg;
    struct gr_tensor *emb, *out_bias, *pos;
    struct gr_tensor **pconv_w, **pconv_b;   /* parser_layers each */
    struct gr_tensor *dconv_w, *dconv_b, *dout_w, *dout_b;
    struct gr_tensor *hlin_w, *hlin_b, *hout_w, *hout_b;
    struct gr_tensor *size;                  /* θ [2] */
    struct gr_tensor *rel;                   /* ρ [L, H, 2] */
    struct nlp_structformer_layer *layer;    /* cfg.layers */
    struct gr_tensor *nw, *nb;               /* final norm */
};

int nlp_structformer_init(struct nlp_structformer *m, struct gr_ctx *ctx,
                          const char *prefix,
                          const struct nlp_structformer_config *c,
                          struct gr_rng rng);

void nlp_structformer_free(struct nlp_structformer *m);

/* What a forward gives (step tensors, on the tape when training). */
struct nlp_structformer_out {
    struct gr_tensor *logits;   /* [T, B, V], or [N, V] for `rows` */
    struct gr_tensor *hidden;   /* [T, B, d]: LN(x) of the last layer */
    struct gr_tensor *distance; /* [B, T] calibrated δ */
    struct gr_tensor *height;   /* [B, T] η */
    struct gr_tensor *head;     /* [B, T, T] Par: head[b,i,k] = P(k heads i) */
};

/* The parser alone (no dropout): distance, height, head; logits and hidden
 * NULL. For parsing evaluation (one sentence at a time reproduces the
 * reference's decoding: the calibration spans the batch). */
int nlp_structformer_parse(struct gr_ctx *ctx,
                           const struct nlp_structformer *m,
                           struct gr_tensor *ids, const int32_t *lengths,
                           struct nlp_structformer_out *out);

/* The whole model. rows: NULL (logits for every position, [T, B, V]) or
 * i32 [N] of flat positions t·B + b (the masked tokens: logits [N, V],
 * saving the output product elsewhere). 0 or a negative code. */
int nlp_structformer_forward(struct gr_ctx *ctx,
                             const struct nlp_structformer *m,
                             struct gr_tensor *ids, const int32_t *lengths,
                             struct gr_tensor *rows, int training,
                             struct gr_rng rng,
                             struct nlp_structformer_out *out);

/* One transformer layer on x [T, B, d] with its gate [B, H, T, T] (for the
 * fixture test and for a caller's own stacks). */
struct gr_tensor *nlp_structformer_layer_forward(
    struct gr_ctx *ctx, const struct nlp_structformer *m, int l,
    struct gr_tensor *x, struct gr_tensor *gate, struct gr_tensor *key_len,
    int training, struct gr_rng rng);

/* The per-layer gates from Par [B, T, T]: [B, L·H, T, T] (layer λ's heads
 * are rows λ·H .. λ·H + H - 1 of dimension 1). */
struct gr_tensor *nlp_structformer_gates(struct gr_ctx *ctx,
                                         const struct nlp_structformer *m,
                                         struct gr_tensor *head);

/* StructFormer's own tree decoding of one sentence of n tokens: the token
 * of largest height is the root (heads[r] = r, grove's convention of
 * nlp/data/deptree.h), every other token's head is argmax_k par[i·stride +
 * k] over k < n, k != i. par: the sentence's rows of `head` on the host;
 * height [n]. */
void nlp_structformer_decode(const float *par, int64_t stride,
                             const float *height, int32_t n,
                             int32_t *heads);

/* ---- the classifier row (nlp/models/sf_encoder.c, model "structformer") */

struct nlp_encoder;

/* The calibrated distances δ of the row's last evaluation-mode encode
 * (training encodes keep none): *d [B, T] batch-major (host, owned by the
 * encoder, valid until its next encode or free), δ[b, i] scoring the gap
 * after token i (+1e9 after the last real token). Its constituency tree:
 * nlp_parse_gaps (nlp/tasks/parse.h) over δ[b, 0 .. len_b - 1). GR_EINVAL
 * before such an encode or for another model. */
int nlp_sf_encoder_distances(struct nlp_encoder *e, const float **d,
                             int32_t *T, int32_t *B);

#endif
