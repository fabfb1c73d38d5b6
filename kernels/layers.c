/* Layers composed from ops: linear, MLP, LSTM, ON-LSTM, DropConnect. */
#include "kernels/layers.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "core/hash.h"
#include "kernels/internal.h"
#include "kernels/tape.h"

int gr_init_uniform(struct gr_tensor *t, float lo, float hi,
                    struct gr_rng rng)
{
    uint64_t h = t->name ? gr_fnv1a64(t->name, strlen(t->name)) : 0;
    return gr_tensor_rand_uniform(t, lo, hi,
                                  gr_rng_make(rng.seed, rng.stream ^ h));
}

struct gr_tensor *gr_layer_param(struct gr_ctx *ctx, const char *prefix,
                                 const char *part, struct gr_shape s)
{
    char name[300];
    if (snprintf(name, sizeof name, "%s.%s", prefix, part) >=
        (int)sizeof name) {
        return gr_fail(ctx, GR_EINVAL, "parameter prefix '%s' is too long",
                       prefix);
    }
    return gr_param_new(ctx, name, s);
}

int gr_layer_init_u(struct gr_tensor *t, float bound, struct gr_rng rng)
{
    return gr_init_uniform(t, -bound, bound, rng);
}

/* ---- linear, MLP ---- */

int gr_linear_init(struct gr_linear_layer *l, struct gr_ctx *ctx,
                   const char *prefix, int in, int out, int with_bias,
                   struct gr_rng rng)
{
    memset(l, 0, sizeof *l);
    if (in < 1 || out < 1) {
        return gr_error(GR_EINVAL, "linear '%s': sizes %d -> %d must be >= 1",
                        prefix, in, out);
    }
    l->in = in;
    l->out = out;
    float bound = 1.0f / sqrtf((float)in);
    l->weight = gr_layer_param(ctx, prefix, "weight", gr_shape2(out, in));
    if (!l->weight || gr_layer_init_u(l->weight, bound, rng) < 0) {
        return gr_error_wrap(GR_EINVAL, "linear '%s'", prefix);
    }
    if (with_bias) {
        l->bias = gr_layer_param(ctx, prefix, "bias", gr_shape1(out));
        if (!l->bias || gr_layer_init_u(l->bias, bound, rng) < 0) {
            return gr_error_wrap(GR_EINVAL, "linear '%s'", prefix);
        }
    }
    return 0;
}

struct gr_tensor *gr_linear_forward(struct gr_ctx *ctx,
                                    const struct gr_linear_layer *l,
                                    struct gr_tensor *x)
{
    return gr_linear(ctx, x, l->weight, l->bias);
}

struct gr_tensor *gr_activate(struct gr_ctx *ctx, struct gr_tensor *x,
                              enum gr_activation act)
{
    switch (act) {
    case GR_ACT_TANH:
        return gr_tanh(ctx, x);
    case GR_ACT_RELU:
        return gr_relu(ctx, x);
    case GR_ACT_SIGMOID:
        return gr_sigmoid(ctx, x);
    case GR_ACT_ELU:
        return gr_elu(ctx, x);
    default:
        return x;
    }
}

int gr_mlp_init(struct gr_mlp *m, struct gr_ctx *ctx, const char *prefix,
                int n_layers, const int *sizes, enum gr_activation act,
                int act_last, struct gr_rng rng)
{
    memset(m, 0, sizeof *m);
    if (n_layers < 1 || n_layers > GR_MLP_MAX_LAYERS) {
        return gr_error(GR_EINVAL, "mlp '%s': %d layers (1 to %d)", prefix,
                        n_layers, GR_MLP_MAX_LAYERS);
    }
    m->n_layers = n_layers;
    m->act = act;
    m->act_last = act_last;
    for (int i = 0; i < n_layers; i++) {
        char p[300];
        snprintf(p, sizeof p, "%s.%d", prefix, i);
        int rc = gr_linear_init(&m->layers[i], ctx, p, sizes[i], sizes[i + 1],
                                1, rng);
        if (rc < 0) {
            return rc;
        }
    }
    return 0;
}

