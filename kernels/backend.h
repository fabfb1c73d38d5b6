/* kernels/backend.h — INTERNAL to kernels/: the device table.
 *
 * Each device (backend_cpu.c, backend_cuda.cu) fills one struct gr_backend
 * of raw kernels on device pointers. ops.c checks shapes, allocates, records
 * the tape and calls these; an entry left NULL is an op that device lacks,
 * reported as GR_EUNSUPPORTED by ops.c (never a fallback to another
 * device). Every kernel is plain C types only (no CUDA types), returns 0 or
 * a negative GR_E* code with a message, and follows one convention:
 * "accumulate" kernels ADD into their outputs (gradients), the others
 * overwrite. A NULL gradient pointer in a backward kernel means "not
 * needed" (for outputs) or "zero" (for incoming gradients of multi-output
 * ops). All matrices are row-major.
 */
#ifndef GROVE_KERNELS_BACKEND_H
#define GROVE_KERNELS_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum gr_unary_op {
    GR_U_SIGMOID = 0,
    GR_U_TANH,
    GR_U_RELU,
    GR_U_ELU,
    GR_U_EXP,
    GR_U_LOG,
    GR_U_ABS,
    GR_U_SQUARE,
    GR_U_SQRT,
    GR_U_AFFINE, /* y = a·x + b */
    GR_U_CLAMP,  /* y = min(max(x, a), b) */
    GR_U_COUNT
};

enum gr_binary_op {
    GR_B_ADD = 0,
    GR_B_SUB,
    GR_B_MUL,
    GR_B_DIV,
    GR_B_MIN,
    GR_B_MAX,
    GR_B_COUNT
};

/* A broadcast of an operand `b` (or a mask) over an output of `shape`:
 * both left-padded to 4 dimensions. */
struct gr_bcast {
    int64_t n;          /* output elements */
    int64_t shape[4];   /* output shape */
    int64_t bshape[4];  /* operand shape: each 1 or shape[d] */
    int64_t bstride[4]; /* operand element stride per output dim (0 when
                           broadcast) */
    int64_t bn;         /* operand elements */
    int same;           /* operand shape == output shape */
};

/* Saved per-row statistics etc. are plain float buffers from the step
 * arena. `st` is the backend's state (NULL on CPU). */
struct gr_backend {
    const char *name;
    /* memory */
    void *(*alloc)(void *st, size_t bytes); /* NULL on failure (+message) */
    void (*free)(void *st, void *p);
    int (*h2d)(void *st, void *dst, const void *src, size_t bytes);
    int (*d2h)(void *st, void *dst, const void *src, size_t bytes);
    int (*d2d)(void *st, void *dst, const void *src, size_t bytes);
    int (*zero)(void *st, void *dst, size_t bytes);
    int (*sync)(void *st);
    int (*fill)(void *st, float *x, int64_t n, float v);
    int (*scale)(void *st, float *x, int64_t n, float s); /* in place */

    /* C[i] = alpha op(A[i]) op(B[i]) + beta C[i], i < batch, with element
     * strides sa, sb, sc between batch items (sb = 0: shared B). */
    int (*gemm)(void *st, int ta, int tb, int m, int n, int k, float alpha,
                const float *a, int lda, int64_t sa, const float *b, int ldb,
                int64_t sb, float beta, float *c, int ldc, int64_t sc,
                int batch);
    /* y[r, :] = v[:] for r < rows */
    int (*rows_set)(void *st, float *y, const float *v, int64_t rows,
                    int64_t cols);

    int (*unary_fwd)(void *st, int op, const float *x, float *y, int64_t n,
                     float a, float b);
    /* gx += gy · f'(x) (y = f(x) given too) */
    int (*unary_bwd)(void *st, int op, const float *x, const float *y,
                     const float *gy, float *gx, int64_t n, float a, float b);
    int (*binary_fwd)(void *st, int op, const float *a, const float *b,
                      float *y, const struct gr_bcast *bc);
    /* ga += ∂/∂a, gb += Σ over broadcast of ∂/∂b (either may be NULL) */
    int (*binary_bwd)(void *st, int op, const float *a, const float *b,
                      const float *gy, float *ga, float *gb,
                      const struct gr_bcast *bc);

