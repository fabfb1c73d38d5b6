/* Host copies of the OCN cells for acting (see agents/ppo_act.h). */
#include "agents/ppo_act.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/vec8.h"

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
 * picked at run time (core/vec8.h's GR_VEC8_CLONES; no FMA: both give the
 * same bits; an AVX-512 clone was no faster on the AMD EPYCs measured). */

/* tanh|x| = m / (m + 2) with m = expm1(2|x|) = 2^k (q + 1) − 1,
 * k = round(2|x| / ln 2), q = e^r − 1 for r = 2|x| − k ln 2 in
 * [−ln2/2, ln2/2] by its Taylor series to r^8 (truncation < 6e-9; no
 * cancellation near 0, where k = 0 and m = q). |x| is clamped at 9
 * (tanh 9 = 1 − 3e-8). libm's tanhf was a fifth of acting's time. */
GR_VEC8_CLONES void hcell_tanh(float *x, int n)
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

#ifdef GR_HAVE_VEC8
/* Blocks of R rows (1 to 6) by C columns (8 or 16; 32 for one row) held
 * in registers across the whole sum: a weight is loaded once for R rows,
 * and y is read and written once. Written out by macros, one name per
 * register: GCC keeps arrays of vectors on the stack. Six rows by 16
 * columns are 12 accumulators, a broadcast and a product: the 16
 * registers of AVX2, nearly all. */
#define ACT_INLINE static inline __attribute__((always_inline))

#define ROWS_1(X) X(0)
#define ROWS_2(X) ROWS_1(X) X(1)
#define ROWS_3(X) ROWS_2(X) X(2)
#define ROWS_4(X) ROWS_3(X) X(3)
#define ROWS_5(X) ROWS_4(X) X(4)
#define ROWS_6(X) ROWS_5(X) X(5)