struct gr_tensor *gr_mlp_forward(struct gr_ctx *ctx, const struct gr_mlp *m,
                                 struct gr_tensor *x)
{
    for (int i = 0; i < m->n_layers; i++) {
        x = gr_linear_forward(ctx, &m->layers[i], x);
        if (i + 1 < m->n_layers || m->act_last) {
            x = gr_activate(ctx, x, m->act);
        }
    }
    return x;
}

/* ---- recurrent layers ---- */

int gr_rnn_check_seq(struct gr_ctx *ctx, const char *what,
                     struct gr_tensor *x, int in, int hidden,
                     struct gr_tensor *h0, struct gr_tensor *c0,
                     struct gr_tensor *w_hh, int64_t rows)
{
    if (!x) {
        return gr_fail_code(ctx, ctx->status ? ctx->status : GR_EINVAL,
                            "%s: x is NULL", what);
    }
    char s[96];
    gr_tensor_shape_str(x, s, sizeof s);
    if (x->ndim != 3 || x->shape[2] != in) {
        return gr_fail_code(ctx, GR_EINVAL, "%s: x %s must be [T, B, %d]",
                            what, s, in);
    }
    int64_t b = x->shape[1];
    struct gr_tensor *st[2] = {h0, c0};
    for (int i = 0; i < 2; i++) {
        if (st[i] && (st[i]->ndim != 2 || st[i]->shape[0] != b ||
                      st[i]->shape[1] != hidden)) {
            gr_tensor_shape_str(st[i], s, sizeof s);
            return gr_fail_code(ctx, GR_EINVAL, "%s: %s %s must be [%lld, %d]",
                                what, i ? "c0" : "h0", s, (long long)b,
                                hidden);
        }
    }
    if (w_hh && (w_hh->ndim != 2 || w_hh->shape[0] != rows ||
                 w_hh->shape[1] != hidden)) {
        gr_tensor_shape_str(w_hh, s, sizeof s);
        return gr_fail_code(ctx, GR_EINVAL, "%s: w_hh %s must be [%lld, %d]",
                            what, s, (long long)rows, hidden);
    }
    return 0;
}

int gr_lstm_init(struct gr_lstm *l, struct gr_ctx *ctx, const char *prefix,
                 int in, int hidden, struct gr_rng rng)
{
    memset(l, 0, sizeof *l);
    if (in < 1 || hidden < 1) {
        return gr_error(GR_EINVAL, "lstm '%s': sizes %d -> %d must be >= 1",
                        prefix, in, hidden);
    }
    l->in = in;
    l->hidden = hidden;
    float bound = 1.0f / sqrtf((float)hidden);
    int64_t g = 4 * (int64_t)hidden;
    l->w_ih = gr_layer_param(ctx, prefix, "weight_ih", gr_shape2(g, in));
    l->w_hh = l->w_ih ? gr_layer_param(ctx, prefix, "weight_hh",
                                  gr_shape2(g, hidden))
                      : NULL;
    l->b_ih = l->w_hh ? gr_layer_param(ctx, prefix, "bias_ih", gr_shape1(g))
                      : NULL;
    l->b_hh = l->b_ih ? gr_layer_param(ctx, prefix, "bias_hh", gr_shape1(g))
                      : NULL;
    if (!l->b_hh || gr_layer_init_u(l->w_ih, bound, rng) < 0 ||
        gr_layer_init_u(l->w_hh, bound, rng) < 0 ||
        gr_layer_init_u(l->b_ih, bound, rng) < 0 ||
        gr_layer_init_u(l->b_hh, bound, rng) < 0) {
        return gr_error_wrap(GR_EINVAL, "lstm '%s'", prefix);
    }
    return 0;
}

int gr_lstm_forward(struct gr_ctx *ctx, const struct gr_lstm *l,
                    struct gr_tensor *x, struct gr_tensor *h0,
                    struct gr_tensor *c0, struct gr_tensor *w_hh,
                    struct gr_rnn_out *out)
{
    memset(out, 0, sizeof *out);
    int rc = gr_rnn_check_seq(ctx, "gr_lstm_forward", x, l->in, l->hidden,
                              h0, c0, w_hh, 4 * (int64_t)l->hidden);
    if (rc < 0) {
        return rc;
    }
    /* One node for the window: the input side as one GEMM over T·B rows,
     * the hidden side per step, weight gradients as single GEMMs
     * (kernels/rnn.c). */
    return gr_rnn_seq(ctx, GR_RNN_LSTM, 1, x, l->w_ih, l->b_ih,
                      w_hh ? w_hh : l->w_hh, l->b_hh, h0, c0, out);
}

