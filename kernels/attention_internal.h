/* kernels/attention_internal.h — INTERNAL to kernels/: the device table of
 * the attention ops (kernels/attention.h), apart from backend.h so that the
 * attention kernels live in their own files (attention_cpu.c,
 * attention_cuda.cu). attention.c composes gr_attention from the main
 * table's GEMM (kernels/backend.h) and these row kernels, the same way on
 * both devices. Conventions as backend.h: device pointers, 0 or a negative
 * GR_E* code with a message; "accumulate" outputs are added to.
 */
#ifndef GROVE_KERNELS_ATTENTION_INTERNAL_H
#define GROVE_KERNELS_ATTENTION_INTERNAL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One chunk of score rows: heads bh in [bh0, bh0 + nbh) (bh = b·H + h),
 * queries i in [i0, i0 + r), all Tk keys; a chunk buffer is [nbh, r, tk]. */
struct gr_attn_rows {
    int64_t bh0, nbh, i0, r;
    int64_t tq, tk, heads;
    float scale;
    const float *bias;   /* NULL or broadcast over [B, H, Tq, Tk] */
    int64_t bstride[4];  /* bias element strides per (b, h, i, j); 0 when
                            broadcast */
    const int32_t *key_len; /* [B] or NULL */
    int causal;
    float p_drop;        /* attention dropout (0: none) */
    uint64_t key;        /* dropout key */
};

struct gr_attn_backend {
    /* s [nbh, r, tk]: raw q·k products in, probabilities out (in place),
     * z = scale·s + bias, masked entries 0. lse is the whole [B·H, Tq]
     * array (row (bh, i) at bh·Tq + i): written when recompute = 0, read
     * when recompute = 1 (the backward). A row with every key masked has
     * lse = -inf and probabilities 0. */
    int (*softmax)(void *st, float *s, float *lse,
                   const struct gr_attn_rows *a, int recompute);
    /* p [nbh, r, tk] in place: p·keep/(1 - p_drop) (the dropped P). */
    int (*dropout)(void *st, float *p, const struct gr_attn_rows *a);
    /* dp [nbh, r, tk] in place: dP of the dropped P in, dZ out:
     * dZ = P ⊙ (keep·dP/(1 - p_drop) - delta[row]); delta indexed like
     * lse. */
    int (*softmax_bwd)(void *st, const float *p, float *dp,
                       const float *delta, const struct gr_attn_rows *a);
    /* gbias (accumulate, broadcast shape bshape over [B, H, Tq, Tk]) +=
     * dz of the chunk. Deterministic order. */
    int (*bias_grad)(void *st, const float *dz, float *gbias,
                     const int64_t bshape[4], const struct gr_attn_rows *a);
    /* delta[b·H + h, i] = Σ_c go[i, b, h·dv + c] · o[i, b, h·dv + c] over
     * o, go [Tq, B, H·dv]. */
    int (*rowdot)(void *st, const float *go, const float *o, float *delta,
                  int64_t tq, int64_t b, int64_t heads, int64_t dv);
    /* Label-smoothed cross entropy: loss[0] = Σ_valid (lse - (1-eps)
     * x[t] - eps·mean x) / max(1, count); count[0]; lse[rows] saved;
     * work: [rows] floats of scratch. */
    int (*lsxent_fwd)(void *st, const float *logits, const int32_t *targets,
                      int64_t rows, int64_t v, int32_t ignore, float eps,
                      float *loss, float *count, float *lse, float *work);
    /* glogits += gloss/max(1, count) · (softmax - (1-eps) onehot - eps/V) */
    int (*lsxent_bwd)(void *st, const float *logits, const int32_t *targets,
                      const float *lse, int64_t rows, int64_t v,
                      int32_t ignore, float eps, const float *gloss,
                      const float *count, float *glogits);
};

const struct gr_attn_backend *gr_attn_backend_cpu(void);
#ifdef GROVE_HAVE_CUDA_BACKEND
const struct gr_attn_backend *gr_attn_backend_cuda(void);
#endif

#ifdef __cplusplus
}
#endif

#endif
