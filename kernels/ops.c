/* The op library: argument checks, output allocation, tape records and
 * the backward of every op, dispatched to the context's device table
 * (kernels/backend.h). */
#include "kernels/ops.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "kernels/internal.h"
#include "kernels/tape.h"

/* ---- helpers ---- */

/* Checks a tensor argument: present, of this context, of dtype (-1: any). */
static int arg_ok(struct gr_ctx *ctx, const char *op, const struct gr_tensor *t,
                  const char *name, int dtype)
{
    if (!t) {
        if (ctx->status == 0) {
            gr_fail(ctx, GR_EINVAL, "%s: argument '%s' is NULL", op, name);
        }
        return 0;
    }
    if (t->ctx_ != ctx) {
        gr_fail(ctx, GR_EINVAL, "%s: '%s' belongs to another context "
                "(device %s)", op, name, gr_device_name(t->device));
        return 0;
    }
    if (dtype >= 0 && (int)t->dtype != dtype) {
        gr_fail(ctx, GR_EINVAL, "%s: '%s' must be %s", op, name,
                dtype == GR_F32 ? "f32" : "i32 (indices)");
        return 0;
    }
    return 1;
}

#define SHAPE_STR(t, buf) (gr_tensor_shape_str((t), (buf), sizeof(buf)), (buf))

/* The backend entry `fn` this tensor-returning op needs. */
#define NEED(fn) GR_NEED_DEVICE(ctx->be->fn, gr_fail)

#define CALL(expr)                                                           \
    do {                                                                     \
        int rc__ = (expr);                                                   \
        if (rc__ < 0) {                                                      \
            gr_keep_error(ctx, rc__);                                        \
            return NULL;                                                     \
        }                                                                    \
    } while (0)


static float *F(const struct gr_tensor *t) { return (float *)t->data; }
static const int32_t *I(const struct gr_tensor *t)
{
    return (const int32_t *)t->data;
}

static int norm_dim(int dim, int ndim)
{
    return dim < 0 ? dim + ndim : dim;
}

static struct gr_shape shape_of(const struct gr_tensor *t)
{
    return gr_tensor_shape(t);
}

/* Builds the broadcast of b over a's shape; 0 or -1 (error set). */
static int make_bcast(struct gr_ctx *ctx, const char *op,
                      const struct gr_tensor *a, const struct gr_tensor *b,
                      const char *bname, struct gr_bcast *bc)
{
    char sa[96], sb[96];
    memset(bc, 0, sizeof *bc);
    if (b->ndim > a->ndim) {
        gr_fail(ctx, GR_EINVAL, "%s: %s %s has more dimensions than %s", op,
                bname, SHAPE_STR(b, sb), SHAPE_STR(a, sa));
        return -1;
    }
    int pa = 4 - a->ndim, pb = 4 - b->ndim;
    for (int d = 0; d < 4; d++) {
        bc->shape[d] = d < pa ? 1 : a->shape[d - pa];
        bc->bshape[d] = d < pb ? 1 : b->shape[d - pb];
        if (bc->bshape[d] != 1 && bc->bshape[d] != bc->shape[d]) {
            gr_fail(ctx, GR_EINVAL,
                    "%s: %s %s does not broadcast to %s (each dimension, "
                    "aligned right, must be 1 or equal)", op, bname,
                    SHAPE_STR(b, sb), SHAPE_STR(a, sa));
            return -1;
        }
    }
    int64_t stride = 1;
    bc->same = 1;
    for (int d = 3; d >= 0; d--) {
        bc->bstride[d] = bc->bshape[d] == 1 ? 0 : stride;
        stride *= bc->bshape[d];
        if (bc->bshape[d] != bc->shape[d]) {
            bc->same = 0;
        }
    }
    bc->n = a->numel;
    bc->bn = b->numel;
    return 0;
}

/* Checks that i32 values lie in [lo, hi]: a scan on CPU, the recorded
 * bounds on CUDA (indices come from the host there). */
static int index_in_range(struct gr_ctx *ctx, const char *op,
                          const struct gr_tensor *t, const char *name,
                          int32_t lo, int32_t hi)
{
    if (ctx->device == GR_DEVICE_CPU) {
        const int32_t *v = I(t);
        for (int64_t i = 0; i < t->numel; i++) {
            if (v[i] < lo || v[i] > hi) {
                gr_fail(ctx, GR_EINVAL, "%s: %s[%lld] = %d is outside "
                        "[%d, %d]", op, name, (long long)i, (int)v[i],
                        (int)lo, (int)hi);
                return 0;
            }
        }
        return 1;
    }
    if (t->imin_ < lo || t->imax_ > hi) {
        gr_fail(ctx, GR_EINVAL, "%s: %s holds values in [%d, %d], outside "
                "[%d, %d]", op, name, (int)t->imin_, (int)t->imax_, (int)lo,
                (int)hi);
        return 0;
    }
    return 1;
}

/* ---- matmul ---- */

static int matmul_dims(const struct gr_tensor *a, const struct gr_tensor *b,
                       int ta, int tb, int64_t *m, int64_t *n, int64_t *k,
                       int64_t *kb, int64_t *batch, int *shared)
{
    int na = a->ndim, nb = b->ndim;
    *m = ta ? a->shape[na - 1] : a->shape[na - 2];
    *k = ta ? a->shape[na - 2] : a->shape[na - 1];
    *kb = tb ? b->shape[nb - 1] : b->shape[nb - 2];
    *n = tb ? b->shape[nb - 2] : b->shape[nb - 1];
    *batch = 1;
    for (int i = 0; i < na - 2; i++) {
        *batch *= a->shape[i];
    }
    *shared = (nb == 2);
    return 0;
}

static int matmul_bwd(struct gr_ctx *ctx, struct gr_node *nd)
{
    struct gr_tensor *a = nd->in[0], *b = nd->in[1], *y = nd->out[0];
    int ta = (int)nd->i[0], tb = (int)nd->i[1];
    int m = (int)nd->i[2], n = (int)nd->i[3], k = (int)nd->i[4];
    int batch = (int)nd->i[5], shared = (int)nd->i[6];
    const struct gr_backend *be = ctx->be;
    float *gy = F(y->grad);
    int lda = (int)a->shape[a->ndim - 1], ldb = (int)b->shape[b->ndim - 1];
    int64_t sa = (int64_t)m * k, sb = shared ? 0 : (int64_t)k * n;
    int64_t sy = (int64_t)m * n;
    float *ga = gr_grad_buf(ctx, a);
    if (ga) {
        if (!ta) {
            CALLB(be->gemm(ctx->st, 0, !tb, m, k, n, 1.0f, gy, n, sy, F(b),
                           ldb, sb, 1.0f, ga, k, sa, batch));
        } else {
            CALLB(be->gemm(ctx->st, tb, 1, k, m, n, 1.0f, F(b), ldb, sb, gy,
                           n, sy, 1.0f, ga, m, sa, batch));
        }
    }
    float *gb = gr_grad_buf(ctx, b);
    if (gb) {
        if (!shared || batch == 1) {
            if (!tb) {
                CALLB(be->gemm(ctx->st, !ta, 0, k, n, m, 1.0f, F(a), lda, sa,
                               gy, n, sy, 1.0f, gb, n, sb, batch));
            } else {
                CALLB(be->gemm(ctx->st, 1, ta, n, k, m, 1.0f, gy, n, sy,
                               F(a), lda, sa, 1.0f, gb, k, sb, batch));
            }
        } else if (!ta) {
            /* a is [batch·m, k] contiguous: one product sums the batch. */
            int mm = m * batch;
            if (!tb) {
                CALLB(be->gemm(ctx->st, 1, 0, k, n, mm, 1.0f, F(a), k, 0, gy,
                               n, 0, 1.0f, gb, n, 0, 1));
            } else {
                CALLB(be->gemm(ctx->st, 1, 0, n, k, mm, 1.0f, gy, n, 0, F(a),
                               k, 0, 1.0f, gb, k, 0, 1));
            }
        } else {
            for (int i = 0; i < batch; i++) {
                const float *ai = F(a) + (int64_t)i * sa;
                const float *gyi = gy + (int64_t)i * sy;
                if (!tb) {
                    CALLB(be->gemm(ctx->st, 0, 0, k, n, m, 1.0f, ai, lda, 0,
                                   gyi, n, 0, 1.0f, gb, n, 0, 1));
                } else {
                    CALLB(be->gemm(ctx->st, 1, 1, n, k, m, 1.0f, gyi, n, 0,
                                   ai, lda, 0, 1.0f, gb, k, 0, 1));
                }
            }
        }
    }
    return 0;
}

struct gr_tensor *gr_matmul(struct gr_ctx *ctx, struct gr_tensor *a,
                            struct gr_tensor *b, int trans_a, int trans_b)
{
    const char *op = "gr_matmul";
    if (!arg_ok(ctx, op, a, "a", GR_F32) || !arg_ok(ctx, op, b, "b", GR_F32)) {
        return NULL;
    }
    char sa[96], sb[96];
    if (a->ndim < 2 || b->ndim < 2 ||
        (b->ndim != 2 && b->ndim != a->ndim)) {
        return gr_fail(ctx, GR_EINVAL, "%s: a %s and b %s: a needs 2-4 "
                       "dimensions, b 2 or as many as a", op,
                       SHAPE_STR(a, sa), SHAPE_STR(b, sb));
    }
    for (int i = 0; b->ndim > 2 && i < a->ndim - 2; i++) {
        if (a->shape[i] != b->shape[i]) {
            return gr_fail(ctx, GR_EINVAL, "%s: batch dimensions differ: "
                           "a %s vs b %s", op, SHAPE_STR(a, sa),
                           SHAPE_STR(b, sb));
        }
    }
    int64_t m, n, k, kb, batch;
    int shared;
    matmul_dims(a, b, trans_a != 0, trans_b != 0, &m, &n, &k, &kb, &batch,
                &shared);
    if (k != kb) {
        return gr_fail(ctx, GR_EINVAL, "%s: inner dimensions differ: a %s%s "
                       "vs b %s%s", op, SHAPE_STR(a, sa),
                       trans_a ? " (transposed)" : "", SHAPE_STR(b, sb),
                       trans_b ? " (transposed)" : "");
    }
    if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX) {
        return gr_fail(ctx, GR_EINVAL, "%s: dimensions too large", op);
    }
    NEED(gemm);
    struct gr_shape ys = shape_of(a);
    ys.d[a->ndim - 2] = m;
    ys.d[a->ndim - 1] = n;
    struct gr_tensor *y = gr_new_step(ctx, GR_F32, ys, 0);
    if (!y) {
        return NULL;
    }
    int ta = trans_a != 0, tb = trans_b != 0;
    CALL(ctx->be->gemm(ctx->st, ta, tb, (int)m, (int)n, (int)k, 1.0f, F(a),
                       (int)a->shape[a->ndim - 1], m * k, F(b),
                       (int)b->shape[b->ndim - 1], shared ? 0 : k * n, 0.0f,
                       F(y), (int)n, m * n, (int)batch));
    struct gr_tensor *in[2] = {a, b};
    if (gr_wants_grad(ctx, 2, in)) {
        struct gr_node *nd = gr_record1(ctx, op, matmul_bwd, 2, in, y);
        if (!nd) {
            return NULL;
        }
        nd->i[0] = ta;
        nd->i[1] = tb;
        nd->i[2] = m;
        nd->i[3] = n;
        nd->i[4] = k;
        nd->i[5] = batch;
        nd->i[6] = shared;
    }
    return y;
}

/* ---- linear ---- */

static int linear_bwd(struct gr_ctx *ctx, struct gr_node *nd)
{
    struct gr_tensor *x = nd->in[0], *w = nd->in[1], *bias = nd->in[2];
    int rows = (int)nd->i[0], in = (int)nd->i[1], out = (int)nd->i[2];
    const struct gr_backend *be = ctx->be;
    float *gy = F(nd->out[0]->grad);
    float *gx = gr_grad_buf(ctx, x);
    if (gx) {
        CALLB(be->gemm(ctx->st, 0, 0, rows, in, out, 1.0f, gy, out, 0, F(w),
                       in, 0, 1.0f, gx, in, 0, 1));
    }
    float *gw = gr_grad_buf(ctx, w);
    if (gw) {
        CALLB(be->gemm(ctx->st, 1, 0, out, in, rows, 1.0f, gy, out, 0, F(x),
                       in, 0, 1.0f, gw, in, 0, 1));
    }
    float *gb = bias ? gr_grad_buf(ctx, bias) : NULL;
    if (gb) {
        CALLB(be->reduce(ctx->st, gy, gb, 1, rows, out, 1.0f, 1));
    }
    return 0;
}

