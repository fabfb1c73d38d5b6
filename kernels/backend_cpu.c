/* The CPU device: plain loops (the reference semantics of every op) and
 * CBLAS (OpenBLAS) for matrix products. Single-threaded loops; BLAS uses
 * its own threads. */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* madvise, MADV_HUGEPAGE */
#include <cblas.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/error.h"
#include "core/vec8.h"
#include "kernels/backend.h"
#include "kernels/dropout_cpu_internal.h"
#include "kernels/scan.h"
#include "kernels/rng.h"

void gr_cpu_set_threads(int n);
void gr_cpu_set_threads(int n)
{
    if (n > 0) {
        openblas_set_num_threads(n);
    }
}

/* ---- memory ---- */

/* Allocations of at least this many bytes (the arenas' chunks) are
 * aligned to 2 MiB and offered to transparent huge pages (madvise; the
 * kernel's setting decides): a training step streams through hundreds of
 * MiB of fresh step arena, and with 4 KiB pages most of its accesses miss
 * the TLB (an OM logic step ran 1.7x faster with them on this VM).
 * GROVE_NO_HUGEPAGES set to anything but "" or "0" turns this off. */
#define CPU_HUGE_BYTES ((size_t)8 << 20)
#define CPU_HUGE_ALIGN ((size_t)2 << 20)

static int cpu_hugepages(void)
{
    static int on = -1; /* read once */
    if (on < 0) {
        const char *e = getenv("GROVE_NO_HUGEPAGES");
        on = !(e != NULL && e[0] != '\0' && strcmp(e, "0") != 0);
    }
    return on;
}

static void *cpu_alloc(void *st, size_t bytes)
{
    (void)st;
    void *p = NULL;
    const int huge = bytes >= CPU_HUGE_BYTES && cpu_hugepages();
    if (posix_memalign(&p, huge ? CPU_HUGE_ALIGN : 256,
                       bytes ? bytes : 256) != 0) {
        gr_error(GR_ENOMEM, "out of host memory (%zu bytes)", bytes);
        return NULL;
    }
#ifdef MADV_HUGEPAGE
    if (huge) {
        /* advice only: without huge pages the memory is the same */
        (void)madvise(p, bytes / CPU_HUGE_ALIGN * CPU_HUGE_ALIGN,
                      MADV_HUGEPAGE);
    }
#endif
    return p;
}

static void cpu_free(void *st, void *p)
{
    (void)st;
    free(p);
}

static int cpu_copy(void *st, void *dst, const void *src, size_t bytes)
{
    (void)st;
    if (bytes && dst != src) {
        memmove(dst, src, bytes);
    }
    return 0;
}

static int cpu_zero(void *st, void *dst, size_t bytes)
{
    (void)st;
    memset(dst, 0, bytes);
    return 0;
}

static int cpu_sync(void *st)
{
    (void)st;
    return 0;
}

static int cpu_fill(void *st, float *x, int64_t n, float v)
{
    (void)st;
    for (int64_t i = 0; i < n; i++) {
        x[i] = v;
    }
    return 0;
}

static int cpu_scale(void *st, float *x, int64_t n, float s)
{
    (void)st;
    for (int64_t i = 0; i < n; i++) {
        x[i] *= s;
    }
    return 0;
}

/* ---- matrix products ---- */

/* A product with one row or one column as a matrix-vector product.
 * OpenBLAS's sgemm packs the whole matrix operand at every call, which at
 * batch 1 (h U^T, dG U of a recurrent step) cost more than the product
 * itself; sgemv streams the matrix once. Returns 0 where it does not
 * apply. */
static int cpu_gemv_shaped(int ta, int tb, int m, int n, int k, float alpha,
                           const float *a, int lda, const float *b, int ldb,
                           float beta, float *c, int ldc)
{
    if (k <= 0) {
        return 0;
    }
    if (m == 1) {
        /* c[n] = alpha op(B)^T x + beta c, x = the row of op(A) */
        int incx = ta ? lda : 1;
        if (tb) { /* B stored [n, k] */
            cblas_sgemv(CblasRowMajor, CblasNoTrans, n, k, alpha, b, ldb, a,
                        incx, beta, c, 1);
        } else { /* B stored [k, n] */
            cblas_sgemv(CblasRowMajor, CblasTrans, k, n, alpha, b, ldb, a,
                        incx, beta, c, 1);
        }
        return 1;
    }
    if (n == 1) {
        /* c[m] (a column, stride ldc) = alpha op(A) x + beta c */
        int incx = tb ? 1 : ldb;
        if (ta) { /* A stored [k, m] */
            cblas_sgemv(CblasRowMajor, CblasTrans, k, m, alpha, a, lda, b,
                        incx, beta, c, ldc);
        } else { /* A stored [m, k] */
            cblas_sgemv(CblasRowMajor, CblasNoTrans, m, k, alpha, a, lda, b,
                        incx, beta, c, ldc);
        }
        return 1;
    }
    return 0;
}

static int cpu_gemm(void *st, int ta, int tb, int m, int n, int k,
                    float alpha, const float *a, int lda, int64_t sa,
                    const float *b, int ldb, int64_t sb, float beta, float *c,
                    int ldc, int64_t sc, int batch)
{
    (void)st;
    for (int i = 0; i < batch; i++) {
        if (cpu_gemv_shaped(ta, tb, m, n, k, alpha, a + (int64_t)i * sa, lda,
                            b + (int64_t)i * sb, ldb, beta,
                            c + (int64_t)i * sc, ldc)) {
            continue;
        }
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                    tb ? CblasTrans : CblasNoTrans, m, n, k, alpha,
                    a + (int64_t)i * sa, lda, b + (int64_t)i * sb, ldb, beta,
                    c + (int64_t)i * sc, ldc);
    }
    return 0;
}

static int cpu_rows_set(void *st, float *y, const float *v, int64_t rows,
                        int64_t cols)
{
    (void)st;
    for (int64_t r = 0; r < rows; r++) {
        memcpy(y + r * cols, v, (size_t)cols * sizeof *y);
    }
    return 0;
}

/* ---- element-wise ---- */

/* ---- vectorised activations (the fused cells and the sigmoid and tanh
 * ops) ----
 *
 * The recurrent cells spend most of their time in exp. These evaluate
 * exp, sigmoid and tanh several lanes at a time (4, or 8 with AVX2)
 * with a Cephes-style exp: n = round(x·log2 e), r = x - n·ln 2 in two
 * parts, a degree-7 polynomial, times 2^n built in the exponent bits
 * (within ~2 ulps of expf; x clamped to [-87, 88], where the cells'
 * results are exact 0/1 anyway). The lanes (kernels/cpu_activations.inc)
 * and the scalar twins exp_s, sigmoid_s and tanh_s do the same float
 * operations in the same order, so every element gets the same bits
 * whichever code runs it. */
#define EXP_LO (-87.0f)
#define EXP_HI 88.0f
#define EXP_ROUND 12582912.0f /* 1.5·2^23: adding it rounds to integer */
#define EXP_LOG2E 1.44269504088896341f
#define EXP_LN2_HI 0.693359375f
#define EXP_LN2_LO (-2.12194440e-4f)
#define EXP_P0 1.9875691500e-4f
#define EXP_P1 1.3981999507e-3f
#define EXP_P2 8.3334519073e-3f
#define EXP_P3 4.1665795894e-2f
#define EXP_P4 1.6666665459e-1f
#define EXP_P5 5.0000001201e-1f
#define TANH_SMALL 0.4f
#define TANH_BIG 9.0f

static float exp_s(float x)
{
    x = x < EXP_LO ? EXP_LO : (x > EXP_HI ? EXP_HI : x);
    float n = (x * EXP_LOG2E + EXP_ROUND) - EXP_ROUND;
    float r = x - n * EXP_LN2_HI;
    r = r - n * EXP_LN2_LO;
    float p = EXP_P0;
    p = p * r + EXP_P1;
    p = p * r + EXP_P2;
    p = p * r + EXP_P3;
    p = p * r + EXP_P4;
    p = p * r + EXP_P5;
    p = p * (r * r) + r + 1.0f;
    int32_t e = ((int32_t)n + 127) << 23;
    float sc;
    memcpy(&sc, &e, sizeof sc);
    return p * sc;
}

static float sigmoid_s(float x)
{
    return 1.0f / (1.0f + exp_s(-x));
}

static float tanh_s(float x)
{
    float a = fabsf(x);
    if (a < TANH_SMALL) {
        float x2 = x * x;
        float p = 21844.0f / 6081075.0f;
        p = p * x2 - 1382.0f / 155925.0f;
        p = p * x2 + 62.0f / 2835.0f;
        p = p * x2 - 17.0f / 315.0f;
        p = p * x2 + 2.0f / 15.0f;
        p = p * x2 - 1.0f / 3.0f;
        return x + x * x2 * p;
    }
    a = a > TANH_BIG ? TANH_BIG : a;
    float t = 1.0f - 2.0f / (exp_s(2.0f * a) + 1.0f);
    return x < 0.0f ? -t : t;
}