    /* rows × cols; mask (NULL or broadcast by mbc over rows·cols). */
    int (*softmax_fwd)(void *st, const float *x, const float *mask,
                       const struct gr_bcast *mbc, float *y, int64_t rows,
                       int64_t cols, int log);
    int (*softmax_bwd)(void *st, const float *y, const float *gy, float *gx,
                       int64_t rows, int64_t cols, int log);
    int (*cumsum_fwd)(void *st, const float *x, float *y, int64_t rows,
                      int64_t cols);
    int (*cumsum_bwd)(void *st, const float *gy, float *gx, int64_t rows,
                      int64_t cols);
    /* y = cumsum(softmax(x)); p (rows × cols) receives softmax(x). */
    int (*cumax_fwd)(void *st, const float *x, float *y, float *p,
                     int64_t rows, int64_t cols);
    int (*cumax_bwd)(void *st, const float *p, const float *gy, float *gx,
                     int64_t rows, int64_t cols);
    /* mean, rstd: [rows]. gamma/beta may be NULL. */
    int (*layernorm_fwd)(void *st, const float *x, const float *gamma,
                         const float *beta, float *y, float *mean,
                         float *rstd, int64_t rows, int64_t cols, float eps);
    int (*layernorm_bwd)(void *st, const float *x, const float *gamma,
                         const float *mean, const float *rstd,
                         const float *gy, float *gx, float *ggamma,
                         float *gbeta, int64_t rows, int64_t cols);

    /* y[i, :] = table[ids[i], :], i < n, rows of width d */
    int (*rows_gather)(void *st, const float *table, const int32_t *ids,
                       float *y, int64_t n, int64_t d);
    /* gtable[ids[i], :] += gy[i, :] */
    int (*rows_scatter_add)(void *st, const float *gy, const int32_t *ids,
                            float *gtable, int64_t n, int64_t d);
    /* y[r, :] = Σ_j val[r, j] table[idx[r, j], :] (idx < 0 skipped,
     * val NULL = 1) */
    int (*sparse_mm_fwd)(void *st, const int32_t *idx, const float *val,
                         const float *table, float *y, int64_t rows,
                         int64_t nz, int64_t out);
    /* gval[r, j] += gy[r, :] · table[idx[r, j], :];
     * gtable[id, :] += Σ over entries with that id of val · gy[r, :]
     * (either may be NULL); the table has n_table rows */
    int (*sparse_mm_bwd)(void *st, const int32_t *idx, const float *val,
                         const float *table, const float *gy, float *gval,
                         float *gtable, int64_t rows, int64_t nz,
                         int64_t out, int64_t n_table);
    /* y[r, j] = x[r, idx[r, j]]; x rows of n, idx/y rows of k */
    int (*gather_fwd)(void *st, const float *x, const int32_t *idx, float *y,
                      int64_t rows, int64_t n, int64_t k);
    int (*gather_bwd)(void *st, const float *gy, const int32_t *idx,
                      float *gx, int64_t rows, int64_t n, int64_t k);

    /* dst[r*dld + c] (+)= src[r*sld + c] */
    int (*copy2d)(void *st, float *dst, int64_t dld, const float *src,
                  int64_t sld, int64_t rows, int64_t cols, int accumulate);
    /* y = x with dims permuted: y dim i is x dim perm[i]; x shape[4]. */
    int (*permute)(void *st, const float *x, float *y, const int64_t shape[4],
                   const int perm[4], int accumulate);
    /* y[o, i] (+)= scale Σ_j x[o, j, i] over an [outer, n, inner] view */
    int (*reduce)(void *st, const float *x, float *y, int64_t outer,
                  int64_t n, int64_t inner, float scale, int accumulate);
    /* gx[o, j, i] += scale gy[o, i] */
    int (*expand)(void *st, const float *gy, float *gx, int64_t outer,
                  int64_t n, int64_t inner, float scale);

    /* y (+)= x · mask · scale, mask element from mbc index m:
     * gr_rng_keep(key, m, p) */
    int (*dropout)(void *st, const float *x, float *y,
                   const struct gr_bcast *mbc, uint64_t key, float p,
                   float scale, int accumulate);

    /* loss[0] = Σ_valid (lse - x[t]) / max(1, count); count[0] = valid
     * rows; lse[rows] saved. */
    int (*xent_fwd)(void *st, const float *logits, const int32_t *targets,
                    int64_t rows, int64_t v, int32_t ignore, float *loss,
                    float *count, float *lse);
    /* glogits += gloss[0] / max(1, count[0]) · (softmax - onehot) */
    int (*xent_bwd)(void *st, const float *logits, const int32_t *targets,
                    const float *lse, int64_t rows, int64_t v, int32_t ignore,
                    const float *gloss, const float *count, float *glogits);

