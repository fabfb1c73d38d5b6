/* Host copies of the OCN cells for acting (see agents/ppo_act.h). */
#include "agents/ppo_act.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

void hcell_free(struct hcell *c)
{
    free(c->wx);
    free(c->whT);
    free(c->b1);
    free(c->w2T);
    free(c->b2);
    free(c->woT);
    free(c->bo);
    free(c->h_init);
    memset(c, 0, sizeof *c);
}

int hcell_alloc(struct hcell *c, int n, int O, int w, int d, int nh,
                int stride)
{
    memset(c, 0, sizeof *c);
    c->n = n;
    c->O = O;
    c->w = w;
    c->d = d;
    c->nh = nh;
    c->stride = stride;
    c->ldo = (nh + 7) / 8 * 8;
    size_t N = (size_t)n, W = (size_t)w;
    c->wx = malloc((size_t)O * (size_t)stride * sizeof(float));
    c->whT = malloc(N * (size_t)d * W * sizeof(float));
    c->b1 = malloc(N * W * sizeof(float));
    c->w2T = malloc(N * W * W * sizeof(float));
    c->b2 = malloc(N * W * sizeof(float));
    c->woT = calloc(N * W * (size_t)c->ldo, sizeof(float));
    c->bo = calloc(N * (size_t)c->ldo, sizeof(float));
    c->h_init = calloc((size_t)d, sizeof(float));
    if (!c->wx || !c->whT || !c->b1 || !c->w2T || !c->b2 || !c->woT ||
        !c->bo || !c->h_init) {
        hcell_free(c);
        return gr_error(GR_ENOMEM, "PPO: out of memory for host weights");
    }
    return 0;
}

/* rows of n floats at stride n moved to stride ld (>= n), zero-padded,
 * from the last row back so the move is in place */
static void restride(float *a, size_t rows, int n, int ld)
{
    for (size_t q = rows; q-- > 0;) {
        memmove(a + q * ld, a + q * n, (size_t)n * sizeof *a);
        memset(a + q * ld + n, 0, (size_t)(ld - n) * sizeof *a);
    }
}

void hcell_pad_heads(struct hcell *c)
{
    restride(c->woT, (size_t)c->n * c->w, c->nh, c->ldo);
    restride(c->bo, (size_t)c->n, c->nh, c->ldo);
}

void hcell_transpose(float *out, const float *in, int n, int rows, int cols)
{
    for (int k = 0; k < n; k++) {
        const float *a = in + (size_t)k * rows * cols;
        float *b = out + (size_t)k * rows * cols;
        for (int i = 0; i < rows; i++) {
            for (int j = 0; j < cols; j++) {
                b[(size_t)j * rows + i] = a[(size_t)i * cols + j];
            }
        }
    }
}

/* The hot loops are compiled twice, for AVX2 and the baseline, and
 * picked at run time (no FMA: both give the same bits; an AVX-512 clone
 * was no faster on this AMD EPYC, the weights' traffic bounds it). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_ADDRESS__)
#define ACT_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define ACT_CLONES
#endif

/* tanh|x| = m / (m + 2) with m = expm1(2|x|) = 2^k (q + 1) − 1,
 * k = round(2|x| / ln 2), q = e^r − 1 for r = 2|x| − k ln 2 in
 * [−ln2/2, ln2/2] by its Taylor series to r^8 (truncation < 6e-9; no
 * cancellation near 0, where k = 0 and m = q). |x| is clamped at 9
 * (tanh 9 = 1 − 3e-8). libm's tanhf was a fifth of acting's time. */
ACT_CLONES void hcell_tanh(float *x, int n)
{
    for (int i = 0; i < n; i++) {
        float v = x[i];
        float a = fabsf(v);
        uint32_t ab; /* min(a, 9) on the bits: a float compare would keep
                        the loop from vectorising (it may trap) */
        memcpy(&ab, &a, sizeof ab);
        ab = ab < 0x41100000u ? ab : 0x41100000u;
        memcpy(&a, &ab, sizeof a);
        float y = 2.0f * a;
        int k = (int)(y * 1.44269504f + 0.5f);
        float r = (y - (float)k * 0.693145752f) - (float)k * 1.42860677e-6f;
        float q = r * (1.0f + r * (0.5f + r * (1.66666667e-1f +
                  r * (4.16666667e-2f + r * (8.33333333e-3f +
                  r * (1.38888889e-3f + r * (1.98412698e-4f +
                  r * 2.48015873e-5f)))))));
        int32_t bits = (k + 127) << 23;
        float p2;
        memcpy(&p2, &bits, sizeof p2);
        float m = p2 * q + (p2 - 1.0f);
        x[i] = copysignf(m / (m + 2.0f), v);
    }
}

#if defined(__GNUC__)
/* Eight floats: one AVX2 register, two SSE ones in the baseline clone
 * (wider vectors went through the stack in the AVX2 clone). */
