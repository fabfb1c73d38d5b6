/* kernels/ops.h — the op library: every op has a forward and a backward,
 * on CPU and on CUDA, with one semantics.
 *
 * An op takes its context and input tensors, allocates its output in the
 * step arena, computes it on the context's device, and, when any input
 * requires a gradient (and gradients are enabled, kernels/tape.h), records
 * itself on the tape so that gr_backward can differentiate it. Outputs are
 * new tensors; no op writes into its inputs. Matrix products go to CBLAS on
 * CPU and cuBLAS on CUDA. Every op exists on both devices; an op a device
 * lacks would be GR_EUNSUPPORTED naming op and device, never a silent
 * fallback.
 *
 * Errors: an op returns NULL on failure (bad shapes, wrong dtype, index out
 * of range, tensors of another context, arena or device failure) and keeps
 * the first failure in the context (gr_ctx_status / gr_ctx_error); an op
 * given a NULL input returns NULL without a new message. So a model is
 * straight-line code checked once:
 *
 *   struct gr_tensor *h = gr_tanh(ctx, gr_linear(ctx, x, w1, b1));
 *   struct gr_tensor *loss = gr_cross_entropy(ctx,
 *                               gr_linear(ctx, h, w2, b2), y, -1);
 *   if (!loss) { fprintf(stderr, "%s\n", gr_ctx_error(ctx)); return -1; }
 *   gr_backward(ctx, loss);
 *
 * Messages name the op, the argument and the shapes:
 * "gr_matmul: inner dimensions differ: a [3, 4] vs b [5, 2]".
 *
 * Shapes: letters as in kernels/README.md. "[..., D]" means any leading
 * dimensions (0 to 3 of them). Sequences are time-major: [T, B, D].
 * Broadcasting (add, sub, mul, masks): b's shape, aligned to the right of
 * a's, has each dimension equal to a's or 1; the result has a's shape.
 * Negative `dim` arguments count from the end (-1 is the last).
 *
 * Memory and threads: as kernels/tensor.h (outputs live until
 * gr_step_reset; one thread per context).
 */
#ifndef GROVE_KERNELS_OPS_H
#define GROVE_KERNELS_OPS_H

#include <stdint.h>

#include "kernels/rng.h"
#include "kernels/tensor.h"

/* ---- matrix products ---- */

/* C = op(A) op(B), op = transpose when trans_* is set.
 * 2-D: a [M, K] (trans_a: [K, M]), b [K, N] (trans_b: [N, K]) -> [M, N].
 * Batched: a [..., M, K] with 1 or 2 leading dimensions L, b either
 * [..., K, N] with the same leading dimensions or 2-D (shared by the
 * batch) -> [..., M, N]. */
struct gr_tensor *gr_matmul(struct gr_ctx *ctx, struct gr_tensor *a,
                            struct gr_tensor *b, int trans_a, int trans_b);

/* y = x wᵀ + bias, PyTorch's Linear: x [..., IN], w [OUT, IN], bias [OUT]
 * or NULL -> [..., OUT]. One GEMM over all leading dimensions. */
struct gr_tensor *gr_linear(struct gr_ctx *ctx, struct gr_tensor *x,
                            struct gr_tensor *w, struct gr_tensor *bias);

/* ---- element-wise ---- */

/* a + b, a - b, a * b; b broadcasts to a (see above) -> a's shape. */
struct gr_tensor *gr_add(struct gr_ctx *ctx, struct gr_tensor *a,
                         struct gr_tensor *b);
struct gr_tensor *gr_sub(struct gr_ctx *ctx, struct gr_tensor *a,
                         struct gr_tensor *b);
struct gr_tensor *gr_mul(struct gr_ctx *ctx, struct gr_tensor *a,
                         struct gr_tensor *b);

/* a / b (b broadcasts to a; b = 0 gives inf/nan as IEEE). */
struct gr_tensor *gr_div(struct gr_ctx *ctx, struct gr_tensor *a,
                         struct gr_tensor *b);

/* Element-wise min(a, b) / max(a, b) (b broadcasts to a); on ties the
 * gradient goes to a. */
struct gr_tensor *gr_minimum(struct gr_ctx *ctx, struct gr_tensor *a,
                             struct gr_tensor *b);
struct gr_tensor *gr_maximum(struct gr_ctx *ctx, struct gr_tensor *a,
                             struct gr_tensor *b);

