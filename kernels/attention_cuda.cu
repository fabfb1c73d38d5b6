/* The attention row kernels on CUDA (kernels/attention_internal.h), with
 * the semantics of attention_cpu.c (the reference). Version 1: one block
 * per score row for the softmax and the label-smoothed cross entropy, one
 * thread per element otherwise; the products around them are the main
 * table's cuBLAS GEMM (attention.c).
 *
 * Determinism as backend_cuda.cu: no floating-point atomics. The bias
 * gradient gives each bias element to one thread, which sums the score
 * entries that broadcast onto it in a fixed order. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

extern "C" {
#include "core/error.h"
}
#include "kernels/attention_internal.h"
#include "kernels/cuda_check.h"
#include "kernels/rng.h"

namespace {

const int kThreads = 256;
const int kRow = 128; /* threads per row */

int grid_for(int64_t n, int block)
{
    int64_t b = (n + block - 1) / block;
    return (int)(b < 1 ? 1 : (b > 65535 ? 65535 : b));
}

/* Block-wide reductions for blockDim.x == kRow; every thread gets the
 * result. */
__device__ float row_max(float v, float *sh)
{
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int s = kRow / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s) {
            sh[threadIdx.x] = fmaxf(sh[threadIdx.x], sh[threadIdx.x + s]);
        }
        __syncthreads();
    }
    float r = sh[0];
    __syncthreads();
    return r;
}

__device__ double row_sum(double v, double *sh)
{
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int s = kRow / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s) {
            sh[threadIdx.x] += sh[threadIdx.x + s];
        }
        __syncthreads();
    }
    double r = sh[0];
    __syncthreads();
    return r;
}

__device__ int64_t row_limit(const gr_attn_rows &a, int64_t b, int64_t i)
{
    int64_t lim = a.tk;
    if (a.key_len && a.key_len[b] < lim) {
        lim = a.key_len[b];
    }
    if (a.causal && i + (a.tk - a.tq) + 1 < lim) {
        lim = i + (a.tk - a.tq) + 1;
    }
    return lim < 0 ? 0 : lim;
}

__global__ void k_softmax(float *s, float *lse, gr_attn_rows a,
                          int recompute)
{
    __shared__ float shf[kRow];
    __shared__ double shd[kRow];
    for (int64_t row = blockIdx.x; row < a.nbh * a.r; row += gridDim.x) {
        int64_t bl = row / a.r, il = row % a.r;
        int64_t bh = a.bh0 + bl, b = bh / a.heads, h = bh % a.heads;
        int64_t i = a.i0 + il;
        float *x = s + row * a.tk;
        int64_t lim = row_limit(a, b, i);
        const float *br = a.bias ? a.bias + b * a.bstride[0] +
                                       h * a.bstride[1] + i * a.bstride[2]
                                 : NULL;
        for (int64_t j = threadIdx.x; j < lim; j += blockDim.x) {
            x[j] = a.scale * x[j] + (br ? br[j * a.bstride[3]] : 0.0f);
        }
        float *l = lse + bh * a.tq + i;
        if (!recompute) {
            float m = -INFINITY;
            for (int64_t j = threadIdx.x; j < lim; j += blockDim.x) {
                m = fmaxf(m, x[j]);
            }
            m = row_max(m, shf);
            double sum = 0.0;
            if (m != -INFINITY) {
                for (int64_t j = threadIdx.x; j < lim; j += blockDim.x) {
                    sum += exp((double)(x[j] - m));
                }
            }
            sum = row_sum(sum, shd);
            if (threadIdx.x == 0) {
                *l = m == -INFINITY ? -INFINITY : m + (float)log(sum);
            }
            __syncthreads();
        }
        float ls = *l;
        for (int64_t j = threadIdx.x; j < a.tk; j += blockDim.x) {
            x[j] = (j < lim && ls != -INFINITY) ? expf(x[j] - ls) : 0.0f;
        }
        __syncthreads();
    }
}

__global__ void k_dropout(float *p, gr_attn_rows a)
{
    float keep_scale = 1.0f / (1.0f - a.p_drop);
    int64_t n = a.nbh * a.r * a.tk;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n;
         e += (int64_t)gridDim.x * blockDim.x) {
        int64_t row = e / a.tk, j = e % a.tk;
        int64_t bl = row / a.r, il = row % a.r;
        uint64_t m = (uint64_t)(((a.bh0 + bl) * a.tq + a.i0 + il) * a.tk + j);
        p[e] = gr_rng_keep(a.key, m, a.p_drop) ? p[e] * keep_scale : 0.0f;
    }
}

