/* The tape: recording nodes, gradient buffers, the reverse walk. */
#include "kernels/tape.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/internal.h"

int gr_wants_grad(struct gr_ctx *ctx, int n, struct gr_tensor *const *in)
{
    if (!ctx->grad_enabled || ctx->n_tape < 0) {
        return 0;
    }
    for (int i = 0; i < n; i++) {
        if (in[i] && in[i]->requires_grad) {
            return 1;
        }
    }
    return 0;
}

struct gr_node *gr_record1(struct gr_ctx *ctx, const char *op,
                           gr_backward_fn fn, int n_in,
                           struct gr_tensor *const *in,
                           struct gr_tensor *out)
{
    struct gr_node *n = gr_tape_push(ctx, op, fn, n_in, in);
    if (!n) {
        return NULL;
    }
    n->out[0] = out;
    n->n_out = 1;
    out->requires_grad = 1;
    out->node_ = ctx->n_tape - 1;
    return n;
}

struct gr_node *gr_tape_push(struct gr_ctx *ctx, const char *op,
                             gr_backward_fn fn, int n_in,
                             struct gr_tensor *const *in)
{
    if (ctx->n_tape == ctx->cap_tape) {
        /* Grows during the first steps only; kept over resets. */
        int nc = ctx->cap_tape ? 2 * ctx->cap_tape : 1024;
        struct gr_node **t = realloc(ctx->tape, (size_t)nc * sizeof *t);
        if (!t) {
            return gr_fail(ctx, GR_ENOMEM, "%s: out of memory for the tape",
                           op);
        }
        ctx->tape = t;
        ctx->cap_tape = nc;
    }
    struct gr_node *n = gr_host_scratch(ctx, sizeof *n);
    struct gr_tensor **ins =
        gr_host_scratch(ctx, (size_t)(n_in > 0 ? n_in : 1) * sizeof *ins);
    if (!n || !ins) {
        return NULL;
    }
    memset(n, 0, sizeof *n);
    n->op = op;
    n->backward = fn;
    n->in = ins;
    n->n_in = n_in;
    for (int i = 0; i < n_in; i++) {
        ins[i] = in[i];
    }
    ctx->tape[ctx->n_tape++] = n;
    return n;
}

float *gr_grad_buf(struct gr_ctx *ctx, struct gr_tensor *t)
{
    if (!t || !t->requires_grad) {
        return NULL;
    }
    if (t->grad) {
        return t->grad->data;
    }
    if (t->base_) {
        float *bg = gr_grad_buf(ctx, t->base_);
        if (!bg) {
            return NULL;
        }
        struct gr_tensor *g = gr_host_scratch(ctx, sizeof *g);
        if (!g) {
            return NULL;
        }
        *g = *t;
        g->requires_grad = 0;
        g->grad = NULL;
        g->base_ = t->base_->grad;
        g->data = bg + t->offset_;
        t->grad = g;
        return g->data;
    }
    struct gr_tensor *g = gr_new_step(ctx, GR_F32, gr_tensor_shape(t), 1);
    if (!g) {
        return NULL;
    }
    t->grad = g;
    return g->data;
}

float *gr_grad_buf_acc(struct gr_ctx *ctx, struct gr_tensor *t, int *acc)
{
    *acc = 1;
    if (!t || !t->requires_grad) {
        return NULL;
    }
    if (t->grad || t->base_) {
        return gr_grad_buf(ctx, t);
    }
    struct gr_tensor *g = gr_new_step(ctx, GR_F32, gr_tensor_shape(t), 0);
    if (!g) {
        return NULL;
    }
    t->grad = g;
    *acc = 0;
    return g->data;
}

static int backward_common(struct gr_ctx *ctx, struct gr_tensor *out,
                           struct gr_tensor *seed, float seed_value)
{
    if (ctx->status < 0) {
        return gr_error(ctx->status, "gr_backward: an op of this step "
                        "failed: %s", ctx->errmsg);
    }
    if (!out) {
        return gr_error(GR_EINVAL, "gr_backward: the loss is NULL");
    }
    if (out->ctx_ != ctx || out->kind != GR_KIND_STEP ||
        out->dtype != GR_F32) {
        return gr_error(GR_EINVAL, "gr_backward: the loss must be an f32 "
                        "tensor computed in this context's current step");
    }
    if (!seed && out->numel != 1) {
        char s[96];
        gr_tensor_shape_str(out, s, sizeof s);
        return gr_error(GR_EINVAL, "gr_backward: the loss has shape %s; one "
                        "element needed (reduce it with gr_sum/gr_mean)", s);
    }
    if (seed && (seed->numel != out->numel || seed->dtype != GR_F32 ||
                 seed->ctx_ != ctx)) {
        return gr_error(GR_EINVAL, "gr_backward_with: the seed gradient "
                        "must be f32 with the output's element count");
    }
    if (ctx->n_tape < 0) {
        return gr_error(GR_EINVAL, "gr_backward: already called in this "
                        "step (call gr_step_reset before the next one)");
    }
    if (!out->requires_grad) {
        ctx->n_tape = -1;
        return 0; /* nothing trainable contributed */
    }
    float *g = gr_grad_buf(ctx, out);
    if (!g) {
        return ctx->status ? ctx->status : GR_ENOMEM;
    }
    int rc;
    if (seed) {
        rc = ctx->be->d2d(ctx->st, g, seed->data,
                          (size_t)out->numel * sizeof(float));
    } else {
        rc = ctx->be->fill(ctx->st, g, 1, seed_value);
    }
    if (rc < 0) {
        return gr_keep_error(ctx, rc);
    }
    for (int i = ctx->n_tape - 1; i >= 0; i--) {
        struct gr_node *n = ctx->tape[i];
        int reached = 0;
        for (int k = 0; k < n->n_out; k++) {
            if (n->out[k] && n->out[k]->grad) {
                reached = 1;
            }
        }
        if (!reached) {
            continue;
        }
        rc = n->backward(ctx, n);
        if (rc < 0 || ctx->status < 0) {
            int code = rc < 0 ? rc : ctx->status;
            gr_keep_error(ctx, code);
            return gr_error(code, "gr_backward: in the backward of %s: %s",
                            n->op, ctx->errmsg);
        }
    }
    ctx->n_tape = -1; /* consumed */
    return 0;
}

int gr_backward(struct gr_ctx *ctx, struct gr_tensor *loss)
{
    return backward_common(ctx, loss, NULL, 1.0f);
}

int gr_backward_with(struct gr_ctx *ctx, struct gr_tensor *out,
                     struct gr_tensor *seed_grad)
{
    if (!seed_grad) {
        return gr_error(GR_EINVAL, "gr_backward_with: seed gradient is NULL");
    }
    return backward_common(ctx, out, seed_grad, 0.0f);
}

int gr_zero_grad(struct gr_ctx *ctx)
{
    for (int i = 0; i < ctx->n_named; i++) {
        struct gr_tensor *t = ctx->named[i];
        if (t->kind == GR_KIND_PARAM) {
            int rc = ctx->be->zero(ctx->st, t->grad->data,
                                   (size_t)t->numel * sizeof(float));
            if (rc < 0) {
                return rc;
            }
        }
    }
    return 0;
}

int gr_set_grad_enabled(struct gr_ctx *ctx, int on)
{
    int was = ctx->grad_enabled;
    ctx->grad_enabled = on ? 1 : 0;
    return was;
}

int gr_tape_length(const struct gr_ctx *ctx)
{
    return ctx->n_tape < 0 ? 0 : ctx->n_tape;
}
