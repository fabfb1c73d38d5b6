/* Attention ops and layers (kernels/attention.h): argument checks, the
 * chunked composition of gr_attention from the device GEMM and the row
 * kernels of attention_internal.h, tape records and backwards, positions
 * and the multi-head attention and feed-forward layers. */
#include "kernels/attention.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/attention_internal.h"
#include "kernels/internal.h"
#include "kernels/layers.h"
#include "kernels/ops.h"
#include "kernels/tape.h"

static _Thread_local int64_t scratch_budget = (int64_t)1 << 22;

int64_t gr_attention_set_scratch(int64_t floats)
{
    int64_t old = scratch_budget;
    scratch_budget = floats < 1 ? 1 : floats;
    return old;
}

/* The fused path (on unless GROVE_ATTN_FUSED=0, read once per process; a
 * thread's gr_attention_set_fused overrides it) and how often it ran. */
static atomic_int fused_env = -1;
static _Thread_local int fused_mode = -1;
static _Thread_local int64_t fused_runs;

static int fused_on(void)
{
    if (fused_mode >= 0) {
        return fused_mode;
    }
    int e = atomic_load(&fused_env);
    if (e < 0) {
        const char *v = getenv("GROVE_ATTN_FUSED");
        e = !(v != NULL && strcmp(v, "0") == 0);
        atomic_store(&fused_env, e);
    }
    return e;
}

int gr_attention_set_fused(int mode)
{
    int old = fused_mode;
    fused_mode = mode < 0 ? -1 : (mode > 0);
    return old;
}

int64_t gr_attention_fused_runs(void)
{
    return fused_runs;
}

static const struct gr_attn_backend *attn_be(struct gr_ctx *ctx)
{
#ifdef GROVE_HAVE_CUDA_BACKEND
    if (ctx->device == GR_DEVICE_CUDA) {
        return gr_attn_backend_cuda();
    }
#endif
    return ctx->device == GR_DEVICE_CPU ? gr_attn_backend_cpu() : NULL;
}

static float *F(const struct gr_tensor *t) { return (float *)t->data; }

static int arg_ok(struct gr_ctx *ctx, const char *op,
                  const struct gr_tensor *t, const char *name, int dtype)
{
    if (!t) {
        if (ctx->status == 0) {
            gr_fail(ctx, GR_EINVAL, "%s: argument '%s' is NULL", op, name);
        }
        return 0;
    }
    if (t->ctx_ != ctx) {
        gr_fail(ctx, GR_EINVAL, "%s: '%s' belongs to another context", op,
                name);
        return 0;
    }
    if ((int)t->dtype != dtype) {
        gr_fail(ctx, GR_EINVAL, "%s: '%s' must be %s", op, name,
                dtype == GR_F32 ? "f32" : "i32");
        return 0;
    }
    return 1;
}


/* Reads an i32 tensor on the host (a copy on CUDA). */
static const int32_t *host_i32(struct gr_ctx *ctx, const struct gr_tensor *t)
{
    if (ctx->device == GR_DEVICE_CPU) {
        return (const int32_t *)t->data;
    }
    int32_t *h = gr_host_scratch(ctx, (size_t)t->numel * sizeof *h);
    if (!h) {
        return NULL;
    }
    if (gr_tensor_to_host(t, h) < 0) {
        gr_keep_error(ctx, GR_EDEVICE);
        return NULL;
    }
    return h;
}

/* ---- gr_attention ---- */

/* The sizes of one call. */
struct attn_dims {
    int64_t tq, tk, b, heads, dk, dv, dq, dvv; /* dq = H·dk, dvv = H·dv */
    int64_t nbh, r;                            /* chunk: heads, rows */
};

static void plan_chunks(struct attn_dims *d)
{
    int64_t budget = scratch_budget, bh = d->b * d->heads;
    if (budget >= d->tq * d->tk) {
        d->nbh = budget / (d->tq * d->tk);
        d->nbh = d->nbh > bh ? bh : d->nbh;
        d->r = d->tq;
    } else {
        d->nbh = 1;
        d->r = budget / d->tk;
        d->r = d->r < 1 ? 1 : d->r;
    }
}

