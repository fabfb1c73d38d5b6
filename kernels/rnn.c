/* The fused recurrent sequence behind gr_lstm_forward and
 * gr_onlstm_forward: one tape node for a whole [T, B, IN] window.
 *
 * Forward: G = (b_ih + b_hh) + X W_ih^T as ONE product over all T·B rows,
 * then per step only G_t += h_{t-1} U^T (one GEMM into the gates buffer)
 * and the fused cell, writing h_t straight into y[t] and c_t into C[t].
 * Backward: one sweep from t = T-1 down to 0 keeps every step's gate
 * gradient dG_t (it is needed anyway for dh_{t-1} = dG_t U), per step
 * only that product (overwriting dh) and the fused cell backward, which
 * adds ∂L/∂y_t and ∂L/∂C_{t-1} itself (no copy or clear); the weight
 * and bias gradients then come from single products over all steps:
 * dU += dG[1..T-1]^T y[0..T-2] (+ dG_0^T h0), dW_ih += dG^T X,
 * dX += dG W_ih, db_ih = db_hh += Σ_rows dG.
 *
 * It is written only with entries of the device table (gemm, rows_set,
 * copy2d, reduce, zero, d2d and the fused cells), so CPU and CUDA run the
 * same composition. The result equals the op-by-op composition (select,
 * linear, add, cell, stack) up to float rounding: the two biases are summed
 * first and the hidden product is accumulated onto the input product. */
#include <string.h>

#include "core/error.h"
#include "kernels/internal.h"
#include "kernels/layers.h"

static float *F(const struct gr_tensor *t)
{
    return t ? (float *)t->data : NULL;
}

/* Gate columns per row: 4H (LSTM) or 2n + 4H (ON-LSTM, FastTrees). */
static int64_t gate_width(int cell, int64_t hd, int64_t chunk)
{
    return cell != GR_RNN_LSTM ? 2 * (hd / chunk) + 4 * hd : 4 * hd;
}

/* First gate column the hidden product (u, b_hh) reaches: 2n for
 * FastTrees (its master gates see x only), 0 otherwise. */
static int64_t hidden_offset(int cell, int64_t hd, int64_t chunk)
{
    return cell == GR_RNN_FT ? 2 * (hd / chunk) : 0;
}

/* Layout of the node: in = {x, w_ih, b_ih, u, b_hh, h0 (or NULL), c0 (a
 * zero tensor when none was given)}, out = {y [T, B, H], C [T, B, H]},
 * aux = {act [T, B, 5H], save [T, B, 4n] (ON-LSTM)},
 * i = {T, B, IN, H, chunk, cell}. */
enum { IN_X, IN_WIH, IN_BIH, IN_U, IN_BHH, IN_H0, IN_C0, IN_N };

