/* The attention row kernels on the CPU (kernels/attention_internal.h): the
 * reference semantics of attention_cuda.cu. Plain loops; the products
 * around them are the main table's CBLAS GEMM. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/attention_internal.h"
#include "kernels/dropout_cpu_internal.h"
#include "kernels/rng.h"

/* The keys a query row may see: j < lim. */
static int64_t row_limit(const struct gr_attn_rows *a, int64_t b, int64_t i)
{
    int64_t lim = a->tk;
    if (a->key_len && a->key_len[b] < lim) {
        lim = a->key_len[b];
    }
    if (a->causal && i + (a->tk - a->tq) + 1 < lim) {
        lim = i + (a->tk - a->tq) + 1;
    }
    return lim < 0 ? 0 : lim;
}

static int cpu_softmax(void *st, float *s, float *lse,
                       const struct gr_attn_rows *a, int recompute)
{
    (void)st;
    for (int64_t bl = 0; bl < a->nbh; bl++) {
        int64_t bh = a->bh0 + bl, b = bh / a->heads, h = bh % a->heads;
        for (int64_t il = 0; il < a->r; il++) {
            int64_t i = a->i0 + il;
            float *row = s + (bl * a->r + il) * a->tk;
            int64_t lim = row_limit(a, b, i);
            const float *br = a->bias ? a->bias + b * a->bstride[0] +
                                            h * a->bstride[1] +
                                            i * a->bstride[2]
                                      : NULL;
            for (int64_t j = 0; j < lim; j++) {
                row[j] = a->scale * row[j] + (br ? br[j * a->bstride[3]] : 0);
            }
            float *l = lse + bh * a->tq + i;
            if (!recompute) {
                float m = -INFINITY;
                for (int64_t j = 0; j < lim; j++) {
                    m = row[j] > m ? row[j] : m;
                }
                if (m == -INFINITY) {
                    *l = -INFINITY;
                } else {
                    double sum = 0.0;
                    for (int64_t j = 0; j < lim; j++) {
                        sum += exp((double)(row[j] - m));
                    }
                    *l = m + (float)log(sum);
                }
            }
            float ls = *l;
            for (int64_t j = 0; j < a->tk; j++) {
                row[j] = (j < lim && ls != -INFINITY) ? expf(row[j] - ls)
                                                      : 0.0f;
            }
        }
    }
    return 0;
}

static int cpu_dropout(void *st, float *p, const struct gr_attn_rows *a)
{
    (void)st;
    float keep_scale = 1.0f / (1.0f - a->p_drop);
    for (int64_t bl = 0; bl < a->nbh; bl++) {
        for (int64_t il = 0; il < a->r; il++) {
            uint64_t base = (uint64_t)(((a->bh0 + bl) * a->tq + a->i0 + il) *
                                       a->tk);
            float *row = p + (bl * a->r + il) * a->tk;
            /* the bits of gr_rng_keep(key, base + j, p), many at a time */
            gr_cpu_dropout_run(a->key, base, a->tk, a->p_drop, keep_scale,
                               row, row, 0);
        }
    }
    return 0;
}

static int cpu_softmax_bwd(void *st, const float *p, float *dp,
                           const float *delta, const struct gr_attn_rows *a)
{
    (void)st;
    float keep_scale = a->p_drop > 0 ? 1.0f / (1.0f - a->p_drop) : 1.0f;
    for (int64_t bl = 0; bl < a->nbh; bl++) {
        int64_t bh = a->bh0 + bl;
        for (int64_t il = 0; il < a->r; il++) {
            int64_t i = a->i0 + il;
            float dl = delta[bh * a->tq + i];
            uint64_t base = (uint64_t)((bh * a->tq + i) * a->tk);
            const float *pr = p + (bl * a->r + il) * a->tk;
            float *gr = dp + (bl * a->r + il) * a->tk;
            if (a->p_drop > 0) {
                /* dP through the dropout: the forward's mask, redrawn */
                gr_cpu_dropout_run(a->key, base, a->tk, a->p_drop,
                                   keep_scale, gr, gr, 0);
            }
            for (int64_t j = 0; j < a->tk; j++) {
                gr[j] = pr[j] * (gr[j] - dl);
            }
        }
    }
    return 0;
}

