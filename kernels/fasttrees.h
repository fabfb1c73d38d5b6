/* kernels/fasttrees.h — the FastTrees cells (fasttrees.md §2-§4) and the
 * linear scan that Faster FastTrees' recurrence reduces to.
 *
 * Three layers, all with the ON-LSTM update (on_lstm.md §3, the gate
 * layout [ẑ_i (n) | ẑ_f (n) | o | ĉ | i | f] in the rows of the input map):
 *
 * - FastTrees (FT): master gates f̃, ĩ from x_t only. It is a struct
 *   gr_onlstm with master_from_x set (kernels/layers.h): w_hh [4H, H] and
 *   b_hh [4H] reach the ordinary gates only; gr_onlstm_forward runs it
 *   through the same fused window as the ON-LSTM (kernels/rnn.c): the input
 *   product, which holds every master gate of the window, is one GEMM over
 *   T·B rows; per step only the 4H-row hidden product and the fused cell.
 * - Conv. FastTrees (CFT): the first 2n input features go through
 *   Conv1d(2n -> 2n, kernel 2, dilation 2) + ReLU + dropout 0.2 and replace
 *   themselves; then FastTrees. conv_axis GR_CONV_TIME (grove's default):
 *   causal over time, y_t = W_0 m_{t-2} + W_1 m_t + b, with the last 2
 *   input rows of the previous window carried in (gr_cft_forward's
 *   prev/next). GR_CONV_BATCH_COMPAT: the reference's convolution along
 *   the batch axis (y_b = W_0 m_{b-1} + W_1 m_{b+1} + b, §3.2's defect),
 *   for parity with the published model only.
 * - Faster FastTrees (FFT): every gate from x_t, no recurrent weight at
 *   all (none is allocated). The gates of a window are one GEMM and one
 *   fused op over T·B rows (gr_fft_gates: cumax, sigmoids, tanh and the
 *   ON-LSTM combination in one pass, forward and backward); the recurrence
 *   is gr_linear_scan: c_t = f̂_t ⊙ c_{t-1} + î_t ⊙ ĉ_t, then
 *   h_t = o_t ⊙ tanh(c_t). GROVE_FFT_UNFUSED=1 in the environment (or
 *   struct gr_fft's path) runs the gates as the composition of about
 *   twenty element-wise ops instead, the numbers equal to rounding.
 *
 * Parameter names follow the reference's state dict ("<prefix>.ih.0.weight",
 * "ih.0.bias", "hh.weight", "hh.bias"; CFT adds "conv.weight" [2n, 2n, 2]
 * and "conv.bias" [2n]). Init: ih U(±1/√IN), hh U(±1/√H); the conv weight
 * N(0, 0.01²), its bias U(±1/√(2n·2)) (PyTorch's Conv1d default).
 *
 * Memory, threads, errors: as kernels/layers.h (parameters in the
 * context's persistent arena; step tensors until gr_step_reset; one thread
 * per context; 0 or a negative GR_E* code, message in gr_last_error()).
 *
 *   struct gr_fft l;
 *   gr_fft_init(&l, ctx, "rnn.cells.0", 400, 1150, 10, gr_rng_make(seed, 0));
 *   struct gr_rnn_out o;
 *   gr_fft_forward(ctx, &l, x, c0, &o);      // o.y [T, B, H], o.df [T, B]
 */
#ifndef GROVE_KERNELS_FASTTREES_H
#define GROVE_KERNELS_FASTTREES_H

#include <stdint.h>

#include "kernels/layers.h"
#include "kernels/ops.h"
#include "kernels/rng.h"
#include "kernels/tensor.h"

/* The linear recurrence over dimension 0: a, b [T, ...] (same shape, f32),
 * c0 [...] (a's shape without dimension 0) or NULL (zeros) -> c [T, ...],
 * c_t = a_t ⊙ c_{t-1} + b_t. Differentiated in a, b and c0. CPU: one
 * vectorised pass per step; CUDA: a parallel prefix scan over T. */
struct gr_tensor *gr_linear_scan(struct gr_ctx *ctx, struct gr_tensor *a,
                                 struct gr_tensor *b, struct gr_tensor *c0);

/* ---- FastTrees ---- */

/* A FastTrees layer in a struct gr_onlstm (master_from_x = 1): w_ih
 * [2n+4H, IN], b_ih [2n+4H], w_hh [4H, H], b_hh [4H]. Run it with
 * gr_onlstm_forward (w_hh argument: [4H, H]). GR_EINVAL unless hidden is a
 * positive multiple of chunk. */
int gr_ft_init(struct gr_onlstm *l, struct gr_ctx *ctx, const char *prefix,
               int in, int hidden, int chunk, struct gr_rng rng);

/* ---- Conv. FastTrees ---- */

enum gr_conv_axis {
    GR_CONV_TIME = 0,         /* causal over time (grove's default) */
    GR_CONV_BATCH_COMPAT = 1, /* the reference's batch-axis convolution */
};

/* "time" / "batch_compat", and the parser (GR_EINVAL naming the text). */
const char *gr_conv_axis_name(enum gr_conv_axis axis);
int gr_conv_axis_parse(const char *text, enum gr_conv_axis *out);