/* s * x. */
struct gr_tensor *gr_scale(struct gr_ctx *ctx, struct gr_tensor *x, float s);

/* s * x + c (for example 1 - x is gr_affine(ctx, x, -1, 1)). */
struct gr_tensor *gr_affine(struct gr_ctx *ctx, struct gr_tensor *x, float s,
                            float c);

/* Same shape as x. log, sqrt: x > 0 expected (as libm otherwise). elu:
 * x if x > 0 else exp(x) - 1 (alpha 1). square: x². relu'(0) = 0,
 * abs'(0) = 0. */
struct gr_tensor *gr_sigmoid(struct gr_ctx *ctx, struct gr_tensor *x);
struct gr_tensor *gr_tanh(struct gr_ctx *ctx, struct gr_tensor *x);
struct gr_tensor *gr_relu(struct gr_ctx *ctx, struct gr_tensor *x);
struct gr_tensor *gr_elu(struct gr_ctx *ctx, struct gr_tensor *x);
struct gr_tensor *gr_exp(struct gr_ctx *ctx, struct gr_tensor *x);
struct gr_tensor *gr_log(struct gr_ctx *ctx, struct gr_tensor *x);
struct gr_tensor *gr_abs(struct gr_ctx *ctx, struct gr_tensor *x);
struct gr_tensor *gr_square(struct gr_ctx *ctx, struct gr_tensor *x);
struct gr_tensor *gr_sqrt(struct gr_ctx *ctx, struct gr_tensor *x);

/* min(max(x, lo), hi); the gradient passes where lo <= x <= hi (as
 * torch.clamp; PPO's ratio clipping). */
struct gr_tensor *gr_clamp(struct gr_ctx *ctx, struct gr_tensor *x, float lo,
                           float hi);

/* The same values with no gradient flowing back (stop-gradient); no copy. */
struct gr_tensor *gr_detach(struct gr_ctx *ctx, struct gr_tensor *x);

/* ---- over the last dimension ---- */

/* softmax(x + mask) over the last dimension. mask: NULL or f32
 * broadcasting to x (a [T, T] causal mask, a [B, 1, T] padding mask), not
 * differentiated; use -INFINITY (or a large negative number) to exclude.
 * A row with every entry excluded gives zeros (and zero gradient). */
struct gr_tensor *gr_softmax(struct gr_ctx *ctx, struct gr_tensor *x,
                             struct gr_tensor *mask);

/* log(softmax(x + mask)), computed stably; an excluded entry gives -inf,
 * a fully excluded row -inf everywhere (zero gradient). */
struct gr_tensor *gr_log_softmax(struct gr_ctx *ctx, struct gr_tensor *x,
                                 struct gr_tensor *mask);

/* Inclusive cumulative sum over the last dimension (f32 accumulation). */
struct gr_tensor *gr_cumsum(struct gr_ctx *ctx, struct gr_tensor *x);

/* cumax(x) = cumsum(softmax(x)) over the last dimension (on_lstm.md §2),
 * fused, with the fused backward of §2. */
struct gr_tensor *gr_cumax(struct gr_ctx *ctx, struct gr_tensor *x);

/* Layer norm over the last dimension D: (x - mean) / sqrt(var + eps) *
 * gamma + beta, biased variance (PyTorch). gamma, beta: [D] or NULL. */
struct gr_tensor *gr_layer_norm(struct gr_ctx *ctx, struct gr_tensor *x,
                                struct gr_tensor *gamma,
                                struct gr_tensor *beta, float eps);

/* ---- indexing and shape ---- */

/* Row lookup: table [V, D] f32, ids i32 [...] (up to 3 dims) with values
 * in [0, V) -> [..., D]. The backward adds into the rows used only. Also
 * the way to pick rows of any 2-D tensor (last real token per sequence). */
struct gr_tensor *gr_embedding(struct gr_ctx *ctx, struct gr_tensor *table,
                               struct gr_tensor *ids);

/* Sparse rows times a dense table: idx [N, NZ] i32 (values in [0, IN), or
 * -1 for an unused slot), val [N, NZ] f32 or NULL (all ones), table
 * [IN, OUT] -> [N, OUT], y[n] = Σ_j val[n, j] · table[idx[n, j]]. The
 * backward touches only the rows used (and gives val its gradient): the
 * first layer of a policy on a mostly-zero observation, with `table` the
 * transposed weight. */