struct gr_tensor *gr_linear(struct gr_ctx *ctx, struct gr_tensor *x,
                            struct gr_tensor *w, struct gr_tensor *bias)
{
    const char *op = "gr_linear";
    if (!arg_ok(ctx, op, x, "x", GR_F32) || !arg_ok(ctx, op, w, "w", GR_F32)) {
        return NULL;
    }
    if (bias && !arg_ok(ctx, op, bias, "bias", GR_F32)) {
        return NULL;
    }
    char sx[96], sw[96], sbias[96];
    if (w->ndim != 2 || x->ndim < 1 || x->shape[x->ndim - 1] != w->shape[1]) {
        return gr_fail(ctx, GR_EINVAL, "%s: x %s does not match w %s (x "
                       "[..., IN], w [OUT, IN])", op, SHAPE_STR(x, sx),
                       SHAPE_STR(w, sw));
    }
    int64_t in = w->shape[1], out = w->shape[0];
    if (bias && (bias->ndim != 1 || bias->shape[0] != out)) {
        return gr_fail(ctx, GR_EINVAL, "%s: bias %s, want [%lld] for w %s", op,
                       SHAPE_STR(bias, sbias), (long long)out,
                       SHAPE_STR(w, sw));
    }
    int64_t rows = x->numel / in;
    if (rows > INT32_MAX || in > INT32_MAX || out > INT32_MAX) {
        return gr_fail(ctx, GR_EINVAL, "%s: dimensions too large", op);
    }
    NEED(gemm);
    NEED(rows_set);
    struct gr_shape ys = shape_of(x);
    ys.d[x->ndim - 1] = out;
    struct gr_tensor *y = gr_new_step(ctx, GR_F32, ys, 0);
    if (!y) {
        return NULL;
    }
    if (bias) {
        CALL(ctx->be->rows_set(ctx->st, F(y), F(bias), rows, out));
    }
    CALL(ctx->be->gemm(ctx->st, 0, 1, (int)rows, (int)out, (int)in, 1.0f,
                       F(x), (int)in, 0, F(w), (int)in, 0,
                       bias ? 1.0f : 0.0f, F(y), (int)out, 0, 1));
    struct gr_tensor *ins[3] = {x, w, bias};
    if (gr_wants_grad(ctx, 3, ins)) {
        struct gr_node *nd = gr_record1(ctx, op, linear_bwd, 3, ins, y);
        if (!nd) {
            return NULL;
        }
        nd->i[0] = rows;
        nd->i[1] = in;
        nd->i[2] = out;
    }
    return y;
}

/* ---- element-wise ---- */

static int binary_bwd(struct gr_ctx *ctx, struct gr_node *nd)
{
    struct gr_tensor *a = nd->in[0], *b = nd->in[1];
    float *ga = gr_grad_buf(ctx, a);
    float *gb = gr_grad_buf(ctx, b);
    if (!ga && !gb) {
        return ctx->status;
    }
    CALLB(ctx->be->binary_bwd(ctx->st, (int)nd->i[0], F(a), F(b),
                              F(nd->out[0]->grad), ga, gb, &nd->bc));
    return 0;
}

static struct gr_tensor *binary(struct gr_ctx *ctx, const char *op, int code,
                                struct gr_tensor *a, struct gr_tensor *b)
{
    if (!arg_ok(ctx, op, a, "a", GR_F32) || !arg_ok(ctx, op, b, "b", GR_F32)) {
        return NULL;
    }
    struct gr_bcast bc;
    if (make_bcast(ctx, op, a, b, "b", &bc) < 0) {
        return NULL;
    }
    NEED(binary_fwd);
    struct gr_tensor *y = gr_new_step(ctx, GR_F32, shape_of(a), 0);
    if (!y) {
        return NULL;
    }
    CALL(ctx->be->binary_fwd(ctx->st, code, F(a), F(b), F(y), &bc));
    struct gr_tensor *in[2] = {a, b};
    if (gr_wants_grad(ctx, 2, in)) {
        struct gr_node *nd = gr_record1(ctx, op, binary_bwd, 2, in, y);
        if (!nd) {
            return NULL;
        }
        nd->i[0] = code;
        nd->bc = bc;
    }
    return y;
}

struct gr_tensor *gr_add(struct gr_ctx *ctx, struct gr_tensor *a,
                         struct gr_tensor *b)
{
    return binary(ctx, "gr_add", GR_B_ADD, a, b);
}
struct gr_tensor *gr_sub(struct gr_ctx *ctx, struct gr_tensor *a,
                         struct gr_tensor *b)
{
    return binary(ctx, "gr_sub", GR_B_SUB, a, b);
}
struct gr_tensor *gr_mul(struct gr_ctx *ctx, struct gr_tensor *a,
                         struct gr_tensor *b)
{
    return binary(ctx, "gr_mul", GR_B_MUL, a, b);
}
struct gr_tensor *gr_div(struct gr_ctx *ctx, struct gr_tensor *a,
                         struct gr_tensor *b)
{
    return binary(ctx, "gr_div", GR_B_DIV, a, b);
}
struct gr_tensor *gr_minimum(struct gr_ctx *ctx, struct gr_tensor *a,
                             struct gr_tensor *b)
{
    return binary(ctx, "gr_minimum", GR_B_MIN, a, b);
}
struct gr_tensor *gr_maximum(struct gr_ctx *ctx, struct gr_tensor *a,
                             struct gr_tensor *b)
{
    return binary(ctx, "gr_maximum", GR_B_MAX, a, b);
}

static int unary_bwd(struct gr_ctx *ctx, struct gr_node *nd)
{
    struct gr_tensor *x = nd->in[0], *y = nd->out[0];
    float *gx = gr_grad_buf(ctx, x);
    if (!gx) {
        return ctx->status;
    }
    CALLB(ctx->be->unary_bwd(ctx->st, (int)nd->i[0], F(x), F(y),
                             F(y->grad), gx, x->numel, nd->f[0], nd->f[1]));
    return 0;
}

static struct gr_tensor *unary(struct gr_ctx *ctx, const char *op, int code,
                               struct gr_tensor *x, float a, float b)
{
    if (!arg_ok(ctx, op, x, "x", GR_F32)) {
        return NULL;
    }
    NEED(unary_fwd);
    struct gr_tensor *y = gr_new_step(ctx, GR_F32, shape_of(x), 0);
    if (!y) {
        return NULL;
    }
    CALL(ctx->be->unary_fwd(ctx->st, code, F(x), F(y), x->numel, a, b));
    if (gr_wants_grad(ctx, 1, &x)) {
        struct gr_node *nd = gr_record1(ctx, op, unary_bwd, 1, &x, y);
        if (!nd) {
            return NULL;
        }
        nd->i[0] = code;
        nd->f[0] = a;
        nd->f[1] = b;
    }
    return y;
}

struct gr_tensor *gr_scale(struct gr_ctx *ctx, struct gr_tensor *x, float s)
{
    return unary(ctx, "gr_scale", GR_U_AFFINE, x, s, 0.0f);
}
struct gr_tensor *gr_affine(struct gr_ctx *ctx, struct gr_tensor *x, float s,
                            float c)
{
    return unary(ctx, "gr_affine", GR_U_AFFINE, x, s, c);
}
struct gr_tensor *gr_sigmoid(struct gr_ctx *ctx, struct gr_tensor *x)
{
    return unary(ctx, "gr_sigmoid", GR_U_SIGMOID, x, 0, 0);
}
struct gr_tensor *gr_tanh(struct gr_ctx *ctx, struct gr_tensor *x)
{
    return unary(ctx, "gr_tanh", GR_U_TANH, x, 0, 0);
}
struct gr_tensor *gr_relu(struct gr_ctx *ctx, struct gr_tensor *x)
{
    return unary(ctx, "gr_relu", GR_U_RELU, x, 0, 0);
}
struct gr_tensor *gr_elu(struct gr_ctx *ctx, struct gr_tensor *x)
{
    return unary(ctx, "gr_elu", GR_U_ELU, x, 0, 0);
}
struct gr_tensor *gr_exp(struct gr_ctx *ctx, struct gr_tensor *x)
{
    return unary(ctx, "gr_exp", GR_U_EXP, x, 0, 0);
}
struct gr_tensor *gr_log(struct gr_ctx *ctx, struct gr_tensor *x)
{
    return unary(ctx, "gr_log", GR_U_LOG, x, 0, 0);
}
struct gr_tensor *gr_abs(struct gr_ctx *ctx, struct gr_tensor *x)
{
    return unary(ctx, "gr_abs", GR_U_ABS, x, 0, 0);
}
struct gr_tensor *gr_square(struct gr_ctx *ctx, struct gr_tensor *x)
{
    return unary(ctx, "gr_square", GR_U_SQUARE, x, 0, 0);
}
struct gr_tensor *gr_sqrt(struct gr_ctx *ctx, struct gr_tensor *x)
{
    return unary(ctx, "gr_sqrt", GR_U_SQRT, x, 0, 0);
}
struct gr_tensor *gr_clamp(struct gr_ctx *ctx, struct gr_tensor *x, float lo,
                           float hi)
{
    if (!(lo <= hi)) {
        return gr_fail(ctx, GR_EINVAL, "gr_clamp: lo %g > hi %g", (double)lo,
                       (double)hi);
    }
    return unary(ctx, "gr_clamp", GR_U_CLAMP, x, lo, hi);
}

/* ---- views ---- */

static struct gr_tensor *make_view(struct gr_ctx *ctx, struct gr_tensor *x,
                                   struct gr_shape s, int64_t offset,
                                   int keep_grad)
{
    struct gr_tensor *v = gr_host_scratch(ctx, sizeof *v);
    if (!v) {
        return NULL;
    }
    *v = *x;
    v->ndim = s.ndim;
    v->numel = 1;
    for (int i = 0; i < GR_MAX_DIMS; i++) {
        v->shape[i] = i < s.ndim ? s.d[i] : 1;
        if (i < s.ndim) {
            v->numel *= s.d[i];
        }
    }
    v->kind = GR_KIND_STEP;
    v->name = NULL;
    v->grad = NULL;
    v->node_ = -1;
    size_t esz = 4;
    v->data = (char *)x->data + (size_t)offset * esz;
    if (keep_grad && ctx->grad_enabled) {
        v->base_ = x->base_ ? x->base_ : x;
        v->offset_ = x->offset_ + offset;
        v->requires_grad = x->requires_grad;
    } else {
        v->base_ = NULL;
        v->offset_ = 0;
        v->requires_grad = 0;
    }
    return v;
}

struct gr_tensor *gr_select(struct gr_ctx *ctx, struct gr_tensor *x,
                            int64_t i)
{
    const char *op = "gr_select";
    if (!arg_ok(ctx, op, x, "x", -1)) {
        return NULL;
    }
    char sx[96];
    if (x->ndim < 1 || i < 0 || i >= x->shape[0]) {
        return gr_fail(ctx, GR_EINVAL, "%s: index %lld out of range for x %s",
                       op, (long long)i, SHAPE_STR(x, sx));
    }
    struct gr_shape s;
    s.ndim = x->ndim - 1;
    for (int d = 0; d < GR_MAX_DIMS; d++) {
        s.d[d] = d + 1 < x->ndim ? x->shape[d + 1] : 1;
    }
    int64_t inner = x->numel / x->shape[0];
    return make_view(ctx, x, s, i * inner, 1);
}

struct gr_tensor *gr_reshape(struct gr_ctx *ctx, struct gr_tensor *x,
                             struct gr_shape shape)
{
    const char *op = "gr_reshape";
    if (!arg_ok(ctx, op, x, "x", -1)) {
        return NULL;
    }
    int64_t n = 1;
    int ok = shape.ndim >= 0 && shape.ndim <= GR_MAX_DIMS;
    for (int d = 0; ok && d < shape.ndim; d++) {
        ok = shape.d[d] >= 1;
        n *= shape.d[d];
    }
    char sx[96], ss[96];
    if (!ok || n != x->numel) {
        gr_shape_format(shape, ss, sizeof ss);
        return gr_fail(ctx, GR_EINVAL, "%s: cannot view x %s as %s", op,
                       SHAPE_STR(x, sx), ss);
    }
    return make_view(ctx, x, shape, 0, 1);
}

struct gr_tensor *gr_detach(struct gr_ctx *ctx, struct gr_tensor *x)
{
    if (!arg_ok(ctx, "gr_detach", x, "x", -1)) {
        return NULL;
    }
    return make_view(ctx, x, shape_of(x), 0, 0);
}

/* ---- softmax family ---- */

static int softmax_bwd(struct gr_ctx *ctx, struct gr_node *nd)
{
    struct gr_tensor *x = nd->in[0], *y = nd->out[0];
    float *gx = gr_grad_buf(ctx, x);
    if (!gx) {
        return ctx->status;
    }
    CALLB(ctx->be->softmax_bwd(ctx->st, F(y), F(y->grad), gx, nd->i[0],
                               nd->i[1], (int)nd->i[2]));
    return 0;
}

static struct gr_tensor *softmax_any(struct gr_ctx *ctx, const char *op,
                                     struct gr_tensor *x,
                                     struct gr_tensor *mask, int log)
{
    if (!arg_ok(ctx, op, x, "x", GR_F32)) {
        return NULL;
    }
    struct gr_bcast mbc;
    memset(&mbc, 0, sizeof mbc);
    if (mask) {
        if (!arg_ok(ctx, op, mask, "mask", GR_F32) ||
            make_bcast(ctx, op, x, mask, "mask", &mbc) < 0) {
            return NULL;
        }
    }
    if (x->ndim < 1) {
        return gr_fail(ctx, GR_EINVAL, "%s: x is a scalar", op);
    }
    NEED(softmax_fwd);
    int64_t cols = x->shape[x->ndim - 1], rows = x->numel / cols;
    struct gr_tensor *y = gr_new_step(ctx, GR_F32, shape_of(x), 0);
    if (!y) {
        return NULL;
    }
    CALL(ctx->be->softmax_fwd(ctx->st, F(x), mask ? F(mask) : NULL,
                              mask ? &mbc : NULL, F(y), rows, cols, log));
    if (gr_wants_grad(ctx, 1, &x)) {
        struct gr_node *nd = gr_record1(ctx, op, softmax_bwd, 1, &x, y);
        if (!nd) {
            return NULL;
        }
        nd->i[0] = rows;
        nd->i[1] = cols;
        nd->i[2] = log;
    }
    return y;
}

struct gr_tensor *gr_softmax(struct gr_ctx *ctx, struct gr_tensor *x,
                             struct gr_tensor *mask)
{
    return softmax_any(ctx, "gr_softmax", x, mask, 0);
}

struct gr_tensor *gr_log_softmax(struct gr_ctx *ctx, struct gr_tensor *x,
                                 struct gr_tensor *mask)
{
    return softmax_any(ctx, "gr_log_softmax", x, mask, 1);
}