#define X16_LOAD(i)                                                         \
    const float *x##i = x[i];                                               \
    gr_v8f a##i, b##i;                                                         \
    GR_LD8(a##i, y[i]);                                                        \
    GR_LD8(b##i, y[i] + 8);
#define X16_MAC(i)                                                          \
    a##i += x##i[j] * wl;                                                   \
    b##i += x##i[j] * wh;
#define X16_STORE(i)                                                        \
    GR_ST8(y[i], a##i);                                                        \
    GR_ST8(y[i] + 8, b##i);
#define X8_LOAD(i)                                                          \
    const float *x##i = x[i];                                               \
    gr_v8f a##i;                                                               \
    GR_LD8(a##i, y[i]);
#define X8_MAC(i) a##i += x##i[j] * wv;
#define X8_STORE(i) GR_ST8(y[i], a##i);

#define DEFINE_BLOCKS(R)                                                    \
    ACT_INLINE void block##R##x16(int n_in, int n_out,                      \
                                  const float *const *x, const float *wT,   \
                                  float *const *y)                          \
    {                                                                       \
        ROWS_##R(X16_LOAD) for (int j = 0; j < n_in; j++, wT += n_out)      \
        {                                                                   \
            gr_v8f wl, wh;                                                     \
            GR_LD8(wl, wT);                                                    \
            GR_LD8(wh, wT + 8);                                                \
            ROWS_##R(X16_MAC)                                               \
        }                                                                   \
        ROWS_##R(X16_STORE)                                                 \
    }                                                                       \
    ACT_INLINE void block##R##x8(int n_in, int n_out, const float *const *x, \
                                 const float *wT, float *const *y)          \
    {                                                                       \
        ROWS_##R(X8_LOAD) for (int j = 0; j < n_in; j++, wT += n_out)       \
        {                                                                   \
            gr_v8f wv;                                                         \
            GR_LD8(wv, wT);                                                    \
            ROWS_##R(X8_MAC)                                                \
        }                                                                   \
        ROWS_##R(X8_STORE)                                                  \
    }

DEFINE_BLOCKS(1)
DEFINE_BLOCKS(2)
DEFINE_BLOCKS(3)
DEFINE_BLOCKS(4)
DEFINE_BLOCKS(5)
DEFINE_BLOCKS(6)

ACT_INLINE void block1x32(int n_in, int n_out, const float *x,
                          const float *wT, float *y)
{
    gr_v8f a0, a1, a2, a3;
    GR_LD8(a0, y);
    GR_LD8(a1, y + 8);
    GR_LD8(a2, y + 16);
    GR_LD8(a3, y + 24);
    for (int j = 0; j < n_in; j++, wT += n_out) {
        gr_v8f w0, w1, w2, w3;
        GR_LD8(w0, wT);
        GR_LD8(w1, wT + 8);
        GR_LD8(w2, wT + 16);
        GR_LD8(w3, wT + 24);
        a0 += x[j] * w0;
        a1 += x[j] * w1;
        a2 += x[j] * w2;
        a3 += x[j] * w3;
    }
    GR_ST8(y, a0);
    GR_ST8(y + 8, a1);
    GR_ST8(y + 16, a2);
    GR_ST8(y + 24, a3);
}

/* R rows (1 to 6) of columns [0, n_out) as far as multiples of eight go:
 * the column of the first column past them is returned. */
ACT_INLINE int row_block(int R, int n_in, int n_out, const float *x,
                         int ldx, const float *wT, float *y, int ldy)
{
    const float *xs[6];
    float *ys[6];
    for (int i = 0; i < R; i++) {
        xs[i] = x + (size_t)i * ldx;
    }
    int o = 0;
    if (R == 1) {
        for (; o + 32 <= n_out; o += 32) {
            block1x32(n_in, n_out, x, wT + o, y + o);
        }
    }
    for (; o + 8 <= n_out; o += o + 16 <= n_out ? 16 : 8) {
        for (int i = 0; i < R; i++) {
            ys[i] = y + (size_t)i * ldy + o;
        }
        const int wide = o + 16 <= n_out;
        switch (R) {
#define ROW_CASE(n)                                                         \
    case n:                                                                 \
        if (wide) {                                                         \
            block##n##x16(n_in, n_out, xs, wT + o, ys);                     \
        } else {                                                            \
            block##n##x8(n_in, n_out, xs, wT + o, ys);                      \
        }                                                                   \
        break;
            ROW_CASE(1)
            ROW_CASE(2)
            ROW_CASE(3)
            ROW_CASE(4)
            ROW_CASE(5)
            ROW_CASE(6)
#undef ROW_CASE
        }
    }
    return o;
}
#define HAVE_BLOCKS 1
#define BLOCK_ROWS 6 /* the most rows of a block (row_block's cases) */
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

GR_VEC8_CLONES void hcell_matmul(int R, int n_in, int n_out,
                                 const float *x, int ldx, const float *wT,
                                 float *y, int ldy)
{
    int r = 0;
#ifdef HAVE_BLOCKS
    /* blocks of up to BLOCK_ROWS rows, the rows split evenly between
     * them (7 rows as 4 + 3, not 6 + 1: a block of one row reads every
     * weight for one row's products) */
    while (r < R) {
        int left = R - r;
        int blocks = (left + BLOCK_ROWS - 1) / BLOCK_ROWS;
        int n = (left + blocks - 1) / blocks;
        int o = row_block(n, n_in, n_out, x + (size_t)r * ldx, ldx, wT,
                          y + (size_t)r * ldy, ldy);
        columns_tail(n, n_in, n_out, o, x + (size_t)r * ldx, ldx, wT,
                     y + (size_t)r * ldy, ldy);
        r += n;
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

/* z += the sparse observation's entries, in their order: 64 columns at
 * a time held in registers over all the entries, the rest one column at
 * a time. */
GR_VEC8_CLONES static void layer1_sparse(const struct hcell *c, int k,
                                         const int32_t *idx,
                                         const float *val, int nz, float *z)
{
    const int w = c->w;
    const float *wk = c->wx + (size_t)k * w;
    int i0 = 0;
#ifdef HAVE_BLOCKS
    for (; i0 + 64 <= w; i0 += 64) {
        gr_sparse_axpy64(idx, val, nz, wk + i0, c->stride, c->ign_lo,
                         c->ign_hi, z + i0);
    }
#endif
    for (int j = 0; j < nz; j++) {
        int o = idx[j];
        if (o >= c->ign_lo && o < c->ign_hi) {
            continue;
        }
        const float *row = wk + (size_t)o * c->stride;
        float v = val[j];
        for (int i = i0; i < w; i++) {
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
