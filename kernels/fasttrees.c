/* The FastTrees cells and the linear scan (see kernels/fasttrees.h). FT
 * reuses the ON-LSTM's fused window (kernels/rnn.c, cell GR_RNN_FT); CFT
 * composes the causal convolution op with FT; FFT runs its gates as one
 * fused op over all T·B rows (gr_fft_gates; or, with GROVE_FFT_UNFUSED,
 * the composition of ops it replaced) and the recurrence as one scan
 * node. */
#include "kernels/fasttrees.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/hash.h"
#include "kernels/internal.h"

static float *F(const struct gr_tensor *t)
{
    return t ? (float *)t->data : NULL;
}

/* ---- the linear scan ---- */

/* in = {a, b, c0 (or NULL)}, out = {c}; i = {T, lanes}. */
static int scan_bwd(struct gr_ctx *ctx, struct gr_node *nd)
{
    struct gr_tensor *a = nd->in[0], *b = nd->in[1], *c0 = nd->in[2];
    struct gr_tensor *c = nd->out[0];
    int64_t t = nd->i[0], n = nd->i[1];
    float *ga = gr_grad_buf(ctx, a);
    float *gb = gr_grad_buf(ctx, b);
    float *gc0 = c0 ? gr_grad_buf(ctx, c0) : NULL;
    float *d = gr_step_floats(ctx, t * n);
    if (ctx->status < 0 || !d) {
        return ctx->status < 0 ? ctx->status : GR_ENOMEM;
    }
    CALLB(ctx->be->scan_bwd(ctx->st, F(a), F(c), F(c0),
                            c->grad ? F(c->grad) : NULL, d, ga, gb, gc0, t,
                            n));
    return 0;
}

struct gr_tensor *gr_linear_scan(struct gr_ctx *ctx, struct gr_tensor *a,
                                 struct gr_tensor *b, struct gr_tensor *c0)
{
    const char *op = "gr_linear_scan";
    if (!a || !b) {
        return gr_fail(ctx, ctx->status ? ctx->status : GR_EINVAL,
                       "%s: argument '%s' is NULL", op, a ? "b" : "a");
    }
    char s1[96], s2[96];
    gr_tensor_shape_str(a, s1, sizeof s1);
    gr_tensor_shape_str(b, s2, sizeof s2);
    if (a->dtype != GR_F32 || b->dtype != GR_F32 || a->ndim < 1 ||
        !gr_shape_equal(a, b) || (c0 && c0->dtype != GR_F32)) {
        return gr_fail(ctx, GR_EINVAL, "%s: a %s and b %s must be f32 of one "
                       "shape [T, ...]", op, s1, s2);
    }
    int64_t t = a->shape[0], n = t > 0 ? a->numel / t : 0;
    if (c0) {
        int ok = c0->ndim == a->ndim - 1 && c0->numel == n;
        for (int d = 0; ok && d < c0->ndim; d++) {
            ok = c0->shape[d] == a->shape[d + 1];
        }
        if (!ok) {
            gr_tensor_shape_str(c0, s2, sizeof s2);
            return gr_fail(ctx, GR_EINVAL, "%s: c0 %s must be a %s without "
                           "its first dimension", op, s2, s1);
        }
    }
    GR_NEED_DEVICE(ctx->be->scan_fwd && ctx->be->scan_bwd, gr_fail);
    struct gr_tensor *c = gr_new_step(ctx, GR_F32, gr_tensor_shape(a), 0);
    if (!c) {
        return NULL;
    }
    int rc = ctx->be->scan_fwd(ctx->st, F(a), F(b), F(c0), F(c), t, n);
    if (rc < 0) {
        gr_keep_error(ctx, rc);
        return NULL;
    }
    struct gr_tensor *in[3] = {a, b, c0};
    int rec = 0;
    if (ctx->grad_enabled && ctx->n_tape >= 0) {
        for (int i = 0; i < 3; i++) {
            rec |= in[i] && in[i]->requires_grad;
        }
    }
    if (rec) {
        struct gr_node *nd = gr_tape_push(ctx, op, scan_bwd, 3, in);
        if (!nd) {
            return NULL;
        }
        nd->out[0] = c;
        nd->n_out = 1;
        c->requires_grad = 1;
        c->node_ = ctx->n_tape - 1;
        nd->i[0] = t;
        nd->i[1] = n;
    }
    return c;
}

