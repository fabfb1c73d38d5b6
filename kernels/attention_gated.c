/* gr_attention_gated (kernels/attention.h): StructFormer's sigmoid
 * attention gated by a dependency mask, composed from the ops of
 * kernels/ops.h so that the tape differentiates it on either device.
 *
 * Layout: q [Tq, B, H·dk] is viewed as [Tq, B·H, dk] and transposed once to
 * [B·H, Tq, dk] (a copy); the scores are one batched GEMM over B·H; the
 * weights are reshaped to [B, H, Tq, Tk] so that the gate and the key mask
 * broadcast; the output GEMM gives [B·H, Tq, dv], transposed back. */
#include <math.h>
#include <stdlib.h>

#include "core/error.h"
#include "kernels/attention.h"
#include "kernels/internal.h"
#include "kernels/ops.h"

static int dims_ok(struct gr_ctx *ctx, struct gr_tensor *q,
                   struct gr_tensor *k, struct gr_tensor *v, int heads,
                   struct gr_tensor *gate, struct gr_tensor *key_len,
                   float dropout)
{
    const char *op = "gr_attention_gated";
    char s1[96], s2[96], s3[96];
    if (!q || !k || !v || !gate) {
        if (gr_ctx_status(ctx) == 0) {
            gr_fail(ctx, GR_EINVAL, "%s: q, k, v and gate are required", op);
        }
        return 0;
    }
    if (q->dtype != GR_F32 || k->dtype != GR_F32 || v->dtype != GR_F32 ||
        gate->dtype != GR_F32 || (key_len && key_len->dtype != GR_I32)) {
        gr_fail(ctx, GR_EINVAL, "%s: q, k, v, gate must be f32 and key_len "
                "i32", op);
        return 0;
    }
    gr_tensor_shape_str(q, s1, sizeof s1);
    gr_tensor_shape_str(k, s2, sizeof s2);
    gr_tensor_shape_str(v, s3, sizeof s3);
    if (q->ndim != 3 || k->ndim != 3 || v->ndim != 3 ||
        k->shape[1] != q->shape[1] || v->shape[1] != q->shape[1] ||
        k->shape[2] != q->shape[2] || v->shape[0] != k->shape[0]) {
        gr_fail(ctx, GR_EINVAL, "%s: q %s, k %s, v %s must be [Tq, B, H*dk], "
                "[Tk, B, H*dk], [Tk, B, H*dv]", op, s1, s2, s3);
        return 0;
    }
    if (heads < 1 || q->shape[2] % heads != 0 || v->shape[2] % heads != 0) {
        gr_fail(ctx, GR_EINVAL, "%s: %d heads do not divide the widths of q "
                "%s and v %s", op, heads, s1, s3);
        return 0;
    }
    const int64_t full[4] = {q->shape[1], heads, q->shape[0], k->shape[0]};
    int pad = 4 - gate->ndim;
    for (int d = 0; d < gate->ndim; d++) {
        int64_t g = gate->shape[d];
        if (pad < 0 || (g != 1 && g != full[d + pad])) {
            gr_tensor_shape_str(gate, s2, sizeof s2);
            gr_fail(ctx, GR_EINVAL, "%s: gate %s does not broadcast to [B, H, "
                    "Tq, Tk] = [%lld, %lld, %lld, %lld]", op, s2,
                    (long long)full[0], (long long)full[1],
                    (long long)full[2], (long long)full[3]);
            return 0;
        }
    }
    if (key_len && (key_len->ndim != 1 || key_len->shape[0] != q->shape[1])) {
        gr_tensor_shape_str(key_len, s2, sizeof s2);
        gr_fail(ctx, GR_EINVAL, "%s: key_len %s must be [B] = [%lld]", op, s2,
                (long long)q->shape[1]);
        return 0;
    }
    if (!(dropout >= 0.0f && dropout < 1.0f)) {
        gr_fail(ctx, GR_EINVAL, "%s: dropout %g outside [0, 1)", op,
                (double)dropout);
        return 0;
    }
    return 1;
}

/* [T, B, H·w] -> [B·H, T, w] (a copy). */
static struct gr_tensor *heads_first(struct gr_ctx *ctx, struct gr_tensor *x,
                                     int64_t bh, int64_t w)
{
    return gr_transpose(ctx, gr_reshape(ctx, x, gr_shape3(x->shape[0], bh, w)),
                        0, 1);
}

struct gr_tensor *gr_attention_gated(struct gr_ctx *ctx, struct gr_tensor *q,
                                     struct gr_tensor *k, struct gr_tensor *v,
                                     int heads, struct gr_tensor *gate,
                                     struct gr_tensor *key_len, float dropout,
                                     struct gr_rng rng)
{
    if (!dims_ok(ctx, q, k, v, heads, gate, key_len, dropout)) {
        return NULL;
    }
    const int64_t tq = q->shape[0], tk = k->shape[0], b = q->shape[1];
    const int64_t bh = b * heads, dk = q->shape[2] / heads,
                  dv = v->shape[2] / heads;
    struct gr_tensor *qh = heads_first(ctx, q, bh, dk);
    struct gr_tensor *kh = heads_first(ctx, k, bh, dk);
    struct gr_tensor *vh = heads_first(ctx, v, bh, dv);
    struct gr_tensor *s = gr_scale(ctx, gr_matmul(ctx, qh, kh, 0, 1),
                                   1.0f / sqrtf((float)dk));
    struct gr_tensor *p = gr_mul(ctx,
                                 gr_reshape(ctx, gr_sigmoid(ctx, s),
                                            gr_shape4(b, heads, tq, tk)),
                                 gate);
    if (key_len != NULL && p != NULL) {
        int32_t *len = malloc((size_t)b * sizeof *len);
        float *keep = malloc((size_t)(b * tk) * sizeof *keep);
        struct gr_tensor *m = NULL;
        if (len && keep && gr_tensor_to_host(key_len, len) == 0) {
            for (int64_t i = 0; i < b * tk; i++) {
                keep[i] = i % tk < len[i / tk] ? 1.0f : 0.0f;
            }
            m = gr_tensor_from_host(ctx, GR_F32, gr_shape4(b, 1, 1, tk), keep);
        }
        free(len);
        free(keep);
        if (m == NULL) {
            if (gr_ctx_status(ctx) == 0) {
                gr_fail(ctx, GR_ENOMEM, "gr_attention_gated: the key mask");
            }
            return NULL;
        }
        p = gr_mul(ctx, p, m);
    }
    if (dropout > 0.0f) {
        p = gr_dropout(ctx, p, dropout, rng);
    }
    struct gr_tensor *o = gr_matmul(ctx, gr_reshape(ctx, p,
                                                    gr_shape3(bh, tq, tk)),
                                    vh, 0, 0);
    o = gr_transpose(ctx, o, 0, 1);
    return gr_reshape(ctx, o, gr_shape3(tq, b, heads * dv));
}