static int cumsum_bwd(struct gr_ctx *ctx, struct gr_node *nd)
{
    float *gx = gr_grad_buf(ctx, nd->in[0]);
    if (!gx) {
        return ctx->status;
    }
    CALLB(ctx->be->cumsum_bwd(ctx->st, F(nd->out[0]->grad), gx, nd->i[0],
                              nd->i[1]));
    return 0;
}

struct gr_tensor *gr_cumsum(struct gr_ctx *ctx, struct gr_tensor *x)
{
    const char *op = "gr_cumsum";
    if (!arg_ok(ctx, op, x, "x", GR_F32)) {
        return NULL;
    }
    if (x->ndim < 1) {
        return gr_fail(ctx, GR_EINVAL, "%s: x is a scalar", op);
    }
    NEED(cumsum_fwd);
    int64_t cols = x->shape[x->ndim - 1], rows = x->numel / cols;
    struct gr_tensor *y = gr_new_step(ctx, GR_F32, shape_of(x), 0);
    if (!y) {
        return NULL;
    }
    CALL(ctx->be->cumsum_fwd(ctx->st, F(x), F(y), rows, cols));
    if (gr_wants_grad(ctx, 1, &x)) {
        struct gr_node *nd = gr_record1(ctx, op, cumsum_bwd, 1, &x, y);
        if (!nd) {
            return NULL;
        }
        nd->i[0] = rows;
        nd->i[1] = cols;
    }
    return y;
}

static int cumax_bwd(struct gr_ctx *ctx, struct gr_node *nd)
{
    float *gx = gr_grad_buf(ctx, nd->in[0]);
    if (!gx) {
        return ctx->status;
    }
    CALLB(ctx->be->cumax_bwd(ctx->st, nd->aux[0], F(nd->out[0]->grad), gx,
                             nd->i[0], nd->i[1]));
    return 0;
}

struct gr_tensor *gr_cumax(struct gr_ctx *ctx, struct gr_tensor *x)
{
    const char *op = "gr_cumax";
    if (!arg_ok(ctx, op, x, "x", GR_F32)) {
        return NULL;
    }
    if (x->ndim < 1) {
        return gr_fail(ctx, GR_EINVAL, "%s: x is a scalar", op);
    }
    NEED(cumax_fwd);
    int64_t cols = x->shape[x->ndim - 1], rows = x->numel / cols;
    struct gr_tensor *y = gr_new_step(ctx, GR_F32, shape_of(x), 0);
    float *p = y ? gr_step_floats(ctx, x->numel) : NULL;
    if (!p) {
        return NULL;
    }
    CALL(ctx->be->cumax_fwd(ctx->st, F(x), F(y), p, rows, cols));
    if (gr_wants_grad(ctx, 1, &x)) {
        struct gr_node *nd = gr_record1(ctx, op, cumax_bwd, 1, &x, y);
        if (!nd) {
            return NULL;
        }
        nd->aux[0] = p;
        nd->i[0] = rows;
        nd->i[1] = cols;
    }
    return y;
}

static int layernorm_bwd(struct gr_ctx *ctx, struct gr_node *nd)
{
    struct gr_tensor *x = nd->in[0], *g = nd->in[1], *b = nd->in[2];
    float *gx = gr_grad_buf(ctx, x);
    float *gg = g ? gr_grad_buf(ctx, g) : NULL;
    float *gb = b ? gr_grad_buf(ctx, b) : NULL;
    if (ctx->status < 0) {
        return ctx->status;
    }
    CALLB(ctx->be->layernorm_bwd(ctx->st, F(x), g ? F(g) : NULL, nd->aux[0],
                                 nd->aux[1], F(nd->out[0]->grad), gx, gg, gb,
                                 nd->i[0], nd->i[1]));
    return 0;
}

struct gr_tensor *gr_layer_norm(struct gr_ctx *ctx, struct gr_tensor *x,
                                struct gr_tensor *gamma,
                                struct gr_tensor *beta, float eps)
{
    const char *op = "gr_layer_norm";
    if (!arg_ok(ctx, op, x, "x", GR_F32)) {
        return NULL;
    }
    if ((gamma && !arg_ok(ctx, op, gamma, "gamma", GR_F32)) ||
        (beta && !arg_ok(ctx, op, beta, "beta", GR_F32))) {
        return NULL;
    }
    if (x->ndim < 1) {
        return gr_fail(ctx, GR_EINVAL, "%s: x is a scalar", op);
    }
    int64_t cols = x->shape[x->ndim - 1], rows = x->numel / cols;
    char s1[96], s2[96];
    if (gamma && (gamma->ndim != 1 || gamma->shape[0] != cols)) {
        return gr_fail(ctx, GR_EINVAL, "%s: gamma %s, want [%lld] for x %s",
                       op, SHAPE_STR(gamma, s1), (long long)cols,
                       SHAPE_STR(x, s2));
    }
    if (beta && (beta->ndim != 1 || beta->shape[0] != cols)) {
        return gr_fail(ctx, GR_EINVAL, "%s: beta %s, want [%lld] for x %s",
                       op, SHAPE_STR(beta, s1), (long long)cols,
                       SHAPE_STR(x, s2));
    }
    if (!(eps >= 0.0f)) {
        return gr_fail(ctx, GR_EINVAL, "%s: eps %g < 0", op, (double)eps);
    }
    NEED(layernorm_fwd);
    struct gr_tensor *y = gr_new_step(ctx, GR_F32, shape_of(x), 0);
    float *stats = y ? gr_step_floats(ctx, 2 * rows) : NULL;
    if (!stats) {
        return NULL;
    }
    CALL(ctx->be->layernorm_fwd(ctx->st, F(x), gamma ? F(gamma) : NULL,
                                beta ? F(beta) : NULL, F(y), stats,
                                stats + rows, rows, cols, eps));
    struct gr_tensor *in[3] = {x, gamma, beta};
    if (gr_wants_grad(ctx, 3, in)) {
        struct gr_node *nd = gr_record1(ctx, op, layernorm_bwd, 3, in, y);
        if (!nd) {
            return NULL;
        }
        nd->aux[0] = stats;
        nd->aux[1] = stats + rows;
        nd->i[0] = rows;
        nd->i[1] = cols;
    }
    return y;
}

/* ---- indexing ---- */

static int embedding_bwd(struct gr_ctx *ctx, struct gr_node *nd)
{
    struct gr_tensor *table = nd->in[0], *ids = nd->in[1];
    float *gt = gr_grad_buf(ctx, table);
    if (!gt) {
        return ctx->status;
    }
    CALLB(ctx->be->rows_scatter_add(ctx->st, F(nd->out[0]->grad), I(ids), gt,
                                    ids->numel, table->shape[1]));
    return 0;
}

struct gr_tensor *gr_embedding(struct gr_ctx *ctx, struct gr_tensor *table,
                               struct gr_tensor *ids)
{
    const char *op = "gr_embedding";
    if (!arg_ok(ctx, op, table, "table", GR_F32) ||
        !arg_ok(ctx, op, ids, "ids", GR_I32)) {
        return NULL;
    }
    char s1[96], s2[96];
    if (table->ndim != 2 || ids->ndim > 3) {
        return gr_fail(ctx, GR_EINVAL, "%s: table %s must be [V, D] and ids "
                       "%s at most 3-D", op, SHAPE_STR(table, s1),
                       SHAPE_STR(ids, s2));
    }
    if (table->shape[0] > INT32_MAX ||
        !index_in_range(ctx, op, ids, "ids", 0,
                        (int32_t)(table->shape[0] - 1))) {
        return NULL;
    }
    NEED(rows_gather);
    struct gr_shape ys = shape_of(ids);
    ys.d[ids->ndim] = table->shape[1];
    ys.ndim = ids->ndim + 1;
    struct gr_tensor *y = gr_new_step(ctx, GR_F32, ys, 0);
    if (!y) {
        return NULL;
    }
    CALL(ctx->be->rows_gather(ctx->st, F(table), I(ids), F(y), ids->numel,
                              table->shape[1]));
    struct gr_tensor *in[2] = {table, ids};
    if (gr_wants_grad(ctx, 2, in)) {
        if (!gr_record1(ctx, op, embedding_bwd, 2, in, y)) {
            return NULL;
        }
    }
    return y;
}

static int sparse_bwd(struct gr_ctx *ctx, struct gr_node *nd)
{
    struct gr_tensor *idx = nd->in[0], *val = nd->in[1], *table = nd->in[2];
    float *gval = val ? gr_grad_buf(ctx, val) : NULL;
    float *gt = gr_grad_buf(ctx, table);
    if (ctx->status < 0) {
        return ctx->status;
    }
    CALLB(ctx->be->sparse_mm_bwd(ctx->st, I(idx), val ? F(val) : NULL,
                                 F(table), F(nd->out[0]->grad), gval, gt,
                                 idx->shape[0], idx->shape[1],
                                 table->shape[1], table->shape[0]));
    return 0;
}

struct gr_tensor *gr_sparse_matmul(struct gr_ctx *ctx, struct gr_tensor *idx,
                                   struct gr_tensor *val,
                                   struct gr_tensor *table)
{
    const char *op = "gr_sparse_matmul";
    if (!arg_ok(ctx, op, idx, "idx", GR_I32) ||
        !arg_ok(ctx, op, table, "table", GR_F32) ||
        (val && !arg_ok(ctx, op, val, "val", GR_F32))) {
        return NULL;
    }
    char s1[96], s2[96];
    if (idx->ndim != 2 || table->ndim != 2 ||
        (val && !gr_shape_equal(idx, val))) {
        return gr_fail(ctx, GR_EINVAL, "%s: idx %s (and val) must be [N, NZ]"
                       " and table %s [IN, OUT]", op, SHAPE_STR(idx, s1),
                       SHAPE_STR(table, s2));
    }
    if (table->shape[0] > INT32_MAX ||
        !index_in_range(ctx, op, idx, "idx", -1,
                        (int32_t)(table->shape[0] - 1))) {
        return NULL;
    }
    NEED(sparse_mm_fwd);
    struct gr_tensor *y =
        gr_new_step(ctx, GR_F32, gr_shape2(idx->shape[0], table->shape[1]), 0);
    if (!y) {
        return NULL;
    }
    CALL(ctx->be->sparse_mm_fwd(ctx->st, I(idx), val ? F(val) : NULL,
                                F(table), F(y), idx->shape[0], idx->shape[1],
                                table->shape[1]));
    struct gr_tensor *in[3] = {idx, val, table};
    if (gr_wants_grad(ctx, 3, in)) {
        if (!gr_record1(ctx, op, sparse_bwd, 3, in, y)) {
            return NULL;
        }
    }
    return y;
}

static int gather_bwd(struct gr_ctx *ctx, struct gr_node *nd)
{
    struct gr_tensor *x = nd->in[0], *idx = nd->in[1];
    float *gx = gr_grad_buf(ctx, x);
    if (!gx) {
        return ctx->status;
    }
    CALLB(ctx->be->gather_bwd(ctx->st, F(nd->out[0]->grad), I(idx), gx,
                              nd->i[0], nd->i[1], nd->i[2]));
    return 0;
}

struct gr_tensor *gr_gather(struct gr_ctx *ctx, struct gr_tensor *x,
                            struct gr_tensor *idx)
{
    const char *op = "gr_gather";
    if (!arg_ok(ctx, op, x, "x", GR_F32) ||
        !arg_ok(ctx, op, idx, "idx", GR_I32)) {
        return NULL;
    }
    char s1[96], s2[96];
    int ok = x->ndim >= 1 && x->ndim == idx->ndim;
    for (int d = 0; ok && d < x->ndim - 1; d++) {
        ok = x->shape[d] == idx->shape[d];
    }
    if (!ok) {
        return gr_fail(ctx, GR_EINVAL, "%s: x %s and idx %s must have the "
                       "same dimensions but the last", op, SHAPE_STR(x, s1),
                       SHAPE_STR(idx, s2));
    }
    int64_t n = x->shape[x->ndim - 1], k = idx->shape[idx->ndim - 1];
    if (n > INT32_MAX || !index_in_range(ctx, op, idx, "idx", 0,
                                         (int32_t)(n - 1))) {
        return NULL;
    }
    NEED(gather_fwd);
    struct gr_tensor *y = gr_new_step(ctx, GR_F32, shape_of(idx), 0);
    if (!y) {
        return NULL;
    }
    int64_t rows = x->numel / n;
    CALL(ctx->be->gather_fwd(ctx->st, F(x), I(idx), F(y), rows, n, k));
    struct gr_tensor *in[2] = {x, idx};
    if (gr_wants_grad(ctx, 2, in)) {
        struct gr_node *nd = gr_record1(ctx, op, gather_bwd, 2, in, y);
        if (!nd) {
            return NULL;
        }
        nd->i[0] = rows;
        nd->i[1] = n;
        nd->i[2] = k;
    }
    return y;
}

/* [outer, dim, inner] factors of x around dimension d. */
static void split_dims(const struct gr_tensor *x, int d, int64_t *outer,
                       int64_t *inner)
{
    *outer = 1;
    *inner = 1;
    for (int i = 0; i < d; i++) {
        *outer *= x->shape[i];
    }
    for (int i = d + 1; i < x->ndim; i++) {
        *inner *= x->shape[i];
    }
}

static int concat_bwd(struct gr_ctx *ctx, struct gr_node *nd)
{
    int64_t outer = nd->i[0], inner = nd->i[1], total = nd->i[2];
    int d = (int)nd->i[3];
    float *gy = F(nd->out[0]->grad);
    int64_t off = 0;
    for (int j = 0; j < nd->n_in; j++) {
        struct gr_tensor *x = nd->in[j];
        int64_t len = x->shape[d];
        float *gx = gr_grad_buf(ctx, x);
        if (gx) {
            CALLB(ctx->be->copy2d(ctx->st, gx, len * inner, gy + off * inner,
                                  total * inner, outer, len * inner, 1));
        }
        off += len;
    }
    return ctx->status;
}