static void rows_of(const struct attn_dims *d, const struct gr_node *nd,
                    const struct gr_tensor *bias,
                    const struct gr_tensor *key_len, int64_t bh0, int64_t i0,
                    struct gr_attn_rows *a)
{
    memset(a, 0, sizeof *a);
    a->bh0 = bh0;
    a->nbh = d->b * d->heads - bh0 < d->nbh ? d->b * d->heads - bh0 : d->nbh;
    a->i0 = i0;
    a->r = d->tq - i0 < d->r ? d->tq - i0 : d->r;
    a->tq = d->tq;
    a->tk = d->tk;
    a->heads = d->heads;
    a->scale = 1.0f / sqrtf((float)d->dk);
    a->bias = bias ? F(bias) : NULL;
    for (int k = 0; k < 4; k++) {
        a->bstride[k] = nd->bc.bstride[k];
    }
    a->key_len = key_len ? (const int32_t *)key_len->data : NULL;
    a->causal = (int)nd->i[0];
    a->p_drop = nd->f[0];
    a->key = nd->key;
}

/* Whether the fused path serves a call: the device has one, it is on,
 * and the call is within what its tiles do (no bias, no dropout, head
 * widths up to GR_ATTN_FUSED_MAX_D). Otherwise the chunked composition. */
static int fused_serves(const struct gr_attn_backend *ab,
                        const struct attn_dims *d,
                        const struct gr_tensor *bias, float dropout)
{
    return ab->fused_fwd != NULL && ab->fused_bwd != NULL && fused_on() &&
           bias == NULL && dropout == 0.0f && d->dk <= GR_ATTN_FUSED_MAX_D &&
           d->dv <= GR_ATTN_FUSED_MAX_D && d->tq <= GR_ATTN_FUSED_MAX_T &&
           d->tk <= GR_ATTN_FUSED_MAX_T;
}

static void fused_args(const struct attn_dims *d,
                       const struct gr_tensor *key_len, int causal,
                       struct gr_attn_fused *f)
{
    memset(f, 0, sizeof *f);
    f->tq = d->tq;
    f->tk = d->tk;
    f->b = d->b;
    f->heads = d->heads;
    f->dk = d->dk;
    f->dv = d->dv;
    f->scale = 1.0f / sqrtf((float)d->dk);
    f->key_len = key_len ? (const int32_t *)key_len->data : NULL;
    f->causal = causal;
}

/* The backward of a call the fused path served: delta = rowsum(dO ⊙ O),
 * then the device's fused backward (P recomputed from q, k and the lse). */
static int attention_fused_bwd(struct gr_ctx *ctx, struct gr_node *nd,
                               const struct attn_dims *d, float *gq,
                               float *gk, float *gv)
{
    struct gr_tensor *q = nd->in[0], *k = nd->in[1], *v = nd->in[2];
    struct gr_tensor *out = nd->out[0];
    const struct gr_attn_backend *ab = attn_be(ctx);
    if (!gq && !gk && !gv) {
        return 0;
    }
    float *delta = gr_step_floats(ctx, d->b * d->heads * d->tq);
    if (!delta) {
        return ctx->status ? ctx->status : GR_ENOMEM;
    }
    CALLB(ab->rowdot(ctx->st, F(out->grad), F(out), delta, d->tq, d->b,
                     d->heads, d->dv));
    struct gr_attn_fused f;
    fused_args(d, nd->in[4], (int)nd->i[0], &f);
    CALLB(ab->fused_bwd(ctx->st, F(q), F(k), F(v), F(out->grad), nd->aux[0],
                        delta, gq, gk, gv, &f));
    fused_runs++;
    return 0;
}

