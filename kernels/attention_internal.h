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

/* One call of the fused path (attention_fused_cuda.cu): every (b, h) and
 * every query of q [Tq, B, H·dk], k [Tk, B, H·dk], v [Tk, B, H·dv] at
 * once, no bias, no dropout, dk and dv at most GR_ATTN_FUSED_MAX_D. */
#define GR_ATTN_FUSED_MAX_D 128
/* Tq and Tk at most this: their 32-row tiles fit a grid's y (65,535). */
#define GR_ATTN_FUSED_MAX_T ((int64_t)65535 * 32)

struct gr_attn_fused {
    int64_t tq, tk, b, heads, dk, dv;
    float scale;            /* 1/√dk */
    const int32_t *key_len; /* [B] or NULL */
    int causal;
};

typedef int (*gr_attn_fused_fwd_fn)(void *st, const float *q, const float *k,
                                    const float *v, float *o, float *lse,
                                    const struct gr_attn_fused *f);
typedef int (*gr_attn_fused_bwd_fn)(void *st, const float *q, const float *k,
                                    const float *v, const float *go,
                                    const float *lse, const float *delta,
                                    float *gq, float *gk, float *gv,
                                    const struct gr_attn_fused *f);

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
    /* The fused path (NULL where the device has none: the CPU). Forward:
     * o [Tq, B, H·dv] written, lse [B·H, Tq] written (indexed as above;
     * -inf and a zero output row for a query with no key). Backward, from
     * lse and delta (rowdot of go and o): gq, gk, gv accumulate (each
     * NULL when not wanted); P is recomputed tile by tile, never stored. */
    gr_attn_fused_fwd_fn fused_fwd;
    gr_attn_fused_bwd_fn fused_bwd;
};

const struct gr_attn_backend *gr_attn_backend_cpu(void);
/* FOR TESTS: installs fused entries in the CPU table (NULL, NULL removes
 * them), so that gr_attention's fused dispatch can run on the CPU with a
 * test's reference of the tiled algorithm
 * (tests/kernels/test_attention_tiled.c). Not thread safe. */
void gr_attn_cpu_set_fused(gr_attn_fused_fwd_fn fwd, gr_attn_fused_bwd_fn bwd);
#ifdef GROVE_HAVE_CUDA_BACKEND
const struct gr_attn_backend *gr_attn_backend_cuda(void);
/* attention_fused_cuda.cu's entries (inside libgrove_cuda.so; its table's
 * fused_fwd and fused_bwd) */
int gr_attn_cuda_fused_fwd(void *st, const float *q, const float *k,
                           const float *v, float *o, float *lse,
                           const struct gr_attn_fused *f);
int gr_attn_cuda_fused_bwd(void *st, const float *q, const float *k,
                           const float *v, const float *go, const float *lse,
                           const float *delta, float *gq, float *gk,
                           float *gv, const struct gr_attn_fused *f);
#endif

#ifdef __cplusplus
}
#endif

#endif