/* The lanes: 4 everywhere; 8 with AVX2 on x86-64, chosen at run time. */
#define ACT_W 4
#define ACT_ATTR
#include "kernels/cpu_activations.inc"
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define GR_CPU_AVX2 1
#define ACT_W 8
#define ACT_ATTR __attribute__((target("avx2")))
#include "kernels/cpu_activations.inc"
#endif

static int have_avx2(void)
{
#if defined(GR_CPU_AVX2)
    static int known = -1; /* a benign race: every thread computes 0 or 1 */
    if (known < 0) {
        __builtin_cpu_init();
        known = __builtin_cpu_supports("avx2") ? 1 : 0;
    }
    return known;
#else
    return 0;
#endif
}

/* y[i] = σ(x[i]) for i < n (y may be x). */
static void sigmoid_n(const float *x, float *y, int64_t n)
{
    int64_t i = 0;
#if defined(GR_CPU_AVX2)
    if (have_avx2()) {
        i = sigmoid_lanes8(x, y, n);
    }
#endif
    i += sigmoid_lanes4(x + i, y + i, n - i);
    for (; i < n; i++) {
        y[i] = sigmoid_s(x[i]);
    }
}

/* y[i] = tanh(x[i]) for i < n (y may be x). */
static void tanh_n(const float *x, float *y, int64_t n)
{
    int64_t i = 0;
#if defined(GR_CPU_AVX2)
    if (have_avx2()) {
        i = tanh_lanes8(x, y, n);
    }
#endif
    i += tanh_lanes4(x + i, y + i, n - i);
    for (; i < n; i++) {
        y[i] = tanh_s(x[i]);
    }
}

/* The element-wise ops below switch on the op once per call (or once per
 * innermost run) and then run a plain loop the compiler vectorises: a
 * switch inside the loop kept every element scalar, and these generic ops
 * are most of the element-wise time of the OCN's update. sigmoid and tanh
 * use the vectorised activations above. */
#define EACH(n, body)                                                        \
    for (int64_t i = 0; i < (n); i++) {                                      \
        body;                                                                \
    }

static int cpu_unary_fwd(void *st, int op, const float *x, float *y,
                         int64_t n, float a, float b)
{
    (void)st;
    switch (op) {
    case GR_U_SIGMOID: sigmoid_n(x, y, n); break;
    case GR_U_TANH: tanh_n(x, y, n); break;
    case GR_U_RELU: EACH(n, y[i] = x[i] > 0.0f ? x[i] : 0.0f) break;
    case GR_U_ELU: EACH(n, y[i] = x[i] > 0.0f ? x[i] : expm1f(x[i])) break;
    case GR_U_EXP: EACH(n, y[i] = expf(x[i])) break;
    case GR_U_LOG: EACH(n, y[i] = logf(x[i])) break;
    case GR_U_ABS: EACH(n, y[i] = fabsf(x[i])) break;
    case GR_U_SQUARE: EACH(n, y[i] = x[i] * x[i]) break;
    case GR_U_SQRT: EACH(n, y[i] = sqrtf(x[i])) break;
    case GR_U_AFFINE: EACH(n, y[i] = a * x[i] + b) break;
    case GR_U_CLAMP:
        EACH(n, y[i] = x[i] < a ? a : (x[i] > b ? b : x[i])) break;
    default: return gr_error(GR_EINVAL, "unknown unary op %d", op);
    }
    return 0;
}

static int cpu_unary_bwd(void *st, int op, const float *x, const float *y,
                         const float *gy, float *gx, int64_t n, float a,
                         float b)
{
    (void)st;
    switch (op) {
    case GR_U_SIGMOID: EACH(n, gx[i] += gy[i] * (y[i] * (1.0f - y[i]))) break;
    case GR_U_TANH: EACH(n, gx[i] += gy[i] * (1.0f - y[i] * y[i])) break;
    case GR_U_RELU:
        EACH(n, gx[i] += gy[i] * (x[i] > 0.0f ? 1.0f : 0.0f)) break;
    case GR_U_ELU:
        EACH(n, gx[i] += gy[i] * (x[i] > 0.0f ? 1.0f : y[i] + 1.0f)) break;
    case GR_U_EXP: EACH(n, gx[i] += gy[i] * y[i]) break;
    case GR_U_LOG: EACH(n, gx[i] += gy[i] * (1.0f / x[i])) break;
    case GR_U_ABS:
        EACH(n, gx[i] += gy[i] * (x[i] > 0.0f ? 1.0f
                                  : (x[i] < 0.0f ? -1.0f : 0.0f))) break;
    case GR_U_SQUARE: EACH(n, gx[i] += gy[i] * (2.0f * x[i])) break;
    case GR_U_SQRT: EACH(n, gx[i] += gy[i] * (0.5f / y[i])) break;
    case GR_U_AFFINE: EACH(n, gx[i] += gy[i] * a) break;
    case GR_U_CLAMP:
        EACH(n, gx[i] += gy[i] * ((x[i] >= a && x[i] <= b) ? 1.0f : 0.0f))
        break;
    default: return gr_error(GR_EINVAL, "unknown unary op %d", op);
    }
    return 0;
}

/* One innermost run of a broadcast binary op: n elements of a (contiguous)
 * against b with element stride bs (1: contiguous, 0: one value). EXPR
 * combines x = a[i] and z = the matching b. */
#define BIN_RUN(EXPR)                                                        \
    do {                                                                     \
        if (bs == 1) {                                                       \
            EACH(n, float x = a[i]; float z = b[i]; y[i] = (EXPR))           \
        } else if (bs == 0) {                                                \
            const float z = b[0];                                            \
            EACH(n, float x = a[i]; y[i] = (EXPR))                           \
        } else {                                                             \
            EACH(n, float x = a[i]; float z = b[i * bs]; y[i] = (EXPR))      \
        }                                                                    \
    } while (0)

static void binary_run(int op, const float *a, const float *b, int64_t bs,
                       float *y, int64_t n)
{
    switch (op) {
    case GR_B_ADD: BIN_RUN(x + z); break;
    case GR_B_SUB: BIN_RUN(x - z); break;
    case GR_B_MUL: BIN_RUN(x * z); break;
    case GR_B_DIV: BIN_RUN(x / z); break;
    case GR_B_MIN: BIN_RUN(x <= z ? x : z); break;
    default: BIN_RUN(x >= z ? x : z); break;
    }
}

static int cpu_binary_fwd(void *st, int op, const float *a, const float *b,
                          float *y, const struct gr_bcast *bc)
{
    (void)st;
    const int64_t *s = bc->shape, *bs = bc->bstride;
    int64_t i = 0;
    for (int64_t d0 = 0; d0 < s[0]; d0++) {
        for (int64_t d1 = 0; d1 < s[1]; d1++) {
            for (int64_t d2 = 0; d2 < s[2]; d2++) {
                const float *bp = b + d0 * bs[0] + d1 * bs[1] + d2 * bs[2];
                binary_run(op, a + i, bp, bs[3], y + i, s[3]);
                i += s[3];
            }
        }
    }
    return 0;
}

/* ∂/∂a of one innermost run: ga[i] += DA(g, x, z). */
#define BWD_A(DA)                                                            \
    do {                                                                     \
        if (bs == 1) {                                                       \
            EACH(n, float g = gy[i]; float x = a[i]; float z = b[i];         \
                 (void)x; (void)z; ga[i] += (DA))                            \
        } else {                                                             \
            EACH(n, float g = gy[i]; float x = a[i]; float z = b[i * bs];    \
                 (void)x; (void)z; ga[i] += (DA))                            \
        }                                                                    \
    } while (0)

/* ∂/∂b of one innermost run: gb[i·bs] += DB(g, x, z); with bs = 0 the run
 * is summed first and added once. */
#define BWD_B(DB)                                                            \
    do {                                                                     \
        if (bs == 0) {                                                       \
            const float z = b[0];                                            \
            float sum = 0.0f;                                                \
            (void)z;                                                \
            EACH(n, float g = gy[i]; float x = a[i]; (void)x; sum += (DB))   \
            gb[0] += sum;                                                    \
        } else {                                                             \
            EACH(n, float g = gy[i]; float x = a[i]; float z = b[i * bs];    \
                 (void)x; (void)z; gb[i * bs] += (DB))                       \
        }                                                                    \
    } while (0)

static void binary_bwd_run(int op, const float *a, const float *b,
                           int64_t bs, const float *gy, float *ga, float *gb,
                           int64_t n)
{
    /* ga and gb may be the same buffer (x·x): the a-part runs first, then
     * the b-part, as the element-by-element loop did per element. */
    if (ga) {
        switch (op) {
        case GR_B_ADD:
        case GR_B_SUB: BWD_A(g); break;
        case GR_B_MUL: BWD_A(g * z); break;
        case GR_B_DIV: BWD_A(g / z); break;
        case GR_B_MIN: BWD_A(x <= z ? g : 0.0f); break;
        default: BWD_A(x >= z ? g : 0.0f); break;
        }
    }
    if (gb) {
        switch (op) {
        case GR_B_ADD: BWD_B(g); break;
        case GR_B_SUB: BWD_B(-g); break;
        case GR_B_MUL: BWD_B(g * x); break;
        case GR_B_DIV: BWD_B(-g * x / (z * z)); break;
        case GR_B_MIN: BWD_B(x <= z ? 0.0f : g); break;
        default: BWD_B(x >= z ? 0.0f : g); break;
        }
    }
}

