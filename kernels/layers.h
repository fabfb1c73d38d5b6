/* kernels/layers.h — layers built from the ops: linear, MLP, LSTM, ON-LSTM.
 *
 * A layer is a small struct of parameter pointers (owned by the context's
 * persistent arena, named "<prefix>.<part>") plus sizes. init creates and
 * initialises its parameters; forward composes ops of kernels/ops.h, so it
 * runs on either device and is differentiated by the tape. Initial weights
 * are drawn with kernels/rng.h from (rng.seed, stream = rng.stream mixed
 * with the FNV-1a hash of the parameter's name): they do not depend on the
 * order layers are created in, and are the same bits on CPU and CUDA.
 *
 * Sequences are time-major: x [T, B, IN] -> y [T, B, H]. The input-side
 * product of a recurrent layer is one GEMM over all T·B rows; only the
 * hidden-side product and the fused cell (gr_lstm_cell, gr_onlstm_cell)
 * run per step.
 *
 * Errors: 0 or a negative GR_E* code (core/error.h), or NULL tensors with
 * the context's sticky error (kernels/ops.h). One thread per context.
 *
 *   struct gr_onlstm rnn;
 *   if (gr_onlstm_init(&rnn, ctx, "rnn.cells.0", 400, 1150, 10,
 *                      gr_rng_make(seed, 0)) < 0) return -1;
 *   struct gr_rnn_out o;
 *   struct gr_tensor *u = gr_dropconnect(ctx, rnn.w_hh, 0.45f,
 *                                        GR_WDROP_ONLSTM, training, r);
 *   gr_onlstm_forward(ctx, &rnn, x, h0, c0, u, &o);   // o.y [T, B, H]
 */
#ifndef GROVE_KERNELS_LAYERS_H
#define GROVE_KERNELS_LAYERS_H

#include "kernels/ops.h"
#include "kernels/rng.h"
#include "kernels/tensor.h"

/* Parameter init from the layer's rng and the parameter name: element i
 * of `t` = U(lo, hi) from gr_rng_make(rng.seed, rng.stream ^ fnv1a(name)). */
int gr_init_uniform(struct gr_tensor *t, float lo, float hi,
                    struct gr_rng rng);

/* ---- Linear ---- */

struct gr_linear_layer {
    struct gr_tensor *weight; /* [OUT, IN], "<prefix>.weight" */
    struct gr_tensor *bias;   /* [OUT], "<prefix>.bias", or NULL */
    int in, out;
};

/* PyTorch's init: weight and bias U(-1/sqrt(IN), 1/sqrt(IN)). */
int gr_linear_init(struct gr_linear_layer *l, struct gr_ctx *ctx,
                   const char *prefix, int in, int out, int with_bias,
                   struct gr_rng rng);

/* x [..., IN] -> [..., OUT]. */
struct gr_tensor *gr_linear_forward(struct gr_ctx *ctx,
                                    const struct gr_linear_layer *l,
                                    struct gr_tensor *x);

/* ---- MLP ---- */

enum gr_activation {
    GR_ACT_NONE = 0,
    GR_ACT_TANH,
    GR_ACT_RELU,
    GR_ACT_SIGMOID,
    GR_ACT_ELU,
};

/* act(x) for an activation enum (GR_ACT_NONE returns x). */
struct gr_tensor *gr_activate(struct gr_ctx *ctx, struct gr_tensor *x,
                              enum gr_activation act);

#define GR_MLP_MAX_LAYERS 8

struct gr_mlp {
    int n_layers;
    struct gr_linear_layer layers[GR_MLP_MAX_LAYERS]; /* "<prefix>.<i>" */
    enum gr_activation act; /* after every layer but the last */
    int act_last;           /* 1: also after the last layer */
};

/* sizes[0] = input, sizes[i+1] = output of layer i (n_layers + 1 ints). */
int gr_mlp_init(struct gr_mlp *m, struct gr_ctx *ctx, const char *prefix,
                int n_layers, const int *sizes, enum gr_activation act,
                int act_last, struct gr_rng rng);

/* x [..., sizes[0]] -> [..., sizes[n_layers]]. */
struct gr_tensor *gr_mlp_forward(struct gr_ctx *ctx, const struct gr_mlp *m,
                                 struct gr_tensor *x);

/* ---- recurrent layers ---- */