typedef float v8f __attribute__((vector_size(32)));

/* Loads and stores by memcpy (unaligned; macros, since a function taking
 * or returning a vector type changes the ABI between the clones). */
#define LD8(v, p) memcpy(&(v), (p), sizeof(v8f))
#define ST8(p, v) memcpy((p), &(v), sizeof(v8f))


/* Blocks of R rows (1 or 4) by C columns (8, 16 or 32) held in registers
 * across the whole sum: a weight is loaded once for R rows, and y is read
 * and written once. Written out by hand: GCC keeps arrays of vectors on
 * the stack. */
#define ACT_INLINE static inline __attribute__((always_inline))

ACT_INLINE void block4x16(int n_in, int n_out, const float *const *x,
                          const float *wT, float *const *y)
{
    const float *x0 = x[0], *x1 = x[1], *x2 = x[2], *x3 = x[3];
    v8f a0, b0, a1, b1, a2, b2, a3, b3;
    LD8(a0, y[0]);
    LD8(b0, y[0] + 8);
    LD8(a1, y[1]);
    LD8(b1, y[1] + 8);
    LD8(a2, y[2]);
    LD8(b2, y[2] + 8);
    LD8(a3, y[3]);
    LD8(b3, y[3] + 8);
    for (int j = 0; j < n_in; j++, wT += n_out) {
        v8f wl, wh;
        LD8(wl, wT);
        LD8(wh, wT + 8);
        a0 += x0[j] * wl;
        b0 += x0[j] * wh;
        a1 += x1[j] * wl;
        b1 += x1[j] * wh;
        a2 += x2[j] * wl;
        b2 += x2[j] * wh;
        a3 += x3[j] * wl;
        b3 += x3[j] * wh;
    }
    ST8(y[0], a0);
    ST8(y[0] + 8, b0);
    ST8(y[1], a1);
    ST8(y[1] + 8, b1);
    ST8(y[2], a2);
    ST8(y[2] + 8, b2);
    ST8(y[3], a3);
    ST8(y[3] + 8, b3);
}

ACT_INLINE void block4x8(int n_in, int n_out, const float *const *x,
                         const float *wT, float *const *y)
{
    const float *x0 = x[0], *x1 = x[1], *x2 = x[2], *x3 = x[3];
    v8f a0, a1, a2, a3;
    LD8(a0, y[0]);
    LD8(a1, y[1]);
    LD8(a2, y[2]);
    LD8(a3, y[3]);
    for (int j = 0; j < n_in; j++, wT += n_out) {
        v8f wv;
        LD8(wv, wT);
        a0 += x0[j] * wv;
        a1 += x1[j] * wv;
        a2 += x2[j] * wv;
        a3 += x3[j] * wv;
    }
    ST8(y[0], a0);
    ST8(y[1], a1);
    ST8(y[2], a2);
    ST8(y[3], a3);
}

ACT_INLINE void block1x32(int n_in, int n_out, const float *x,
                          const float *wT, float *y)
{
    v8f a0, a1, a2, a3;
    LD8(a0, y);
    LD8(a1, y + 8);
    LD8(a2, y + 16);
    LD8(a3, y + 24);
    for (int j = 0; j < n_in; j++, wT += n_out) {
        v8f w0, w1, w2, w3;
        LD8(w0, wT);
        LD8(w1, wT + 8);
        LD8(w2, wT + 16);
        LD8(w3, wT + 24);
        a0 += x[j] * w0;
        a1 += x[j] * w1;
        a2 += x[j] * w2;
        a3 += x[j] * w3;
    }
    ST8(y, a0);
    ST8(y + 8, a1);
    ST8(y + 16, a2);
    ST8(y + 24, a3);
}

ACT_INLINE void block1x8(int n_in, int n_out, const float *x,
                         const float *wT, float *y)
{
    v8f a0;
    LD8(a0, y);
    for (int j = 0; j < n_in; j++, wT += n_out) {
        v8f wv;
        LD8(wv, wT);
        a0 += x[j] * wv;
    }
    ST8(y, a0);
}
#define HAVE_BLOCKS 1
#endif

/* Columns [o, n_out) of R rows, one at a time (past the last multiple of
 * eight; hcell pads its heads to avoid it). */
static void columns_tail(int R, int n_in, int n_out, int o, const float *x,
                         int ldx, const float *wT, float *y, int ldy)
{
    for (; o < n_out; o++) {
        for (int r = 0; r < R; r++) {
            const float *xr = x + (size_t)r * ldx;
            float s = y[(size_t)r * ldy + o];
            for (int j = 0; j < n_in; j++) {
                s += xr[j] * wT[(size_t)j * n_out + o];
            }
            y[(size_t)r * ldy + o] = s;
        }
    }
}