static int cpu_binary_bwd(void *st, int op, const float *a, const float *b,
                          const float *gy, float *ga, float *gb,
                          const struct gr_bcast *bc)
{
    (void)st;
    const int64_t *s = bc->shape, *bs = bc->bstride;
    int64_t i = 0;
    for (int64_t d0 = 0; d0 < s[0]; d0++) {
        for (int64_t d1 = 0; d1 < s[1]; d1++) {
            for (int64_t d2 = 0; d2 < s[2]; d2++) {
                int64_t bo = d0 * bs[0] + d1 * bs[1] + d2 * bs[2];
                binary_bwd_run(op, a + i, b + bo, bs[3], gy + i,
                               ga ? ga + i : NULL, gb ? gb + bo : NULL, s[3]);
                i += s[3];
            }
        }
    }
    return 0;
}

/* ---- last-dimension ops ---- */

/* Offset into a broadcast operand of row r (rows are the last dim). */
static int64_t bcast_row_offset(const struct gr_bcast *bc, int64_t r)
{
    int64_t i2 = r % bc->shape[2];
    int64_t q = r / bc->shape[2];
    int64_t i1 = q % bc->shape[1];
    int64_t i0 = q / bc->shape[1];
    return i0 * bc->bstride[0] + i1 * bc->bstride[1] + i2 * bc->bstride[2];
}

static int cpu_softmax_fwd(void *st, const float *x, const float *mask,
                           const struct gr_bcast *mbc, float *y, int64_t rows,
                           int64_t cols, int is_log)
{
    (void)st;
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        const float *mr = mask ? mask + bcast_row_offset(mbc, r) : NULL;
        int64_t ms = mask ? mbc->bstride[3] : 0;
        float m = -INFINITY;
        for (int64_t c = 0; c < cols; c++) {
            float v = xr[c] + (mr ? mr[c * ms] : 0.0f);
            yr[c] = v;
            if (v > m) {
                m = v;
            }
        }
        if (m == -INFINITY) {
            for (int64_t c = 0; c < cols; c++) {
                yr[c] = is_log ? -INFINITY : 0.0f;
            }
            continue;
        }
        double sum = 0.0;
        for (int64_t c = 0; c < cols; c++) {
            sum += (double)expf(yr[c] - m);
        }
        if (is_log) {
            float ls = (float)log(sum);
            for (int64_t c = 0; c < cols; c++) {
                yr[c] = yr[c] - m - ls;
            }
        } else {
            float inv = (float)(1.0 / sum);
            for (int64_t c = 0; c < cols; c++) {
                yr[c] = expf(yr[c] - m) * inv;
            }
        }
    }
    return 0;
}

static int cpu_softmax_bwd(void *st, const float *y, const float *gy,
                           float *gx, int64_t rows, int64_t cols, int is_log)
{
    (void)st;
    for (int64_t r = 0; r < rows; r++) {
        const float *yr = y + r * cols, *gr = gy + r * cols;
        float *gxr = gx + r * cols;
        double dot = 0.0;
        if (is_log) {
            for (int64_t c = 0; c < cols; c++) {
                if (yr[c] != -INFINITY) {
                    dot += gr[c];
                }
            }
            for (int64_t c = 0; c < cols; c++) {
                if (yr[c] != -INFINITY) {
                    gxr[c] += gr[c] - expf(yr[c]) * (float)dot;
                }
            }
        } else {
            for (int64_t c = 0; c < cols; c++) {
                dot += (double)gr[c] * yr[c];
            }
            for (int64_t c = 0; c < cols; c++) {
                gxr[c] += yr[c] * (gr[c] - (float)dot);
            }
        }
    }
    return 0;
}

static int cpu_cumsum_fwd(void *st, const float *x, float *y, int64_t rows,
                          int64_t cols)
{
    (void)st;
    for (int64_t r = 0; r < rows; r++) {
        float s = 0.0f;
        for (int64_t c = 0; c < cols; c++) {
            s += x[r * cols + c];
            y[r * cols + c] = s;
        }
    }
    return 0;
}

static int cpu_cumsum_bwd(void *st, const float *gy, float *gx, int64_t rows,
                          int64_t cols)
{
    (void)st;
    for (int64_t r = 0; r < rows; r++) {
        float s = 0.0f;
        for (int64_t c = cols - 1; c >= 0; c--) {
            s += gy[r * cols + c];
            gx[r * cols + c] += s;
        }
    }
    return 0;
}

/* softmax of one row of n into p, then y = cumsum(p) (f32, as torch). */
static void cumax_row(const float *x, float *p, float *y, int64_t n)
{
    float m = -INFINITY;
    for (int64_t k = 0; k < n; k++) {
        if (x[k] > m) {
            m = x[k];
        }
    }
    float sum = 0.0f;
    for (int64_t k = 0; k < n; k++) {
        p[k] = expf(x[k] - m);
        sum += p[k];
    }
    float run = 0.0f;
    for (int64_t k = 0; k < n; k++) {
        p[k] /= sum;
        run += p[k];
        y[k] = run;
    }
}

/* g is the upstream gradient of cumsum(p); gx += p (r - Σ p r), r the
 * reverse cumulative sum of g (on_lstm.md §2). Two reverse passes give
 * the same r twice, so no buffer is needed. */
static void cumax_row_bwd(const float *p, const float *g, float *gx,
                          int64_t n)
{
    float s = 0.0f, dot = 0.0f;
    for (int64_t k = n - 1; k >= 0; k--) {
        s += g[k];
        dot += p[k] * s;
    }
    s = 0.0f;
    for (int64_t k = n - 1; k >= 0; k--) {
        s += g[k];
        gx[k] += p[k] * (s - dot);
    }
}

static int cpu_cumax_fwd(void *st, const float *x, float *y, float *p,
                         int64_t rows, int64_t cols)
{
    (void)st;
    for (int64_t r = 0; r < rows; r++) {
        cumax_row(x + r * cols, p + r * cols, y + r * cols, cols);
    }
    return 0;
}

static int cpu_cumax_bwd(void *st, const float *p, const float *gy, float *gx,
                         int64_t rows, int64_t cols)
{
    (void)st;
    for (int64_t r = 0; r < rows; r++) {
        cumax_row_bwd(p + r * cols, gy + r * cols, gx + r * cols, cols);
    }
    return 0;
}

static int cpu_layernorm_fwd(void *st, const float *x, const float *gamma,
                             const float *beta, float *y, float *mean,
                             float *rstd, int64_t rows, int64_t cols,
                             float eps)
{
    (void)st;
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        double s = 0.0;
        for (int64_t c = 0; c < cols; c++) {
            s += xr[c];
        }
        double mu = s / (double)cols, v = 0.0;
        for (int64_t c = 0; c < cols; c++) {
            double d = xr[c] - mu;
            v += d * d;
        }
        v /= (double)cols;
        float rs = (float)(1.0 / sqrt(v + (double)eps));
        mean[r] = (float)mu;
        rstd[r] = rs;
        for (int64_t c = 0; c < cols; c++) {
            float h = (xr[c] - (float)mu) * rs;
            y[r * cols + c] = h * (gamma ? gamma[c] : 1.0f) +
                              (beta ? beta[c] : 0.0f);
        }
    }
    return 0;
}

static int cpu_layernorm_bwd(void *st, const float *x, const float *gamma,
                             const float *mean, const float *rstd,
                             const float *gy, float *gx, float *ggamma,
                             float *gbeta, int64_t rows, int64_t cols)
{
    (void)st;
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols, *gr = gy + r * cols;
        float mu = mean[r], rs = rstd[r];
        double s1 = 0.0, s2 = 0.0;
        for (int64_t c = 0; c < cols; c++) {
            float h = (xr[c] - mu) * rs;
            float dh = gr[c] * (gamma ? gamma[c] : 1.0f);
            s1 += dh;
            s2 += (double)dh * h;
            if (ggamma) {
                ggamma[c] += gr[c] * h;
            }
            if (gbeta) {
                gbeta[c] += gr[c];
            }
        }
        if (gx) {
            float m1 = (float)(s1 / (double)cols);
            float m2 = (float)(s2 / (double)cols);
            for (int64_t c = 0; c < cols; c++) {
                float h = (xr[c] - mu) * rs;
                float dh = gr[c] * (gamma ? gamma[c] : 1.0f);
                gx[r * cols + c] += rs * (dh - m1 - h * m2);
            }
        }
    }
    return 0;
}