/* ---- FastTrees ---- */

static int check_sizes(const char *what, const char *prefix, int in,
                       int hidden, int chunk)
{
    if (in < 1 || hidden < 1 || chunk < 1 || hidden % chunk != 0) {
        return gr_error(GR_EINVAL, "%s '%s': hidden size %d must be a "
                        "positive multiple of the chunk size %d (input %d)",
                        what, prefix, hidden, chunk, in);
    }
    return 0;
}

int gr_ft_init(struct gr_onlstm *l, struct gr_ctx *ctx, const char *prefix,
               int in, int hidden, int chunk, struct gr_rng rng)
{
    memset(l, 0, sizeof *l);
    int rc = check_sizes("fasttrees", prefix, in, hidden, chunk);
    if (rc < 0) {
        return rc;
    }
    l->in = in;
    l->hidden = hidden;
    l->chunk = chunk;
    l->n_chunks = hidden / chunk;
    l->master_from_x = 1;
    int64_t g = 2 * (int64_t)l->n_chunks + 4 * (int64_t)hidden;
    int64_t gh = 4 * (int64_t)hidden;
    l->w_ih = gr_layer_param(ctx, prefix, "ih.0.weight", gr_shape2(g, in));
    l->b_ih = l->w_ih ? gr_layer_param(ctx, prefix, "ih.0.bias",
                                       gr_shape1(g))
                      : NULL;
    l->w_hh = l->b_ih ? gr_layer_param(ctx, prefix, "hh.weight",
                                       gr_shape2(gh, hidden))
                      : NULL;
    l->b_hh = l->w_hh ? gr_layer_param(ctx, prefix, "hh.bias",
                                       gr_shape1(gh))
                      : NULL;
    float bi = 1.0f / sqrtf((float)in), bh = 1.0f / sqrtf((float)hidden);
    if (!l->b_hh || gr_layer_init_u(l->w_ih, bi, rng) < 0 ||
        gr_layer_init_u(l->b_ih, bi, rng) < 0 ||
        gr_layer_init_u(l->w_hh, bh, rng) < 0 ||
        gr_layer_init_u(l->b_hh, bh, rng) < 0) {
        return gr_error_wrap(GR_EINVAL, "fasttrees '%s'", prefix);
    }
    return 0;
}

/* ---- Conv. FastTrees ---- */

const char *gr_conv_axis_name(enum gr_conv_axis axis)
{
    return axis == GR_CONV_BATCH_COMPAT ? "batch_compat" : "time";
}

int gr_conv_axis_parse(const char *text, enum gr_conv_axis *out)
{
    if (strcmp(text, "time") == 0) {
        *out = GR_CONV_TIME;
        return 0;
    }
    if (strcmp(text, "batch_compat") == 0) {
        *out = GR_CONV_BATCH_COMPAT;
        return 0;
    }
    return gr_error(GR_EINVAL, "unknown conv axis '%s' (expected time or "
                    "batch_compat)", text);
}