struct gr_tensor *gr_concat(struct gr_ctx *ctx, int n,
                            struct gr_tensor *const *xs, int dim)
{
    const char *op = "gr_concat";
    if (n < 1 || !xs) {
        return gr_fail(ctx, GR_EINVAL, "%s: no tensors given", op);
    }
    for (int j = 0; j < n; j++) {
        char nm[32];
        snprintf(nm, sizeof nm, "xs[%d]", j);
        if (!arg_ok(ctx, op, xs[j], nm, GR_F32)) {
            return NULL;
        }
    }
    const struct gr_tensor *x0 = xs[0];
    int d = norm_dim(dim, x0->ndim);
    if (d < 0 || d >= x0->ndim) {
        return gr_fail(ctx, GR_EINVAL, "%s: dim %d out of range for %d-D "
                       "tensors", op, dim, x0->ndim);
    }
    int64_t total = 0;
    for (int j = 0; j < n; j++) {
        int ok = xs[j]->ndim == x0->ndim;
        for (int i = 0; ok && i < x0->ndim; i++) {
            ok = i == d || xs[j]->shape[i] == x0->shape[i];
        }
        if (!ok) {
            char s1[96], s2[96];
            return gr_fail(ctx, GR_EINVAL, "%s: xs[%d] %s does not match "
                           "xs[0] %s outside dim %d", op, j,
                           SHAPE_STR(xs[j], s1), SHAPE_STR(x0, s2), d);
        }
        total += xs[j]->shape[d];
    }
    NEED(copy2d);
    struct gr_shape ys = shape_of(x0);
    ys.d[d] = total;
    struct gr_tensor *y = gr_new_step(ctx, GR_F32, ys, 0);
    if (!y) {
        return NULL;
    }
    int64_t outer, inner;
    split_dims(x0, d, &outer, &inner);
    int64_t off = 0;
    for (int j = 0; j < n; j++) {
        int64_t len = xs[j]->shape[d];
        CALL(ctx->be->copy2d(ctx->st, F(y) + off * inner, total * inner,
                             F(xs[j]), len * inner, outer, len * inner, 0));
        off += len;
    }
    if (gr_wants_grad(ctx, n, xs)) {
        struct gr_node *nd = gr_record1(ctx, op, concat_bwd, n, xs, y);
        if (!nd) {
            return NULL;
        }
        nd->i[0] = outer;
        nd->i[1] = inner;
        nd->i[2] = total;
        nd->i[3] = d;
    }
    return y;
}

static int stack_bwd(struct gr_ctx *ctx, struct gr_node *nd)
{
    float *gy = F(nd->out[0]->grad);
    int64_t each = nd->i[0];
    for (int j = 0; j < nd->n_in; j++) {
        int acc;
        float *gx = gr_grad_buf_acc(ctx, nd->in[j], &acc);
        if (gx) {
            CALLB(ctx->be->copy2d(ctx->st, gx, each, gy + (int64_t)j * each,
                                  each, 1, each, acc));
        }
    }
    return ctx->status;
}

struct gr_tensor *gr_stack(struct gr_ctx *ctx, int n,
                           struct gr_tensor *const *xs)
{
    const char *op = "gr_stack";
    if (n < 1 || !xs) {
        return gr_fail(ctx, GR_EINVAL, "%s: no tensors given", op);
    }
    for (int j = 0; j < n; j++) {
        char nm[32];
        snprintf(nm, sizeof nm, "xs[%d]", j);
        if (!arg_ok(ctx, op, xs[j], nm, GR_F32)) {
            return NULL;
        }
    }
    const struct gr_tensor *x0 = xs[0];
    if (x0->ndim >= GR_MAX_DIMS) {
        return gr_fail(ctx, GR_EINVAL, "%s: tensors are already 4-D", op);
    }
    for (int j = 1; j < n; j++) {
        if (!gr_shape_equal(xs[j], x0)) {
            char s1[96], s2[96];
            return gr_fail(ctx, GR_EINVAL, "%s: xs[%d] %s differs from xs[0] "
                           "%s", op, j, SHAPE_STR(xs[j], s1),
                           SHAPE_STR(x0, s2));
        }
    }
    NEED(copy2d);
    struct gr_shape ys;
    ys.ndim = x0->ndim + 1;
    ys.d[0] = n;
    for (int i = 1; i < GR_MAX_DIMS; i++) {
        ys.d[i] = i - 1 < x0->ndim ? x0->shape[i - 1] : 1;
    }
    struct gr_tensor *y = gr_new_step(ctx, GR_F32, ys, 0);
    if (!y) {
        return NULL;
    }
    int64_t each = x0->numel;
    for (int j = 0; j < n; j++) {
        CALL(ctx->be->copy2d(ctx->st, F(y) + (int64_t)j * each, each,
                             F(xs[j]), each, 1, each, 0));
    }
    if (gr_wants_grad(ctx, n, xs)) {
        struct gr_node *nd = gr_record1(ctx, op, stack_bwd, n, xs, y);
        if (!nd) {
            return NULL;
        }
        nd->i[0] = each;
    }
    return y;
}

static int slice_bwd(struct gr_ctx *ctx, struct gr_node *nd)
{
    float *gx = gr_grad_buf(ctx, nd->in[0]);
    if (!gx) {
        return ctx->status;
    }
    int64_t outer = nd->i[0], inner = nd->i[1], size = nd->i[2];
    int64_t start = nd->i[3], len = nd->i[4];
    CALLB(ctx->be->copy2d(ctx->st, gx + start * inner, size * inner,
                          F(nd->out[0]->grad), len * inner, outer,
                          len * inner, 1));
    return 0;
}

struct gr_tensor *gr_slice(struct gr_ctx *ctx, struct gr_tensor *x, int dim,
                           int64_t start, int64_t len)
{
    const char *op = "gr_slice";
    if (!arg_ok(ctx, op, x, "x", GR_F32)) {
        return NULL;
    }
    int d = norm_dim(dim, x->ndim);
    char sx[96];
    if (d < 0 || d >= x->ndim || start < 0 || len < 1 ||
        start + len > x->shape[d]) {
        return gr_fail(ctx, GR_EINVAL, "%s: [%lld, %lld) along dim %d is "
                       "outside x %s", op, (long long)start,
                       (long long)(start + len), dim, SHAPE_STR(x, sx));
    }
    NEED(copy2d);
    struct gr_shape ys = shape_of(x);
    ys.d[d] = len;
    struct gr_tensor *y = gr_new_step(ctx, GR_F32, ys, 0);
    if (!y) {
        return NULL;
    }
    int64_t outer, inner;
    split_dims(x, d, &outer, &inner);
    int64_t size = x->shape[d];
    CALL(ctx->be->copy2d(ctx->st, F(y), len * inner, F(x) + start * inner,
                         size * inner, outer, len * inner, 0));
    if (gr_wants_grad(ctx, 1, &x)) {
        struct gr_node *nd = gr_record1(ctx, op, slice_bwd, 1, &x, y);
        if (!nd) {
            return NULL;
        }
        nd->i[0] = outer;
        nd->i[1] = inner;
        nd->i[2] = size;
        nd->i[3] = start;
        nd->i[4] = len;
    }
    return y;
}

int gr_split(struct gr_ctx *ctx, struct gr_tensor *x, int dim, int n,
             const int64_t *sizes, struct gr_tensor **outs)
{
    const char *op = "gr_split";
    for (int j = 0; j < n; j++) {
        outs[j] = NULL;
    }
    if (!arg_ok(ctx, op, x, "x", GR_F32)) {
        return ctx->status ? ctx->status : GR_EINVAL;
    }
    int d = norm_dim(dim, x->ndim);
    if (d < 0 || d >= x->ndim || n < 1) {
        return gr_fail_code(ctx, GR_EINVAL, "%s: bad dim %d or count %d", op,
                            dim, n);
    }
    int64_t total = 0;
    for (int j = 0; j < n; j++) {
        total += sizes[j];
    }
    if (total != x->shape[d]) {
        char sx[96];
        return gr_fail_code(ctx, GR_EINVAL, "%s: sizes sum to %lld, x %s has "
                            "%lld along dim %d", op, (long long)total,
                            SHAPE_STR(x, sx), (long long)x->shape[d], dim);
    }
    int64_t start = 0;
    for (int j = 0; j < n; j++) {
        outs[j] = gr_slice(ctx, x, d, start, sizes[j]);
        if (!outs[j]) {
            return ctx->status;
        }
        start += sizes[j];
    }
    return 0;
}

/* Pads x's shape on the left to 4 dims; returns the padding. */
static int pad4(const struct gr_tensor *x, int64_t s[4])
{
    int p = 4 - x->ndim;
    for (int i = 0; i < 4; i++) {
        s[i] = i < p ? 1 : x->shape[i - p];
    }
    return p;
}

static int transpose_bwd(struct gr_ctx *ctx, struct gr_node *nd)
{
    float *gx = gr_grad_buf(ctx, nd->in[0]);
    if (!gx) {
        return ctx->status;
    }
    int64_t s[4];
    int perm[4];
    pad4(nd->out[0], s);
    for (int i = 0; i < 4; i++) {
        perm[i] = (int)nd->i[i];
    }
    CALLB(ctx->be->permute(ctx->st, F(nd->out[0]->grad), gx, s, perm, 1));
    return 0;
}

struct gr_tensor *gr_transpose(struct gr_ctx *ctx, struct gr_tensor *x,
                               int dim0, int dim1)
{
    const char *op = "gr_transpose";
    if (!arg_ok(ctx, op, x, "x", GR_F32)) {
        return NULL;
    }
    int d0 = norm_dim(dim0, x->ndim), d1 = norm_dim(dim1, x->ndim);
    if (d0 < 0 || d0 >= x->ndim || d1 < 0 || d1 >= x->ndim) {
        return gr_fail(ctx, GR_EINVAL, "%s: dims %d, %d out of range for a "
                       "%d-D tensor", op, dim0, dim1, x->ndim);
    }
    NEED(permute);
    struct gr_shape ys = shape_of(x);
    ys.d[d0] = x->shape[d1];
    ys.d[d1] = x->shape[d0];
    struct gr_tensor *y = gr_new_step(ctx, GR_F32, ys, 0);
    if (!y) {
        return NULL;
    }
    int64_t s[4];
    int p = pad4(x, s);
    int perm[4] = {0, 1, 2, 3};
    perm[d0 + p] = d1 + p;
    perm[d1 + p] = d0 + p;
    CALL(ctx->be->permute(ctx->st, F(x), F(y), s, perm, 0));
    if (gr_wants_grad(ctx, 1, &x)) {
        struct gr_node *nd = gr_record1(ctx, op, transpose_bwd, 1, &x, y);
        if (!nd) {
            return NULL;
        }
        for (int i = 0; i < 4; i++) {
            nd->i[i] = perm[i]; /* a swap is its own inverse */
        }
    }
    return y;
}

/* ---- reductions ---- */

static int reduce_bwd(struct gr_ctx *ctx, struct gr_node *nd)
{
    float *gx = gr_grad_buf(ctx, nd->in[0]);
    if (!gx) {
        return ctx->status;
    }
    CALLB(ctx->be->expand(ctx->st, F(nd->out[0]->grad), gx, nd->i[0],
                          nd->i[1], nd->i[2], nd->f[0]));
    return 0;
}

static struct gr_tensor *reduce_op(struct gr_ctx *ctx, const char *op,
                                   struct gr_tensor *x, int all, int dim,
                                   int mean)
{
    if (!arg_ok(ctx, op, x, "x", GR_F32)) {
        return NULL;
    }
    int64_t outer = 1, n = x->numel, inner = 1;
    struct gr_shape ys = gr_shape0();
    if (!all) {
        int d = norm_dim(dim, x->ndim);
        if (d < 0 || d >= x->ndim) {
            return gr_fail(ctx, GR_EINVAL, "%s: dim %d out of range for a "
                           "%d-D tensor", op, dim, x->ndim);
        }
        split_dims(x, d, &outer, &inner);
        n = x->shape[d];
        ys.ndim = x->ndim - 1;
        for (int i = 0, j = 0; i < x->ndim; i++) {
            if (i != d) {
                ys.d[j++] = x->shape[i];
            }
        }
    }
    NEED(reduce);
    float scale = mean ? 1.0f / (float)n : 1.0f;
    struct gr_tensor *y = gr_new_step(ctx, GR_F32, ys, 0);
    if (!y) {
        return NULL;
    }
    CALL(ctx->be->reduce(ctx->st, F(x), F(y), outer, n, inner, scale, 0));
    if (gr_wants_grad(ctx, 1, &x)) {
        struct gr_node *nd = gr_record1(ctx, op, reduce_bwd, 1, &x, y);
        if (!nd) {
            return NULL;
        }
        nd->i[0] = outer;
        nd->i[1] = n;
        nd->i[2] = inner;
        nd->f[0] = scale;
    }
    return y;
}

struct gr_tensor *gr_sum(struct gr_ctx *ctx, struct gr_tensor *x)
{
    return reduce_op(ctx, "gr_sum", x, 1, 0, 0);
}
struct gr_tensor *gr_mean(struct gr_ctx *ctx, struct gr_tensor *x)
{
    return reduce_op(ctx, "gr_mean", x, 1, 0, 1);
}
struct gr_tensor *gr_sum_dim(struct gr_ctx *ctx, struct gr_tensor *x, int dim)
{
    return reduce_op(ctx, "gr_sum_dim", x, 0, dim, 0);
}
struct gr_tensor *gr_mean_dim(struct gr_ctx *ctx, struct gr_tensor *x,
                              int dim)
{
    return reduce_op(ctx, "gr_mean_dim", x, 0, dim, 1);
}

/* ---- dropout ---- */

