/* kernels/attention.h — attention and the other Transformer pieces of the
 * kernel layer: multi-head scaled dot-product attention (key-padding and
 * causal masks, an additive bias that may take a gradient, attention
 * dropout), label-smoothed cross entropy, sinusoidal and learned positions,
 * and two layers built from them (multi-head attention in PyTorch's
 * nn.MultiheadAttention layout, the position-wise feed-forward network).
 * Layer norm is gr_layer_norm (kernels/ops.h).
 *
 * The ops follow kernels/ops.h: outputs in the step arena, recorded on the
 * tape when an input takes a gradient, NULL on failure with the first error
 * kept in the context (gr_ctx_error), forward and backward on CPU and CUDA
 * with one semantics. Layers follow kernels/layers.h: parameters are named
 * tensors "<prefix>.<name>" in the persistent arena, initial weights drawn
 * on the host from (seed, stream ^ fnv1a(name)).
 *
 * Shapes (letters of kernels/README.md, plus H = heads, dk / dv = per-head
 * widths): sequences are time-major, q [Tq, B, H·dk], k [Tk, B, H·dk],
 * v [Tk, B, H·dv], and the heads are the consecutive dk-wide column blocks
 * of the last dimension (PyTorch's split of embed_dim). No transposes are
 * made: the products read the heads in place.
 *
 * Memory: gr_attention keeps, between forward and backward, only its output
 * and one float per (b, h, query) (the log-sum-exp of the row); the score
 * matrix is never stored for the backward. It is computed in chunks of
 * query rows (all heads of a batch group at once when they fit) inside a
 * scratch budget (gr_attention_set_scratch), and recomputed chunk by chunk
 * in the backward. So what a step keeps grows linearly in T; the transient
 * scratch of one call is at most 2 x the budget (or 2·Tk floats when one
 * row exceeds it).
 *
 * Threads: as kernels/tensor.h (one thread per context); the scratch budget
 * is per thread.
 *
 *   struct gr_mha att;
 *   gr_mha_init(&att, ctx, "enc.0.attn", 256, 4, gr_rng_make(seed, 7));
 *   struct gr_tensor *pos = gr_positions_sinusoidal(ctx, T, 256, 0);
 *   struct gr_tensor *h = gr_add(ctx, x, pos);              // [T, B, 256]
 *   struct gr_tensor *y = gr_mha_forward(ctx, &att, h, h, NULL, lengths, 0,
 *                                        0.1f, rng);        // [T, B, 256]
 *   loss = gr_cross_entropy_smoothed(ctx, logits, targets, -1, 0.1f);
 */
#ifndef GROVE_KERNELS_ATTENTION_H
#define GROVE_KERNELS_ATTENTION_H

#include <stdint.h>

#include "kernels/rng.h"
#include "kernels/tensor.h"

/* ---- ops ---- */

/* Multi-head scaled dot-product attention.
 *   q [Tq, B, H·dk], k [Tk, B, H·dk], v [Tk, B, H·dv], heads = H
 *   -> [Tq, B, H·dv], out[i, b, h] = Σ_j P[b,h,i,j] v[j, b, h], with
 *   P[b,h,i,:] = softmax_j(q[i,b,h]·k[j,b,h] / √dk + bias[b,h,i,j])
 * over the keys j not masked:
 *   key_len: NULL or i32 [B], values in [0, Tk]: keys j >= key_len[b] are
 *            padding (a key-padding mask);
 *   causal:  non-zero: key j is masked for query i when j > i + (Tk - Tq)
 *            (with Tq = Tk: a position sees itself and the past);
 *   bias:    NULL or f32 broadcasting (aligned right) to [B, H, Tq, Tk];
 *            added to the scaled scores; -INFINITY excludes an entry. It
 *            takes a gradient when it requires one (a learned structural
 *            bias); an excluded entry gives it zero.
 * A query whose keys are all masked gives a zero output row (and zero
 * gradient), like gr_softmax. dropout in [0, 1): attention dropout on P
 * (inverted, element (b·H + h, i, j) kept iff gr_rng_keep(key, (((b·H + h)·
 * Tq + i)·Tk + j), p), the same bits on CPU and CUDA; 0 at evaluation).
 * q, k, v and bias are differentiated; key_len is not. */
struct gr_tensor *gr_attention(struct gr_ctx *ctx, struct gr_tensor *q,
                               struct gr_tensor *k, struct gr_tensor *v,
                               int heads, struct gr_tensor *bias,
                               struct gr_tensor *key_len, int causal,
                               float dropout, struct gr_rng rng);

/* Gated sigmoid attention (StructFormer, udgn.md §7): the same shapes and
 * head layout as gr_attention, but the weights are not a softmax:
 *   out[i, b, h] = Σ_j P[b,h,i,j] v[j, b, h],
 *   P[b,h,i,j] = σ(q[i,b,h]·k[j,b,h] / √dk) · gate[b,h,i,j] · keep(j),
 * keep(j) = 0 for keys j >= key_len[b] (NULL: every key kept), else 1;
 * rows are not normalised. gate: f32 broadcasting (aligned right) to
 * [B, H, Tq, Tk] (a dependency mask per head), differentiated when it
 * requires a gradient. dropout in [0, 1) on P as gr_attention (element
 * (b·H + h, i, j), inverted). q, k, v and gate are differentiated.
 * Composed from the ops of kernels/ops.h (batched GEMMs over B·H, sigmoid,
 * products), so it runs and differentiates on both devices; it keeps
 * O(B·H·Tq·Tk) floats between forward and backward (not fused). */