struct gr_tensor *gr_sparse_matmul(struct gr_ctx *ctx, struct gr_tensor *idx,
                                   struct gr_tensor *val,
                                   struct gr_tensor *table);

/* torch.gather on the last dimension: x [..., N] f32, idx [..., K] i32
 * with the same leading dimensions and values in [0, N) -> [..., K],
 * y[..., k] = x[..., idx[..., k]]. */
struct gr_tensor *gr_gather(struct gr_ctx *ctx, struct gr_tensor *x,
                            struct gr_tensor *idx);

/* Concatenation of n tensors along `dim`; other dimensions equal. */
struct gr_tensor *gr_concat(struct gr_ctx *ctx, int n,
                            struct gr_tensor *const *xs, int dim);

/* n tensors of the same shape stacked along a new dimension 0 -> [n, ...]
 * (outputs of a time loop into [T, B, H]). */
struct gr_tensor *gr_stack(struct gr_ctx *ctx, int n,
                           struct gr_tensor *const *xs);

/* x[..., start:start+len, ...] along `dim` (a copy). */
struct gr_tensor *gr_slice(struct gr_ctx *ctx, struct gr_tensor *x, int dim,
                           int64_t start, int64_t len);

/* Splits x along `dim` into n pieces of sizes[i] (summing to the
 * dimension) written to outs[0..n-1]. Returns 0 or a negative code. */
int gr_split(struct gr_ctx *ctx, struct gr_tensor *x, int dim, int n,
             const int64_t *sizes, struct gr_tensor **outs);

/* x[i] along dimension 0, without copying: a view whose gradient is the
 * matching part of x's (time step t of a [T, B, D] sequence). */
struct gr_tensor *gr_select(struct gr_ctx *ctx, struct gr_tensor *x,
                            int64_t i);

/* The same elements under another shape (same numel), without copying. */
struct gr_tensor *gr_reshape(struct gr_ctx *ctx, struct gr_tensor *x,
                             struct gr_shape shape);

/* x with dimensions dim0 and dim1 swapped (a copy). */
struct gr_tensor *gr_transpose(struct gr_ctx *ctx, struct gr_tensor *x,
                               int dim0, int dim1);

/* ---- reductions ---- */

/* Sum / mean of every element -> a scalar (ndim 0). */
struct gr_tensor *gr_sum(struct gr_ctx *ctx, struct gr_tensor *x);
struct gr_tensor *gr_mean(struct gr_ctx *ctx, struct gr_tensor *x);

/* Sum / mean over dimension `dim`, which is removed: [A, N, C] over 1
 * -> [A, C]. */
struct gr_tensor *gr_sum_dim(struct gr_ctx *ctx, struct gr_tensor *x,
                             int dim);
struct gr_tensor *gr_mean_dim(struct gr_ctx *ctx, struct gr_tensor *x,
                              int dim);

/* ---- dropout (training only: at evaluation simply do not call) ---- */

enum {
    /* Keep the kept elements as they are instead of scaling them by
     * 1/(1-p) (ON-LSTM's DropConnect, on_lstm.md §6.4). */
    GR_DROPOUT_NO_RESCALE = 1,
};

/* The general form: a Bernoulli mask of shape `mask_shape` (each
 * dimension 1 or x's, aligned right; element m kept iff
 * gr_rng_keep(key, m, p), m the row-major index in the mask) broadcast over
 * x; kept elements scaled by 1/(1-p) unless GR_DROPOUT_NO_RESCALE. The mask
 * is recomputed from the key in the backward (never stored) and is the same
 * bits on CPU and CUDA. p in [0, 1); p = 0 returns x. */
struct gr_tensor *gr_dropout_mask(struct gr_ctx *ctx, struct gr_tensor *x,
                                  float p, struct gr_rng rng,
                                  struct gr_shape mask_shape, unsigned flags);

/* Inverted dropout with an independent mask per element. */
struct gr_tensor *gr_dropout(struct gr_ctx *ctx, struct gr_tensor *x,
                             float p, struct gr_rng rng);

/* Locked (variational) dropout: x [T, ...], one mask over the other
 * dimensions shared by every step of dimension 0 (on_lstm.md §6 item 2). */