static int dropout_bwd(struct gr_ctx *ctx, struct gr_node *nd)
{
    float *gx = gr_grad_buf(ctx, nd->in[0]);
    if (!gx) {
        return ctx->status;
    }
    CALLB(ctx->be->dropout(ctx->st, F(nd->out[0]->grad), gx, &nd->bc,
                           nd->key, nd->f[0], nd->f[1], 1));
    return 0;
}

struct gr_tensor *gr_dropout_mask(struct gr_ctx *ctx, struct gr_tensor *x,
                                  float p, struct gr_rng rng,
                                  struct gr_shape mask_shape, unsigned flags)
{
    const char *op = "gr_dropout";
    if (!arg_ok(ctx, op, x, "x", GR_F32)) {
        return NULL;
    }
    if (!(p >= 0.0f && p < 1.0f)) {
        return gr_fail(ctx, GR_EINVAL, "%s: p = %g outside [0, 1)", op,
                       (double)p);
    }
    /* Broadcast check through a shape-only tensor. */
    struct gr_tensor m;
    memset(&m, 0, sizeof m);
    if (mask_shape.ndim < 0 || mask_shape.ndim > GR_MAX_DIMS) {
        return gr_fail(ctx, GR_EINVAL, "%s: bad mask rank %d", op,
                       mask_shape.ndim);
    }
    m.ndim = mask_shape.ndim;
    m.numel = 1;
    for (int i = 0; i < GR_MAX_DIMS; i++) {
        m.shape[i] = i < m.ndim ? mask_shape.d[i] : 1;
        if (m.shape[i] < 1) {
            return gr_fail(ctx, GR_EINVAL, "%s: bad mask shape", op);
        }
        m.numel *= m.shape[i];
    }
    struct gr_bcast bc;
    if (make_bcast(ctx, op, x, &m, "mask shape", &bc) < 0) {
        return NULL;
    }
    if (p == 0.0f) {
        return x;
    }
    NEED(dropout);
    float scale = (flags & GR_DROPOUT_NO_RESCALE) ? 1.0f : 1.0f / (1.0f - p);
    uint64_t key = gr_rng_key(rng);
    struct gr_tensor *y = gr_new_step(ctx, GR_F32, shape_of(x), 0);
    if (!y) {
        return NULL;
    }
    CALL(ctx->be->dropout(ctx->st, F(x), F(y), &bc, key, p, scale, 0));
    if (gr_wants_grad(ctx, 1, &x)) {
        struct gr_node *nd = gr_record1(ctx, op, dropout_bwd, 1, &x, y);
        if (!nd) {
            return NULL;
        }
        nd->bc = bc;
        nd->key = key;
        nd->f[0] = p;
        nd->f[1] = scale;
    }
    return y;
}

struct gr_tensor *gr_dropout(struct gr_ctx *ctx, struct gr_tensor *x,
                             float p, struct gr_rng rng)
{
    if (!arg_ok(ctx, "gr_dropout", x, "x", GR_F32)) {
        return NULL;
    }
    return gr_dropout_mask(ctx, x, p, rng, shape_of(x), 0);
}

struct gr_tensor *gr_locked_dropout(struct gr_ctx *ctx, struct gr_tensor *x,
                                    float p, struct gr_rng rng)
{
    if (!arg_ok(ctx, "gr_locked_dropout", x, "x", GR_F32)) {
        return NULL;
    }
    if (x->ndim < 2) {
        return gr_fail(ctx, GR_EINVAL, "gr_locked_dropout: x needs [T, ...] "
                       "with at least 2 dimensions");
    }
    struct gr_shape ms = shape_of(x);
    ms.d[0] = 1;
    return gr_dropout_mask(ctx, x, p, rng, ms, 0);
}

/* ---- cross entropy ---- */

static int xent_bwd(struct gr_ctx *ctx, struct gr_node *nd)
{
    struct gr_tensor *logits = nd->in[0], *targets = nd->in[1];
    float *gl = gr_grad_buf(ctx, logits);
    if (!gl) {
        return ctx->status;
    }
    CALLB(ctx->be->xent_bwd(ctx->st, F(logits), I(targets), nd->aux[1],
                            logits->shape[0], logits->shape[1],
                            (int32_t)nd->i[0], F(nd->out[0]->grad),
                            nd->aux[0], gl));
    return 0;
}

struct gr_tensor *gr_cross_entropy(struct gr_ctx *ctx,
                                   struct gr_tensor *logits,
                                   struct gr_tensor *targets,
                                   int32_t ignore_index)
{
    const char *op = "gr_cross_entropy";
    if (!arg_ok(ctx, op, logits, "logits", GR_F32) ||
        !arg_ok(ctx, op, targets, "targets", GR_I32)) {
        return NULL;
    }
    char s1[96], s2[96];
    if (logits->ndim != 2 || targets->ndim != 1 ||
        targets->shape[0] != logits->shape[0]) {
        return gr_fail(ctx, GR_EINVAL, "%s: logits %s must be [N, V] and "
                       "targets %s [N]", op, SHAPE_STR(logits, s1),
                       SHAPE_STR(targets, s2));
    }
    int64_t n = logits->shape[0], v = logits->shape[1];
    if (v > INT32_MAX) {
        return gr_fail(ctx, GR_EINVAL, "%s: vocabulary too large", op);
    }
    /* Every target is the ignore index or a class. On the CPU each value is
     * read; on a device the bounds recorded when the targets were uploaded
     * decide it, so no index travels back to the host. */
    if (ctx->device == GR_DEVICE_CPU) {
        const int32_t *tv = I(targets);
        for (int64_t i = 0; i < n; i++) {
            if (tv[i] != ignore_index && (tv[i] < 0 || tv[i] >= v)) {
                return gr_fail(ctx, GR_EINVAL, "%s: targets[%lld] = %d is "
                               "outside [0, %lld) and not the ignore index "
                               "%d", op, (long long)i, (int)tv[i],
                               (long long)v, (int)ignore_index);
            }
        }
    } else if (n > 0) {
        if (targets->imax_ >= v) {
            return gr_fail(ctx, GR_EINVAL, "%s: targets hold values up to "
                           "%d, outside [0, %lld)", op, (int)targets->imax_,
                           (long long)v);
        }
        if (targets->imin_ < 0 &&
            (targets->ineg_many_ || targets->ineg_ != ignore_index)) {
            return gr_fail(ctx, GR_EINVAL, "%s: targets hold negative "
                           "values other than the ignore index %d (%d%s)",
                           op, (int)ignore_index, (int)targets->imin_,
                           targets->ineg_many_ ? " and others" : "");
        }
    }
    NEED(xent_fwd);
    struct gr_tensor *y = gr_new_step(ctx, GR_F32, gr_shape0(), 0);
    float *aux = y ? gr_step_floats(ctx, 1 + n) : NULL;
    if (!aux) {
        return NULL;
    }
    CALL(ctx->be->xent_fwd(ctx->st, F(logits), I(targets), n, v, ignore_index,
                           F(y), aux, aux + 1));
    struct gr_tensor *in[2] = {logits, targets};
    if (gr_wants_grad(ctx, 2, in)) {
        struct gr_node *nd = gr_record1(ctx, op, xent_bwd, 2, in, y);
        if (!nd) {
            return NULL;
        }
        nd->aux[0] = aux;
        nd->aux[1] = aux + 1;
        nd->i[0] = ignore_index;
    }
    return y;
}

/* ---- causal convolution ---- */

static int conv_bwd(struct gr_ctx *ctx, struct gr_node *nd)
{
    struct gr_tensor *x = nd->in[0], *w = nd->in[1], *bias = nd->in[2];
    const struct gr_backend *be = ctx->be;
    int t = (int)nd->i[0], b = (int)nd->i[1], cin = (int)nd->i[2];
    int cout = (int)nd->i[3], kw = (int)nd->i[4], dil = (int)nd->i[5];
    const float *wr = nd->aux[0];
    float *gy = F(nd->out[0]->grad);
    float *gx = gr_grad_buf(ctx, x);
    float *gw = gr_grad_buf(ctx, w);
    float *gb = bias ? gr_grad_buf(ctx, bias) : NULL;
    if (ctx->status < 0) {
        return ctx->status;
    }
    float *gwr = NULL;
    if (gw) {
        gwr = gr_step_floats(ctx, (int64_t)kw * cout * cin);
        if (!gwr) {
            return ctx->status;
        }
        CALLB(be->zero(ctx->st, gwr, (size_t)kw * cout * cin * sizeof(float)));
    }
    for (int j = 0; j < kw; j++) {
        int64_t s = (int64_t)(kw - 1 - j) * dil;
        if (s >= t) {
            continue;
        }
        int rows = (int)((t - s) * b);
        const float *gys = gy + s * b * cout;
        if (gx) {
            CALLB(be->gemm(ctx->st, 0, 0, rows, cin, cout, 1.0f, gys, cout, 0,
                           wr + (int64_t)j * cout * cin, cin, 0, 1.0f, gx,
                           cin, 0, 1));
        }
        if (gwr) {
            CALLB(be->gemm(ctx->st, 1, 0, cout, cin, rows, 1.0f, gys, cout, 0,
                           F(x), cin, 0, 1.0f, gwr + (int64_t)j * cout * cin,
                           cin, 0, 1));
        }
    }
    if (gw) {
        int64_t s[4] = {1, kw, cout, cin};
        int perm[4] = {0, 2, 3, 1}; /* [1, KW, COUT, CIN] -> [1, COUT, CIN, KW] */
        CALLB(be->permute(ctx->st, gwr, gw, s, perm, 1));
    }
    if (gb) {
        CALLB(be->reduce(ctx->st, gy, gb, 1, (int64_t)t * b, cout, 1.0f, 1));
    }
    return 0;
}

struct gr_tensor *gr_conv1d_causal(struct gr_ctx *ctx, struct gr_tensor *x,
                                   struct gr_tensor *w,
                                   struct gr_tensor *bias, int dilation)
{
    const char *op = "gr_conv1d_causal";
    if (!arg_ok(ctx, op, x, "x", GR_F32) || !arg_ok(ctx, op, w, "w", GR_F32) ||
        (bias && !arg_ok(ctx, op, bias, "bias", GR_F32))) {
        return NULL;
    }
    char s1[96], s2[96];
    if (x->ndim != 3 || w->ndim != 3 || w->shape[1] != x->shape[2]) {
        return gr_fail(ctx, GR_EINVAL, "%s: x %s must be [T, B, CIN] and w %s "
                       "[COUT, CIN, KW]", op, SHAPE_STR(x, s1),
                       SHAPE_STR(w, s2));
    }
    if (bias && (bias->ndim != 1 || bias->shape[0] != w->shape[0])) {
        return gr_fail(ctx, GR_EINVAL, "%s: bias %s, want [%lld]", op,
                       SHAPE_STR(bias, s1), (long long)w->shape[0]);
    }
    if (dilation < 1) {
        return gr_fail(ctx, GR_EINVAL, "%s: dilation %d < 1", op, dilation);
    }
    int64_t t = x->shape[0], b = x->shape[1], cin = x->shape[2];
    int64_t cout = w->shape[0], kw = w->shape[2];
    if (t * b > INT32_MAX || cin > INT32_MAX || cout > INT32_MAX) {
        return gr_fail(ctx, GR_EINVAL, "%s: dimensions too large", op);
    }
    NEED(gemm);
    NEED(permute);
    struct gr_tensor *y = gr_new_step(ctx, GR_F32, gr_shape3(t, b, cout),
                                      bias == NULL);
    float *wr = y ? gr_step_floats(ctx, kw * cout * cin) : NULL;
    if (!wr) {
        return NULL;
    }
    int64_t s[4] = {1, cout, cin, kw};
    int perm[4] = {0, 3, 1, 2}; /* [1, COUT, CIN, KW] -> [1, KW, COUT, CIN] */
    CALL(ctx->be->permute(ctx->st, F(w), wr, s, perm, 0));
    if (bias) {
        CALL(ctx->be->rows_set(ctx->st, F(y), F(bias), t * b, cout));
    }
    for (int64_t j = 0; j < kw; j++) {
        int64_t sh = (kw - 1 - j) * dilation;
        if (sh >= t) {
            continue;
        }
        CALL(ctx->be->gemm(ctx->st, 0, 1, (int)((t - sh) * b), (int)cout,
                           (int)cin, 1.0f, F(x), (int)cin, 0,
                           wr + j * cout * cin, (int)cin, 0, 1.0f,
                           F(y) + sh * b * cout, (int)cout, 0, 1));
    }
    struct gr_tensor *in[3] = {x, w, bias};
    if (gr_wants_grad(ctx, 3, in)) {
        struct gr_node *nd = gr_record1(ctx, op, conv_bwd, 3, in, y);
        if (!nd) {
            return NULL;
        }
        nd->aux[0] = wr;
        nd->i[0] = t;
        nd->i[1] = b;
        nd->i[2] = cin;
        nd->i[3] = cout;
        nd->i[4] = kw;
        nd->i[5] = dilation;
    }
    return y;
}

/* ---- fused cells ---- */

static int om_gate_bwd(struct gr_ctx *ctx, struct gr_node *nd)
{
    struct gr_tensor *z = nd->in[0], *v = nd->in[1], *h = nd->in[2];
    struct gr_tensor *y = nd->out[0];
    float *gz = gr_grad_buf(ctx, z);
    float *gv = gr_grad_buf(ctx, v);
    float *gh = gr_grad_buf(ctx, h);
    if (ctx->status < 0) {
        return ctx->status;
    }
    if ((!gz && !gv && !gh) || !y->grad) {
        return 0;
    }
    CALLB(ctx->be->om_gate_bwd(ctx->st, F(z), F(v), F(h), F(y->grad), gz, gv,
                               gh, nd->i[0], nd->i[1]));
    return 0;
}