    /* Ordered Memory's gated sum (gr_om_gate): z [r, 4d] = (g_v, g_h,
     * g_c, u), v, h [r, d] -> y = σ(g_v)⊙v + σ(g_h)⊙h + σ(g_c)⊙u [r, d].
     * bwd accumulates into gz [r, 4d], gv, gh [r, d] (each may be NULL). */
    int (*om_gate_fwd)(void *st, const float *z, const float *v,
                       const float *h, float *y, int64_t r, int64_t d);
    int (*om_gate_bwd)(void *st, const float *z, const float *v,
                       const float *h, const float *gy, float *gz, float *gv,
                       float *gh, int64_t r, int64_t d);
    /* gr_om_cell's backward through ReLU and dropout: g[i] = a[i] > 0 ?
     * g[i]·scale : 0, where a is the kept activation (ReLU output after
     * dropout, so a > 0 exactly where both let the gradient through). */
    int (*om_cell_mask)(void *st, const float *a, float *g, int64_t n,
                        float scale);
    /* gr_om_attend's pointer (ordered_memory.md eqs 3.5.10-3.5.11 and
     * 3.5.3-3.5.4), per row r of b over n slots: s the scores, bpos [b, n]
     * the index in s of each allowed slot's score (-1: masked), pprev
     * [b, n]. Writes p [b, n], cp and rcp [n, b] (transposed) and save
     * [b, 3n + 1] = (softmax over the allowed slots, mask c_{i+1} (1 at
     * n-1), scratch, the sum before the 1e-12 floor). The backward takes
     * gp [b, n], gcp and grcp [n, b] (each NULL: zero), WRITES gs[k] =
     * sscale · ∂L/∂s[k] for every k named in bpos and accumulates into
     * gpprev [b, n] (NULL: not wanted); it uses save's scratch. */
    int (*om_pointer_fwd)(void *st, const float *s, const int32_t *bpos,
                          const float *pprev, float *p, float *cp,
                          float *rcp, float *save, int64_t b, int64_t n);
    int (*om_pointer_bwd)(void *st, const int32_t *bpos, float *save,
                          const float *gp, const float *gcp,
                          const float *grcp, float *gs, float *gpprev,
                          float sscale, int64_t b, int64_t n);
    /* gr_lerp / gr_lerp_rows over rows × d: y[r] = (1 - w[r])·a[r] +
     * w[r]·b[j] with j = idx[r] (idx NULL: j = r; idx[r] < 0: y[r] = a[r]).
     * The backward accumulates into gw [rows] and into ga [rows, d] and gb
     * when bit 0 / 1 of acc is set, else writes them (then every row of gb
     * must be some idx[r]); each may be NULL. */
    int (*lerp_fwd)(void *st, const float *a, const float *b, const float *w,
                    const int32_t *idx, float *y, int64_t rows, int64_t d);
    int (*lerp_bwd)(void *st, const float *a, const float *b, const float *w,
                    const int32_t *idx, const float *gy, float *ga,
                    float *gb, float *gw, int64_t rows, int64_t d,
                    unsigned acc);