struct gr_tensor *gr_locked_dropout(struct gr_ctx *ctx, struct gr_tensor *x,
                                    float p, struct gr_rng rng);

/* ---- losses ---- */

/* Mean cross entropy: logits [N, V] f32, targets [N] i32 in [0, V) or
 * equal to ignore_index (those rows count for nothing) -> scalar, the mean
 * of -log softmax(logits)[target] over the rows not ignored (0 when all
 * are). Fused log-softmax + NLL. */
struct gr_tensor *gr_cross_entropy(struct gr_ctx *ctx,
                                   struct gr_tensor *logits,
                                   struct gr_tensor *targets,
                                   int32_t ignore_index);

/* ---- sequences ---- */

/* Causal 1-D convolution over time: x [T, B, CIN], w [COUT, CIN, KW]
 * (PyTorch Conv1d layout), bias [COUT] or NULL, dilation >= 1 ->
 * [T, B, COUT], y_t = bias + Σ_j W[:, :, j] x_{t-(KW-1-j)·dilation}, steps
 * before 0 reading zeros (fasttrees.md §3.3). */
struct gr_tensor *gr_conv1d_causal(struct gr_ctx *ctx, struct gr_tensor *x,
                                   struct gr_tensor *w,
                                   struct gr_tensor *bias, int dilation);

/* ---- fused recurrent cells (the element-wise part of one step) ---- */

/* Ordered Memory's gated sum (ordered_memory.md eq. 3.5.13 inside the
 * LayerNorm): z [R, 4D] = (g_v, g_h, g_c, u) in that order, v, h [R, D] ->
 * σ(g_v)⊙v + σ(g_h)⊙h + σ(g_c)⊙u [R, D]; differentiated in z, v and h.
 * v and h may be the same tensor. */
struct gr_tensor *gr_om_gate(struct gr_ctx *ctx, struct gr_tensor *z,
                             struct gr_tensor *v, struct gr_tensor *h);

/* y = (1 - w)·a + w·b row-wise: a, b [..., D], w the same shape with D
 * replaced by 1 (one weight per row), as one op with one output (the
 * composition affine, mul, mul, add keeps four tensors and four gradients).
 * Ordered Memory's memory update (eq. 3.5.5, w = rcp) and candidate
 * update (eq. 3.5.7, w = cp). Differentiated in a, b and w. */
struct gr_tensor *gr_lerp(struct gr_ctx *ctx, struct gr_tensor *a,
                          struct gr_tensor *b, struct gr_tensor *w);

/* The same with b's rows picked: a [R, D], b [A, D], w [R, 1], idx [R] i32
 * with -1 (y[r] = a[r]) or a row of b, every row of b named exactly once:
 * y[r] = (1 - w[r])·a[r] + w[r]·b[idx[r]]. OM's candidate update when only
 * A of the R rows went through the cell (checked on CPU; on CUDA only the
 * range is checked). */
struct gr_tensor *gr_lerp_rows(struct gr_ctx *ctx, struct gr_tensor *a,
                               struct gr_tensor *b, struct gr_tensor *w,
                               struct gr_tensor *idx);

/* Ordered Memory's whole gated recursive cell (ordered_memory.md eqs
 * 3.5.12-3.5.13) as one op: v, h [R, D] ->
 *   LN( σ(g_v)⊙v + σ(g_h)⊙h + σ(g_c)⊙u ; gamma, beta, eps ),
 *   (g_v, g_h, g_c, u) = z = w2 · drop(ReLU(w1 · drop([v; h]) + b1)) + b2,
 * w1 [4D, 2D], b1 [4D], w2 [4D, 4D], b2 [4D], gamma, beta [D]. Dropout
 * rate p (0: none) with the masks gr_dropout draws over [R, 2D] from
 * rng_in and over [R, 4D] from rng_hid: the same numbers as that
 * composition of ops, with one tape node that keeps only what the backward
 * needs (the dropped input, the hidden activation, z, the gated sum and
 * the LayerNorm statistics: 11·D + 2 floats a row instead of ~22·D plus
 * as many zeroed gradient buffers). v and h may be the same tensor. */
struct gr_tensor *gr_om_cell(struct gr_ctx *ctx, struct gr_tensor *v,
                             struct gr_tensor *h, struct gr_tensor *w1,
                             struct gr_tensor *b1, struct gr_tensor *w2,
                             struct gr_tensor *b2, struct gr_tensor *gamma,
                             struct gr_tensor *beta, float eps, float p,
                             struct gr_rng rng_in, struct gr_rng rng_hid);