struct gr_tensor *gr_om_gate(struct gr_ctx *ctx, struct gr_tensor *z,
                             struct gr_tensor *v, struct gr_tensor *h)
{
    const char *op = "gr_om_gate";
    if (!arg_ok(ctx, op, z, "z", GR_F32) || !arg_ok(ctx, op, v, "v", GR_F32) ||
        !arg_ok(ctx, op, h, "h", GR_F32)) {
        return NULL;
    }
    char s1[96], s2[96], s3[96];
    if (z->ndim != 2 || v->ndim != 2 || h->ndim != 2 ||
        v->shape[0] != z->shape[0] || h->shape[0] != z->shape[0] ||
        v->shape[1] != h->shape[1] || z->shape[1] != 4 * v->shape[1]) {
        return gr_fail(ctx, GR_EINVAL, "%s: z %s must be [R, 4D] for v %s "
                       "and h %s [R, D]", op, SHAPE_STR(z, s1),
                       SHAPE_STR(v, s2), SHAPE_STR(h, s3));
    }
    NEED(om_gate_fwd);
    int64_t r = v->shape[0], d = v->shape[1];
    struct gr_tensor *y = gr_new_step(ctx, GR_F32, gr_shape2(r, d), 0);
    if (!y) {
        return NULL;
    }
    if (ctx->be->om_gate_fwd(ctx->st, F(z), F(v), F(h), F(y), r, d) < 0) {
        gr_keep_error(ctx, GR_EDEVICE);
        return NULL;
    }
    struct gr_tensor *in[3] = {z, v, h};
    if (gr_wants_grad(ctx, 3, in)) {
        struct gr_node *nd = gr_record1(ctx, op, om_gate_bwd, 3, in, y);
        if (!nd) {
            return NULL;
        }
        nd->i[0] = r;
        nd->i[1] = d;
    }
    return y;
}

/* gr_om_cell: the whole gated recursive cell as one tape node. Saved (one
 * step buffer, aux[0]): in = drop([v; h]) [R, 2D], a = drop(ReLU(W1 in +
 * b1)) [R, 4D], z [R, 4D], s = the gated sum [R, D], then mean and rstd
 * [R] of the LayerNorm. */
static void om_cell_bcast(struct gr_bcast *bc, int64_t rows, int64_t cols)
{
    memset(bc, 0, sizeof *bc);
    bc->shape[0] = bc->shape[1] = bc->bshape[0] = bc->bshape[1] = 1;
    bc->shape[2] = bc->bshape[2] = rows;
    bc->shape[3] = bc->bshape[3] = cols;
    bc->bstride[3] = cols == 1 ? 0 : 1;
    bc->bstride[2] = rows == 1 ? 0 : cols;
    bc->n = bc->bn = rows * cols;
    bc->same = 1;
}

static int om_cell_bwd(struct gr_ctx *ctx, struct gr_node *nd)
{
    struct gr_tensor *v = nd->in[0], *h = nd->in[1], *w1 = nd->in[2];
    struct gr_tensor *b1 = nd->in[3], *w2 = nd->in[4], *b2 = nd->in[5];
    struct gr_tensor *gam = nd->in[6], *bet = nd->in[7];
    const struct gr_backend *be = ctx->be;
    const int64_t r = nd->i[0], d = nd->i[1];
    const uint64_t key_in = (uint64_t)nd->i[2];
    const float p = nd->f[0], scale = nd->f[1];
    float *in = nd->aux[0];
    float *a = in + r * 2 * d, *z = a + r * 4 * d, *s = z + r * 4 * d;
    float *mean = s + r * d, *rstd = mean + r;
    int acc_v, acc_h;
    float *gv = gr_grad_buf_acc(ctx, v, &acc_v);
    float *gh = gr_grad_buf_acc(ctx, h, &acc_h);
    if (gh != NULL && gh == gv) {
        acc_h = 1; /* h is v: the second contribution adds */
    }
    float *gw1 = gr_grad_buf(ctx, w1), *gb1 = gr_grad_buf(ctx, b1);
    float *gw2 = gr_grad_buf(ctx, w2), *gb2 = gr_grad_buf(ctx, b2);
    float *ggam = gr_grad_buf(ctx, gam), *gbet = gr_grad_buf(ctx, bet);
    /* scratch: gs [R, D] and gz [R, 4D] (accumulated into: zeroed), ga
     * [R, 4D] and gin [R, 2D] (written by their product); released at the
     * end, so that every cell's backward of the step reuses the same
     * (cached) memory */
    const struct gr_step_mark mark = gr_step_mark(ctx);
    float *gs = gr_step_floats(ctx, r * (d + 4 * d + 4 * d + 2 * d));
    if (ctx->status < 0 || gs == NULL) {
        return ctx->status < 0 ? ctx->status : GR_ENOMEM;
    }
    float *gz = gs + r * d, *ga = gz + r * 4 * d, *gin = ga + r * 4 * d;
    const int R = (int)r, D = (int)d;
    CALLB(be->zero(ctx->st, gs, (size_t)(r * 5 * d) * sizeof(float)));
    CALLB(be->layernorm_bwd(ctx->st, s, F(gam), mean, rstd,
                            F(nd->out[0]->grad), gs, ggam, gbet, r, d));
    CALLB(be->om_gate_bwd(ctx->st, z, F(v), F(h), gs, gz, NULL, NULL, r,
                          d));
    if (gw2) {
        CALLB(be->gemm(ctx->st, 1, 0, 4 * D, 4 * D, R, 1.0f, gz, 4 * D, 0,
                       a, 4 * D, 0, 1.0f, gw2, 4 * D, 0, 1));
    }
    if (gb2) {
        CALLB(be->reduce(ctx->st, gz, gb2, 1, r, 4 * d, 1.0f, 1));
    }
    /* through the hidden dropout and the ReLU: a > 0 exactly where the
     * pre-activation was positive and the unit kept */
    CALLB(be->gemm(ctx->st, 0, 0, R, 4 * D, 4 * D, 1.0f, gz, 4 * D, 0,
                   F(w2), 4 * D, 0, 0.0f, ga, 4 * D, 0, 1));
    CALLB(be->om_cell_mask(ctx->st, a, ga, r * 4 * d, scale));
    if (gw1) {
        CALLB(be->gemm(ctx->st, 1, 0, 4 * D, 2 * D, R, 1.0f, ga, 4 * D, 0,
                       in, 2 * D, 0, 1.0f, gw1, 2 * D, 0, 1));
    }
    if (gb1) {
        CALLB(be->reduce(ctx->st, ga, gb1, 1, r, 4 * d, 1.0f, 1));
    }
    if (gv || gh) {
        CALLB(be->gemm(ctx->st, 0, 0, R, 2 * D, 4 * D, 1.0f, ga, 4 * D, 0,
                       F(w1), 2 * D, 0, 0.0f, gin, 2 * D, 0, 1));
        if (p > 0.0f) {
            struct gr_bcast bc;
            om_cell_bcast(&bc, r, 2 * d);
            CALLB(be->dropout(ctx->st, gin, gin, &bc, key_in, p, scale, 0));
        }
        /* written by the first contribution, then the gated sum's */
        if (gv) {
            CALLB(be->copy2d(ctx->st, gv, d, gin, 2 * d, r, d, acc_v));
        }
        if (gh) {
            CALLB(be->copy2d(ctx->st, gh, d, gin + d, 2 * d, r, d, acc_h));
        }
        CALLB(be->om_gate_bwd(ctx->st, z, F(v), F(h), gs, NULL, gv, gh, r,
                              d));
    }
    gr_step_release(ctx, mark);
    return 0;
}

struct gr_tensor *gr_om_cell(struct gr_ctx *ctx, struct gr_tensor *v,
                             struct gr_tensor *h, struct gr_tensor *w1,
                             struct gr_tensor *b1, struct gr_tensor *w2,
                             struct gr_tensor *b2, struct gr_tensor *gamma,
                             struct gr_tensor *beta, float eps, float p,
                             struct gr_rng rng_in, struct gr_rng rng_hid)
{
    const char *op = "gr_om_cell";
    if (!arg_ok(ctx, op, v, "v", GR_F32) || !arg_ok(ctx, op, h, "h", GR_F32) ||
        !arg_ok(ctx, op, w1, "w1", GR_F32) ||
        !arg_ok(ctx, op, b1, "b1", GR_F32) ||
        !arg_ok(ctx, op, w2, "w2", GR_F32) ||
        !arg_ok(ctx, op, b2, "b2", GR_F32) ||
        !arg_ok(ctx, op, gamma, "gamma", GR_F32) ||
        !arg_ok(ctx, op, beta, "beta", GR_F32)) {
        return NULL;
    }
    char s1[96], s2[96];
    if (v->ndim != 2 || h->ndim != 2 || v->shape[0] != h->shape[0] ||
        v->shape[1] != h->shape[1]) {
        return gr_fail(ctx, GR_EINVAL, "%s: v %s and h %s must both be "
                       "[R, D]", op, SHAPE_STR(v, s1), SHAPE_STR(h, s2));
    }
    const int64_t r = v->shape[0], d = v->shape[1];
    if (w1->ndim != 2 || w1->shape[0] != 4 * d || w1->shape[1] != 2 * d ||
        w2->ndim != 2 || w2->shape[0] != 4 * d || w2->shape[1] != 4 * d ||
        b1->numel != 4 * d || b2->numel != 4 * d || gamma->numel != d ||
        beta->numel != d) {
        return gr_fail(ctx, GR_EINVAL, "%s: for D = %lld want w1 [4D, 2D], "
                       "b1 [4D], w2 [4D, 4D], b2 [4D], gamma and beta [D] "
                       "(got w1 %s, w2 %s)", op, (long long)d,
                       SHAPE_STR(w1, s1), SHAPE_STR(w2, s2));
    }
    if (!(p >= 0.0f && p < 1.0f) || !(eps >= 0.0f)) {
        return gr_fail(ctx, GR_EINVAL, "%s: p = %g outside [0, 1) or eps = "
                       "%g < 0", op, (double)p, (double)eps);
    }
    if (4 * d * r > INT32_MAX || 16 * d * d > INT32_MAX) {
        return gr_fail(ctx, GR_EINVAL, "%s: dimensions too large", op);
    }
    NEED(gemm);
    NEED(rows_set);
    NEED(copy2d);
    NEED(unary_fwd);
    NEED(dropout);
    NEED(om_gate_fwd);
    NEED(om_gate_bwd);
    NEED(om_cell_mask);
    NEED(layernorm_fwd);
    const struct gr_backend *be = ctx->be;
    const float scale = p > 0.0f ? 1.0f / (1.0f - p) : 1.0f;
    const uint64_t key_in = gr_rng_key(rng_in), key_hid = gr_rng_key(rng_hid);
    struct gr_tensor *y = gr_new_step(ctx, GR_F32, gr_shape2(r, d), 0);
    float *in = y ? gr_step_floats(ctx, r * (11 * d + 2)) : NULL;
    if (!in) {
        return NULL;
    }
    float *a = in + r * 2 * d, *z = a + r * 4 * d, *s = z + r * 4 * d;
    float *mean = s + r * d, *rstd = mean + r;
    const int R = (int)r, D = (int)d;
    CALL(be->copy2d(ctx->st, in, 2 * d, F(v), d, r, d, 0));
    CALL(be->copy2d(ctx->st, in + d, 2 * d, F(h), d, r, d, 0));
    struct gr_bcast bc;
    if (p > 0.0f) {
        om_cell_bcast(&bc, r, 2 * d);
        CALL(be->dropout(ctx->st, in, in, &bc, key_in, p, scale, 0));
    }
    CALL(be->rows_set(ctx->st, a, F(b1), r, 4 * d));
    CALL(be->gemm(ctx->st, 0, 1, R, 4 * D, 2 * D, 1.0f, in, 2 * D, 0, F(w1),
                  2 * D, 0, 1.0f, a, 4 * D, 0, 1));
    CALL(be->unary_fwd(ctx->st, GR_U_RELU, a, a, r * 4 * d, 0.0f, 0.0f));
    if (p > 0.0f) {
        om_cell_bcast(&bc, r, 4 * d);
        CALL(be->dropout(ctx->st, a, a, &bc, key_hid, p, scale, 0));
    }
    CALL(be->rows_set(ctx->st, z, F(b2), r, 4 * d));
    CALL(be->gemm(ctx->st, 0, 1, R, 4 * D, 4 * D, 1.0f, a, 4 * D, 0, F(w2),
                  4 * D, 0, 1.0f, z, 4 * D, 0, 1));
    CALL(be->om_gate_fwd(ctx->st, z, F(v), F(h), s, r, d));
    CALL(be->layernorm_fwd(ctx->st, s, F(gamma), F(beta), F(y), mean, rstd,
                           r, d, eps));
    struct gr_tensor *ins[8] = {v, h, w1, b1, w2, b2, gamma, beta};
    if (gr_wants_grad(ctx, 8, ins)) {
        struct gr_node *nd = gr_record1(ctx, op, om_cell_bwd, 8, ins, y);
        if (!nd) {
            return NULL;
        }
        nd->aux[0] = in;
        nd->i[0] = r;
        nd->i[1] = d;
        nd->i[2] = (int64_t)key_in;
        nd->f[0] = p;
        nd->f[1] = scale;
    }
    return y;
}

/* gr_om_attend: one step buffer (aux[0]) holds x [K, D] (the dropped
 * candidate rows during the forward, then the gathered query rows; free
 * scratch afterwards), kl = W_k drop(mh[kidx]) + b_k [K, D], ad =
 * drop(ReLU(LN(kl) + q[qidx])) [K, D], mean and rstd [K] of the LayerNorm,
 * the scores s [K], then the pointer kernel's save [B, 3N + 1]. The
 * backward reuses x, kl and ad as its scratch once they are consumed and
 * draws the dropped candidate rows again, so that it allocates only gs [K]
 * (each node's backward runs once). */