/* ---- indexing ---- */

static int cpu_rows_gather(void *st, const float *table, const int32_t *ids,
                           float *y, int64_t n, int64_t d)
{
    (void)st;
    for (int64_t i = 0; i < n; i++) {
        memcpy(y + i * d, table + (int64_t)ids[i] * d, (size_t)d * sizeof *y);
    }
    return 0;
}

static int cpu_rows_scatter_add(void *st, const float *gy, const int32_t *ids,
                                float *gtable, int64_t n, int64_t d)
{
    (void)st;
    for (int64_t i = 0; i < n; i++) {
        float *dst = gtable + (int64_t)ids[i] * d;
        const float *src = gy + i * d;
        for (int64_t j = 0; j < d; j++) {
            dst[j] += src[j];
        }
    }
    return 0;
}

/* The sparse product's hot loops go into AVX2 and baseline clones
 * (core/vec8.h; separate multiplies and adds: both give the same bits). */
GR_VEC8_CLONES static int cpu_sparse_mm_fwd(void *st, const int32_t *idx,
                                            const float *val,
                                            const float *table, float *y,
                                            int64_t rows, int64_t nz,
                                            int64_t out)
{
    (void)st;
    for (int64_t r = 0; r < rows; r++) {
        float *yr = y + r * out;
        const int32_t *ir = idx + r * nz;
        const float *vr = val ? val + r * nz : NULL;
        int64_t o0 = 0;
        memset(yr, 0, (size_t)out * sizeof *yr);
#ifdef GR_HAVE_VEC8
        for (; o0 + 64 <= out; o0 += 64) {
            gr_sparse_axpy64(ir, vr, nz, table + o0, out, 0, 0, yr + o0);
        }
#endif
        for (int64_t j = 0; j < nz && o0 < out; j++) {
            int32_t id = ir[j];
            if (id < 0) {
                continue;
            }
            float v = vr ? vr[j] : 1.0f;
            const float *tr = table + (int64_t)id * out;
            for (int64_t o = o0; o < out; o++) {
                yr[o] += v * tr[o];
            }
        }
    }
    return 0;
}

GR_VEC8_CLONES static int cpu_sparse_mm_bwd(void *st, const int32_t *idx,
                                            const float *val,
                                            const float *table,
                                            const float *gy, float *gval,
                                            float *gtable, int64_t rows,
                                            int64_t nz, int64_t out,
                                            int64_t n_table)
{
    (void)st;
    (void)n_table;
    for (int64_t r = 0; r < rows; r++) {
        const float *gr = gy + r * out;
        for (int64_t j = 0; j < nz; j++) {
            int32_t id = idx[r * nz + j];
            if (id < 0) {
                continue;
            }
            const float *tr = table + (int64_t)id * out;
            if (gval) {
                float dot = 0.0f;
                for (int64_t o = 0; o < out; o++) {
                    dot += gr[o] * tr[o];
                }
                gval[r * nz + j] += dot;
            }
            if (gtable) {
                float v = val ? val[r * nz + j] : 1.0f;
                float *gt = gtable + (int64_t)id * out;
                for (int64_t o = 0; o < out; o++) {
                    gt[o] += v * gr[o];
                }
            }
        }
    }
    return 0;
}

static int cpu_gather_fwd(void *st, const float *x, const int32_t *idx,
                          float *y, int64_t rows, int64_t n, int64_t k)
{
    (void)st;
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t j = 0; j < k; j++) {
            y[r * k + j] = x[r * n + idx[r * k + j]];
        }
    }
    return 0;
}

static int cpu_gather_bwd(void *st, const float *gy, const int32_t *idx,
                          float *gx, int64_t rows, int64_t n, int64_t k)
{
    (void)st;
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t j = 0; j < k; j++) {
            gx[r * n + idx[r * k + j]] += gy[r * k + j];
        }
    }
    return 0;
}

/* ---- copies and reductions ---- */

static int cpu_copy2d(void *st, float *dst, int64_t dld, const float *src,
                      int64_t sld, int64_t rows, int64_t cols, int acc)
{
    (void)st;
    for (int64_t r = 0; r < rows; r++) {
        float *d = dst + r * dld;
        const float *s = src + r * sld;
        if (acc) {
            for (int64_t c = 0; c < cols; c++) {
                d[c] += s[c];
            }
        } else {
            memcpy(d, s, (size_t)cols * sizeof *d);
        }
    }
    return 0;
}

static int cpu_permute(void *st, const float *x, float *y,
                       const int64_t shape[4], const int perm[4], int acc)
{
    (void)st;
    int64_t xs[4], ys[4], st4[4];
    xs[3] = 1;
    for (int d = 2; d >= 0; d--) {
        xs[d] = xs[d + 1] * shape[d + 1];
    }
    for (int d = 0; d < 4; d++) {
        ys[d] = shape[perm[d]];
        st4[d] = xs[perm[d]];
    }
    int64_t i = 0;
    for (int64_t a = 0; a < ys[0]; a++) {
        for (int64_t b = 0; b < ys[1]; b++) {
            for (int64_t c = 0; c < ys[2]; c++) {
                const float *xp = x + a * st4[0] + b * st4[1] + c * st4[2];
                for (int64_t d = 0; d < ys[3]; d++, i++) {
                    if (acc) {
                        y[i] += xp[d * st4[3]];
                    } else {
                        y[i] = xp[d * st4[3]];
                    }
                }
            }
        }
    }
    return 0;
}

static int cpu_reduce(void *st, const float *x, float *y, int64_t outer,
                      int64_t n, int64_t inner, float scale, int acc)
{
    (void)st;
    if (inner == 1) {
        for (int64_t o = 0; o < outer; o++) {
            double s = 0.0;
            const float *xo = x + o * n;
            for (int64_t j = 0; j < n; j++) {
                s += xo[j];
            }
            float v = (float)(s * scale);
            y[o] = acc ? y[o] + v : v;
        }
        return 0;
    }
    /* Column blocks of 256 accumulated in double on the stack. */
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i0 = 0; i0 < inner; i0 += 256) {
            double acc_[256];
            int64_t w = inner - i0 < 256 ? inner - i0 : 256;
            for (int64_t i = 0; i < w; i++) {
                acc_[i] = 0.0;
            }
            for (int64_t j = 0; j < n; j++) {
                const float *xr = x + (o * n + j) * inner + i0;
                for (int64_t i = 0; i < w; i++) {
                    acc_[i] += xr[i];
                }
            }
            float *yo = y + o * inner + i0;
            for (int64_t i = 0; i < w; i++) {
                float v = (float)(acc_[i] * scale);
                yo[i] = acc ? yo[i] + v : v;
            }
        }
    }
    return 0;
}

static int cpu_expand(void *st, const float *gy, float *gx, int64_t outer,
                      int64_t n, int64_t inner, float scale)
{
    (void)st;
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t j = 0; j < n; j++) {
            float *g = gx + (o * n + j) * inner;
            const float *s = gy + o * inner;
            for (int64_t i = 0; i < inner; i++) {
                g[i] += scale * s[i];
            }
        }
    }
    return 0;
}

/* ---- dropout ---- */

static int cpu_dropout(void *st, const float *x, float *y,
                       const struct gr_bcast *mbc, uint64_t key, float p,
                       float scale, int acc)
{
    (void)st;
    const int64_t *s = mbc->shape, *bs = mbc->bstride;
    /* The trailing dimensions over which the mask is laid out like x
     * (mask index = element index + a constant) are one run of
     * consecutive mask words: gr_cpu_dropout_run draws those many at a
     * time (the same bits as gr_rng_keep). A [B, n, n, C] weight with
     * its own mask is one run; a locked [T, B, D] mask gives runs of
     * B·D. */
    int k = 4;
    int64_t run = 1;
    while (k > 0 && (s[k - 1] == 1 || bs[k - 1] == run)) {
        k--;
        run *= s[k];
    }
    if (run >= 16) {
        int64_t i = 0;
        int64_t o[3] = {0, 0, 0}; /* the outer indices d0..d(k-1) */
        int64_t lim[3] = {k > 0 ? s[0] : 1, k > 1 ? s[1] : 1,
                          k > 2 ? s[2] : 1};
        int64_t st3[3] = {k > 0 ? bs[0] : 0, k > 1 ? bs[1] : 0,
                          k > 2 ? bs[2] : 0};
        for (o[0] = 0; o[0] < lim[0]; o[0]++) {
            for (o[1] = 0; o[1] < lim[1]; o[1]++) {
                for (o[2] = 0; o[2] < lim[2]; o[2]++, i += run) {
                    int64_t m = o[0] * st3[0] + o[1] * st3[1] +
                                o[2] * st3[2];
                    gr_cpu_dropout_run(key, (uint64_t)m, run, p, scale,
                                       x + i, y + i, acc);
                }
            }
        }
        return 0;
    }
    /* Short runs (a mask broadcast along the last dimension, tiny
     * tensors): element by element, one Philox block per four
     * consecutive mask words. */
    int64_t i = 0;
    const uint32_t pkey[2] = {(uint32_t)key, (uint32_t)(key >> 32)};
    uint64_t have = UINT64_MAX;
    uint32_t words[4] = {0, 0, 0, 0};
    for (int64_t d0 = 0; d0 < s[0]; d0++) {
        for (int64_t d1 = 0; d1 < s[1]; d1++) {
            for (int64_t d2 = 0; d2 < s[2]; d2++) {
                int64_t mo = d0 * bs[0] + d1 * bs[1] + d2 * bs[2];
                for (int64_t d3 = 0; d3 < s[3]; d3++, i++) {
                    uint64_t m = (uint64_t)(mo + d3 * bs[3]);
                    if ((m >> 2) != have) {
                        have = m >> 2;
                        uint32_t ctr[4] = {(uint32_t)have,
                                           (uint32_t)(have >> 32), 0u, 0u};
                        gr_philox4x32_10(ctr, pkey, words);
                    }
                    int kept = gr_u32_to_uniform(words[m & 3u]) >= p;
                    float v = kept ? x[i] * scale : 0.0f;
                    if (acc) {
                        y[i] += v;
                    } else {
                        y[i] = v;
                    }
                }
            }
        }
    }
    return 0;
}