/* The weights of gr_om_attend: the key projection W_k [D, D], b_k [D],
 * its LayerNorm (ln_g, ln_b [D]) and the β projection w_β [1, D], b_β [1]. */
struct gr_om_attend_w {
    struct gr_tensor *wk, *bk, *ln_g, *ln_b, *wb, *bb;
};

/* Ordered Memory's attention over slots (ordered_memory.md eqs 3.5.8-
 * 3.5.11 and 3.5.3-3.5.4) as one op: from the previous candidates mh
 * [N, B, D], the query q [B, D] (already LN_q(W_q drop(xt) + b_q)) and the
 * previous pointer p_prev [B, N], the K allowed (slot, row) pairs only:
 *   k = LN(W_k drop(mh[kidx]) + b_k), β = (w_β drop(ReLU(k + q[qidx]))
 *   + b_β) / √D, rows kidx [K] of mh viewed [N·B, D], qidx [K] of q;
 * bpos [B, N] (i32) says where the score of slot i of row b is among the K
 * (each of 0..K-1 exactly once), or -1 where the slot is masked (cut, or a
 * padded row). Then, per row, the softmax of β over the allowed slots,
 * times the mask m_i = c_{i+1} (c = cumsum(p_prev); m_{N-1} = 1), divided
 * by max(Σ, 1e-12): *p_out [B, N]; with its cumulative sums
 * *cp_out[i, b] = Σ_{j<=i} p[b, j] and *rcp_out[i, b] = Σ_{j>=i} p[b, j],
 * both [N, B, 1] (the layout the memory and candidate updates take).
 * A row with no allowed slot gets p = cp = rcp = 0. Dropout rate p_drop (0:
 * none) with the masks gr_dropout draws over [K, D] from rng_key (the
 * gathered candidates) and rng_beta (the ReLU output): the same numbers as
 * the composition in nlp/models/om.c (GROVE_OM_UNFUSED=1), with one tape
 * node and 3·K·D + 3·K + B·(3N + 1) floats of step memory (its backward
 * adds K; the composition takes ~20·K·D). K = 0 (kidx and qidx NULL) is
 * allowed. Gradients reach mh, q, p_prev and the six weights.
 * Returns 0 or a negative code (outputs NULL). */
int gr_om_attend(struct gr_ctx *ctx, struct gr_tensor *mh,
                 struct gr_tensor *q, struct gr_tensor *p_prev,
                 struct gr_tensor *kidx, struct gr_tensor *qidx,
                 struct gr_tensor *bpos, const struct gr_om_attend_w *w,
                 float eps, float p_drop, struct gr_rng rng_key,
                 struct gr_rng rng_beta, struct gr_tensor **p_out,
                 struct gr_tensor **cp_out, struct gr_tensor **rcp_out);

/* LSTM cell, PyTorch gate order: gates [B, 4H] = pre-activations of
 * (i, f, g, o) (x W_ihᵀ + b_ih + h W_hhᵀ + b_hh), c_prev [B, H] ->
 * *c_out = σ(f)⊙c_prev + σ(i)⊙tanh(g), *h_out = σ(o)⊙tanh(c), both [B, H].
 * Returns 0 or a negative code (outputs NULL on failure). */
int gr_lstm_cell(struct gr_ctx *ctx, struct gr_tensor *gates,
                 struct gr_tensor *c_prev, struct gr_tensor **h_out,
                 struct gr_tensor **c_out);

/* ON-LSTM cell (on_lstm.md §3): z [B, 2n+4H] pre-activations in the
 * reference layout (master-input, master-forget, o, c, i, f), c_prev
 * [B, H], chunk size C with H = n·C -> h, c [B, H] and the distances
 * df, di [B] (d^f = 1 - mean_k f̃_k, d^i = mean_k ĩ_k). df and di are not
 * differentiated. Any of df_out, di_out may be NULL. */
int gr_onlstm_cell(struct gr_ctx *ctx, struct gr_tensor *z,
                   struct gr_tensor *c_prev, int chunk,
                   struct gr_tensor **h_out, struct gr_tensor **c_out,
                   struct gr_tensor **df_out, struct gr_tensor **di_out);

#endif