ACT_CLONES void hcell_matmul(int R, int n_in, int n_out, const float *x,
                             int ldx, const float *wT, float *y, int ldy)
{
    int r = 0;
#ifdef HAVE_BLOCKS
    /* four rows at a time (padding a last two or three rows to four was
     * slower: the products cost more than reading the weights again) */
    for (; r + 4 <= R; r += 4) {
        const float *xs[4];
        for (int i = 0; i < 4; i++) {
            xs[i] = x + (size_t)(r + i) * ldx;
        }
        int o = 0;
        for (; o + 8 <= n_out; o += o + 16 <= n_out ? 16 : 8) {
            float *ys[4];
            for (int i = 0; i < 4; i++) {
                ys[i] = y + (size_t)(r + i) * ldy + o;
            }
            if (o + 16 <= n_out) {
                block4x16(n_in, n_out, xs, wT + o, ys);
            } else {
                block4x8(n_in, n_out, xs, wT + o, ys);
            }
        }
        columns_tail(4, n_in, n_out, o, x + (size_t)r * ldx, ldx, wT,
                     y + (size_t)r * ldy, ldy);
    }
    for (; r < R; r++) {
        const float *xr = x + (size_t)r * ldx;
        float *yr = y + (size_t)r * ldy;
        int o = 0;
        for (; o + 32 <= n_out; o += 32) {
            block1x32(n_in, n_out, xr, wT + o, yr + o);
        }
        for (; o + 8 <= n_out; o += 8) {
            block1x8(n_in, n_out, xr, wT + o, yr + o);
        }
        columns_tail(1, n_in, n_out, o, xr, ldx, wT, yr, ldy);
    }
#endif
    columns_tail(R - r, n_in, n_out, 0, x + (size_t)r * ldx, ldx, wT,
                 y + (size_t)r * ldy, ldy);
}

int hcell_scratch_init(struct hcell_scratch *s, int cap, int w, int d,
                       int nh)
{
    memset(s, 0, sizeof *s);
    size_t c4 = ((size_t)cap + 3) / 4 * 4;
    s->cap = cap;
    s->w = w;
    s->d = d;
    s->nh = nh;
    s->h = malloc(c4 * (size_t)d * sizeof(float));
    s->z = malloc(c4 * (size_t)w * sizeof(float));
    s->u = malloc(c4 * (size_t)w * sizeof(float));
    s->y = malloc(c4 * (size_t)nh * sizeof(float));
    if (!s->h || !s->z || !s->u || !s->y) {
        hcell_scratch_free(s);
        return gr_error(GR_ENOMEM, "PPO: out of memory for acting on %d "
                                   "worlds",
                        cap);
    }
    return 0;
}

void hcell_scratch_free(struct hcell_scratch *s)
{
    free(s->h);
    free(s->z);
    free(s->u);
    free(s->y);
    memset(s, 0, sizeof *s);
}

/* z += the sparse observation's entries, in their order. */
ACT_CLONES static void layer1_sparse(const struct hcell *c, int k,
                                     const int32_t *idx, const float *val,
                                     int nz, float *z)
{
    const int w = c->w;
    for (int j = 0; j < nz; j++) {
        int o = idx[j];
        if (o >= c->ign_lo && o < c->ign_hi) {
            continue;
        }
        const float *row = c->wx + (size_t)o * c->stride + (size_t)k * w;
        float v = val[j];
        for (int i = 0; i < w; i++) {
            z[i] += v * row[i];
        }
    }
}

void hcell_rows(const struct hcell *c, int k, int R,
                const int32_t *const *idx, const float *const *val,
                const int *nz, const float *const *h,
                struct hcell_scratch *s)
{
    const int w = c->w, d = c->d, nh = c->ldo;
    for (int r = 0; r < R; r++) {
        float *z = s->z + (size_t)r * w;
        memcpy(z, c->b1 + (size_t)k * w, (size_t)w * sizeof *z);
        layer1_sparse(c, k, idx[r], val[r], nz[r], z);
    }
    if (h != NULL) {
        for (int r = 0; r < R; r++) {
            memcpy(s->h + (size_t)r * d, h[r], (size_t)d * sizeof *s->h);
        }
        hcell_matmul(R, d, w, s->h, d, c->whT + (size_t)k * d * w, s->z, w);
    }
    hcell_tanh(s->z, R * w);
    for (int r = 0; r < R; r++) {
        memcpy(s->u + (size_t)r * w, c->b2 + (size_t)k * w,
               (size_t)w * sizeof *s->u);
    }
    hcell_matmul(R, w, w, s->z, w, c->w2T + (size_t)k * w * w, s->u, w);
    hcell_tanh(s->u, R * w);
    for (int r = 0; r < R; r++) {
        memcpy(s->y + (size_t)r * nh, c->bo + (size_t)k * nh,
               (size_t)nh * sizeof *s->y);
    }
    hcell_matmul(R, w, nh, s->u, w, c->woT + (size_t)k * w * nh, s->y, nh);
}