static int attention_bwd(struct gr_ctx *ctx, struct gr_node *nd)
{
    struct gr_tensor *q = nd->in[0], *k = nd->in[1], *v = nd->in[2];
    struct gr_tensor *bias = nd->in[3], *key_len = nd->in[4];
    struct gr_tensor *out = nd->out[0];
    const struct gr_backend *be = ctx->be;
    const struct gr_attn_backend *ab = attn_be(ctx);
    struct attn_dims d;
    memcpy(&d, nd->aux[1], sizeof d);
    float *gq = gr_grad_buf(ctx, q), *gk = gr_grad_buf(ctx, k);
    float *gv = gr_grad_buf(ctx, v);
    float *gb = bias ? gr_grad_buf(ctx, bias) : NULL;
    if (ctx->status < 0) {
        return ctx->status;
    }
    if (nd->i[1]) {
        return attention_fused_bwd(ctx, nd, &d, gq, gk, gv);
    }
    const float *go = F(out->grad);
    float *lse = nd->aux[0];
    float *delta = gr_step_floats(ctx, d.b * d.heads * d.tq);
    float *s = gr_step_floats(ctx, d.nbh * d.r * d.tk);
    float *dp = gr_step_floats(ctx, d.nbh * d.r * d.tk);
    if (!delta || !s || !dp) {
        return ctx->status ? ctx->status : GR_ENOMEM;
    }
    CALLB(ab->rowdot(ctx->st, go, F(out), delta, d.tq, d.b, d.heads, d.dv));
    const int ldq = (int)(d.b * d.dq), ldv = (int)(d.b * d.dvv);
    const float scale = 1.0f / sqrtf((float)d.dk);
    for (int64_t bh0 = 0; bh0 < d.b * d.heads; bh0 += d.nbh) {
        for (int64_t i0 = 0; i0 < d.tq; i0 += d.r) {
            struct gr_attn_rows a;
            rows_of(&d, nd, bias, key_len, bh0, i0, &a);
            int m = (int)a.r, n = (int)d.tk, nb = (int)a.nbh;
            int64_t sc = a.r * d.tk;
            const float *qa = F(q) + i0 * ldq + bh0 * d.dk;
            const float *ka = F(k) + bh0 * d.dk;
            const float *va = F(v) + bh0 * d.dv;
            const float *goa = go + i0 * ldv + bh0 * d.dv;
            CALLB(be->gemm(ctx->st, 0, 1, m, n, (int)d.dk, 1.0f, qa, ldq,
                           d.dk, ka, ldq, d.dk, 0.0f, s, n, sc, nb));
            CALLB(ab->softmax(ctx->st, s, lse, &a, 1));
            if (gq || gk || gb) {
                CALLB(be->gemm(ctx->st, 0, 1, m, n, (int)d.dv, 1.0f, goa, ldv,
                               d.dv, va, ldv, d.dv, 0.0f, dp, n, sc, nb));
                CALLB(ab->softmax_bwd(ctx->st, s, dp, delta, &a));
                if (gb) {
                    int64_t bs[4];
                    memcpy(bs, nd->bc.bshape, sizeof bs);
                    CALLB(ab->bias_grad(ctx->st, dp, gb, bs, &a));
                }
                if (gq) {
                    CALLB(be->gemm(ctx->st, 0, 0, m, (int)d.dk, n, scale, dp,
                                   n, sc, ka, ldq, d.dk, 1.0f,
                                   gq + i0 * ldq + bh0 * d.dk, ldq, d.dk,
                                   nb));
                }
                if (gk) {
                    CALLB(be->gemm(ctx->st, 1, 0, n, (int)d.dk, m, scale, dp,
                                   n, sc, qa, ldq, d.dk, 1.0f,
                                   gk + bh0 * d.dk, ldq, d.dk, nb));
                }
            }
            if (gv) {
                if (a.p_drop > 0) {
                    CALLB(ab->dropout(ctx->st, s, &a));
                }
                CALLB(be->gemm(ctx->st, 1, 0, n, (int)d.dv, m, 1.0f, s, n, sc,
                               goa, ldv, d.dv, 1.0f, gv + bh0 * d.dv, ldv,
                               d.dv, nb));
            }
        }
    }
    return 0;
}