static int rnn_seq_bwd(struct gr_ctx *ctx, struct gr_node *nd)
{
    const struct gr_backend *be = ctx->be;
    void *st = ctx->st;
    struct gr_tensor *x = nd->in[IN_X], *wih = nd->in[IN_WIH];
    struct gr_tensor *u = nd->in[IN_U], *h0 = nd->in[IN_H0];
    struct gr_tensor *c0 = nd->in[IN_C0];
    struct gr_tensor *y = nd->out[0], *cs = nd->out[1];
    int64_t t_len = nd->i[0], b = nd->i[1], in = nd->i[2], hd = nd->i[3];
    int64_t chunk = nd->i[4];
    int cell = (int)nd->i[5];
    int64_t w = gate_width(cell, hd, chunk);
    int64_t bh = b * hd, bw = b * w, nc = cell != GR_RNN_LSTM ? hd / chunk
                                                                 : 0;
    int64_t uo = hidden_offset(cell, hd, chunk), uw = w - uo;
    const float *act = nd->aux[0], *save = nd->aux[1];
    const float *gy = y->grad ? F(y->grad) : NULL;
    const float *gcs = cs->grad ? F(cs->grad) : NULL;
    float *gx = gr_grad_buf(ctx, x);
    float *gw = gr_grad_buf(ctx, wih);
    float *gbi = gr_grad_buf(ctx, nd->in[IN_BIH]);
    float *gu = gr_grad_buf(ctx, u);
    float *gbh = gr_grad_buf(ctx, nd->in[IN_BHH]);
    float *gh0 = h0 ? gr_grad_buf(ctx, h0) : NULL;
    float *gc0 = gr_grad_buf(ctx, c0);
    float *dg = gr_step_floats(ctx, t_len * bw);
    float *dh = gr_step_floats(ctx, bh);
    float *dc = gr_step_floats(ctx, bh);
    float *dn = gr_step_floats(ctx, bh);
    float *scratch = nc ? gr_step_floats(ctx, b * 2 * nc) : NULL;
    if (ctx->status < 0 || !dg || !dh || !dc || !dn ||
        (nc && !scratch)) {
        return ctx->status < 0 ? ctx->status : GR_ENOMEM;
    }
    /* The cell kernels accumulate into the gate gradient. */
    CALLB(be->zero(st, dg, (size_t)(t_len * bw) * sizeof(float)));
    const float *yd = F(y), *cd = F(cs), *ud = F(u);
    /* Per step one product and one cell launch, no copy or clear: the
     * product overwrites dh with dG_{t+1} U (none at the last step), the
     * cell adds ∂L/∂y_t itself, reads dc_t (at the last step straight from
     * ∂L/∂C, or none) and writes dc_{t-1} = ∂L/∂C_{t-1} + dc_t·f into the
     * other of two buffers (at t = 0 it accumulates into c0's gradient). */
    const float *gct = gcs ? gcs + (t_len - 1) * bh : NULL;
    for (int64_t t = t_len - 1; t >= 0; t--) {
        float *dgt = dg + t * bw;
        const float *ght = gy ? gy + t * bh : NULL;
        const float *grec = NULL;
        if (t + 1 < t_len) {
            CALLB(be->gemm(st, 0, 0, (int)b, (int)hd, (int)uw, 1.0f,
                           dgt + bw + uo, (int)w, 0, ud, (int)hd, 0, 0.0f,
                           dh, (int)hd, 0, 1));
            grec = dh;
        }
        float *gprev = t > 0 ? dn : gc0;
        const float *gprev_in = t > 0 ? (gcs ? gcs + (t - 1) * bh : NULL)
                                      : gc0;
        const float *cprev = t > 0 ? cd + (t - 1) * bh : F(c0);
        if (cell != GR_RNN_LSTM) {
            CALLB(be->onlstm_bwd(st, cprev, save + t * b * 4 * nc,
                                 act + t * b * 5 * hd, ght, grec, gct, dgt,
                                 gprev_in, gprev, scratch, b, hd, chunk));
        } else {
            CALLB(be->lstm_bwd(st, act + t * b * 5 * hd, cprev, ght, grec,
                               gct, dgt, gprev_in, gprev, b, hd));
        }
        gct = dn;
        float *tmp = dc;
        dc = dn;
        dn = tmp;
    }
    if (gh0) {
        CALLB(be->gemm(st, 0, 0, (int)b, (int)hd, (int)uw, 1.0f, dg + uo,
                       (int)w, 0, ud, (int)hd, 0, 1.0f, gh0, (int)hd, 0, 1));
    }
    if (gu) {
        /* dU += Σ_t dG_t^T h_{t-1}: h_{t-1} = y[t-1] for t >= 1, h0 at 0. */
        if (t_len > 1) {
            CALLB(be->gemm(st, 1, 0, (int)uw, (int)hd,
                           (int)((t_len - 1) * b), 1.0f, dg + bw + uo, (int)w,
                           0, yd, (int)hd, 0, 1.0f, gu, (int)hd, 0, 1));
        }
        if (h0) {
            CALLB(be->gemm(st, 1, 0, (int)uw, (int)hd, (int)b, 1.0f,
                           dg + uo, (int)w, 0, F(h0), (int)hd, 0, 1.0f, gu,
                           (int)hd, 0, 1));
        }
    }
    int rows = (int)(t_len * b);
    if (gw) {
        CALLB(be->gemm(st, 1, 0, (int)w, (int)in, rows, 1.0f, dg, (int)w, 0,
                       F(x), (int)in, 0, 1.0f, gw, (int)in, 0, 1));
    }
    if (gx) {
        CALLB(be->gemm(st, 0, 0, rows, (int)in, (int)w, 1.0f, dg, (int)w, 0,
                       F(wih), (int)in, 0, 1.0f, gx, (int)in, 0, 1));
    }
    /* Both biases get Σ_rows dG (b_hh only its columns uo..): reduce
     * once, add to each. */
    if ((gbi && gbh) || (gbh && uo > 0)) {
        float *db = gr_step_floats(ctx, w);
        if (!db) {
            return ctx->status;
        }
        CALLB(be->reduce(st, dg, db, 1, rows, w, 1.0f, 0));
        if (gbi) {
            CALLB(be->copy2d(st, gbi, w, db, w, 1, w, 1));
        }
        CALLB(be->copy2d(st, gbh, uw, db + uo, uw, 1, uw, 1));
    } else if (gbi || gbh) {
        CALLB(be->reduce(st, dg, gbi ? gbi : gbh, 1, rows, w, 1.0f, 1));
    }
    return 0;
}