/* ---- cross entropy ---- */

static int cpu_xent_fwd(void *st, const float *logits, const int32_t *targets,
                        int64_t rows, int64_t v, int32_t ignore, float *loss,
                        float *count, float *lse)
{
    (void)st;
    double total = 0.0;
    int64_t valid = 0;
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = logits + r * v;
        if (targets[r] == ignore) {
            lse[r] = 0.0f;
            continue;
        }
        float m = -INFINITY;
        for (int64_t j = 0; j < v; j++) {
            if (xr[j] > m) {
                m = xr[j];
            }
        }
        double s = 0.0;
        for (int64_t j = 0; j < v; j++) {
            s += (double)expf(xr[j] - m);
        }
        float l = m + (float)log(s);
        lse[r] = l;
        total += (double)l - (double)xr[targets[r]];
        valid++;
    }
    count[0] = (float)valid;
    loss[0] = (float)(total / (double)(valid > 0 ? valid : 1));
    return 0;
}

static int cpu_xent_bwd(void *st, const float *logits, const int32_t *targets,
                        const float *lse, int64_t rows, int64_t v,
                        int32_t ignore, const float *gloss,
                        const float *count, float *glogits)
{
    (void)st;
    float g = gloss[0] / (count[0] > 0.0f ? count[0] : 1.0f);
    for (int64_t r = 0; r < rows; r++) {
        if (targets[r] == ignore) {
            continue;
        }
        const float *xr = logits + r * v;
        float *gr = glogits + r * v;
        for (int64_t j = 0; j < v; j++) {
            gr[j] += g * expf(xr[j] - lse[r]);
        }
        gr[targets[r]] -= g;
    }
    return 0;
}

/* ---- fused cells ---- */

static int cpu_lstm_fwd(void *st, const float *gates, const float *c_prev,
                        float *h, float *c, float *act, int64_t b, int64_t hd)
{
    (void)st;
    for (int64_t r = 0; r < b; r++) {
        const float *g = gates + r * 4 * hd;
        const float *cp = c_prev + r * hd;
        float *a = act + r * 5 * hd, *cr = c + r * hd, *hr = h + r * hd;
        /* act = (σ(i), σ(f), tanh(g), σ(o), tanh(c)) */
        sigmoid_n(g, a, 2 * hd);
        tanh_n(g + 2 * hd, a + 2 * hd, hd);
        sigmoid_n(g + 3 * hd, a + 3 * hd, hd);
        const float *ai = a, *af = a + hd, *ag = a + 2 * hd;
        for (int64_t u = 0; u < hd; u++) {
            cr[u] = af[u] * cp[u] + ai[u] * ag[u];
        }
        float *tc = a + 4 * hd;
        const float *ao = a + 3 * hd;
        tanh_n(cr, tc, hd);
        for (int64_t u = 0; u < hd; u++) {
            hr[u] = ao[u] * tc[u];
        }
    }
    return 0;
}

/* Whether [p, p + n) and [q, q + m) (floats) do not overlap. */
static int disjoint(const float *p, int64_t n, const float *q, int64_t m)
{
    return !p || !q || p + n <= q || q + m <= p;
}

/* Read in place of an absent (NULL) input of the LSTM cell backward, a
 * row at most this many units at a time. */
enum { LSTM_ZN = 1024 };
static const float lstm_zeros[LSTM_ZN];

/* len units of one row of the LSTM cell backward with every pointer
 * distinct and none NULL (absent inputs read lstm_zeros), so the loop
 * vectorises; a's gate blocks lie hd apart. gp (∂L/∂c_prev): gpm 0 not
 * wanted, 1 written as gpin + dc·f, 2 accumulated (gpin unused). */
static inline void lstm_bwd_row(const float *restrict a,
                                const float *restrict cp,
                                const float *restrict gh,
                                const float *restrict gr,
                                const float *restrict gc,
                                float *restrict dg,
                                const float *restrict gpin,
                                float *restrict gp, int64_t hd, int64_t len,
                                int gpm)
{
    for (int64_t u = 0; u < len; u++) {
        float i = a[u], f = a[hd + u], gg = a[2 * hd + u];
        float o = a[3 * hd + u], tc = a[4 * hd + u];
        float dh = gh[u] + gr[u];
        float dc = gc[u] + dh * o * (1.0f - tc * tc);
        dg[u] += dc * gg * i * (1.0f - i);
        dg[hd + u] += dc * cp[u] * f * (1.0f - f);
        dg[2 * hd + u] += dc * i * (1.0f - gg * gg);
        dg[3 * hd + u] += dh * tc * o * (1.0f - o);
        if (gpm == 1) {
            gp[u] = gpin[u] + dc * f;
        } else if (gpm == 2) {
            gp[u] += dc * f;
        }
    }
}

/* ---- Ordered Memory's gated sum ---- */

static int cpu_om_gate_fwd(void *st, const float *z, const float *v,
                           const float *h, float *y, int64_t r, int64_t d)
{
    (void)st;
    for (int64_t i = 0; i < r; i++) {
        const float *zr = z + i * 4 * d;
        const float *vr = v + i * d, *hr = h + i * d;
        float *yr = y + i * d;
        for (int64_t u = 0; u < d; u++) {
            yr[u] = sigmoid_s(zr[u]) * vr[u] + sigmoid_s(zr[d + u]) * hr[u] +
                    sigmoid_s(zr[2 * d + u]) * zr[3 * d + u];
        }
    }
    return 0;
}

static int cpu_om_gate_bwd(void *st, const float *z, const float *v,
                           const float *h, const float *gy, float *gz,
                           float *gv, float *gh, int64_t r, int64_t d)
{
    (void)st;
    for (int64_t i = 0; i < r; i++) {
        const float *zr = z + i * 4 * d;
        const float *vr = v + i * d, *hr = h + i * d, *g = gy + i * d;
        for (int64_t u = 0; u < d; u++) {
            float sv = sigmoid_s(zr[u]), sh = sigmoid_s(zr[d + u]);
            float sc = sigmoid_s(zr[2 * d + u]);
            float dy = g[u];
            if (gz != NULL) {
                float *dz = gz + i * 4 * d;
                dz[u] += dy * vr[u] * sv * (1.0f - sv);
                dz[d + u] += dy * hr[u] * sh * (1.0f - sh);
                dz[2 * d + u] += dy * zr[3 * d + u] * sc * (1.0f - sc);
                dz[3 * d + u] += dy * sc;
            }
            if (gv != NULL) {
                gv[i * d + u] += dy * sv;
            }
            if (gh != NULL) {
                gh[i * d + u] += dy * sh;
            }
        }
    }
    return 0;
}

static int cpu_om_cell_mask(void *st, const float *a, float *g, int64_t n,
                            float scale)
{
    (void)st;
    for (int64_t i = 0; i < n; i++) {
        g[i] = a[i] > 0.0f ? g[i] * scale : 0.0f;
    }
    return 0;
}