static int om_attend_bwd(struct gr_ctx *ctx, struct gr_node *nd)
{
    struct gr_tensor *mh = nd->in[0], *q = nd->in[1], *pp = nd->in[2];
    struct gr_tensor *kidx = nd->in[3], *qidx = nd->in[4];
    struct gr_tensor *bpos = nd->in[5], *wk = nd->in[6], *bk = nd->in[7];
    struct gr_tensor *lg = nd->in[8], *lb = nd->in[9], *wb = nd->in[10];
    struct gr_tensor *bb = nd->in[11];
    struct gr_tensor *po = nd->out[0], *cpo = nd->out[1], *rcpo = nd->out[2];
    const struct gr_backend *be = ctx->be;
    const int64_t K = nd->i[0], d = nd->i[1], B = nd->i[2], N = nd->i[3];
    const uint64_t key_k = (uint64_t)nd->i[4];
    const float pdrop = nd->f[0], scale = nd->f[1], sscale = nd->f[2];
    float *x = nd->aux[0];
    float *kl = x + K * d, *ad = kl + K * d, *mean = ad + K * d;
    float *rstd = mean + K, *save = rstd + 2 * K;
    float *gpp = gr_grad_buf(ctx, pp);
    float *gmh = K > 0 ? gr_grad_buf(ctx, mh) : NULL;
    float *gq = K > 0 ? gr_grad_buf(ctx, q) : NULL;
    float *gwk = K > 0 ? gr_grad_buf(ctx, wk) : NULL;
    float *gbk = K > 0 ? gr_grad_buf(ctx, bk) : NULL;
    float *glg = K > 0 ? gr_grad_buf(ctx, lg) : NULL;
    float *glb = K > 0 ? gr_grad_buf(ctx, lb) : NULL;
    float *gwb = K > 0 ? gr_grad_buf(ctx, wb) : NULL;
    float *gbb = K > 0 ? gr_grad_buf(ctx, bb) : NULL;
    /* gs [K]: written by the pointer kernel at every score */
    float *gs = gr_step_floats(ctx, K > 0 ? K : 1);
    if (ctx->status < 0 || gs == NULL) {
        return ctx->status < 0 ? ctx->status : GR_ENOMEM;
    }
    CALLB(be->om_pointer_bwd(ctx->st, I(bpos), save,
                             po->grad ? F(po->grad) : NULL,
                             cpo->grad ? F(cpo->grad) : NULL,
                             rcpo->grad ? F(rcpo->grad) : NULL, gs, gpp,
                             sscale, B, N));
    if (K == 0 || !(gmh || gq || gwk || gbk || glg || glb || gwb || gbb)) {
        return 0;
    }
    const int Ki = (int)K, D = (int)d;
    if (gwb) {
        CALLB(be->gemm(ctx->st, 1, 0, 1, D, Ki, 1.0f, gs, 1, 0, ad, D, 0,
                       1.0f, gwb, D, 0, 1));
    }
    if (gbb) {
        CALLB(be->reduce(ctx->st, gs, gbb, 1, K, 1, 1.0f, 1));
    }
    if (!(gmh || gq || gwk || gbk || glg || glb)) {
        return 0;
    }
    /* ga (in x) = gs wβ, then through the β dropout and the ReLU (ad > 0
     * exactly where both let the gradient through) */
    float *ga = x;
    CALLB(be->gemm(ctx->st, 0, 0, Ki, D, 1, 1.0f, gs, 1, 0, F(wb), D, 0,
                   0.0f, ga, D, 0, 1));
    CALLB(be->om_cell_mask(ctx->st, ad, ga, K * d, scale));
    if (gq) {
        CALLB(be->rows_scatter_add(ctx->st, ga, I(qidx), gq, K, d));
    }
    if (!(gmh || gwk || gbk || glg || glb)) {
        return 0;
    }
    /* gkl in ad (consumed), accumulated into: zeroed */
    float *gkl = ad;
    CALLB(be->zero(ctx->st, gkl, (size_t)(K * d) * sizeof(float)));
    CALLB(be->layernorm_bwd(ctx->st, kl, F(lg), mean, rstd, ga, gkl, glg,
                            glb, K, d));
    struct gr_bcast bc;
    om_cell_bcast(&bc, K, d);
    if (gwk) {
        /* the dropped candidate rows again, in x (ga is consumed) */
        CALLB(be->rows_gather(ctx->st, F(mh), I(kidx), x, K, d));
        if (pdrop > 0.0f) {
            CALLB(be->dropout(ctx->st, x, x, &bc, key_k, pdrop, scale, 0));
        }
        CALLB(be->gemm(ctx->st, 1, 0, D, D, Ki, 1.0f, gkl, D, 0, x, D, 0,
                       1.0f, gwk, D, 0, 1));
    }
    if (gbk) {
        CALLB(be->reduce(ctx->st, gkl, gbk, 1, K, d, 1.0f, 1));
    }
    if (gmh) {
        /* the gradient of the dropped rows, in kl (consumed) */
        CALLB(be->gemm(ctx->st, 0, 0, Ki, D, D, 1.0f, gkl, D, 0, F(wk), D,
                       0, 0.0f, kl, D, 0, 1));
        if (pdrop > 0.0f) {
            CALLB(be->dropout(ctx->st, kl, kl, &bc, key_k, pdrop, scale, 0));
        }
        CALLB(be->rows_scatter_add(ctx->st, kl, I(kidx), gmh, K, d));
    }
    return 0;
}

static int om_attend_fail(struct gr_ctx *ctx)
{
    return ctx->status < 0 ? ctx->status : GR_EINVAL;
}

int gr_om_attend(struct gr_ctx *ctx, struct gr_tensor *mh,
                 struct gr_tensor *q, struct gr_tensor *p_prev,
                 struct gr_tensor *kidx, struct gr_tensor *qidx,
                 struct gr_tensor *bpos, const struct gr_om_attend_w *w,
                 float eps, float p_drop, struct gr_rng rng_key,
                 struct gr_rng rng_beta, struct gr_tensor **p_out,
                 struct gr_tensor **cp_out, struct gr_tensor **rcp_out)
{
    const char *op = "gr_om_attend";
    *p_out = *cp_out = *rcp_out = NULL;
    if (w == NULL) {
        return gr_fail_code(ctx, GR_EINVAL, "%s: no weights", op);
    }
    if (!arg_ok(ctx, op, mh, "mh", GR_F32) ||
        !arg_ok(ctx, op, q, "q", GR_F32) ||
        !arg_ok(ctx, op, p_prev, "p_prev", GR_F32) ||
        !arg_ok(ctx, op, bpos, "bpos", GR_I32) ||
        !arg_ok(ctx, op, w->wk, "wk", GR_F32) ||
        !arg_ok(ctx, op, w->bk, "bk", GR_F32) ||
        !arg_ok(ctx, op, w->ln_g, "ln_g", GR_F32) ||
        !arg_ok(ctx, op, w->ln_b, "ln_b", GR_F32) ||
        !arg_ok(ctx, op, w->wb, "wb", GR_F32) ||
        !arg_ok(ctx, op, w->bb, "bb", GR_F32)) {
        return om_attend_fail(ctx);
    }
    if ((kidx == NULL) != (qidx == NULL) ||
        (kidx != NULL && (!arg_ok(ctx, op, kidx, "kidx", GR_I32) ||
                          !arg_ok(ctx, op, qidx, "qidx", GR_I32)))) {
        if (ctx->status == 0) {
            gr_fail(ctx, GR_EINVAL, "%s: kidx and qidx must be given "
                    "together (or both NULL for K = 0)", op);
        }
        return om_attend_fail(ctx);
    }
    char s1[96], s2[96], s3[96], s4[96];
    if (mh->ndim != 3 || q->ndim != 2 || p_prev->ndim != 2 ||
        bpos->ndim != 2 || q->shape[0] != mh->shape[1] ||
        q->shape[1] != mh->shape[2] || p_prev->shape[0] != mh->shape[1] ||
        p_prev->shape[1] != mh->shape[0] ||
        bpos->shape[0] != p_prev->shape[0] ||
        bpos->shape[1] != p_prev->shape[1]) {
        return gr_fail_code(ctx, GR_EINVAL, "%s: want mh [N, B, D], q [B, "
                            "D], p_prev and bpos [B, N] (got mh %s, q %s, "
                            "p_prev %s, bpos %s)", op, SHAPE_STR(mh, s1),
                            SHAPE_STR(q, s2), SHAPE_STR(p_prev, s3),
                            SHAPE_STR(bpos, s4));
    }
    const int64_t N = mh->shape[0], B = mh->shape[1], d = mh->shape[2];
    const int64_t K = kidx ? kidx->numel : 0;
    if (kidx && (kidx->ndim != 1 || qidx->ndim != 1 ||
                 qidx->numel != K || K > N * B)) {
        return gr_fail_code(ctx, GR_EINVAL, "%s: kidx %s and qidx %s must "
                            "both be [K] with K <= N·B = %lld", op,
                            SHAPE_STR(kidx, s1), SHAPE_STR(qidx, s2),
                            (long long)(N * B));
    }
    if (w->wk->ndim != 2 || w->wk->shape[0] != d || w->wk->shape[1] != d ||
        w->bk->numel != d || w->ln_g->numel != d || w->ln_b->numel != d ||
        w->wb->numel != d || w->bb->numel != 1) {
        return gr_fail_code(ctx, GR_EINVAL, "%s: for D = %lld want wk [D, "
                            "D], bk, ln_g, ln_b [D], wb [1, D] and bb [1] "
                            "(got wk %s, wb %s)", op, (long long)d,
                            SHAPE_STR(w->wk, s1), SHAPE_STR(w->wb, s2));
    }
    if (!(p_drop >= 0.0f && p_drop < 1.0f) || !(eps >= 0.0f)) {
        return gr_fail_code(ctx, GR_EINVAL, "%s: p = %g outside [0, 1) or "
                            "eps = %g < 0", op, (double)p_drop, (double)eps);
    }
    if (K * d > INT32_MAX || d * d > INT32_MAX) {
        return gr_fail_code(ctx, GR_EINVAL, "%s: dimensions too large", op);
    }
    GR_NEED_DEVICE(ctx->be->gemm && ctx->be->rows_set &&
                       ctx->be->rows_gather && ctx->be->rows_scatter_add &&
                       ctx->be->dropout && ctx->be->layernorm_fwd &&
                       ctx->be->layernorm_bwd && ctx->be->binary_fwd &&
                       ctx->be->unary_fwd && ctx->be->om_cell_mask &&
                       ctx->be->reduce && ctx->be->scale &&
                       ctx->be->zero && ctx->be->om_pointer_fwd &&
                       ctx->be->om_pointer_bwd,
                   gr_fail_code);
    const struct gr_backend *be = ctx->be;
    const float scale = p_drop > 0.0f ? 1.0f / (1.0f - p_drop) : 1.0f;
    const float sscale = 1.0f / sqrtf((float)d);
    const uint64_t key_k = gr_rng_key(rng_key), key_b = gr_rng_key(rng_beta);
    struct gr_tensor *po = gr_new_step(ctx, GR_F32, gr_shape2(B, N), 0);
    struct gr_tensor *cpo =
        po ? gr_new_step(ctx, GR_F32, gr_shape3(N, B, 1), 0) : NULL;
    struct gr_tensor *rcpo =
        cpo ? gr_new_step(ctx, GR_F32, gr_shape3(N, B, 1), 0) : NULL;
    float *x = rcpo ? gr_step_floats(ctx, 3 * K * d + 3 * K +
                                              B * (3 * N + 1))
                    : NULL;
    if (!x) {
        return om_attend_fail(ctx);
    }
    float *kl = x + K * d, *ad = kl + K * d, *mean = ad + K * d;
    float *rstd = mean + K, *s = rstd + K, *save = s + K;
    const int Ki = (int)K, D = (int)d;
    if (K > 0) {
        struct gr_bcast bc;
        om_cell_bcast(&bc, K, d);
        CALLB(be->rows_gather(ctx->st, F(mh), I(kidx), x, K, d));
        if (p_drop > 0.0f) {
            CALLB(be->dropout(ctx->st, x, x, &bc, key_k, p_drop, scale, 0));
        }
        CALLB(be->rows_set(ctx->st, kl, F(w->bk), K, d));
        CALLB(be->gemm(ctx->st, 0, 1, Ki, D, D, 1.0f, x, D, 0, F(w->wk), D,
                       0, 1.0f, kl, D, 0, 1));
        CALLB(be->layernorm_fwd(ctx->st, kl, F(w->ln_g), F(w->ln_b), ad,
                                mean, rstd, K, d, eps));
        /* x is free: the query rows */
        CALLB(be->rows_gather(ctx->st, F(q), I(qidx), x, K, d));
        CALLB(be->binary_fwd(ctx->st, GR_B_ADD, ad, x, ad, &bc));
        CALLB(be->unary_fwd(ctx->st, GR_U_RELU, ad, ad, K * d, 0.0f, 0.0f));
        if (p_drop > 0.0f) {
            CALLB(be->dropout(ctx->st, ad, ad, &bc, key_b, p_drop, scale,
                              0));
        }
        CALLB(be->rows_set(ctx->st, s, F(w->bb), K, 1));
        CALLB(be->gemm(ctx->st, 0, 1, Ki, 1, D, 1.0f, ad, D, 0, F(w->wb), D,
                       0, 1.0f, s, 1, 0, 1));
        CALLB(be->scale(ctx->st, s, K, sscale));
    }
    CALLB(be->om_pointer_fwd(ctx->st, s, I(bpos), F(p_prev), F(po), F(cpo),
                             F(rcpo), save, B, N));
    struct gr_tensor *ins[12] = {mh,         q,          p_prev,
                                 kidx ? kidx : bpos,     qidx ? qidx : bpos,
                                 bpos,       w->wk,      w->bk,
                                 w->ln_g,    w->ln_b,    w->wb,
                                 w->bb};
    if (gr_wants_grad(ctx, 12, ins)) {
        struct gr_node *nd = gr_record1(ctx, op, om_attend_bwd, 12, ins, po);
        if (!nd) {
            return om_attend_fail(ctx);
        }
        nd->out[1] = cpo;
        nd->out[2] = rcpo;
        nd->n_out = 3;
        cpo->requires_grad = rcpo->requires_grad = 1;
        cpo->node_ = rcpo->node_ = po->node_;
        nd->aux[0] = x;
        nd->i[0] = K;
        nd->i[1] = d;
        nd->i[2] = B;
        nd->i[3] = N;
        nd->i[4] = (int64_t)key_k;
        nd->f[0] = p_drop;
        nd->f[1] = scale;
        nd->f[2] = sscale;
    }
    *p_out = po;
    *cp_out = cpo;
    *rcp_out = rcpo;
    return 0;
}