    /* act [b, 5H] receives (σ(i), σ(f), tanh(g), σ(o), tanh(c)) so that
     * the backward needs no transcendental function. */
    int (*lstm_fwd)(void *st, const float *gates, const float *c_prev,
                    float *h, float *c, float *act, int64_t b, int64_t hdim);
    /* The cell backward, in one launch with no prepared buffer:
     * dh = gh + gh_rec (each NULL: none; rnn.c passes ∂L/∂y_t and the
     * product dG_{t+1} U), dc = gc (NULL: zero) + dh·o·(1 - tanh²c),
     * ggates += the gate gradients (NULL: not wanted), and
     * gc_prev = gc_prev_in + dc·f, where gc_prev_in is NULL (zero: gc_prev
     * is overwritten), another buffer, or gc_prev itself (accumulate);
     * gc_prev NULL: not wanted. gc_prev must not overlap gh, gh_rec, gc. */
    int (*lstm_bwd)(void *st, const float *act, const float *c_prev,
                    const float *gh, const float *gh_rec, const float *gc,
                    float *ggates, const float *gc_prev_in, float *gc_prev,
                    int64_t b, int64_t hdim);
    /* save: [b, 4n] = (ĩ, f̃, softmax of ẑ_i, softmax of ẑ_f); act [b, 5H]
     * = (σ(o), tanh(ĉ), σ(i), σ(f), tanh(c)) */
    int (*onlstm_fwd)(void *st, const float *z, const float *c_prev,
                      float *h, float *c, float *df, float *di, float *save,
                      float *act, int64_t b, int64_t hdim, int64_t chunk);
    /* gh, gh_rec, gc, gz, gc_prev_in, gc_prev as in lstm_bwd (the
     * forget gate being f̂ = σ(f)·ω + (f̃ - ω)) */
    int (*onlstm_bwd)(void *st, const float *c_prev, const float *save,
                      const float *act, const float *gh, const float *gh_rec,
                      const float *gc, float *gz, const float *gc_prev_in,
                      float *gc_prev, float *scratch /* [b, 2n] */, int64_t b,
                      int64_t hdim, int64_t chunk);
    /* The element-wise linear recurrence of Faster FastTrees (kernels/
     * fasttrees.h, gr_linear_scan) over t steps of n lanes, arrays [t, n]:
     * c[s] = a[s]⊙c[s-1] + b[s], c[-1] = c0 (NULL: zeros). bwd overwrites
     * d[s] = gc[s] + a[s+1]⊙d[s+1] (d [t, n]; gc NULL: zero) and
     * accumulates ga[s] += d[s]⊙c[s-1], gb += d, gc0 += a[0]⊙d[0] (each
     * may be NULL). CPU: sequential over t, vectorised over n (scan_cpu.c);
     * CUDA: a parallel prefix scan over t (scan_cuda.cu). */
    int (*scan_fwd)(void *st, const float *a, const float *b,
                    const float *c0, float *c, int64_t t, int64_t n);
    int (*scan_bwd)(void *st, const float *a, const float *c,
                    const float *c0, const float *gc, float *d, float *ga,
                    float *gb, float *gc0, int64_t t, int64_t n);
    /* Faster FastTrees' gates as one op (gr_fft_gates, kernels/
     * fasttrees.h) over r rows of z [r, 2n+4H] (layout [ẑ_i | ẑ_f | o | ĉ |
     * i | f], n = hd / chunk): fwd overwrites a = f̂ (the scan's
     * coefficient), b = î⊙tanh(ĉ) (its input), o = σ(z_o) [r, H], the
     * distances df, di [r] and save [r, 4n] = (ĩ, f̃, softmax of ẑ_i,
     * softmax of ẑ_f), as onlstm_fwd's save. bwd accumulates into gz
     * [r, 2n+4H] from ga, gb, go [r, H] (each NULL: zero), recomputing
     * σ(i), σ(f), tanh(ĉ) from z (o is fwd's output); scratch holds
     * r·2n + 3H floats. */
    int (*fft_gates_fwd)(void *st, const float *z, float *a, float *b,
                         float *o, float *df, float *di, float *save,
                         int64_t r, int64_t hd, int64_t chunk);
    int (*fft_gates_bwd)(void *st, const float *z, const float *save,
                         const float *o, const float *ga, const float *gb,
                         const float *go, float *gz, float *scratch,
                         int64_t r, int64_t hd, int64_t chunk);

    /* optimizers, element-wise over n */
    int (*sgd_step)(void *st, float *p, const float *g, float *buf, int64_t n,
                    float lr, float wd, float momentum, float dampening,
                    int nesterov, int first);
    int (*adam_step)(void *st, float *p, const float *g, float *m, float *v,
                     int64_t n, float lr, float b1, float b2, float eps,
                     float wd, int decoupled, float bc1, float bc2);
    int (*asgd_step)(void *st, float *p, const float *g, float *ax,
                     int64_t n, float eta, float lambd, float wd, float mu);
    /* *out = Σ x² (double accumulation on the host side of the result) */
    int (*sumsq)(void *st, const float *x, int64_t n, double *out);
    /* swaps two buffers element-wise */
    int (*swap)(void *st, float *a, float *b, int64_t n);
};

const struct gr_backend *gr_backend_cpu(void);
#ifdef GROVE_HAVE_CUDA_BACKEND
const struct gr_backend *gr_backend_cuda(void);
/* Creates the CUDA state (device, cuBLAS handle, stream) in *st. */
int gr_cuda_state_new(void **st, int device);
void gr_cuda_state_free(void *st);
#endif

#ifdef __cplusplus
}
#endif

#endif