int gr_onlstm_init(struct gr_onlstm *l, struct gr_ctx *ctx,
                   const char *prefix, int in, int hidden, int chunk,
                   struct gr_rng rng)
{
    memset(l, 0, sizeof *l);
    if (in < 1 || hidden < 1 || chunk < 1 || hidden % chunk != 0) {
        return gr_error(GR_EINVAL, "onlstm '%s': hidden size %d must be a "
                        "positive multiple of the chunk size %d (input %d)",
                        prefix, hidden, chunk, in);
    }
    l->in = in;
    l->hidden = hidden;
    l->chunk = chunk;
    l->n_chunks = hidden / chunk;
    int64_t g = 2 * (int64_t)l->n_chunks + 4 * (int64_t)hidden;
    l->w_ih = gr_layer_param(ctx, prefix, "ih.0.weight", gr_shape2(g, in));
    l->b_ih = l->w_ih ? gr_layer_param(ctx, prefix, "ih.0.bias", gr_shape1(g))
                      : NULL;
    l->w_hh = l->b_ih ? gr_layer_param(ctx, prefix, "hh.weight",
                                  gr_shape2(g, hidden))
                      : NULL;
    l->b_hh = l->w_hh ? gr_layer_param(ctx, prefix, "hh.bias", gr_shape1(g))
                      : NULL;
    float bi = 1.0f / sqrtf((float)in), bh = 1.0f / sqrtf((float)hidden);
    if (!l->b_hh || gr_layer_init_u(l->w_ih, bi, rng) < 0 ||
        gr_layer_init_u(l->b_ih, bi, rng) < 0 ||
        gr_layer_init_u(l->w_hh, bh, rng) < 0 ||
        gr_layer_init_u(l->b_hh, bh, rng) < 0) {
        return gr_error_wrap(GR_EINVAL, "onlstm '%s'", prefix);
    }
    return 0;
}

int gr_onlstm_forward(struct gr_ctx *ctx, const struct gr_onlstm *l,
                      struct gr_tensor *x, struct gr_tensor *h0,
                      struct gr_tensor *c0, struct gr_tensor *w_hh,
                      struct gr_rnn_out *out)
{
    memset(out, 0, sizeof *out);
    int64_t rows = 4 * (int64_t)l->hidden;
    if (!l->master_from_x) {
        rows += 2 * (int64_t)l->n_chunks;
    }
    int rc = gr_rnn_check_seq(ctx, l->master_from_x ? "gr_ft_forward"
                                                     : "gr_onlstm_forward",
                              x, l->in, l->hidden, h0, c0, w_hh, rows);
    if (rc < 0) {
        return rc;
    }
    return gr_rnn_seq(ctx, l->master_from_x ? GR_RNN_FT : GR_RNN_ONLSTM,
                      l->chunk, x, l->w_ih, l->b_ih,
                      w_hh ? w_hh : l->w_hh, l->b_hh, h0, c0, out);
}

struct gr_tensor *gr_dropconnect(struct gr_ctx *ctx, struct gr_tensor *w,
                                 float p, enum gr_wdrop_mode mode,
                                 int training, struct gr_rng rng)
{
    if (!w) {
        return gr_fail(ctx, ctx->status ? ctx->status : GR_EINVAL,
                       "gr_dropconnect: w is NULL");
    }
    if (!(p >= 0.0f && p < 1.0f)) {
        return gr_fail(ctx, GR_EINVAL, "gr_dropconnect: p = %g outside [0, 1)",
                       (double)p);
    }
    if (p == 0.0f) {
        return w;
    }
    if (mode == GR_WDROP_ONLSTM) {
        if (training) {
            return gr_dropout_mask(ctx, w, p, rng, gr_tensor_shape(w),
                                   GR_DROPOUT_NO_RESCALE);
        }
        return gr_scale(ctx, w, 1.0f - p);
    }
    return training ? gr_dropout(ctx, w, p, rng) : w;
}