__global__ void k_softmax_bwd(const float *p, float *dp, const float *delta,
                              gr_attn_rows a)
{
    float keep_scale = a.p_drop > 0 ? 1.0f / (1.0f - a.p_drop) : 1.0f;
    int64_t n = a.nbh * a.r * a.tk;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n;
         e += (int64_t)gridDim.x * blockDim.x) {
        int64_t row = e / a.tk, j = e % a.tk;
        int64_t bl = row / a.r, il = row % a.r;
        int64_t bh = a.bh0 + bl, i = a.i0 + il;
        float g = dp[e];
        if (a.p_drop > 0) {
            uint64_t m = (uint64_t)((bh * a.tq + i) * a.tk + j);
            g = gr_rng_keep(a.key, m, a.p_drop) ? g * keep_scale : 0.0f;
        }
        dp[e] = p[e] * (g - delta[bh * a.tq + i]);
    }
}

/* One thread per bias element e (of bn): the chunk entries that map onto
 * it, summed in (bh, i, j) order. */
__global__ void k_bias_grad(const float *dz, float *gbias, int64_t s0,
                            int64_t s1, int64_t s2, int64_t s3,
                            gr_attn_rows a)
{
    int64_t bn = s0 * s1 * s2 * s3;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < bn;
         e += (int64_t)gridDim.x * blockDim.x) {
        int64_t e3 = e % s3, e2 = (e / s3) % s2, e1 = (e / (s3 * s2)) % s1,
                e0 = e / (s3 * s2 * s1);
        int64_t ilo = 0, ihi = a.r;
        if (s2 != 1) {
            if (e2 < a.i0 || e2 >= a.i0 + a.r) {
                continue;
            }
            ilo = e2 - a.i0;
            ihi = ilo + 1;
        }
        int64_t jlo = s3 != 1 ? e3 : 0, jhi = s3 != 1 ? e3 + 1 : a.tk;
        float sum = 0.0f;
        for (int64_t bl = 0; bl < a.nbh; bl++) {
            int64_t bh = a.bh0 + bl, b = bh / a.heads, h = bh % a.heads;
            if ((s0 != 1 && b != e0) || (s1 != 1 && h != e1)) {
                continue;
            }
            for (int64_t il = ilo; il < ihi; il++) {
                const float *zr = dz + (bl * a.r + il) * a.tk;
                for (int64_t j = jlo; j < jhi; j++) {
                    sum += zr[j];
                }
            }
        }
        gbias[e] += sum;
    }
}

__global__ void k_rowdot(const float *go, const float *o, float *delta,
                         int64_t tq, int64_t b, int64_t heads, int64_t dv)
{
    int64_t n = b * heads * tq;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n;
         e += (int64_t)gridDim.x * blockDim.x) {
        int64_t bh = e / tq, i = e % tq;
        const float *g = go + i * b * heads * dv + bh * dv;
        const float *y = o + i * b * heads * dv + bh * dv;
        double s = 0.0;
        for (int64_t c = 0; c < dv; c++) {
            s += (double)g[c] * (double)y[c];
        }
        delta[e] = (float)s;
    }
}

/* lse[r] and the row's smoothed loss term into term[r] (0 when ignored). */
__global__ void k_lsxent_rows(const float *logits, const int32_t *targets,
                              int64_t rows, int64_t v, int32_t ignore,
                              float eps, float *lse, float *term)
{
    __shared__ float shf[kRow];
    __shared__ double shd[kRow];
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        if (targets[r] == ignore) {
            if (threadIdx.x == 0) {
                lse[r] = 0.0f;
                term[r] = 0.0f;
            }
            continue;
        }
        const float *x = logits + r * v;
        float m = -INFINITY;
        double mean = 0.0;
        for (int64_t j = threadIdx.x; j < v; j += blockDim.x) {
            m = fmaxf(m, x[j]);
            mean += x[j];
        }
        m = row_max(m, shf);
        mean = row_sum(mean, shd) / (double)v;
        double s = 0.0;
        for (int64_t j = threadIdx.x; j < v; j += blockDim.x) {
            s += exp((double)(x[j] - m));
        }
        s = row_sum(s, shd);
        if (threadIdx.x == 0) {
            double l = (double)m + log(s);
            lse[r] = (float)l;
            term[r] = (float)(l - (1.0 - eps) * (double)x[targets[r]] -
                              eps * mean);
        }
    }
}

__global__ void k_lsxent_sum(const int32_t *targets, const float *term,
                             int64_t rows, int32_t ignore, float *loss,
                             float *count)
{
    __shared__ double shd[kRow];
    double s = 0.0, c = 0.0;
    for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
        if (targets[r] != ignore) {
            s += term[r];
            c += 1.0;
        }
    }
    s = row_sum(s, shd);
    c = row_sum(c, shd);
    if (threadIdx.x == 0) {
        count[0] = (float)c;
        loss[0] = (float)(s / (c > 0.0 ? c : 1.0));
    }
}