struct gr_tensor *gr_attention(struct gr_ctx *ctx, struct gr_tensor *q,
                               struct gr_tensor *k, struct gr_tensor *v,
                               int heads, struct gr_tensor *bias,
                               struct gr_tensor *key_len, int causal,
                               float dropout, struct gr_rng rng)
{
    const char *op = "gr_attention";
    char s1[96], s2[96], s3[96];
    if (!arg_ok(ctx, op, q, "q", GR_F32) || !arg_ok(ctx, op, k, "k", GR_F32) ||
        !arg_ok(ctx, op, v, "v", GR_F32) ||
        (bias && !arg_ok(ctx, op, bias, "bias", GR_F32)) ||
        (key_len && !arg_ok(ctx, op, key_len, "key_len", GR_I32))) {
        return NULL;
    }
    gr_tensor_shape_str(q, s1, sizeof s1);
    gr_tensor_shape_str(k, s2, sizeof s2);
    gr_tensor_shape_str(v, s3, sizeof s3);
    if (q->ndim != 3 || k->ndim != 3 || v->ndim != 3 ||
        k->shape[1] != q->shape[1] || v->shape[1] != q->shape[1] ||
        k->shape[2] != q->shape[2] || v->shape[0] != k->shape[0]) {
        return gr_fail(ctx, GR_EINVAL, "%s: q %s, k %s, v %s must be [Tq, B, "
                       "H*dk], [Tk, B, H*dk], [Tk, B, H*dv]", op, s1, s2, s3);
    }
    if (heads < 1 || q->shape[2] % heads != 0 || v->shape[2] % heads != 0) {
        return gr_fail(ctx, GR_EINVAL, "%s: %d heads do not divide the "
                       "widths of q %s and v %s", op, heads, s1, s3);
    }
    if (!(dropout >= 0.0f && dropout < 1.0f)) {
        return gr_fail(ctx, GR_EINVAL, "%s: dropout %g outside [0, 1)", op,
                       (double)dropout);
    }
    struct attn_dims d;
    memset(&d, 0, sizeof d);
    d.tq = q->shape[0];
    d.tk = k->shape[0];
    d.b = q->shape[1];
    d.heads = heads;
    d.dq = q->shape[2];
    d.dk = d.dq / heads;
    d.dvv = v->shape[2];
    d.dv = d.dvv / heads;
    if (d.b * d.dq > INT32_MAX || d.b * d.dvv > INT32_MAX ||
        d.tk > INT32_MAX) {
        return gr_fail(ctx, GR_EINVAL, "%s: q %s too large", op, s1);
    }
    plan_chunks(&d);
    struct gr_node tmp;
    memset(&tmp, 0, sizeof tmp);
    if (bias) {
        /* the bias over [B, H, Tq, Tk], aligned right */
        int64_t full[4] = {d.b, d.heads, d.tq, d.tk};
        if (bias->ndim < 1) {
            return gr_fail(ctx, GR_EINVAL, "%s: bias must have 1 to 4 "
                           "dimensions", op);
        }
        int pad = 4 - bias->ndim;
        int64_t stride = 1;
        for (int dd = 3; dd >= 0; dd--) {
            int64_t bsz = dd < pad ? 1 : bias->shape[dd - pad];
            if (bsz != 1 && bsz != full[dd]) {
                gr_tensor_shape_str(bias, s2, sizeof s2);
                return gr_fail(ctx, GR_EINVAL, "%s: bias %s does not "
                               "broadcast to [B, H, Tq, Tk] = [%lld, %lld, "
                               "%lld, %lld]", op, s2, (long long)d.b,
                               (long long)d.heads, (long long)d.tq,
                               (long long)d.tk);
            }
            tmp.bc.bshape[dd] = bsz;
            tmp.bc.shape[dd] = full[dd];
            tmp.bc.bstride[dd] = bsz == 1 ? 0 : stride;
            stride *= bsz;
        }
        tmp.bc.bn = bias->numel;
    }
    if (key_len) {
        if (key_len->ndim != 1 || key_len->shape[0] != d.b) {
            gr_tensor_shape_str(key_len, s2, sizeof s2);
            return gr_fail(ctx, GR_EINVAL, "%s: key_len %s must be [B] = "
                           "[%lld]", op, s2, (long long)d.b);
        }
        const int32_t *kl = host_i32(ctx, key_len);
        if (!kl) {
            return NULL;
        }
        for (int64_t b = 0; b < d.b; b++) {
            if (kl[b] < 0 || kl[b] > d.tk) {
                return gr_fail(ctx, GR_EINVAL, "%s: key_len[%lld] = %d is "
                               "outside [0, Tk = %lld]", op, (long long)b,
                               (int)kl[b], (long long)d.tk);
            }
        }
    }
    const struct gr_attn_backend *ab = attn_be(ctx);
    GR_NEED_DEVICE(ab != NULL, gr_fail);
    tmp.i[0] = causal ? 1 : 0;
    tmp.f[0] = dropout;
    tmp.key = dropout > 0 ? gr_rng_key(rng) : 0;
    const int fused = fused_serves(ab, &d, bias, dropout);
    tmp.i[1] = fused;
    struct gr_tensor *y = gr_new_step(ctx, GR_F32,
                                      gr_shape3(d.tq, d.b, d.dvv), 0);
    float *lse = y ? gr_step_floats(ctx, d.b * d.heads * d.tq) : NULL;
    float *s = lse && !fused ? gr_step_floats(ctx, d.nbh * d.r * d.tk)
                             : NULL;
    if (!lse || (!fused && !s)) {
        return NULL;
    }
    if (fused) {
        struct gr_attn_fused f;
        fused_args(&d, key_len, causal ? 1 : 0, &f);
        int rc = ab->fused_fwd(ctx->st, F(q), F(k), F(v), F(y), lse, &f);
        if (rc < 0) {
            gr_keep_error(ctx, rc);
            return NULL;
        }
        fused_runs++;
    }
    const int ldq = (int)(d.b * d.dq), ldv = (int)(d.b * d.dvv);
    for (int64_t bh0 = 0; !fused && bh0 < d.b * d.heads; bh0 += d.nbh) {
        for (int64_t i0 = 0; i0 < d.tq; i0 += d.r) {
            struct gr_attn_rows a;
            rows_of(&d, &tmp, bias, key_len, bh0, i0, &a);
            int m = (int)a.r, n = (int)d.tk, nb = (int)a.nbh;
            int64_t sc = a.r * d.tk;
            int rc = ctx->be->gemm(ctx->st, 0, 1, m, n, (int)d.dk, 1.0f,
                                   F(q) + i0 * ldq + bh0 * d.dk, ldq, d.dk,
                                   F(k) + bh0 * d.dk, ldq, d.dk, 0.0f, s, n,
                                   sc, nb);
            if (rc == 0) {
                rc = ab->softmax(ctx->st, s, lse, &a, 0);
            }
            if (rc == 0 && dropout > 0) {
                rc = ab->dropout(ctx->st, s, &a);
            }
            if (rc == 0) {
                rc = ctx->be->gemm(ctx->st, 0, 0, m, (int)d.dv, n, 1.0f, s, n,
                                   sc, F(v) + bh0 * d.dv, ldv, d.dv, 0.0f,
                                   F(y) + i0 * ldv + bh0 * d.dv, ldv, d.dv,
                                   nb);
            }
            if (rc < 0) {
                gr_keep_error(ctx, rc);
                return NULL;
            }
        }
    }
    struct gr_tensor *in[5] = {q, k, v, bias, key_len};
    if (gr_wants_grad(ctx, 5, in)) {
        struct gr_node *nd = gr_record1(ctx, op, attention_bwd, 5, in, y);
        struct attn_dims *saved =
            nd ? gr_host_scratch(ctx, sizeof *saved) : NULL;
        if (!saved) {
            return NULL;
        }
        *saved = d;
        nd->aux[0] = lse;
        nd->aux[1] = saved;
        nd->bc = tmp.bc;
        nd->i[0] = tmp.i[0];
        nd->i[1] = tmp.i[1]; /* served by the fused path */
        nd->f[0] = tmp.f[0];
        nd->key = tmp.key;
    }
    return y;
}