#define GR_CFT_KERNEL 2
#define GR_CFT_DILATION 2
/* Input rows of context a time-axis window needs: (kernel-1)·dilation. */
#define GR_CFT_CONTEXT ((GR_CFT_KERNEL - 1) * GR_CFT_DILATION)

struct gr_cft {
    struct gr_onlstm ft;      /* the FastTrees layer on the convolved input */
    struct gr_tensor *conv_w; /* [2n, 2n, 2] "<prefix>.conv.weight" */
    struct gr_tensor *conv_b; /* [2n]        "<prefix>.conv.bias" */
    enum gr_conv_axis axis;
    float conv_dropout; /* 0.2: ordinary dropout on the conv output */
};

/* GR_EINVAL unless hidden is a multiple of chunk and in >= 2n (the
 * convolution reads the first 2n input features). */
int gr_cft_init(struct gr_cft *l, struct gr_ctx *ctx, const char *prefix,
                int in, int hidden, int chunk, enum gr_conv_axis axis,
                struct gr_rng rng);

/* x [T, B, IN]; prev [GR_CFT_CONTEXT, B, 2n]: the last convolution inputs
 * of the previous window (time axis; NULL: zeros, the start of a stream;
 * ignored for batch_compat); h0, c0, w_hh as gr_onlstm_forward; training:
 * dropout on the conv output with a mask from rng. *next_out (may be
 * NULL) receives the rows to carry into the next window, [GR_CFT_CONTEXT,
 * B, 2n] (not differentiated; NULL for batch_compat). */
int gr_cft_forward(struct gr_ctx *ctx, const struct gr_cft *l,
                   struct gr_tensor *x, struct gr_tensor *prev,
                   struct gr_tensor *h0, struct gr_tensor *c0,
                   struct gr_tensor *w_hh, int training, struct gr_rng rng,
                   struct gr_rnn_out *out, struct gr_tensor **next_out);

/* ---- Faster FastTrees ---- */

/* The gates of Faster FastTrees from their pre-activations, one op (one
 * tape node) over all rows: z [..., 2n+4H] (the input GEMM's output, the
 * layout [ẑ_i | ẑ_f | o | ĉ | i | f], n = hidden / chunk) ->
 *   a  = f̂ = σ(f) ⊙ ω + (f̃ − ω)        [..., H]  the scan's coefficient
 *   b  = î ⊙ ĉ, î = σ(i) ⊙ ω + (ĩ − ω)  [..., H]  the scan's input
 *   o  = σ(z_o)                          [..., H]  for h = o ⊙ tanh(c)
 *   df = 1 − mean f̃, di = mean ĩ         [...]     (not differentiated)
 * with f̃ = cumax(ẑ_f), ĩ = 1 − cumax(ẑ_i), ĉ = tanh(z_ĉ), ω = f̃ ⊙ ĩ
 * per chunk. Differentiated in z through a, b and o. Saved for the
 * backward: the master gates and their softmaxes (4n floats per row); the
 * backward recomputes σ(i), σ(f), tanh(ĉ) from z. 0 or GR_EINVAL (shape,
 * sizes) / GR_EUNSUPPORTED, with the context's sticky error. */
struct gr_fft_gates {
    struct gr_tensor *a, *b, *o, *df, *di;
};
int gr_fft_gates(struct gr_ctx *ctx, struct gr_tensor *z, int hidden,
                 int chunk, struct gr_fft_gates *out);

/* Which gates gr_fft_forward runs; both give the same numbers to
 * rounding. */
enum gr_fft_path {
    GR_FFT_PATH_ENV = 0, /* fused unless GROVE_FFT_UNFUSED is set (not ""
                            or "0"), read at every forward; init's choice */
    GR_FFT_PATH_FUSED,   /* gr_fft_gates */
    GR_FFT_PATH_UNFUSED, /* the composition of ops (cumax, affine, mean,
                            sigmoid, tanh, mul, sub, add) */
};

/* 1 when GROVE_FFT_UNFUSED is set to anything but "" or "0". */
int gr_fft_unfused_env(void);

struct gr_fft {
    struct gr_tensor *w_ih; /* [2n+4H, IN] "<prefix>.ih.0.weight" */
    struct gr_tensor *b_ih; /* [2n+4H]     "<prefix>.ih.0.bias" */
    int in, hidden, chunk, n_chunks;
    enum gr_fft_path path; /* GR_FFT_PATH_ENV after gr_fft_init */
};

int gr_fft_init(struct gr_fft *l, struct gr_ctx *ctx, const char *prefix,
                int in, int hidden, int chunk, struct gr_rng rng);

/* x [T, B, IN], c0 [B, H] or NULL (zeros); there is no h0 (no gate reads
 * h_{t-1}). Fills out like gr_onlstm_forward (y, h, c, df, di). */
int gr_fft_forward(struct gr_ctx *ctx, const struct gr_fft *l,
                   struct gr_tensor *x, struct gr_tensor *c0,
                   struct gr_rnn_out *out);

#endif