struct gr_tensor *gr_attention_gated(struct gr_ctx *ctx, struct gr_tensor *q,
                                     struct gr_tensor *k, struct gr_tensor *v,
                                     int heads, struct gr_tensor *gate,
                                     struct gr_tensor *key_len, float dropout,
                                     struct gr_rng rng);

/* The scratch budget of gr_attention in floats per buffer (default 2^22,
 * 16 MiB; at least Tk floats are used whatever it says). Per thread; for
 * tests and for trading memory against fewer, larger products. Returns the
 * previous value. */
int64_t gr_attention_set_scratch(int64_t floats);

/* The fused CUDA path of gr_attention (the default since its parity test
 * passed on an H100; kernels/README.md): one kernel per direction in the
 * manner of FlashAttention-2 (fp32): tiles of 32 queries against tiles of
 * 32 keys with an online softmax, the backward recomputing P from q, k and the
 * log-sum-exp, dK and dV per key tile and dQ per query tile (no atomics,
 * deterministic). It keeps the same O(T) per head as the composition and
 * needs no scratch for scores. It serves a call on CUDA without a bias,
 * without dropout and with dk, dv <= 128; every other call, and every call
 * on the CPU, runs the chunked composition. On by default; off when the
 * environment has GROVE_ATTN_FUSED=0 (read once per process).
 * gr_attention_set_fused(1 | 0) turns it on or off for the calling thread
 * whatever the environment says, -1 returns to the environment's choice;
 * returns the previous setting (-1, 0 or 1). */
int gr_attention_set_fused(int mode);

/* How many forwards and backwards of gr_attention the fused path has run
 * on the calling thread (for tests that must know it served them). */
int64_t gr_attention_fused_runs(void);

/* Label-smoothed mean cross entropy (PyTorch's
 * F.cross_entropy(label_smoothing = eps)): logits [N, V], targets [N] i32
 * in [0, V) or ignore_index -> scalar, the mean over the rows not ignored
 * of  lse - (1 - eps)·x[target] - eps·mean_v x[v]  (the cross entropy
 * against the target distribution (1 - eps)·onehot + eps/V). eps in
 * [0, 1); eps = 0 is gr_cross_entropy. */
struct gr_tensor *gr_cross_entropy_smoothed(struct gr_ctx *ctx,
                                            struct gr_tensor *logits,
                                            struct gr_tensor *targets,
                                            int32_t ignore_index, float eps);

/* Sinusoidal positions of Vaswani et al. (2017): a constant [T, 1, D]
 * (broadcasts over the batch of a [T, B, D] sequence) with
 *   P[t, 2i] = sin((t + offset) / 10000^(2i/D)),
 *   P[t, 2i+1] = cos((t + offset) / 10000^(2i/D)).
 * Computed on the host in double, then copied; no gradient. */
struct gr_tensor *gr_positions_sinusoidal(struct gr_ctx *ctx, int64_t t,
                                          int64_t d, int64_t offset);

/* Learned positions: rows [offset, offset + T) of table [MAXT, D] as
 * [T, 1, D] (a differentiable slice). An error naming MAXT when the
 * sequence is longer than the table. */
struct gr_tensor *gr_positions_learned(struct gr_ctx *ctx,
                                       struct gr_tensor *table, int64_t t,
                                       int64_t offset);

/* ---- layers ---- */

/* Multi-head attention with PyTorch's nn.MultiheadAttention parameters:
 * <prefix>.in_proj_weight [3D, D] (rows: q, k, v), <prefix>.in_proj_bias
 * [3D], <prefix>.out_proj.weight [D, D], <prefix>.out_proj.bias [D];
 * initialised as PyTorch does (Xavier-uniform in_proj, out_proj weight
 * U(-1/√D, 1/√D), biases 0). D must be a multiple of heads. */
struct gr_mha {
    struct gr_tensor *in_w, *in_b, *out_w, *out_b;
    int d, heads;
};

int gr_mha_init(struct gr_mha *m, struct gr_ctx *ctx, const char *prefix,
                int d, int heads, struct gr_rng rng);

/* xq [Tq, B, D], xkv [Tk, B, D] (the same tensor for self-attention: then
 * one product makes q, k and v) -> [Tq, B, D]. Masks, bias and dropout as
 * gr_attention. */
struct gr_tensor *gr_mha_forward(struct gr_ctx *ctx, const struct gr_mha *m,
                                 struct gr_tensor *xq, struct gr_tensor *xkv,
                                 struct gr_tensor *bias,
                                 struct gr_tensor *key_len, int causal,
                                 float dropout, struct gr_rng rng);

/* Position-wise feed-forward network: linear D -> F, ReLU, dropout,
 * linear F -> D. Parameters <prefix>.linear1.{weight,bias} [F, D], [F] and
 * <prefix>.linear2.{weight,bias} [D, F], [D] (PyTorch's
 * TransformerEncoderLayer names), PyTorch's Linear initialisation.
 * neg_slope (0 after gr_ffn_init: ReLU) > 0 makes the activation a
 * LeakyReLU max(h, neg_slope·h) (udgn.md §7's MLM layers use 0.01). */
struct gr_ffn {
    struct gr_tensor *w1, *b1, *w2, *b2;
    int d, f;
    float neg_slope;
};

int gr_ffn_init(struct gr_ffn *m, struct gr_ctx *ctx, const char *prefix,
                int d, int f, struct gr_rng rng);

/* x [..., D] -> [..., D]; dropout between the two linears (0: none). */
struct gr_tensor *gr_ffn_forward(struct gr_ctx *ctx, const struct gr_ffn *m,
                                 struct gr_tensor *x, float dropout,
                                 struct gr_rng rng);

#endif