int gr_cft_init(struct gr_cft *l, struct gr_ctx *ctx, const char *prefix,
                int in, int hidden, int chunk, enum gr_conv_axis axis,
                struct gr_rng rng)
{
    memset(l, 0, sizeof *l);
    int rc = check_sizes("conv. fasttrees", prefix, in, hidden, chunk);
    if (rc < 0) {
        return rc;
    }
    int64_t m = 2 * (int64_t)(hidden / chunk);
    if (in < m) {
        return gr_error(GR_EINVAL, "conv. fasttrees '%s': the convolution "
                        "reads the first 2n = %lld input features, the "
                        "input has %d (docs/models.md, FastTrees)",
                        prefix, (long long)m, in);
    }
    if ((rc = gr_ft_init(&l->ft, ctx, prefix, in, hidden, chunk, rng)) < 0) {
        return rc;
    }
    l->axis = axis;
    l->conv_dropout = 0.2f;
    l->conv_w = gr_layer_param(ctx, prefix, "conv.weight",
                               gr_shape3(m, m, GR_CFT_KERNEL));
    l->conv_b = l->conv_w ? gr_layer_param(ctx, prefix, "conv.bias",
                                           gr_shape1(m))
                          : NULL;
    if (!l->conv_b) {
        return gr_error_wrap(GR_EINVAL, "conv. fasttrees '%s'", prefix);
    }
    const char *name = l->conv_w->name;
    uint64_t h = name ? gr_fnv1a64(name, strlen(name)) : 0;
    if (gr_tensor_rand_normal(l->conv_w, 0.0f, 0.01f,
                              gr_rng_make(rng.seed, rng.stream ^ h)) < 0 ||
        gr_layer_init_u(l->conv_b,
                        1.0f / sqrtf((float)(m * GR_CFT_KERNEL)), rng) < 0) {
        return gr_error_wrap(GR_EINVAL, "conv. fasttrees '%s'", prefix);
    }
    return 0;
}

int gr_cft_forward(struct gr_ctx *ctx, const struct gr_cft *l,
                   struct gr_tensor *x, struct gr_tensor *prev,
                   struct gr_tensor *h0, struct gr_tensor *c0,
                   struct gr_tensor *w_hh, int training, struct gr_rng rng,
                   struct gr_rnn_out *out, struct gr_tensor **next_out)
{
    memset(out, 0, sizeof *out);
    if (next_out) {
        *next_out = NULL;
    }
    int rc = gr_rnn_check_seq(ctx, "gr_cft_forward", x, l->ft.in,
                              l->ft.hidden, h0, c0, w_hh,
                              4 * (int64_t)l->ft.hidden);
    if (rc < 0) {
        return rc;
    }
    int64_t t = x->shape[0], b = x->shape[1], in = x->shape[2];
    int64_t m = 2 * (int64_t)l->ft.n_chunks, k = GR_CFT_CONTEXT;
    struct gr_tensor *mx = gr_slice(ctx, x, 2, 0, m);
    struct gr_tensor *conv = NULL;
    if (l->axis == GR_CONV_TIME) {
        if (prev && (prev->ndim != 3 || prev->shape[0] != k ||
                     prev->shape[1] != b || prev->shape[2] != m)) {
            char s[96];
            gr_tensor_shape_str(prev, s, sizeof s);
            return gr_fail_code(ctx, GR_EINVAL, "gr_cft_forward: prev %s "
                                "must be [%lld, %lld, %lld]", s,
                                (long long)k, (long long)b, (long long)m);
        }
        /* [prev; m_0 .. m_{T-1}]: the first outputs read the carried rows
         * instead of zeros; the k outputs over prev are dropped. */
        struct gr_tensor *head = prev ? gr_detach(ctx, prev)
                                      : gr_zeros(ctx, gr_shape3(k, b, m));
        struct gr_tensor *parts[2] = {head, mx};
        struct gr_tensor *ext = gr_concat(ctx, 2, parts, 0);
        conv = gr_slice(ctx, gr_conv1d_causal(ctx, ext, l->conv_w, l->conv_b,
                                              GR_CFT_DILATION),
                        0, k, t);
        if (next_out && ext) {
            *next_out = gr_detach(ctx, gr_slice(ctx, ext, 0, t, k));
        }
    } else {
        /* The reference's Conv1d on (T, 2n, B), padding 1: output b reads
         * m_{b-1} and m_{b+1}. That is the causal convolution over the
         * batch axis extended by one zero row, shifted by one. */
        struct gr_tensor *mb = gr_transpose(ctx, mx, 0, 1); /* [B, T, m] */
        struct gr_tensor *parts[2] = {mb, gr_zeros(ctx, gr_shape3(1, t, m))};
        struct gr_tensor *ext = gr_concat(ctx, 2, parts, 0);
        struct gr_tensor *cb = gr_slice(
            ctx, gr_conv1d_causal(ctx, ext, l->conv_w, l->conv_b,
                                  GR_CFT_DILATION),
            0, 1, b);
        conv = gr_transpose(ctx, cb, 0, 1);
    }
    conv = gr_relu(ctx, conv);
    if (training && l->conv_dropout > 0.0f) {
        conv = gr_dropout(ctx, conv, l->conv_dropout, rng);
    }
    struct gr_tensor *xt = conv;
    if (in > m) {
        struct gr_tensor *parts[2] = {conv, gr_slice(ctx, x, 2, m, in - m)};
        xt = gr_concat(ctx, 2, parts, 2);
    }
    if (!xt) {
        return ctx->status < 0 ? ctx->status : GR_EINVAL;
    }
    return gr_onlstm_forward(ctx, &l->ft, xt, h0, c0, w_hh, out);
}