/* What a recurrent forward returns (step tensors). */
struct gr_rnn_out {
    struct gr_tensor *y;  /* [T, B, H] outputs h_1..h_T */
    struct gr_tensor *h;  /* [B, H] last hidden state */
    struct gr_tensor *c;  /* [B, H] last cell state */
    struct gr_tensor *df; /* ON-LSTM: [T, B] forget distances, else NULL */
    struct gr_tensor *di; /* ON-LSTM: [T, B] input distances, else NULL */
};

/* PyTorch nn.LSTM (one layer, one direction), gate order i, f, g, o. */
struct gr_lstm {
    struct gr_tensor *w_ih; /* [4H, IN]  "<prefix>.weight_ih" */
    struct gr_tensor *w_hh; /* [4H, H]   "<prefix>.weight_hh" */
    struct gr_tensor *b_ih; /* [4H]      "<prefix>.bias_ih" */
    struct gr_tensor *b_hh; /* [4H]      "<prefix>.bias_hh" */
    int in, hidden;
};

/* PyTorch's init: everything U(-1/sqrt(H), 1/sqrt(H)). */
int gr_lstm_init(struct gr_lstm *l, struct gr_ctx *ctx, const char *prefix,
                 int in, int hidden, struct gr_rng rng);

/* x [T, B, IN]; h0, c0 [B, H] or NULL (zeros); w_hh: the hidden-to-hidden
 * weight to use ([4H, H], for DropConnect) or NULL for l->w_hh. */
int gr_lstm_forward(struct gr_ctx *ctx, const struct gr_lstm *l,
                    struct gr_tensor *x, struct gr_tensor *h0,
                    struct gr_tensor *c0, struct gr_tensor *w_hh,
                    struct gr_rnn_out *out);

/* ON-LSTM layer (on_lstm.md §3-§5), n = H / C chunks, rows of the weights
 * in the reference layout (master-input, master-forget, o, c, i, f). */
struct gr_onlstm {
    struct gr_tensor *w_ih; /* [2n+4H, IN] "<prefix>.ih.0.weight" */
    struct gr_tensor *b_ih; /* [2n+4H]     "<prefix>.ih.0.bias" */
    struct gr_tensor *w_hh; /* [2n+4H, H]  "<prefix>.hh.weight" */
    struct gr_tensor *b_hh; /* [2n+4H]     "<prefix>.hh.bias" */
    int in, hidden, chunk, n_chunks;
    /* FastTrees (kernels/fasttrees.h, gr_ft_init): master gates from x
     * only; w_hh [4H, H] and b_hh [4H] feed the ordinary gates. */
    int master_from_x;
};

/* GR_EINVAL naming the sizes unless hidden is a positive multiple of
 * chunk. Init: ih U(±1/sqrt(IN)), hh U(±1/sqrt(H)) (on_lstm.md §4). With
 * prefix "rnn.cells.<l>" the names are the reference's state-dict keys. */
int gr_onlstm_init(struct gr_onlstm *l, struct gr_ctx *ctx,
                   const char *prefix, int in, int hidden, int chunk,
                   struct gr_rng rng);

/* As gr_lstm_forward; out->df and out->di hold the distances. */
int gr_onlstm_forward(struct gr_ctx *ctx, const struct gr_onlstm *l,
                      struct gr_tensor *x, struct gr_tensor *h0,
                      struct gr_tensor *c0, struct gr_tensor *w_hh,
                      struct gr_rnn_out *out);

/* ---- DropConnect on a hidden-to-hidden weight ---- */

enum gr_wdrop_mode {
    /* ON-LSTM (on_lstm.md §6.4): training: Bernoulli mask, dropped -> 0,
     * kept weights NOT rescaled; evaluation: w · (1 - p). */
    GR_WDROP_ONLSTM = 0,
    /* AWD-LSTM WeightDrop: training: inverted dropout (kept · 1/(1-p));
     * evaluation: w unchanged. */
    GR_WDROP_AWD = 1,
};

/* The weight to pass as w_hh for one forward call (one mask per call,
 * shared by all steps and batch elements). p = 0 returns w. */
struct gr_tensor *gr_dropconnect(struct gr_ctx *ctx, struct gr_tensor *w,
                                 float p, enum gr_wdrop_mode mode,
                                 int training, struct gr_rng rng);

#endif