static int cpu_bias_grad(void *st, const float *dz, float *gbias,
                         const int64_t bshape[4],
                         const struct gr_attn_rows *a)
{
    (void)st;
    (void)bshape;
    for (int64_t bl = 0; bl < a->nbh; bl++) {
        int64_t bh = a->bh0 + bl, b = bh / a->heads, h = bh % a->heads;
        for (int64_t il = 0; il < a->r; il++) {
            int64_t i = a->i0 + il;
            float *gr = gbias + b * a->bstride[0] + h * a->bstride[1] +
                        i * a->bstride[2];
            const float *zr = dz + (bl * a->r + il) * a->tk;
            for (int64_t j = 0; j < a->tk; j++) {
                gr[j * a->bstride[3]] += zr[j];
            }
        }
    }
    return 0;
}

static int cpu_rowdot(void *st, const float *go, const float *o,
                      float *delta, int64_t tq, int64_t b, int64_t heads,
                      int64_t dv)
{
    (void)st;
    for (int64_t bh = 0; bh < b * heads; bh++) {
        for (int64_t i = 0; i < tq; i++) {
            const float *g = go + (i * b) * heads * dv + bh * dv;
            const float *y = o + (i * b) * heads * dv + bh * dv;
            double s = 0.0;
            for (int64_t c = 0; c < dv; c++) {
                s += (double)g[c] * (double)y[c];
            }
            delta[bh * tq + i] = (float)s;
        }
    }
    return 0;
}

static int cpu_lsxent_fwd(void *st, const float *logits,
                          const int32_t *targets, int64_t rows, int64_t v,
                          int32_t ignore, float eps, float *loss,
                          float *count, float *lse, float *work)
{
    (void)st;
    (void)work;
    double total = 0.0, n = 0.0;
    for (int64_t r = 0; r < rows; r++) {
        const float *x = logits + r * v;
        if (targets[r] == ignore) {
            lse[r] = 0.0f;
            continue;
        }
        float m = -INFINITY;
        double mean = 0.0;
        for (int64_t j = 0; j < v; j++) {
            m = x[j] > m ? x[j] : m;
            mean += x[j];
        }
        mean /= (double)v;
        double s = 0.0;
        for (int64_t j = 0; j < v; j++) {
            s += exp((double)(x[j] - m));
        }
        double l = (double)m + log(s);
        lse[r] = (float)l;
        total += l - (1.0 - eps) * (double)x[targets[r]] - eps * mean;
        n += 1.0;
    }
    count[0] = (float)n;
    loss[0] = (float)(total / (n > 0 ? n : 1.0));
    return 0;
}

static int cpu_lsxent_bwd(void *st, const float *logits,
                          const int32_t *targets, const float *lse,
                          int64_t rows, int64_t v, int32_t ignore, float eps,
                          const float *gloss, const float *count,
                          float *glogits)
{
    (void)st;
    float g = gloss[0] / (count[0] > 0.0f ? count[0] : 1.0f);
    float smooth = eps / (float)v;
    for (int64_t r = 0; r < rows; r++) {
        int32_t t = targets[r];
        if (t == ignore) {
            continue;
        }
        const float *x = logits + r * v;
        float *gx = glogits + r * v;
        for (int64_t j = 0; j < v; j++) {
            float d = expf(x[j] - lse[r]) - smooth;
            if (j == t) {
                d -= 1.0f - eps;
            }
            gx[j] += g * d;
        }
    }
    return 0;
}

static struct gr_attn_backend cpu_table = {
    .softmax = cpu_softmax,
    .dropout = cpu_dropout,
    .softmax_bwd = cpu_softmax_bwd,
    .bias_grad = cpu_bias_grad,
    .rowdot = cpu_rowdot,
    .lsxent_fwd = cpu_lsxent_fwd,
    .lsxent_bwd = cpu_lsxent_bwd,
};

const struct gr_attn_backend *gr_attn_backend_cpu(void)
{
    return &cpu_table;
}

void gr_attn_cpu_set_fused(gr_attn_fused_fwd_fn fwd, gr_attn_fused_bwd_fn bwd)
{
    cpu_table.fused_fwd = fwd;
    cpu_table.fused_bwd = bwd;
}