__global__ void k_lsxent_bwd(const float *logits, const int32_t *targets,
                             const float *lse, int64_t rows, int64_t v,
                             int32_t ignore, float eps, const float *gloss,
                             const float *count, float *glogits)
{
    float g = gloss[0] / (count[0] > 0.0f ? count[0] : 1.0f);
    float smooth = eps / (float)v;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
         e < rows * v; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = e / v, j = e % v;
        int32_t t = targets[r];
        if (t == ignore) {
            continue;
        }
        float d = expf(logits[e] - lse[r]) - smooth;
        if (j == t) {
            d -= 1.0f - eps;
        }
        glogits[e] += g * d;
    }
}

int cu_softmax(void *st, float *s, float *lse, const gr_attn_rows *a,
               int recompute)
{
    (void)st;
    k_softmax<<<grid_for(a->nbh * a->r, 1), kRow>>>(s, lse, *a, recompute);
    return gr_cuda_launched("k_softmax (attention)");
}

int cu_dropout(void *st, float *p, const gr_attn_rows *a)
{
    (void)st;
    k_dropout<<<grid_for(a->nbh * a->r * a->tk, kThreads), kThreads>>>(p, *a);
    return gr_cuda_launched("k_dropout (attention)");
}

int cu_softmax_bwd(void *st, const float *p, float *dp, const float *delta,
                   const gr_attn_rows *a)
{
    (void)st;
    k_softmax_bwd<<<grid_for(a->nbh * a->r * a->tk, kThreads), kThreads>>>(
        p, dp, delta, *a);
    return gr_cuda_launched("k_softmax_bwd (attention)");
}

int cu_bias_grad(void *st, const float *dz, float *gbias,
                 const int64_t bshape[4], const gr_attn_rows *a)
{
    (void)st;
    int64_t bn = bshape[0] * bshape[1] * bshape[2] * bshape[3];
    k_bias_grad<<<grid_for(bn, kThreads), kThreads>>>(
        dz, gbias, bshape[0], bshape[1], bshape[2], bshape[3], *a);
    return gr_cuda_launched("k_bias_grad (attention)");
}

int cu_rowdot(void *st, const float *go, const float *o, float *delta,
              int64_t tq, int64_t b, int64_t heads, int64_t dv)
{
    (void)st;
    k_rowdot<<<grid_for(b * heads * tq, kThreads), kThreads>>>(
        go, o, delta, tq, b, heads, dv);
    return gr_cuda_launched("k_rowdot (attention)");
}

int cu_lsxent_fwd(void *st, const float *logits, const int32_t *targets,
                  int64_t rows, int64_t v, int32_t ignore, float eps,
                  float *loss, float *count, float *lse, float *work)
{
    (void)st;
    k_lsxent_rows<<<grid_for(rows, 1), kRow>>>(logits, targets, rows, v,
                                               ignore, eps, lse, work);
    int rc = gr_cuda_launched("k_lsxent_rows");
    if (rc < 0) {
        return rc;
    }
    k_lsxent_sum<<<1, kRow>>>(targets, work, rows, ignore, loss, count);
    return gr_cuda_launched("k_lsxent_sum");
}

int cu_lsxent_bwd(void *st, const float *logits, const int32_t *targets,
                  const float *lse, int64_t rows, int64_t v, int32_t ignore,
                  float eps, const float *gloss, const float *count,
                  float *glogits)
{
    (void)st;
    k_lsxent_bwd<<<grid_for(rows * v, kThreads), kThreads>>>(
        logits, targets, lse, rows, v, ignore, eps, gloss, count, glogits);
    return gr_cuda_launched("k_lsxent_bwd");
}

} // namespace

extern "C" const struct gr_attn_backend *gr_attn_backend_cuda(void)
{
    static gr_attn_backend t;
    static int init = 0;
    if (!init) {
        t.softmax = cu_softmax;
        t.dropout = cu_dropout;
        t.softmax_bwd = cu_softmax_bwd;
        t.bias_grad = cu_bias_grad;
        t.rowdot = cu_rowdot;
        t.lsxent_fwd = cu_lsxent_fwd;
        t.lsxent_bwd = cu_lsxent_bwd;
        t.fused_fwd = gr_attn_cuda_fused_fwd; /* attention_fused_cuda.cu */
        t.fused_bwd = gr_attn_cuda_fused_bwd;
        init = 1;
    }
    return &t;
}