int gr_rnn_seq(struct gr_ctx *ctx, int cell, int chunk, struct gr_tensor *x,
               struct gr_tensor *w_ih, struct gr_tensor *b_ih,
               struct gr_tensor *u, struct gr_tensor *b_hh,
               struct gr_tensor *h0, struct gr_tensor *c0,
               struct gr_rnn_out *out)
{
    const char *op = cell == GR_RNN_ONLSTM ? "gr_onlstm_forward"
                     : cell == GR_RNN_FT   ? "gr_ft_forward"
                                           : "gr_lstm_forward";
    const struct gr_backend *be = ctx->be;
    void *st = ctx->st;
    int64_t t_len = x->shape[0], b = x->shape[1], in = x->shape[2];
    int64_t hd = u->shape[1];
    int64_t ck = cell != GR_RNN_LSTM ? chunk : 1;
    int64_t w = gate_width(cell, hd, ck), nc = hd / ck;
    int64_t uo = hidden_offset(cell, hd, ck), uw = w - uo;
    int64_t bh = b * hd, bw = b * w;
    if (t_len * b * w > INT32_MAX || t_len * b > INT32_MAX) {
        return gr_fail_code(ctx, GR_EINVAL, "%s: T·B·gates = %lld too large",
                            op, (long long)(t_len * b * w));
    }
    int have_cell = cell != GR_RNN_LSTM ? be->onlstm_fwd && be->onlstm_bwd
                                          : be->lstm_fwd && be->lstm_bwd;
    GR_NEED_DEVICE(have_cell && be->gemm && be->rows_set && be->copy2d &&
                       be->reduce,
                   gr_fail_code);
    if (!c0) {
        c0 = gr_zeros(ctx, gr_shape2(b, hd));
        if (!c0) {
            return ctx->status;
        }
    }
    struct gr_tensor *in_t[IN_N] = {x, w_ih, b_ih, u, b_hh, h0, c0};
    int rec = 0;
    if (ctx->grad_enabled && ctx->n_tape >= 0) {
        for (int i = 0; i < IN_N; i++) {
            rec |= in_t[i] && in_t[i]->requires_grad;
        }
    }
    /* Without a record only one step's saved activations are kept. */
    int64_t keep = rec ? t_len : 1;
    struct gr_tensor *y = gr_new_step(ctx, GR_F32, gr_shape3(t_len, b, hd), 0);
    struct gr_tensor *cs =
        y ? gr_new_step(ctx, GR_F32, gr_shape3(t_len, b, hd), 0) : NULL;
    float *act = cs ? gr_step_floats(ctx, keep * b * 5 * hd) : NULL;
    float *save = NULL;
    struct gr_tensor *df = NULL, *di = NULL;
    if (act && cell != GR_RNN_LSTM) {
        save = gr_step_floats(ctx, keep * b * 4 * nc);
        df = save ? gr_new_step(ctx, GR_F32, gr_shape2(t_len, b), 0) : NULL;
        di = df ? gr_new_step(ctx, GR_F32, gr_shape2(t_len, b), 0) : NULL;
    }
    float *bias = act ? gr_step_floats(ctx, w) : NULL;
    float *g = bias ? gr_step_floats(ctx, t_len * bw) : NULL;
    if (!g || (cell != GR_RNN_LSTM && !di)) {
        return ctx->status ? ctx->status : GR_ENOMEM;
    }
    /* G = (b_ih + b_hh) + X W_ih^T: one product over all T·B rows (for
     * FastTrees this is already every master gate of the window). */
    CALLB(be->d2d(st, bias, F(b_ih), (size_t)w * sizeof(float)));
    CALLB(be->copy2d(st, bias + uo, uw, F(b_hh), uw, 1, uw, 1));
    CALLB(be->rows_set(st, g, bias, t_len * b, w));
    CALLB(be->gemm(st, 0, 1, (int)(t_len * b), (int)w, (int)in, 1.0f, F(x),
                   (int)in, 0, F(w_ih), (int)in, 0, 1.0f, g, (int)w, 0, 1));
    float *yd = F(y), *cd = F(cs);
    for (int64_t t = 0; t < t_len; t++) {
        float *gt = g + t * bw;
        const float *hprev = t > 0 ? yd + (t - 1) * bh : F(h0);
        if (hprev) {
            CALLB(be->gemm(st, 0, 1, (int)b, (int)uw, (int)hd, 1.0f, hprev,
                           (int)hd, 0, F(u), (int)hd, 0, 1.0f, gt + uo,
                           (int)w, 0, 1));
        }
        const float *cprev = t > 0 ? cd + (t - 1) * bh : F(c0);
        int64_t k = rec ? t : 0;
        if (cell != GR_RNN_LSTM) {
            CALLB(be->onlstm_fwd(st, gt, cprev, yd + t * bh, cd + t * bh,
                                 F(df) + t * b, F(di) + t * b,
                                 save + k * b * 4 * nc, act + k * b * 5 * hd,
                                 b, hd, ck));
        } else {
            CALLB(be->lstm_fwd(st, gt, cprev, yd + t * bh, cd + t * bh,
                               act + k * b * 5 * hd, b, hd));
        }
    }
    if (rec) {
        struct gr_node *nd = gr_tape_push(ctx, op, rnn_seq_bwd, IN_N, in_t);
        if (!nd) {
            return ctx->status;
        }
        nd->out[0] = y;
        nd->out[1] = cs;
        nd->n_out = 2;
        y->requires_grad = 1;
        cs->requires_grad = 1;
        y->node_ = ctx->n_tape - 1;
        cs->node_ = y->node_;
        nd->aux[0] = act;
        nd->aux[1] = save;
        nd->i[0] = t_len;
        nd->i[1] = b;
        nd->i[2] = in;
        nd->i[3] = hd;
        nd->i[4] = ck;
        nd->i[5] = cell;
    }
    out->y = y;
    out->h = gr_select(ctx, y, t_len - 1);
    out->c = gr_select(ctx, cs, t_len - 1);
    out->df = df;
    out->di = di;
    return (out->h && out->c) ? 0 : ctx->status;
}