/* gr_om_attend's pointer, one row (see backend.h). */
static void om_pointer_row(const float *s, const int32_t *bp,
                           const float *pp, float *pr, float *cp, float *rcp,
                           float *sm, int64_t b, int64_t n)
{
    float *m = sm + n, *raw = sm + 3 * n;
    float c = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        c += pp[i];
        m[i] = c;
    }
    for (int64_t i = 0; i + 1 < n; i++) {
        m[i] = bp[i] >= 0 ? m[i + 1] : 0.0f; /* c_{i+1}, cut where masked */
    }
    m[n - 1] = 1.0f;
    float mx = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        if (bp[i] >= 0 && s[bp[i]] > mx) {
            mx = s[bp[i]];
        }
    }
    if (mx == -INFINITY) {
        for (int64_t i = 0; i < n; i++) {
            sm[i] = 0.0f;
        }
    } else {
        double sum = 0.0;
        for (int64_t i = 0; i < n; i++) {
            if (bp[i] >= 0) {
                sum += (double)expf(s[bp[i]] - mx);
            }
        }
        float inv = (float)(1.0 / sum);
        for (int64_t i = 0; i < n; i++) {
            sm[i] = bp[i] >= 0 ? expf(s[bp[i]] - mx) * inv : 0.0f;
        }
    }
    double tot = 0.0;
    for (int64_t i = 0; i < n; i++) {
        tot += sm[i] * m[i];
    }
    float t = (float)tot;
    float S = t > 1e-12f ? t : 1e-12f;
    *raw = t;
    float acc = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        pr[i] = sm[i] * m[i] / S;
        acc += pr[i];
        cp[i * b] = acc;
    }
    acc = 0.0f;
    for (int64_t i = n - 1; i >= 0; i--) {
        acc += pr[i];
        rcp[i * b] = acc;
    }
}

static int cpu_om_pointer_fwd(void *st, const float *s, const int32_t *bpos,
                              const float *pprev, float *p, float *cp,
                              float *rcp, float *save, int64_t b, int64_t n)
{
    (void)st;
    for (int64_t r = 0; r < b; r++) {
        om_pointer_row(s, bpos + r * n, pprev + r * n, p + r * n, cp + r,
                       rcp + r, save + r * (3 * n + 1), b, n);
    }
    return 0;
}

static int cpu_om_pointer_bwd(void *st, const int32_t *bpos, float *save,
                              const float *gp, const float *gcp,
                              const float *grcp, float *gs, float *gpprev,
                              float sscale, int64_t b, int64_t n)
{
    (void)st;
    for (int64_t r = 0; r < b; r++) {
        const int32_t *bp = bpos + r * n;
        const float *sm = save + r * (3 * n + 1), *m = sm + n;
        float *g = save + r * (3 * n + 1) + 2 * n;
        const float raw = sm[3 * n];
        const float S = raw > 1e-12f ? raw : 1e-12f;
        /* ∂L/∂p: p's own gradient, cp[j] for j >= i, rcp[j] for j <= i */
        float acc = 0.0f;
        for (int64_t i = n - 1; i >= 0; i--) {
            acc += gcp ? gcp[i * b + r] : 0.0f;
            g[i] = (gp ? gp[r * n + i] : 0.0f) + acc;
        }
        acc = 0.0f;
        for (int64_t i = 0; i < n; i++) {
            acc += grcp ? grcp[i * b + r] : 0.0f;
            g[i] += acc;
        }
        /* p = e / max(Σe, floor), e = softmax ⊙ mask */
        double dot = 0.0;
        for (int64_t i = 0; i < n; i++) {
            dot += (double)g[i] * (sm[i] * m[i]);
        }
        const float gsum = raw > 1e-12f ? -(float)dot / (S * S) : 0.0f;
        double dot2 = 0.0;
        for (int64_t i = 0; i < n; i++) {
            g[i] = g[i] / S + gsum; /* ∂L/∂e */
            dot2 += (double)sm[i] * (g[i] * m[i]);
        }
        for (int64_t i = 0; i < n; i++) {
            if (bp[i] >= 0) {
                gs[bp[i]] = sscale * sm[i] * (g[i] * m[i] - (float)dot2);
            }
        }
        if (gpprev != NULL) {
            /* m_i = c_{i+1} on allowed i < n-1; c = cumsum(pprev) */
            acc = 0.0f;
            for (int64_t j = n - 1; j >= 1; j--) {
                if (bp[j - 1] >= 0) {
                    acc += g[j - 1] * sm[j - 1];
                }
                gpprev[r * n + j] += acc;
            }
            gpprev[r * n] += acc;
        }
    }
    return 0;
}

static int cpu_lerp_fwd(void *st, const float *a, const float *b,
                        const float *w, const int32_t *idx, float *y,
                        int64_t rows, int64_t d)
{
    (void)st;
    for (int64_t r = 0; r < rows; r++) {
        const float *ar = a + r * d;
        float *yr = y + r * d;
        int64_t br = idx ? idx[r] : r;
        if (br < 0) {
            memcpy(yr, ar, (size_t)d * sizeof *yr);
            continue;
        }
        const float wr = w[r], om = 1.0f - wr;
        const float *bp = b + br * d;
        for (int64_t c = 0; c < d; c++) {
            float u = ar[c] * om, v = bp[c] * wr;
            yr[c] = u + v;
        }
    }
    return 0;
}

static int cpu_lerp_bwd(void *st, const float *a, const float *b,
                        const float *w, const int32_t *idx, const float *gy,
                        float *ga, float *gb, float *gw, int64_t rows,
                        int64_t d, unsigned acc)
{
    (void)st;
    const int acc_a = (acc & 1u) != 0, acc_b = (acc & 2u) != 0;
    for (int64_t r = 0; r < rows; r++) {
        int64_t br = idx ? idx[r] : r;
        const float wr = br < 0 ? 0.0f : w[r], om = 1.0f - wr;
        const float *g = gy + r * d;
        if (ga) {
            float *o = ga + r * d;
            for (int64_t c = 0; c < d; c++) {
                o[c] = (acc_a ? o[c] : 0.0f) + g[c] * om;
            }
        }
        if (br < 0) {
            continue;
        }
        if (gb) {
            float *o = gb + br * d;
            for (int64_t c = 0; c < d; c++) {
                o[c] = (acc_b ? o[c] : 0.0f) + g[c] * wr;
            }
        }
        if (gw) {
            const float *ar = a + r * d, *bp = b + br * d;
            double sum = 0.0;
            for (int64_t c = 0; c < d; c++) {
                sum += (double)g[c] * ((double)bp[c] - (double)ar[c]);
            }
            gw[r] += (float)sum;
        }
    }
    return 0;
}

static int cpu_lstm_bwd(void *st, const float *act, const float *c_prev,
                        const float *gh, const float *gh_rec, const float *gc,
                        float *ggates, const float *gc_prev_in, float *gc_prev,
                        int64_t b, int64_t hd)
{
    (void)st;
    int64_t n = b * hd;
    int acc = gc_prev && gc_prev_in == gc_prev;
    const float *gpin = acc ? NULL : gc_prev_in;
    if (ggates && disjoint(ggates, 4 * n, gc_prev, n) &&
        disjoint(ggates, 4 * n, gh, n) && disjoint(ggates, 4 * n, gh_rec, n) &&
        disjoint(ggates, 4 * n, gc, n) && disjoint(ggates, 4 * n, gpin, n) &&
        disjoint(ggates, 4 * n, act, 5 * n) &&
        disjoint(ggates, 4 * n, c_prev, n) && disjoint(gc_prev, n, gh, n) &&
        disjoint(gc_prev, n, gh_rec, n) && disjoint(gc_prev, n, gc, n) &&
        disjoint(gc_prev, n, gpin, n) && disjoint(gc_prev, n, act, 5 * n) &&
        disjoint(gc_prev, n, c_prev, n)) {
        int gpm = !gc_prev ? 0 : acc ? 2 : 1;
        for (int64_t r = 0; r < b; r++) {
            for (int64_t u0 = 0; u0 < hd; u0 += LSTM_ZN) {
                int64_t o = r * hd + u0;
                int64_t len = hd - u0 < LSTM_ZN ? hd - u0 : LSTM_ZN;
                const float *a = act + r * 5 * hd + u0;
                const float *z = lstm_zeros;
                const float *ph = gh ? gh + o : z;
                const float *pr = gh_rec ? gh_rec + o : z;
                const float *pc = gc ? gc + o : z;
                const float *pin = gpin ? gpin + o : z;
                float *dg = ggates + r * 4 * hd + u0;
                float *gp = gc_prev ? gc_prev + o : NULL;
                if (gpm == 1) {
                    lstm_bwd_row(a, c_prev + o, ph, pr, pc, dg, pin, gp, hd,
                                 len, 1);
                } else if (gpm == 2) {
                    lstm_bwd_row(a, c_prev + o, ph, pr, pc, dg, NULL, gp, hd,
                                 len, 2);
                } else {
                    lstm_bwd_row(a, c_prev + o, ph, pr, pc, dg, NULL, NULL,
                                 hd, len, 0);
                }
            }
        }
        return 0;
    }
    for (int64_t r = 0; r < b; r++) {
        const float *a = act + r * 5 * hd;
        for (int64_t u = 0; u < hd; u++) {
            int64_t k = r * hd + u;
            float i = a[u], f = a[hd + u], gg = a[2 * hd + u];
            float o = a[3 * hd + u], tc = a[4 * hd + u];
            float dh = gh ? gh[k] : 0.0f;
            if (gh_rec) {
                dh = gh ? dh + gh_rec[k] : gh_rec[k];
            }
            float dc = (gc ? gc[k] : 0.0f) + dh * o * (1.0f - tc * tc);
            if (ggates) {
                float *dg = ggates + r * 4 * hd;
                dg[u] += dc * gg * i * (1.0f - i);
                dg[hd + u] += dc * c_prev[k] * f * (1.0f - f);
                dg[2 * hd + u] += dc * i * (1.0f - gg * gg);
                dg[3 * hd + u] += dh * tc * o * (1.0f - o);
            }
            if (gc_prev) {
                gc_prev[k] = (gc_prev_in ? gc_prev_in[k] : 0.0f) + dc * f;
            }
        }
    }
    return 0;
}