/* ---- Faster FastTrees: the fused gates ---- */

/* in = {z}, out = {a, b, o}, aux[0] = save [r, 4n]; i = {r, H, chunk}. */
static int fft_gates_bwd(struct gr_ctx *ctx, struct gr_node *nd)
{
    struct gr_tensor *z = nd->in[0];
    struct gr_tensor *a = nd->out[0], *b = nd->out[1], *o = nd->out[2];
    int64_t r = nd->i[0], hd = nd->i[1], ck = nd->i[2], n = hd / ck;
    float *gz = gr_grad_buf(ctx, z);
    if (ctx->status < 0) {
        return ctx->status;
    }
    if (!gz || (!a->grad && !b->grad && !o->grad)) {
        return 0;
    }
    float *scratch = gr_step_floats(ctx, r * 2 * n + 3 * hd);
    if (ctx->status < 0 || !scratch) {
        return ctx->status < 0 ? ctx->status : GR_ENOMEM;
    }
    CALLB(ctx->be->fft_gates_bwd(ctx->st, F(z), nd->aux[0], F(o),
                                 F(a->grad), F(b->grad), F(o->grad), gz,
                                 scratch, r, hd, ck));
    return 0;
}

int gr_fft_gates(struct gr_ctx *ctx, struct gr_tensor *z, int hidden,
                 int chunk, struct gr_fft_gates *out)
{
    const char *op = "gr_fft_gates";
    memset(out, 0, sizeof *out);
    if (ctx->status < 0) {
        return ctx->status;
    }
    if (!z) {
        return gr_fail_code(ctx, GR_EINVAL, "%s: argument 'z' is NULL", op);
    }
    if (hidden < 1 || chunk < 1 || hidden % chunk != 0) {
        return gr_fail_code(ctx, GR_EINVAL, "%s: hidden size %d must be a "
                            "positive multiple of the chunk size %d", op,
                            hidden, chunk);
    }
    int64_t hd = hidden, n = hidden / chunk, w = 2 * n + 4 * hd;
    if (z->dtype != GR_F32 || z->ndim < 1 || z->shape[z->ndim - 1] != w) {
        char s1[96];
        gr_tensor_shape_str(z, s1, sizeof s1);
        return gr_fail_code(ctx, GR_EINVAL, "%s: z %s must be f32 [..., "
                            "2n+4H] = [..., %lld] for H %d, chunk %d", op, s1,
                            (long long)w, hidden, chunk);
    }
    GR_NEED_DEVICE(ctx->be->fft_gates_fwd && ctx->be->fft_gates_bwd,
                   gr_fail_code);
    int64_t r = z->numel / w;
    struct gr_shape units = gr_tensor_shape(z), rows = units;
    units.d[units.ndim - 1] = hd;
    rows.ndim--;
    out->a = gr_new_step(ctx, GR_F32, units, 0);
    out->b = out->a ? gr_new_step(ctx, GR_F32, units, 0) : NULL;
    out->o = out->b ? gr_new_step(ctx, GR_F32, units, 0) : NULL;
    out->df = out->o ? gr_new_step(ctx, GR_F32, rows, 0) : NULL;
    out->di = out->df ? gr_new_step(ctx, GR_F32, rows, 0) : NULL;
    float *save = out->di ? gr_step_floats(ctx, r * 4 * n) : NULL;
    if (!save) {
        memset(out, 0, sizeof *out);
        return ctx->status < 0 ? ctx->status : GR_ENOMEM;
    }
    int rc = ctx->be->fft_gates_fwd(ctx->st, F(z), F(out->a), F(out->b),
                                    F(out->o), F(out->df), F(out->di), save,
                                    r, hd, chunk);
    if (rc < 0) {
        memset(out, 0, sizeof *out);
        return gr_keep_error(ctx, rc);
    }
    if (ctx->grad_enabled && ctx->n_tape >= 0 && z->requires_grad) {
        struct gr_node *nd = gr_tape_push(ctx, op, fft_gates_bwd, 1, &z);
        if (!nd) {
            memset(out, 0, sizeof *out);
            return ctx->status < 0 ? ctx->status : GR_ENOMEM;
        }
        struct gr_tensor *outs[3] = {out->a, out->b, out->o};
        for (int k = 0; k < 3; k++) {
            nd->out[k] = outs[k];
            outs[k]->requires_grad = 1;
            outs[k]->node_ = ctx->n_tape - 1;
        }
        nd->n_out = 3;
        nd->aux[0] = save;
        nd->i[0] = r;
        nd->i[1] = hd;
        nd->i[2] = chunk;
    }
    return 0;
}