static int lerp_bwd(struct gr_ctx *ctx, struct gr_node *nd)
{
    struct gr_tensor *a = nd->in[0], *b = nd->in[1], *w = nd->in[2];
    struct gr_tensor *idx = nd->n_in > 3 ? nd->in[3] : NULL;
    int acc_a, acc_b;
    float *ga = gr_grad_buf_acc(ctx, a, &acc_a);
    float *gb = gr_grad_buf_acc(ctx, b, &acc_b);
    float *gw = gr_grad_buf(ctx, w);
    if (ctx->status < 0) {
        return ctx->status;
    }
    if (ga != NULL && ga == gb) {
        acc_b = 1; /* a is b: the second contribution adds */
    }
    CALLB(ctx->be->lerp_bwd(ctx->st, F(a), F(b), F(w), idx ? I(idx) : NULL,
                            F(nd->out[0]->grad), ga, gb, gw, nd->i[0],
                            nd->i[1], (acc_a ? 1 : 0) | (acc_b ? 2 : 0)));
    return 0;
}

static struct gr_tensor *lerp_op(struct gr_ctx *ctx, const char *op,
                                 struct gr_tensor *a, struct gr_tensor *b,
                                 struct gr_tensor *w, struct gr_tensor *idx)
{
    if (!arg_ok(ctx, op, a, "a", GR_F32) || !arg_ok(ctx, op, b, "b", GR_F32) ||
        !arg_ok(ctx, op, w, "w", GR_F32) ||
        (idx && !arg_ok(ctx, op, idx, "idx", GR_I32))) {
        return NULL;
    }
    char s1[96], s2[96], s3[96];
    int64_t d = a->ndim >= 1 ? a->shape[a->ndim - 1] : 0;
    int ok = a->ndim >= 1 && w->ndim == a->ndim && w->shape[w->ndim - 1] == 1;
    for (int i = 0; ok && i < a->ndim - 1; i++) {
        ok = w->shape[i] == a->shape[i];
    }
    int64_t rows = w->numel;
    if (idx == NULL) {
        ok = ok && a->ndim == b->ndim;
        for (int i = 0; ok && i < a->ndim; i++) {
            ok = a->shape[i] == b->shape[i];
        }
    } else {
        ok = ok && b->ndim == 2 && b->shape[1] == d && idx->ndim == 1 &&
             idx->numel == rows;
    }
    if (!ok) {
        return gr_fail(ctx, GR_EINVAL, "%s: a %s, b %s and w %s: want a "
                       "[..., D], w that shape with D replaced by 1, and b "
                       "%s", op, SHAPE_STR(a, s1), SHAPE_STR(b, s2),
                       SHAPE_STR(w, s3),
                       idx ? "[A, D] with idx [rows of a]" : "the shape of a");
    }
    if (idx) {
        /* idx: -1 (keep a) or a row of b, each row of b exactly once (the
         * backward writes b's gradient by its first contribution) */
        if (!index_in_range(ctx, op, idx, "idx", -1,
                            (int32_t)(b->shape[0] - 1))) {
            return NULL;
        }
        if (ctx->device == GR_DEVICE_CPU) {
            int64_t hit = 0;
            uint8_t *seen = gr_host_scratch(ctx, (size_t)b->shape[0] + 1);
            if (!seen) {
                return NULL;
            }
            memset(seen, 0, (size_t)b->shape[0]);
            for (int64_t r = 0; r < rows; r++) {
                int32_t j = I(idx)[r];
                if (j >= 0) {
                    hit += seen[j] == 0;
                    seen[j] = 1;
                }
            }
            int64_t used = 0;
            for (int64_t r = 0; r < rows; r++) {
                used += I(idx)[r] >= 0;
            }
            if (hit != b->shape[0] || used != hit) {
                return gr_fail(ctx, GR_EINVAL, "%s: idx must name every row "
                               "of b (%lld) exactly once", op,
                               (long long)b->shape[0]);
            }
        }
    }
    NEED(lerp_fwd);
    NEED(lerp_bwd);
    struct gr_tensor *y = gr_new_step(ctx, GR_F32, shape_of(a), 0);
    if (!y) {
        return NULL;
    }
    CALL(ctx->be->lerp_fwd(ctx->st, F(a), F(b), F(w), idx ? I(idx) : NULL,
                           F(y), rows, d));
    struct gr_tensor *in[4] = {a, b, w, idx};
    if (gr_wants_grad(ctx, 3, in)) {
        struct gr_node *nd = gr_record1(ctx, op, lerp_bwd, idx ? 4 : 3, in, y);
        if (!nd) {
            return NULL;
        }
        nd->i[0] = rows;
        nd->i[1] = d;
    }
    return y;
}

struct gr_tensor *gr_lerp(struct gr_ctx *ctx, struct gr_tensor *a,
                          struct gr_tensor *b, struct gr_tensor *w)
{
    return lerp_op(ctx, "gr_lerp", a, b, w, NULL);
}

struct gr_tensor *gr_lerp_rows(struct gr_ctx *ctx, struct gr_tensor *a,
                               struct gr_tensor *b, struct gr_tensor *w,
                               struct gr_tensor *idx)
{
    return lerp_op(ctx, "gr_lerp_rows", a, b, w, idx);
}

static int lstm_cell_bwd(struct gr_ctx *ctx, struct gr_node *nd)
{
    struct gr_tensor *g = nd->in[0], *cp = nd->in[1];
    struct gr_tensor *h = nd->out[0], *c = nd->out[1];
    float *gg = gr_grad_buf(ctx, g);
    float *gcp = gr_grad_buf(ctx, cp);
    if (ctx->status < 0) {
        return ctx->status;
    }
    if (!gg && !gcp) {
        return 0;
    }
    /* gcp accumulates (gc_prev_in = gc_prev) */
    CALLB(ctx->be->lstm_bwd(ctx->st, nd->aux[0], F(cp),
                            h->grad ? F(h->grad) : NULL, NULL,
                            c->grad ? F(c->grad) : NULL, gg, gcp, gcp,
                            nd->i[0], nd->i[1]));
    return 0;
}

int gr_lstm_cell(struct gr_ctx *ctx, struct gr_tensor *gates,
                 struct gr_tensor *c_prev, struct gr_tensor **h_out,
                 struct gr_tensor **c_out)
{
    const char *op = "gr_lstm_cell";
    *h_out = NULL;
    *c_out = NULL;
    if (!arg_ok(ctx, op, gates, "gates", GR_F32) ||
        !arg_ok(ctx, op, c_prev, "c_prev", GR_F32)) {
        return ctx->status ? ctx->status : GR_EINVAL;
    }
    char s1[96], s2[96];
    if (gates->ndim != 2 || c_prev->ndim != 2 ||
        gates->shape[0] != c_prev->shape[0] ||
        gates->shape[1] != 4 * c_prev->shape[1]) {
        return gr_fail_code(ctx, GR_EINVAL, "%s: gates %s must be [B, 4H] "
                            "for c_prev %s [B, H]", op, SHAPE_STR(gates, s1),
                            SHAPE_STR(c_prev, s2));
    }
    GR_NEED_DEVICE(ctx->be->lstm_fwd, gr_fail_code);
    int64_t b = c_prev->shape[0], hd = c_prev->shape[1];
    struct gr_tensor *h = gr_new_step(ctx, GR_F32, gr_shape2(b, hd), 0);
    struct gr_tensor *c = h ? gr_new_step(ctx, GR_F32, gr_shape2(b, hd), 0)
                            : NULL;
    float *act = c ? gr_step_floats(ctx, 5 * b * hd) : NULL;
    if (!act) {
        return ctx->status;
    }
    CALLB(ctx->be->lstm_fwd(ctx->st, F(gates), F(c_prev), F(h), F(c), act, b,
                            hd));
    struct gr_tensor *in[2] = {gates, c_prev};
    if (gr_wants_grad(ctx, 2, in)) {
        struct gr_node *nd = gr_record1(ctx, op, lstm_cell_bwd, 2, in, h);
        if (!nd) {
            return ctx->status;
        }
        nd->out[1] = c;
        nd->n_out = 2;
        c->requires_grad = 1;
        c->node_ = h->node_;
        nd->aux[0] = act;
        nd->i[0] = b;
        nd->i[1] = hd;
    }
    *h_out = h;
    *c_out = c;
    return 0;
}

static int onlstm_cell_bwd(struct gr_ctx *ctx, struct gr_node *nd)
{
    struct gr_tensor *z = nd->in[0], *cp = nd->in[1];
    struct gr_tensor *h = nd->out[0], *c = nd->out[1];
    float *gz = gr_grad_buf(ctx, z);
    float *gcp = gr_grad_buf(ctx, cp);
    if (ctx->status < 0) {
        return ctx->status;
    }
    if (!gz && !gcp) {
        return 0;
    }
    int64_t nc = nd->i[1] / nd->i[2];
    float *scratch = gr_step_floats(ctx, nd->i[0] * 2 * nc);
    if (!scratch) {
        return ctx->status;
    }
    CALLB(ctx->be->onlstm_bwd(ctx->st, F(cp), nd->aux[0], nd->aux[1],
                              h->grad ? F(h->grad) : NULL, NULL,
                              c->grad ? F(c->grad) : NULL, gz, gcp, gcp,
                              scratch, nd->i[0], nd->i[1], nd->i[2]));
    return 0;
}

int gr_onlstm_cell(struct gr_ctx *ctx, struct gr_tensor *z,
                   struct gr_tensor *c_prev, int chunk,
                   struct gr_tensor **h_out, struct gr_tensor **c_out,
                   struct gr_tensor **df_out, struct gr_tensor **di_out)
{
    const char *op = "gr_onlstm_cell";
    *h_out = NULL;
    *c_out = NULL;
    if (df_out) {
        *df_out = NULL;
    }
    if (di_out) {
        *di_out = NULL;
    }
    if (!arg_ok(ctx, op, z, "z", GR_F32) ||
        !arg_ok(ctx, op, c_prev, "c_prev", GR_F32)) {
        return ctx->status ? ctx->status : GR_EINVAL;
    }
    char s1[96], s2[96];
    if (c_prev->ndim != 2 || chunk < 1 || c_prev->shape[1] % chunk != 0) {
        return gr_fail_code(ctx, GR_EINVAL, "%s: c_prev %s must be [B, H] "
                            "with H a multiple of the chunk size %d", op,
                            SHAPE_STR(c_prev, s1), chunk);
    }
    int64_t b = c_prev->shape[0], hd = c_prev->shape[1], nc = hd / chunk;
    if (z->ndim != 2 || z->shape[0] != b || z->shape[1] != 2 * nc + 4 * hd) {
        return gr_fail_code(ctx, GR_EINVAL, "%s: z %s must be [B, 2n+4H] = "
                            "[%lld, %lld] for c_prev %s, chunk %d", op,
                            SHAPE_STR(z, s1), (long long)b,
                            (long long)(2 * nc + 4 * hd),
                            SHAPE_STR(c_prev, s2), chunk);
    }
    GR_NEED_DEVICE(ctx->be->onlstm_fwd, gr_fail_code);
    struct gr_tensor *h = gr_new_step(ctx, GR_F32, gr_shape2(b, hd), 0);
    struct gr_tensor *c = h ? gr_new_step(ctx, GR_F32, gr_shape2(b, hd), 0)
                            : NULL;
    struct gr_tensor *df = c ? gr_new_step(ctx, GR_F32, gr_shape1(b), 0)
                             : NULL;
    struct gr_tensor *di = df ? gr_new_step(ctx, GR_F32, gr_shape1(b), 0)
                              : NULL;
    float *save = di ? gr_step_floats(ctx, b * 4 * nc) : NULL;
    float *act = save ? gr_step_floats(ctx, b * 5 * hd) : NULL;
    if (!act) {
        return ctx->status;
    }
    CALLB(ctx->be->onlstm_fwd(ctx->st, F(z), F(c_prev), F(h), F(c), F(df),
                              F(di), save, act, b, hd, chunk));
    struct gr_tensor *in[2] = {z, c_prev};
    if (gr_wants_grad(ctx, 2, in)) {
        struct gr_node *nd = gr_record1(ctx, op, onlstm_cell_bwd, 2, in, h);
        if (!nd) {
            return ctx->status;
        }
        nd->out[1] = c;
        nd->n_out = 2;
        c->requires_grad = 1;
        c->node_ = h->node_;
        nd->aux[0] = save;
        nd->aux[1] = act;
        nd->i[0] = b;
        nd->i[1] = hd;
        nd->i[2] = chunk;
    }
    *h_out = h;
    *c_out = c;
    if (df_out) {
        *df_out = df;
    }
    if (di_out) {
        *di_out = di;
    }
    return 0;
}