static int cpu_onlstm_fwd(void *st, const float *z, const float *c_prev,
                          float *h, float *c, float *df, float *di,
                          float *save, float *act, int64_t b, int64_t hd,
                          int64_t chunk)
{
    (void)st;
    int64_t n = hd / chunk, w = 2 * n + 4 * hd;
    for (int64_t r = 0; r < b; r++) {
        const float *zr = z + r * w;
        float *sv = save + r * 4 * n;
        float *mi = sv, *mf = sv + n, *pi = sv + 2 * n, *pf = sv + 3 * n;
        float *a = act + r * 5 * hd;
        cumax_row(zr, pi, mi, n);
        cumax_row(zr + n, pf, mf, n);
        float si = 0.0f, sf = 0.0f;
        for (int64_t k = 0; k < n; k++) {
            mi[k] = 1.0f - mi[k];
            si += mi[k];
            sf += mf[k];
        }
        df[r] = 1.0f - sf / (float)n;
        di[r] = si / (float)n;
        /* act = (σ(o), tanh(ĉ), σ(i), σ(f), tanh(c)): z's o, ĉ, i, f
         * blocks are contiguous in the same order. */
        const float *zo = zr + 2 * n;
        sigmoid_n(zo, a, hd);
        tanh_n(zo + hd, a + hd, hd);
        sigmoid_n(zo + 2 * hd, a + 2 * hd, 2 * hd);
        const float *cp = c_prev + r * hd;
        float *cr = c + r * hd, *hr = h + r * hd, *tc = a + 4 * hd;
        for (int64_t k = 0; k < n; k++) {
            float om = mf[k] * mi[k], fo = mf[k] - om, io = mi[k] - om;
            for (int64_t u = k * chunk; u < (k + 1) * chunk; u++) {
                float fh = a[3 * hd + u] * om + fo;
                float ih = a[2 * hd + u] * om + io;
                cr[u] = fh * cp[u] + ih * a[hd + u];
            }
        }
        tanh_n(cr, tc, hd);
        for (int64_t u = 0; u < hd; u++) {
            hr[u] = a[u] * tc[u];
        }
    }
    return 0;
}

static int cpu_onlstm_bwd(void *st, const float *c_prev, const float *save,
                          const float *act, const float *gh,
                          const float *gh_rec, const float *gc, float *gz,
                          const float *gc_prev_in, float *gc_prev,
                          float *scratch, int64_t b, int64_t hd,
                          int64_t chunk)
{
    (void)st;
    int64_t n = hd / chunk, w = 2 * n + 4 * hd;
    for (int64_t r = 0; r < b; r++) {
        float *tmp = scratch + r * 2 * n;
        float *gmi = tmp, *gmf = tmp + n;
        const float *sv = save + r * 4 * n;
        const float *mi = sv, *mf = sv + n, *pi = sv + 2 * n, *pf = sv + 3 * n;
        const float *a = act + r * 5 * hd;
        float *gzr = gz ? gz + r * w : NULL;
        const float *cp = c_prev + r * hd;
        const float *ghr = gh ? gh + r * hd : NULL;
        const float *grr = gh_rec ? gh_rec + r * hd : NULL;
        const float *gcr = gc ? gc + r * hd : NULL;
        const float *gpin = gc_prev_in ? gc_prev_in + r * hd : NULL;
        float *gpr = gc_prev ? gc_prev + r * hd : NULL;
        /* Chunk by chunk (no division per element); the chunk sums run in
         * the same order as an element loop would. */
        for (int64_t k = 0; k < n; k++) {
            float mik = mi[k], mfk = mf[k];
            float om = mfk * mik, io = mik - om, fo = mfk - om;
            float si = 0.0f, sf = 0.0f;
            for (int64_t u = k * chunk; u < (k + 1) * chunk; u++) {
                float o = a[u], ch = a[hd + u], ig = a[2 * hd + u];
                float fg = a[3 * hd + u], tc = a[4 * hd + u];
                float ih = ig * om + io;
                float fh = fg * om + fo;
                float dh = ghr ? ghr[u] : 0.0f;
                if (grr) {
                    dh = ghr ? dh + grr[u] : grr[u];
                }
                float dc = (gcr ? gcr[u] : 0.0f) + dh * o * (1.0f - tc * tc);
                float dih = dc * ch, dfh = dc * cp[u];
                float dom = dih * (ig - 1.0f) + dfh * (fg - 1.0f);
                si += dih + dom * mfk;
                sf += dfh + dom * mik;
                if (gzr) {
                    gzr[2 * n + u] += dh * tc * o * (1.0f - o);
                    gzr[2 * n + hd + u] += dc * ih * (1.0f - ch * ch);
                    gzr[2 * n + 2 * hd + u] += dih * om * ig * (1.0f - ig);
                    gzr[2 * n + 3 * hd + u] += dfh * om * fg * (1.0f - fg);
                }
                if (gpr) {
                    gpr[u] = (gpin ? gpin[u] : 0.0f) + dc * fh;
                }
            }
            gmi[k] = si;
            gmf[k] = sf;
        }
        if (gzr) {
            /* ĩ = 1 - cumax(ẑ_i): the gradient of its cumsum is -gmi. */
            for (int64_t k = 0; k < n; k++) {
                gmi[k] = -gmi[k];
            }
            cumax_row_bwd(pi, gmi, gzr, n);
            cumax_row_bwd(pf, gmf, gzr + n, n);
        }
    }
    return 0;
}

/* Faster FastTrees' gates (backend.h, fft_gates_fwd/bwd): the ON-LSTM
 * cell's gate part without c_prev, row by row; the same activations and
 * the same order of operations as the composition of ops it replaces
 * (cumax, affine, sigmoid, tanh, mul, sub, add), so the two agree to the
 * last bits except for the chunk sums of the backward. */
static int cpu_fft_gates_fwd(void *st, const float *z, float *a, float *b,
                             float *o, float *df, float *di, float *save,
                             int64_t rows, int64_t hd, int64_t chunk)
{
    (void)st;
    int64_t n = hd / chunk, w = 2 * n + 4 * hd;
    for (int64_t r = 0; r < rows; r++) {
        const float *zr = z + r * w;
        float *sv = save + r * 4 * n;
        float *mi = sv, *mf = sv + n, *pi = sv + 2 * n, *pf = sv + 3 * n;
        cumax_row(zr, pi, mi, n);
        cumax_row(zr + n, pf, mf, n);
        float si = 0.0f, sf = 0.0f;
        for (int64_t k = 0; k < n; k++) {
            mi[k] = 1.0f - mi[k];
            si += mi[k];
            sf += mf[k];
        }
        df[r] = 1.0f - sf / (float)n;
        di[r] = si / (float)n;
        const float *zo = zr + 2 * n;
        float *ar = a + r * hd, *br = b + r * hd;
        sigmoid_n(zo, o + r * hd, hd);
        /* σ(i) waits in a's row (no scratch), then b = î ⊙ tanh(ĉ) */
        sigmoid_n(zo + 2 * hd, ar, hd);
        tanh_n(zo + hd, br, hd);
        for (int64_t k = 0; k < n; k++) {
            float om = mf[k] * mi[k], io = mi[k] - om;
            for (int64_t u = k * chunk; u < (k + 1) * chunk; u++) {
                br[u] = (ar[u] * om + io) * br[u];
            }
        }
        sigmoid_n(zo + 3 * hd, ar, hd);
        for (int64_t k = 0; k < n; k++) {
            float om = mf[k] * mi[k], fo = mf[k] - om;
            for (int64_t u = k * chunk; u < (k + 1) * chunk; u++) {
                ar[u] = ar[u] * om + fo;
            }
        }
    }
    return 0;
}