int gr_fft_unfused_env(void)
{
    const char *e = getenv("GROVE_FFT_UNFUSED");
    return e != NULL && e[0] != '\0' && strcmp(e, "0") != 0;
}

/* ---- Faster FastTrees ---- */

int gr_fft_init(struct gr_fft *l, struct gr_ctx *ctx, const char *prefix,
                int in, int hidden, int chunk, struct gr_rng rng)
{
    memset(l, 0, sizeof *l);
    int rc = check_sizes("faster fasttrees", prefix, in, hidden, chunk);
    if (rc < 0) {
        return rc;
    }
    l->in = in;
    l->hidden = hidden;
    l->chunk = chunk;
    l->n_chunks = hidden / chunk;
    int64_t g = 2 * (int64_t)l->n_chunks + 4 * (int64_t)hidden;
    l->w_ih = gr_layer_param(ctx, prefix, "ih.0.weight", gr_shape2(g, in));
    l->b_ih = l->w_ih ? gr_layer_param(ctx, prefix, "ih.0.bias",
                                       gr_shape1(g))
                      : NULL;
    float bi = 1.0f / sqrtf((float)in);
    if (!l->b_ih || gr_layer_init_u(l->w_ih, bi, rng) < 0 ||
        gr_layer_init_u(l->b_ih, bi, rng) < 0) {
        return gr_error_wrap(GR_EINVAL, "faster fasttrees '%s'", prefix);
    }
    return 0;
}