/* ---- label-smoothed cross entropy ---- */

static int lsxent_bwd(struct gr_ctx *ctx, struct gr_node *nd)
{
    struct gr_tensor *logits = nd->in[0], *targets = nd->in[1];
    float *gl = gr_grad_buf(ctx, logits);
    if (!gl) {
        return ctx->status;
    }
    CALLB(attn_be(ctx)->lsxent_bwd(
        ctx->st, F(logits), (const int32_t *)targets->data, nd->aux[1],
        logits->shape[0], logits->shape[1], (int32_t)nd->i[0], nd->f[0],
        F(nd->out[0]->grad), nd->aux[0], gl));
    return 0;
}

struct gr_tensor *gr_cross_entropy_smoothed(struct gr_ctx *ctx,
                                            struct gr_tensor *logits,
                                            struct gr_tensor *targets,
                                            int32_t ignore_index, float eps)
{
    const char *op = "gr_cross_entropy_smoothed";
    if (!arg_ok(ctx, op, logits, "logits", GR_F32) ||
        !arg_ok(ctx, op, targets, "targets", GR_I32)) {
        return NULL;
    }
    char s1[96], s2[96];
    if (logits->ndim != 2 || targets->ndim != 1 ||
        targets->shape[0] != logits->shape[0]) {
        gr_tensor_shape_str(logits, s1, sizeof s1);
        gr_tensor_shape_str(targets, s2, sizeof s2);
        return gr_fail(ctx, GR_EINVAL, "%s: logits %s must be [N, V] and "
                       "targets %s [N]", op, s1, s2);
    }
    if (!(eps >= 0.0f && eps < 1.0f)) {
        return gr_fail(ctx, GR_EINVAL, "%s: eps %g outside [0, 1)", op,
                       (double)eps);
    }
    int64_t n = logits->shape[0], v = logits->shape[1];
    const int32_t *tv = host_i32(ctx, targets);
    if (!tv) {
        return NULL;
    }
    for (int64_t i = 0; i < n; i++) {
        if (tv[i] != ignore_index && (tv[i] < 0 || tv[i] >= v)) {
            return gr_fail(ctx, GR_EINVAL, "%s: targets[%lld] = %d is "
                           "outside [0, %lld) and not the ignore index %d",
                           op, (long long)i, (int)tv[i], (long long)v,
                           (int)ignore_index);
        }
    }
    const struct gr_attn_backend *ab = attn_be(ctx);
    GR_NEED_DEVICE(ab != NULL, gr_fail);
    struct gr_tensor *y = gr_new_step(ctx, GR_F32, gr_shape0(), 0);
    float *aux = y ? gr_step_floats(ctx, 1 + 2 * n) : NULL;
    if (!aux) {
        return NULL;
    }
    int rc = ab->lsxent_fwd(ctx->st, F(logits), (const int32_t *)targets->data,
                            n, v, ignore_index, eps, F(y), aux, aux + 1,
                            aux + 1 + n);
    if (rc < 0) {
        gr_keep_error(ctx, rc);
        return NULL;
    }
    struct gr_tensor *in[2] = {logits, targets};
    if (gr_wants_grad(ctx, 2, in)) {
        struct gr_node *nd = gr_record1(ctx, op, lsxent_bwd, 2, in, y);
        if (!nd) {
            return NULL;
        }
        nd->aux[0] = aux;
        nd->aux[1] = aux + 1;
        nd->i[0] = ignore_index;
        nd->f[0] = eps;
    }
    return y;
}