static int cpu_fft_gates_bwd(void *st, const float *z, const float *save,
                             const float *o, const float *ga,
                             const float *gb, const float *go, float *gz,
                             float *scratch, int64_t rows, int64_t hd,
                             int64_t chunk)
{
    (void)st;
    int64_t n = hd / chunk, w = 2 * n + 4 * hd;
    float *ch = scratch, *ig = ch + hd, *fg = ig + hd;
    float *gmi = fg + hd, *gmf = gmi + n;
    for (int64_t r = 0; r < rows; r++) {
        const float *zr = z + r * w, *zo = zr + 2 * n;
        const float *sv = save + r * 4 * n;
        const float *mi = sv, *mf = sv + n, *pi = sv + 2 * n, *pf = sv + 3 * n;
        float *gzr = gz + r * w;
        if (go) {
            const float *orr = o + r * hd, *gor = go + r * hd;
            for (int64_t u = 0; u < hd; u++) {
                gzr[2 * n + u] += gor[u] * orr[u] * (1.0f - orr[u]);
            }
        }
        if (!ga && !gb) {
            continue;
        }
        const float *gar = ga ? ga + r * hd : NULL;
        const float *gbr = gb ? gb + r * hd : NULL;
        tanh_n(zo + hd, ch, hd);
        sigmoid_n(zo + 2 * hd, ig, 2 * hd); /* σ(i), σ(f): contiguous */
        for (int64_t k = 0; k < n; k++) {
            float mik = mi[k], mfk = mf[k];
            float om = mfk * mik, io = mik - om;
            float si = 0.0f, sf = 0.0f;
            for (int64_t u = k * chunk; u < (k + 1) * chunk; u++) {
                float ih = ig[u] * om + io;
                float dfh = gar ? gar[u] : 0.0f;
                float g = gbr ? gbr[u] : 0.0f;
                float dih = g * ch[u], dch = g * ih;
                float dom = dih * (ig[u] - 1.0f) + dfh * (fg[u] - 1.0f);
                si += dih + dom * mfk;
                sf += dfh + dom * mik;
                gzr[2 * n + hd + u] += dch * (1.0f - ch[u] * ch[u]);
                gzr[2 * n + 2 * hd + u] += dih * om * ig[u] * (1.0f - ig[u]);
                gzr[2 * n + 3 * hd + u] += dfh * om * fg[u] * (1.0f - fg[u]);
            }
            gmi[k] = -si; /* ĩ = 1 - cumax(ẑ_i) */
            gmf[k] = sf;
        }
        cumax_row_bwd(pi, gmi, gzr, n);
        cumax_row_bwd(pf, gmf, gzr + n, n);
    }
    return 0;
}

/* ---- optimizers ---- */

static int cpu_sgd_step(void *st, float *p, const float *g, float *buf,
                        int64_t n, float lr, float wd, float momentum,
                        float dampening, int nesterov, int first)
{
    (void)st;
    for (int64_t i = 0; i < n; i++) {
        float d = g[i];
        if (wd != 0.0f) {
            d += wd * p[i];
        }
        if (momentum != 0.0f) {
            float bv = first ? d : momentum * buf[i] + (1.0f - dampening) * d;
            buf[i] = bv;
            d = nesterov ? d + momentum * bv : bv;
        }
        p[i] -= lr * d;
    }
    return 0;
}

static int cpu_adam_step(void *st, float *p, const float *g, float *m,
                         float *v, int64_t n, float lr, float b1, float b2,
                         float eps, float wd, int decoupled, float bc1,
                         float bc2)
{
    (void)st;
    float step_size = lr / bc1;
    float bc2s = sqrtf(bc2);
    /* The same float operations in the same order in both loops. */
    float keep = 1.0f - lr * wd, c1 = 1.0f - b1, c2 = 1.0f - b2;
    int l2 = !decoupled && wd != 0.0f;
    int64_t i = 0;
#if defined(__SSE2__)
    const __m128 vkeep = _mm_set1_ps(keep), vwd = _mm_set1_ps(wd);
    const __m128 vc1 = _mm_set1_ps(c1), vc2 = _mm_set1_ps(c2);
    const __m128 vb2 = _mm_set1_ps(b2), vbc2s = _mm_set1_ps(bc2s);
    const __m128 veps = _mm_set1_ps(eps), vss = _mm_set1_ps(step_size);
    for (; i + 4 <= n; i += 4) {
        __m128 pv = _mm_loadu_ps(p + i), d = _mm_loadu_ps(g + i);
        if (decoupled) {
            pv = _mm_mul_ps(pv, vkeep);
        } else if (l2) {
            d = _mm_add_ps(d, _mm_mul_ps(vwd, pv));
        }
        __m128 mv = _mm_loadu_ps(m + i), vv = _mm_loadu_ps(v + i);
        mv = _mm_add_ps(mv, _mm_mul_ps(vc1, _mm_sub_ps(d, mv)));
        vv = _mm_add_ps(_mm_mul_ps(vb2, vv),
                        _mm_mul_ps(_mm_mul_ps(vc2, d), d));
        __m128 den = _mm_add_ps(_mm_div_ps(_mm_sqrt_ps(vv), vbc2s), veps);
        pv = _mm_sub_ps(pv, _mm_mul_ps(vss, _mm_div_ps(mv, den)));
        _mm_storeu_ps(m + i, mv);
        _mm_storeu_ps(v + i, vv);
        _mm_storeu_ps(p + i, pv);
    }
#endif
    for (; i < n; i++) {
        float d = g[i];
        if (decoupled) {
            p[i] *= keep;
        } else if (l2) {
            d += wd * p[i];
        }
        m[i] += c1 * (d - m[i]);
        v[i] = b2 * v[i] + c2 * d * d;
        float den = sqrtf(v[i]) / bc2s + eps;
        p[i] -= step_size * (m[i] / den);
    }
    return 0;
}

static int cpu_asgd_step(void *st, float *p, const float *g, float *ax,
                         int64_t n, float eta, float lambd, float wd, float mu)
{
    (void)st;
    for (int64_t i = 0; i < n; i++) {
        float d = g[i];
        if (wd != 0.0f) {
            d += wd * p[i];
        }
        p[i] *= 1.0f - lambd * eta;
        p[i] -= eta * d;
        if (mu != 1.0f) {
            ax[i] += (p[i] - ax[i]) * mu;
        } else {
            ax[i] = p[i];
        }
    }
    return 0;
}

static int cpu_sumsq(void *st, const float *x, int64_t n, double *out)
{
    (void)st;
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) {
        s += (double)x[i] * x[i];
    }
    *out = s;
    return 0;
}

static int cpu_swap(void *st, float *a, float *b, int64_t n)
{
    (void)st;
    for (int64_t i = 0; i < n; i++) {
        float t = a[i];
        a[i] = b[i];
        b[i] = t;
    }
    return 0;
}

static const struct gr_backend cpu_backend = {
    .name = "cpu",
    .alloc = cpu_alloc,
    .free = cpu_free,
    .h2d = cpu_copy,
    .d2h = cpu_copy,
    .d2d = cpu_copy,
    .zero = cpu_zero,
    .sync = cpu_sync,
    .fill = cpu_fill,
    .scale = cpu_scale,
    .gemm = cpu_gemm,
    .rows_set = cpu_rows_set,
    .unary_fwd = cpu_unary_fwd,
    .unary_bwd = cpu_unary_bwd,
    .binary_fwd = cpu_binary_fwd,
    .binary_bwd = cpu_binary_bwd,
    .softmax_fwd = cpu_softmax_fwd,
    .softmax_bwd = cpu_softmax_bwd,
    .cumsum_fwd = cpu_cumsum_fwd,
    .cumsum_bwd = cpu_cumsum_bwd,
    .cumax_fwd = cpu_cumax_fwd,
    .cumax_bwd = cpu_cumax_bwd,
    .layernorm_fwd = cpu_layernorm_fwd,
    .layernorm_bwd = cpu_layernorm_bwd,
    .rows_gather = cpu_rows_gather,
    .rows_scatter_add = cpu_rows_scatter_add,
    .sparse_mm_fwd = cpu_sparse_mm_fwd,
    .sparse_mm_bwd = cpu_sparse_mm_bwd,
    .gather_fwd = cpu_gather_fwd,
    .gather_bwd = cpu_gather_bwd,
    .copy2d = cpu_copy2d,
    .permute = cpu_permute,
    .reduce = cpu_reduce,
    .expand = cpu_expand,
    .dropout = cpu_dropout,
    .xent_fwd = cpu_xent_fwd,
    .xent_bwd = cpu_xent_bwd,
    .om_gate_fwd = cpu_om_gate_fwd,
    .om_gate_bwd = cpu_om_gate_bwd,
    .om_cell_mask = cpu_om_cell_mask,
    .om_pointer_fwd = cpu_om_pointer_fwd,
    .om_pointer_bwd = cpu_om_pointer_bwd,
    .lerp_fwd = cpu_lerp_fwd,
    .lerp_bwd = cpu_lerp_bwd,
    .lstm_fwd = cpu_lstm_fwd,
    .lstm_bwd = cpu_lstm_bwd,
    .onlstm_fwd = cpu_onlstm_fwd,
    .onlstm_bwd = cpu_onlstm_bwd,
    .scan_fwd = gr_cpu_scan_fwd,
    .scan_bwd = gr_cpu_scan_bwd,
    .fft_gates_fwd = cpu_fft_gates_fwd,
    .fft_gates_bwd = cpu_fft_gates_bwd,
    .sgd_step = cpu_sgd_step,
    .adam_step = cpu_adam_step,
    .asgd_step = cpu_asgd_step,
    .sumsq = cpu_sumsq,
    .swap = cpu_swap,
};

const struct gr_backend *gr_backend_cpu(void) { return &cpu_backend; }