int gr_fft_forward(struct gr_ctx *ctx, const struct gr_fft *l,
                   struct gr_tensor *x, struct gr_tensor *c0,
                   struct gr_rnn_out *out)
{
    memset(out, 0, sizeof *out);
    int rc = gr_rnn_check_seq(ctx, "gr_fft_forward", x, l->in, l->hidden,
                              NULL, c0, NULL, 0);
    if (rc < 0) {
        return rc;
    }
    int64_t t = x->shape[0], b = x->shape[1], hd = l->hidden;
    int64_t n = l->n_chunks, ck = l->chunk, r = t * b;
    /* Every gate of the window: one GEMM over T·B rows. */
    struct gr_tensor *z = gr_linear(ctx, x, l->w_ih, l->b_ih);
    int unfused = l->path == GR_FFT_PATH_UNFUSED ||
                  (l->path == GR_FFT_PATH_ENV && gr_fft_unfused_env());
    if (!unfused) {
        /* Gates in one pass over z, the scan, then h = o ⊙ tanh(c): four
         * passes over T·B·H instead of about twenty. On the CPU the scan
         * could be folded into the gate kernel cheaply: it is sequential
         * over t there anyway, so the kernel could take the B rows of step
         * t and write c_t and h_t at once (what onlstm_fwd does per step,
         * less the hidden product), dropping the a and b buffers and the
         * tanh and mul passes. On CUDA that fold would replace the one
         * parallel scan by T dependent launches, so the scan stays its own
         * node on both devices. */
        struct gr_fft_gates g;
        if (!z || gr_fft_gates(ctx, z, (int)hd, (int)ck, &g) < 0) {
            return ctx->status < 0 ? ctx->status : GR_EINVAL;
        }
        out->df = g.df;
        out->di = g.di;
        struct gr_tensor *c = gr_linear_scan(ctx, g.a, g.b, c0);
        out->y = gr_mul(ctx, g.o, gr_tanh(ctx, c));
        out->h = out->y ? gr_select(ctx, out->y, t - 1) : NULL;
        out->c = c ? gr_select(ctx, c, t - 1) : NULL;
        if (!out->h || !out->c) {
            return ctx->status < 0 ? ctx->status : GR_EINVAL;
        }
        return 0;
    }
    struct gr_tensor *zs[6] = {0};
    const int64_t sizes[6] = {n, n, hd, hd, hd, hd};
    if (!z || gr_split(ctx, z, 2, 6, sizes, zs) < 0) {
        return ctx->status < 0 ? ctx->status : GR_EINVAL;
    }
    struct gr_tensor *mi = gr_affine(ctx, gr_cumax(ctx, zs[0]), -1.0f, 1.0f);
    struct gr_tensor *mf = gr_cumax(ctx, zs[1]); /* [T, B, n] */
    out->df = gr_detach(ctx, gr_affine(ctx, gr_mean_dim(ctx, mf, 2), -1.0f,
                                       1.0f));
    out->di = gr_detach(ctx, gr_mean_dim(ctx, mi, 2));
    struct gr_shape master = gr_shape3(r, n, 1), units = gr_shape3(r, n, ck);
    struct gr_tensor *fm = gr_reshape(ctx, mf, master);
    struct gr_tensor *im = gr_reshape(ctx, mi, master);
    struct gr_tensor *o = gr_sigmoid(ctx, zs[2]);
    struct gr_tensor *cc = gr_reshape(ctx, gr_tanh(ctx, zs[3]), units);
    struct gr_tensor *ig = gr_reshape(ctx, gr_sigmoid(ctx, zs[4]), units);
    struct gr_tensor *fg = gr_reshape(ctx, gr_sigmoid(ctx, zs[5]), units);
    /* ω = f̃ ⊙ ĩ; f̂ = f ⊙ ω + (f̃ − ω); î = i ⊙ ω + (ĩ − ω) (per chunk) */
    struct gr_tensor *om = gr_mul(ctx, fm, im);
    struct gr_tensor *fh = gr_add(ctx, gr_mul(ctx, fg, om),
                                  gr_sub(ctx, fm, om));
    struct gr_tensor *ih = gr_add(ctx, gr_mul(ctx, ig, om),
                                  gr_sub(ctx, im, om));
    struct gr_shape seq = gr_shape3(t, b, hd);
    struct gr_tensor *c = gr_linear_scan(
        ctx, gr_reshape(ctx, fh, seq),
        gr_reshape(ctx, gr_mul(ctx, ih, cc), seq), c0);
    out->y = gr_mul(ctx, o, gr_tanh(ctx, c));
    out->h = out->y ? gr_select(ctx, out->y, t - 1) : NULL;
    out->c = c ? gr_select(ctx, c, t - 1) : NULL;
    if (!out->h || !out->c || !out->df || !out->di) {
        return ctx->status < 0 ? ctx->status : GR_EINVAL;
    }
    return 0;
}