/* ---- positions ---- */

struct gr_tensor *gr_positions_sinusoidal(struct gr_ctx *ctx, int64_t t,
                                          int64_t d, int64_t offset)
{
    if (t < 1 || d < 1 || offset < 0) {
        return gr_fail(ctx, GR_EINVAL, "gr_positions_sinusoidal: T = %lld, "
                       "D = %lld, offset = %lld (T, D >= 1, offset >= 0)",
                       (long long)t, (long long)d, (long long)offset);
    }
    float *h = gr_host_scratch(ctx, (size_t)(t * d) * sizeof *h);
    if (!h) {
        return NULL;
    }
    for (int64_t p = 0; p < t; p++) {
        for (int64_t c = 0; c < d; c++) {
            double freq = pow(10000.0, -(double)(c - c % 2) / (double)d);
            double a = (double)(p + offset) * freq;
            h[p * d + c] = (float)(c % 2 ? cos(a) : sin(a));
        }
    }
    return gr_tensor_from_host(ctx, GR_F32, gr_shape3(t, 1, d), h);
}

struct gr_tensor *gr_positions_learned(struct gr_ctx *ctx,
                                       struct gr_tensor *table, int64_t t,
                                       int64_t offset)
{
    const char *op = "gr_positions_learned";
    if (!arg_ok(ctx, op, table, "table", GR_F32)) {
        return NULL;
    }
    if (table->ndim != 2 || t < 1 || offset < 0 ||
        offset + t > table->shape[0]) {
        return gr_fail(ctx, GR_EINVAL, "%s: positions [%lld, %lld) need a "
                       "table [MAXT, D] with MAXT >= %lld; the table has "
                       "%lld rows", op, (long long)offset,
                       (long long)(offset + t), (long long)(offset + t),
                       (long long)table->shape[0]);
    }
    struct gr_tensor *rows = gr_slice(ctx, table, 0, offset, t);
    return gr_reshape(ctx, rows, gr_shape3(t, 1, table->shape[1]));
}

/* ---- layers ---- */

static struct gr_tensor *new_param(struct gr_ctx *ctx, const char *prefix,
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

int gr_mha_init(struct gr_mha *m, struct gr_ctx *ctx, const char *prefix,
                int d, int heads, struct gr_rng rng)
{
    memset(m, 0, sizeof *m);
    if (d < 1 || heads < 1 || d % heads != 0) {
        return gr_error(GR_EINVAL, "attention '%s': width %d is not a "
                        "multiple of %d heads", prefix, d, heads);
    }
    m->d = d;
    m->heads = heads;
    m->in_w = new_param(ctx, prefix, "in_proj_weight", gr_shape2(3 * d, d));
    m->in_b = new_param(ctx, prefix, "in_proj_bias", gr_shape1(3 * d));
    m->out_w = new_param(ctx, prefix, "out_proj.weight", gr_shape2(d, d));
    m->out_b = new_param(ctx, prefix, "out_proj.bias", gr_shape1(d));
    if (!m->in_w || !m->in_b || !m->out_w || !m->out_b) {
        return gr_error_wrap(GR_EINVAL, "attention '%s'", prefix);
    }
    float xavier = sqrtf(6.0f / (float)(d + 3 * d));
    float lin = 1.0f / sqrtf((float)d);
    if (gr_init_uniform(m->in_w, -xavier, xavier, rng) < 0 ||
        gr_init_uniform(m->out_w, -lin, lin, rng) < 0) {
        return gr_error_wrap(GR_EINVAL, "attention '%s'", prefix);
    }
    return 0;
}

struct gr_tensor *gr_mha_forward(struct gr_ctx *ctx, const struct gr_mha *m,
                                 struct gr_tensor *xq, struct gr_tensor *xkv,
                                 struct gr_tensor *bias,
                                 struct gr_tensor *key_len, int causal,
                                 float dropout, struct gr_rng rng)
{
    if (!xq || !xkv) {
        return gr_fail(ctx, GR_EINVAL, "gr_mha_forward: input is NULL");
    }
    struct gr_tensor *parts[3] = {NULL, NULL, NULL};
    const int64_t d = m->d;
    if (xq == xkv) {
        const int64_t sizes[3] = {d, d, d};
        struct gr_tensor *qkv = gr_linear(ctx, xq, m->in_w, m->in_b);
        if (!qkv || gr_split(ctx, qkv, -1, 3, sizes, parts) < 0) {
            return NULL;
        }
    } else {
        const int64_t sizes[2] = {d, d};
        parts[0] = gr_linear(ctx, xq, gr_slice(ctx, m->in_w, 0, 0, d),
                             gr_slice(ctx, m->in_b, 0, 0, d));
        struct gr_tensor *kv =
            gr_linear(ctx, xkv, gr_slice(ctx, m->in_w, 0, d, 2 * d),
                      gr_slice(ctx, m->in_b, 0, d, 2 * d));
        if (!parts[0] || !kv || gr_split(ctx, kv, -1, 2, sizes, parts + 1) <
                                    0) {
            return NULL;
        }
    }
    struct gr_tensor *a = gr_attention(ctx, parts[0], parts[1], parts[2],
                                       m->heads, bias, key_len, causal,
                                       dropout, rng);
    return gr_linear(ctx, a, m->out_w, m->out_b);
}

int gr_ffn_init(struct gr_ffn *m, struct gr_ctx *ctx, const char *prefix,
                int d, int f, struct gr_rng rng)
{
    memset(m, 0, sizeof *m);
    char name[300];
    struct gr_linear_layer l1, l2;
    if (snprintf(name, sizeof name, "%s.linear1", prefix) >=
            (int)sizeof name ||
        gr_linear_init(&l1, ctx, name, d, f, 1, rng) < 0) {
        return gr_error_wrap(GR_EINVAL, "feed-forward '%s'", prefix);
    }
    snprintf(name, sizeof name, "%s.linear2", prefix);
    if (gr_linear_init(&l2, ctx, name, f, d, 1, rng) < 0) {
        return gr_error_wrap(GR_EINVAL, "feed-forward '%s'", prefix);
    }
    m->w1 = l1.weight;
    m->b1 = l1.bias;
    m->w2 = l2.weight;
    m->b2 = l2.bias;
    m->d = d;
    m->f = f;
    return 0;
}

struct gr_tensor *gr_ffn_forward(struct gr_ctx *ctx, const struct gr_ffn *m,
                                 struct gr_tensor *x, float dropout,
                                 struct gr_rng rng)
{
    struct gr_tensor *h = gr_linear(ctx, x, m->w1, m->b1);
    if (m->neg_slope > 0.0f) {
        h = gr_maximum(ctx, h, gr_scale(ctx, h, m->neg_slope)); /* LeakyReLU */
    } else {
        h = gr_relu(ctx, h);
    }
    if (dropout > 0 && h) {
        h = gr_dropout(ctx, h, dropout, rng);
    }
    return gr_linear(ctx, h, m->w2, m->b2);
}
