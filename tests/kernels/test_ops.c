/* One table of op cases, run in three modes:
 *
 *   test_kernels_ops            forward vs a double-precision reference
 *                               written here (where the case has one), and
 *                               the gradient of every f32 input and
 *                               parameter vs central finite differences
 *                               (4-point stencil on a random projection of
 *                               the output, summed in double); each check is
 *                               double-checked: the same comparison must
 *                               REJECT the analytic gradient scaled by 1.01,
 *                               so a tolerance that lets 1% errors through
 *                               fails the test.
 *   test_kernels_ops --parity   CUDA vs CPU: forward and every gradient of
 *                               every case (skips with exit 77 when no GPU
 *                               is visible or CUDA is not compiled in).
 *   -o SUBSTRING                only cases whose name contains it.
 * Besides the table, both modes compare the ON-LSTM cell's distance
 * outputs df and di (not differentiated, so not in the table) with the
 * double reference (check_onlstm_distances).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/device.h"
#include "kernels/ops.h"
#include "kernels/rng.h"
#include "kernels/tape.h"
#include "kernels/tensor.h"
#include "tests/test.h"

#define MAX_IN 5

enum {
    IN_X = 'x', /* step f32 input with a gradient */
    IN_P = 'p', /* parameter */
    IN_C = 'c', /* f32 constant (no gradient) */
    IN_I = 'i', /* i32 indices in [lo, hi] */
};

struct in_spec {
    int kind;
    struct gr_shape s;
    float lo, hi;
};

struct op_case;
typedef struct gr_tensor *(*build_fn)(struct gr_ctx *, struct gr_tensor **,
                                      const struct op_case *);
/* Forward reference in double: in[k] host values, writes the output. */
typedef void (*ref_fn)(const struct op_case *, double *const *in,
                       double *out);
/* Adjusts random host inputs (keep away from kinks, plant ignores...). */
typedef void (*init_fn)(const struct op_case *, float **host);

struct op_case {
    const char *name;
    build_fn build;
    int n_in;
    struct in_spec in[MAX_IN];
    ref_fn ref;
    init_fn init;
    int ip[4];
    float fp[4];
    double tol; /* 0: default */
};

#define SH1(a) {1, {a, 1, 1, 1}}
#define SH2(a, b) {2, {a, b, 1, 1}}
#define SH3(a, b, c) {3, {a, b, c, 1}}
#define SH4(a, b, c, d) {4, {a, b, c, d}}
#define X(s) {IN_X, s, -1.0f, 1.0f}
#define P(s) {IN_P, s, -1.0f, 1.0f}
#define XR(s, lo, hi) {IN_X, s, lo, hi}
#define C(s, lo, hi) {IN_C, s, lo, hi}
#define IDX(s, lo, hi) {IN_I, s, lo, hi}

static int64_t numel_of(struct gr_shape s)
{
    int64_t n = 1;
    for (int i = 0; i < s.ndim; i++) {
        n *= s.d[i];
    }
    return n;
}

static int64_t last_dim(struct gr_shape s) { return s.ndim ? s.d[s.ndim - 1] : 1; }

/* ---- builders ---- */

static struct gr_tensor *b_matmul(struct gr_ctx *ctx, struct gr_tensor **in,
                                  const struct op_case *c)
{
    return gr_matmul(ctx, in[0], in[1], c->ip[0], c->ip[1]);
}

static struct gr_tensor *b_linear(struct gr_ctx *ctx, struct gr_tensor **in,
                                  const struct op_case *c)
{
    return gr_linear(ctx, in[0], in[1], c->n_in > 2 ? in[2] : NULL);
}

static struct gr_tensor *b_binary(struct gr_ctx *ctx, struct gr_tensor **in,
                                  const struct op_case *c)
{
    switch (c->ip[0]) {
    case 0: return gr_add(ctx, in[0], in[1]);
    case 1: return gr_sub(ctx, in[0], in[1]);
    case 2: return gr_mul(ctx, in[0], in[1]);
    case 3: return gr_div(ctx, in[0], in[1]);
    case 4: return gr_minimum(ctx, in[0], in[1]);
    default: return gr_maximum(ctx, in[0], in[1]);
    }
}

enum { U_SIG, U_TANH, U_RELU, U_ELU, U_EXP, U_LOG, U_ABS, U_SQ, U_SQRT,
       U_SCALE, U_AFFINE, U_CLAMP };

static struct gr_tensor *b_unary(struct gr_ctx *ctx, struct gr_tensor **in,
                                 const struct op_case *c)
{
    struct gr_tensor *x = in[0];
    switch (c->ip[0]) {
    case U_SIG: return gr_sigmoid(ctx, x);
    case U_TANH: return gr_tanh(ctx, x);
    case U_RELU: return gr_relu(ctx, x);
    case U_ELU: return gr_elu(ctx, x);
    case U_EXP: return gr_exp(ctx, x);
    case U_LOG: return gr_log(ctx, x);
    case U_ABS: return gr_abs(ctx, x);
    case U_SQ: return gr_square(ctx, x);
    case U_SQRT: return gr_sqrt(ctx, x);
    case U_SCALE: return gr_scale(ctx, x, c->fp[0]);
    case U_AFFINE: return gr_affine(ctx, x, c->fp[0], c->fp[1]);
    default: return gr_clamp(ctx, x, c->fp[0], c->fp[1]);
    }
}

static struct gr_tensor *b_softmax(struct gr_ctx *ctx, struct gr_tensor **in,
                                   const struct op_case *c)
{
    struct gr_tensor *m = c->n_in > 1 ? in[1] : NULL;
    return c->ip[0] ? gr_log_softmax(ctx, in[0], m) : gr_softmax(ctx, in[0], m);
}

static struct gr_tensor *b_cumsum(struct gr_ctx *ctx, struct gr_tensor **in,
                                  const struct op_case *c)
{
    (void)c;
    return gr_cumsum(ctx, in[0]);
}

static struct gr_tensor *b_cumax(struct gr_ctx *ctx, struct gr_tensor **in,
                                 const struct op_case *c)
{
    (void)c;
    return gr_cumax(ctx, in[0]);
}

static struct gr_tensor *b_layernorm(struct gr_ctx *ctx, struct gr_tensor **in,
                                     const struct op_case *c)
{
    return gr_layer_norm(ctx, in[0], c->n_in > 1 ? in[1] : NULL,
                         c->n_in > 2 ? in[2] : NULL, c->fp[0]);
}

static struct gr_tensor *b_embedding(struct gr_ctx *ctx, struct gr_tensor **in,
                                     const struct op_case *c)
{
    (void)c;
    return gr_embedding(ctx, in[0], in[1]);
}

static struct gr_tensor *b_gather(struct gr_ctx *ctx, struct gr_tensor **in,
                                  const struct op_case *c)
{
    (void)c;
    return gr_gather(ctx, in[0], in[1]);
}

static struct gr_tensor *b_sparse(struct gr_ctx *ctx, struct gr_tensor **in,
                                  const struct op_case *c)
{
    return gr_sparse_matmul(ctx, in[0], c->n_in > 2 ? in[2] : NULL, in[1]);
}

static struct gr_tensor *b_concat(struct gr_ctx *ctx, struct gr_tensor **in,
                                  const struct op_case *c)
{
    return gr_concat(ctx, c->n_in, in, c->ip[0]);
}

static struct gr_tensor *b_stack(struct gr_ctx *ctx, struct gr_tensor **in,
                                 const struct op_case *c)
{
    return gr_stack(ctx, c->n_in, in);
}

static struct gr_tensor *b_slice(struct gr_ctx *ctx, struct gr_tensor **in,
                                 const struct op_case *c)
{
    return gr_slice(ctx, in[0], c->ip[0], c->ip[1], c->ip[2]);
}

/* split into three along ip[0] (sizes ip[1], ip[2], rest), then concat in
 * reverse order: a permutation of the elements. */
static struct gr_tensor *b_split(struct gr_ctx *ctx, struct gr_tensor **in,
                                 const struct op_case *c)
{
    struct gr_tensor *x = in[0];
    int d = c->ip[0] < 0 ? c->ip[0] + x->ndim : c->ip[0];
    int64_t sizes[3] = {c->ip[1], c->ip[2], x->shape[d] - c->ip[1] - c->ip[2]};
    struct gr_tensor *parts[3];
    if (gr_split(ctx, x, c->ip[0], 3, sizes, parts) < 0) {
        return NULL;
    }
    struct gr_tensor *rev[3] = {parts[2], parts[1], parts[0]};
    return gr_concat(ctx, 3, rev, c->ip[0]);
}

static struct gr_tensor *b_transpose(struct gr_ctx *ctx, struct gr_tensor **in,
                                     const struct op_case *c)
{
    return gr_transpose(ctx, in[0], c->ip[0], c->ip[1]);
}

/* y = reshape(select(x, ip[0])) * reshape(p): views of a step tensor and of
 * a parameter, whose gradients alias their bases'. */
static struct gr_tensor *b_views(struct gr_ctx *ctx, struct gr_tensor **in,
                                 const struct op_case *c)
{
    struct gr_tensor *s = gr_select(ctx, in[0], c->ip[0]);
    struct gr_tensor *flat = gr_reshape(ctx, s, gr_shape1(s ? s->numel : 1));
    struct gr_tensor *pf = gr_reshape(ctx, in[1], gr_shape1(in[1]->numel));
    return gr_mul(ctx, flat, pf);
}

static struct gr_tensor *b_reduce(struct gr_ctx *ctx, struct gr_tensor **in,
                                  const struct op_case *c)
{
    switch (c->ip[0]) {
    case 0: return gr_sum(ctx, in[0]);
    case 1: return gr_mean(ctx, in[0]);
    case 2: return gr_sum_dim(ctx, in[0], c->ip[1]);
    default: return gr_mean_dim(ctx, in[0], c->ip[1]);
    }
}

static struct gr_rng case_rng(void) { return gr_rng_make(1234, 99); }

static struct gr_tensor *b_dropout(struct gr_ctx *ctx, struct gr_tensor **in,
                                   const struct op_case *c)
{
    switch (c->ip[0]) {
    case 0: return gr_dropout(ctx, in[0], c->fp[0], case_rng());
    case 1: return gr_locked_dropout(ctx, in[0], c->fp[0], case_rng());
    default: {
        struct gr_shape ms = gr_tensor_shape(in[0]);
        ms.d[ms.ndim - 1] = 1; /* a mask per row (embedding dropout) */
        return gr_dropout_mask(ctx, in[0], c->fp[0], case_rng(), ms,
                               GR_DROPOUT_NO_RESCALE);
    }
    }
}

static struct gr_tensor *b_xent(struct gr_ctx *ctx, struct gr_tensor **in,
                                const struct op_case *c)
{
    return gr_cross_entropy(ctx, in[0], in[1], c->ip[0]);
}

static struct gr_tensor *b_conv(struct gr_ctx *ctx, struct gr_tensor **in,
                                const struct op_case *c)
{
    return gr_conv1d_causal(ctx, in[0], in[1], c->n_in > 2 ? in[2] : NULL,
                            c->ip[0]);
}

static struct gr_tensor *b_lstm_cell(struct gr_ctx *ctx, struct gr_tensor **in,
                                     const struct op_case *c)
{
    (void)c;
    struct gr_tensor *h, *cc;
    if (gr_lstm_cell(ctx, in[0], in[1], &h, &cc) < 0) {
        return NULL;
    }
    struct gr_tensor *both[2] = {h, cc};
    return gr_concat(ctx, 2, both, 1);
}

static struct gr_tensor *b_onlstm_cell(struct gr_ctx *ctx,
                                       struct gr_tensor **in,
                                       const struct op_case *c)
{
    struct gr_tensor *h, *cc, *df, *di;
    if (gr_onlstm_cell(ctx, in[0], in[1], c->ip[0], &h, &cc, &df, &di) < 0) {
        return NULL;
    }
    struct gr_tensor *both[2] = {h, cc};
    return gr_concat(ctx, 2, both, 1);
}

/* ---- double-precision references ---- */

static double sig(double x) { return 1.0 / (1.0 + exp(-x)); }

static void r_matmul(const struct op_case *c, double *const *in, double *out)
{
    struct gr_shape sa = c->in[0].s, sb = c->in[1].s;
    int ta = c->ip[0], tb = c->ip[1];
    int na = sa.ndim, nb = sb.ndim;
    int64_t m = ta ? sa.d[na - 1] : sa.d[na - 2];
    int64_t k = ta ? sa.d[na - 2] : sa.d[na - 1];
    int64_t n = tb ? sb.d[nb - 2] : sb.d[nb - 1];
    int64_t batch = numel_of(sa) / (m * k);
    for (int64_t l = 0; l < batch; l++) {
        const double *a = in[0] + l * m * k;
        const double *b = in[1] + (nb == 2 ? 0 : l * k * n);
        for (int64_t i = 0; i < m; i++) {
            for (int64_t j = 0; j < n; j++) {
                double s = 0.0;
                for (int64_t q = 0; q < k; q++) {
                    double av = ta ? a[q * m + i] : a[i * k + q];
                    double bv = tb ? b[j * k + q] : b[q * n + j];
                    s += av * bv;
                }
                out[l * m * n + i * n + j] = s;
            }
        }
    }
}

static void r_linear(const struct op_case *c, double *const *in, double *out)
{
    int64_t inn = c->in[1].s.d[1], o = c->in[1].s.d[0];
    int64_t rows = numel_of(c->in[0].s) / inn;
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t j = 0; j < o; j++) {
            double s = c->n_in > 2 ? in[2][j] : 0.0;
            for (int64_t q = 0; q < inn; q++) {
                s += in[0][r * inn + q] * in[1][j * inn + q];
            }
            out[r * o + j] = s;
        }
    }
}

/* Index of b for output element e under right-aligned broadcasting. */
static int64_t bidx(struct gr_shape a, struct gr_shape b, int64_t e)
{
    int64_t idx = 0, stride = 1;
    for (int d = a.ndim - 1, db = b.ndim - 1; d >= 0; d--, db--) {
        int64_t coord = e % a.d[d];
        e /= a.d[d];
        if (db >= 0) {
            if (b.d[db] != 1) {
                idx += coord * stride;
            }
            stride *= b.d[db];
        }
    }
    return idx;
}

static void r_binary(const struct op_case *c, double *const *in, double *out)
{
    int64_t n = numel_of(c->in[0].s);
    for (int64_t e = 0; e < n; e++) {
        double a = in[0][e], b = in[1][bidx(c->in[0].s, c->in[1].s, e)];
        switch (c->ip[0]) {
        case 0: out[e] = a + b; break;
        case 1: out[e] = a - b; break;
        case 2: out[e] = a * b; break;
        case 3: out[e] = a / b; break;
        case 4: out[e] = a <= b ? a : b; break;
        default: out[e] = a >= b ? a : b; break;
        }
    }
}

static void r_unary(const struct op_case *c, double *const *in, double *out)
{
    int64_t n = numel_of(c->in[0].s);
    double a = c->fp[0], b = c->fp[1];
    for (int64_t e = 0; e < n; e++) {
        double x = in[0][e];
        switch (c->ip[0]) {
        case U_SIG: out[e] = sig(x); break;
        case U_TANH: out[e] = tanh(x); break;
        case U_RELU: out[e] = x > 0 ? x : 0; break;
        case U_ELU: out[e] = x > 0 ? x : expm1(x); break;
        case U_EXP: out[e] = exp(x); break;
        case U_LOG: out[e] = log(x); break;
        case U_ABS: out[e] = fabs(x); break;
        case U_SQ: out[e] = x * x; break;
        case U_SQRT: out[e] = sqrt(x); break;
        case U_SCALE: out[e] = a * x; break;
        case U_AFFINE: out[e] = a * x + b; break;
        default: out[e] = x < a ? a : (x > b ? b : x); break;
        }
    }
}

static void r_softmax(const struct op_case *c, double *const *in, double *out)
{
    struct gr_shape s = c->in[0].s;
    int64_t cols = last_dim(s), rows = numel_of(s) / cols;
    for (int64_t r = 0; r < rows; r++) {
        double m = -INFINITY;
        double *v = out + r * cols;
        for (int64_t j = 0; j < cols; j++) {
            int64_t e = r * cols + j;
            v[j] = in[0][e] +
                   (c->n_in > 1 ? in[1][bidx(s, c->in[1].s, e)] : 0.0);
            if (v[j] > m) {
                m = v[j];
            }
        }
        if (m == -INFINITY) {
            for (int64_t j = 0; j < cols; j++) {
                v[j] = c->ip[0] ? -INFINITY : 0.0;
            }
            continue;
        }
        double sum = 0.0;
        for (int64_t j = 0; j < cols; j++) {
            sum += exp(v[j] - m);
        }
        for (int64_t j = 0; j < cols; j++) {
            v[j] = c->ip[0] ? v[j] - m - log(sum) : exp(v[j] - m) / sum;
        }
    }
}

static void r_cumsum(const struct op_case *c, double *const *in, double *out)
{
    int64_t cols = last_dim(c->in[0].s), rows = numel_of(c->in[0].s) / cols;
    for (int64_t r = 0; r < rows; r++) {
        double s = 0.0;
        for (int64_t j = 0; j < cols; j++) {
            s += in[0][r * cols + j];
            out[r * cols + j] = s;
        }
    }
}

static void cumax_d(const double *x, double *y, int64_t n)
{
    double m = -INFINITY, s = 0.0, run = 0.0;
    for (int64_t k = 0; k < n; k++) {
        m = x[k] > m ? x[k] : m;
    }
    for (int64_t k = 0; k < n; k++) {
        s += exp(x[k] - m);
    }
    for (int64_t k = 0; k < n; k++) {
        run += exp(x[k] - m) / s;
        y[k] = run;
    }
}

static void r_cumax(const struct op_case *c, double *const *in, double *out)
{
    int64_t cols = last_dim(c->in[0].s), rows = numel_of(c->in[0].s) / cols;
    for (int64_t r = 0; r < rows; r++) {
        cumax_d(in[0] + r * cols, out + r * cols, cols);
    }
}

static void r_layernorm(const struct op_case *c, double *const *in,
                        double *out)
{
    int64_t cols = last_dim(c->in[0].s), rows = numel_of(c->in[0].s) / cols;
    for (int64_t r = 0; r < rows; r++) {
        const double *x = in[0] + r * cols;
        double mu = 0.0, var = 0.0;
        for (int64_t j = 0; j < cols; j++) {
            mu += x[j];
        }
        mu /= (double)cols;
        for (int64_t j = 0; j < cols; j++) {
            var += (x[j] - mu) * (x[j] - mu);
        }
        var /= (double)cols;
        for (int64_t j = 0; j < cols; j++) {
            double h = (x[j] - mu) / sqrt(var + c->fp[0]);
            out[r * cols + j] = h * (c->n_in > 1 ? in[1][j] : 1.0) +
                                (c->n_in > 2 ? in[2][j] : 0.0);
        }
    }
}

static void r_embedding(const struct op_case *c, double *const *in,
                        double *out)
{
    int64_t d = c->in[0].s.d[1], n = numel_of(c->in[1].s);
    for (int64_t i = 0; i < n; i++) {
        int64_t id = (int64_t)in[1][i];
        for (int64_t j = 0; j < d; j++) {
            out[i * d + j] = in[0][id * d + j];
        }
    }
}

static void r_gather(const struct op_case *c, double *const *in, double *out)
{
    int64_t n = last_dim(c->in[0].s), k = last_dim(c->in[1].s);
    int64_t rows = numel_of(c->in[1].s) / k;
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t j = 0; j < k; j++) {
            out[r * k + j] = in[0][r * n + (int64_t)in[1][r * k + j]];
        }
    }
}

static void r_sparse(const struct op_case *c, double *const *in, double *out)
{
    int64_t rows = c->in[0].s.d[0], nz = c->in[0].s.d[1];
    int64_t o = c->in[1].s.d[1];
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t j = 0; j < o; j++) {
            double s = 0.0;
            for (int64_t q = 0; q < nz; q++) {
                int64_t id = (int64_t)in[0][r * nz + q];
                if (id >= 0) {
                    double v = c->n_in > 2 ? in[2][r * nz + q] : 1.0;
                    s += v * in[1][id * o + j];
                }
            }
            out[r * o + j] = s;
        }
    }
}

/* General strided copy helper: outer/inner around dim d of shape s. */
static void around(struct gr_shape s, int d, int64_t *outer, int64_t *inner)
{
    *outer = 1;
    *inner = 1;
    for (int i = 0; i < d; i++) {
        *outer *= s.d[i];
    }
    for (int i = d + 1; i < s.ndim; i++) {
        *inner *= s.d[i];
    }
}

static void r_concat(const struct op_case *c, double *const *in, double *out)
{
    int d = c->ip[0] < 0 ? c->ip[0] + c->in[0].s.ndim : c->ip[0];
    int64_t outer, inner, total = 0;
    around(c->in[0].s, d, &outer, &inner);
    for (int j = 0; j < c->n_in; j++) {
        total += c->in[j].s.d[d];
    }
    int64_t off = 0;
    for (int j = 0; j < c->n_in; j++) {
        int64_t len = c->in[j].s.d[d];
        for (int64_t o = 0; o < outer; o++) {
            for (int64_t q = 0; q < len * inner; q++) {
                out[o * total * inner + off * inner + q] =
                    in[j][o * len * inner + q];
            }
        }
        off += len;
    }
}

static void r_stack(const struct op_case *c, double *const *in, double *out)
{
    int64_t n = numel_of(c->in[0].s);
    for (int j = 0; j < c->n_in; j++) {
        memcpy(out + j * n, in[j], (size_t)n * sizeof *out);
    }
}

static void r_slice(const struct op_case *c, double *const *in, double *out)
{
    struct gr_shape s = c->in[0].s;
    int d = c->ip[0] < 0 ? c->ip[0] + s.ndim : c->ip[0];
    int64_t outer, inner;
    around(s, d, &outer, &inner);
    int64_t start = c->ip[1], len = c->ip[2], size = s.d[d];
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t q = 0; q < len * inner; q++) {
            out[o * len * inner + q] = in[0][o * size * inner +
                                             start * inner + q];
        }
    }
}

static void r_split(const struct op_case *c, double *const *in, double *out)
{
    struct gr_shape s = c->in[0].s;
    int d = c->ip[0] < 0 ? c->ip[0] + s.ndim : c->ip[0];
    int64_t outer, inner, size = s.d[d];
    around(s, d, &outer, &inner);
    int64_t sz[3] = {c->ip[1], c->ip[2], size - c->ip[1] - c->ip[2]};
    int64_t st[3] = {0, sz[0], sz[0] + sz[1]};
    for (int64_t o = 0; o < outer; o++) {
        int64_t off = 0;
        for (int p = 2; p >= 0; p--) {
            for (int64_t q = 0; q < sz[p] * inner; q++) {
                out[o * size * inner + off * inner + q] =
                    in[0][o * size * inner + st[p] * inner + q];
            }
            off += sz[p];
        }
    }
}

static void r_transpose(const struct op_case *c, double *const *in,
                        double *out)
{
    struct gr_shape s = c->in[0].s;
    int nd = s.ndim;
    int d0 = c->ip[0] < 0 ? c->ip[0] + nd : c->ip[0];
    int d1 = c->ip[1] < 0 ? c->ip[1] + nd : c->ip[1];
    int64_t n = numel_of(s);
    int64_t ys[4];
    for (int i = 0; i < nd; i++) {
        ys[i] = s.d[i];
    }
    ys[d0] = s.d[d1];
    ys[d1] = s.d[d0];
    for (int64_t e = 0; e < n; e++) {
        int64_t idx[4], r = e;
        for (int i = nd - 1; i >= 0; i--) {
            idx[i] = r % ys[i];
            r /= ys[i];
        }
        int64_t t = idx[d0];
        idx[d0] = idx[d1];
        idx[d1] = t;
        int64_t xe = 0;
        for (int i = 0; i < nd; i++) {
            xe = xe * s.d[i] + idx[i];
        }
        out[e] = in[0][xe];
    }
}

static void r_views(const struct op_case *c, double *const *in, double *out)
{
    int64_t inner = numel_of(c->in[0].s) / c->in[0].s.d[0];
    for (int64_t e = 0; e < inner; e++) {
        out[e] = in[0][c->ip[0] * inner + e] * in[1][e];
    }
}

static void r_reduce(const struct op_case *c, double *const *in, double *out)
{
    struct gr_shape s = c->in[0].s;
    if (c->ip[0] < 2) {
        double t = 0.0;
        for (int64_t e = 0; e < numel_of(s); e++) {
            t += in[0][e];
        }
        out[0] = c->ip[0] ? t / (double)numel_of(s) : t;
        return;
    }
    int d = c->ip[1] < 0 ? c->ip[1] + s.ndim : c->ip[1];
    int64_t outer, inner, n = s.d[d];
    around(s, d, &outer, &inner);
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < inner; i++) {
            double t = 0.0;
            for (int64_t j = 0; j < n; j++) {
                t += in[0][(o * n + j) * inner + i];
            }
            out[o * inner + i] = c->ip[0] == 3 ? t / (double)n : t;
        }
    }
}

static void r_dropout(const struct op_case *c, double *const *in, double *out)
{
    struct gr_shape s = c->in[0].s, ms = s;
    double p = c->fp[0], scale = 1.0 / (1.0 - p);
    if (c->ip[0] == 1) {
        ms.d[0] = 1;
    } else if (c->ip[0] == 2) {
        ms.d[ms.ndim - 1] = 1;
        scale = 1.0;
    }
    uint64_t key = gr_rng_key(case_rng());
    for (int64_t e = 0; e < numel_of(s); e++) {
        int64_t m = bidx(s, ms, e);
        out[e] = gr_rng_keep(key, (uint64_t)m, (float)p) ? in[0][e] * scale
                                                           : 0.0;
    }
}

static void r_xent(const struct op_case *c, double *const *in, double *out)
{
    int64_t n = c->in[0].s.d[0], v = c->in[0].s.d[1];
    double tot = 0.0;
    int64_t cnt = 0;
    for (int64_t r = 0; r < n; r++) {
        int t = (int)in[1][r];
        if (t == c->ip[0]) {
            continue;
        }
        double m = -INFINITY, s = 0.0;
        for (int64_t j = 0; j < v; j++) {
            m = in[0][r * v + j] > m ? in[0][r * v + j] : m;
        }
        for (int64_t j = 0; j < v; j++) {
            s += exp(in[0][r * v + j] - m);
        }
        tot += m + log(s) - in[0][r * v + t];
        cnt++;
    }
    out[0] = cnt ? tot / (double)cnt : 0.0;
}

static void r_conv(const struct op_case *c, double *const *in, double *out)
{
    int64_t t = c->in[0].s.d[0], b = c->in[0].s.d[1], ci = c->in[0].s.d[2];
    int64_t co = c->in[1].s.d[0], kw = c->in[1].s.d[2];
    int dil = c->ip[0];
    for (int64_t tt = 0; tt < t; tt++) {
        for (int64_t bb = 0; bb < b; bb++) {
            for (int64_t o = 0; o < co; o++) {
                double s = c->n_in > 2 ? in[2][o] : 0.0;
                for (int64_t j = 0; j < kw; j++) {
                    int64_t src = tt - (kw - 1 - j) * dil;
                    if (src < 0) {
                        continue;
                    }
                    for (int64_t q = 0; q < ci; q++) {
                        s += in[1][(o * ci + q) * kw + j] *
                             in[0][(src * b + bb) * ci + q];
                    }
                }
                out[(tt * b + bb) * co + o] = s;
            }
        }
    }
}

static void r_lstm_cell(const struct op_case *c, double *const *in,
                        double *out)
{
    int64_t b = c->in[1].s.d[0], h = c->in[1].s.d[1];
    for (int64_t r = 0; r < b; r++) {
        const double *g = in[0] + r * 4 * h;
        for (int64_t u = 0; u < h; u++) {
            double cn = sig(g[h + u]) * in[1][r * h + u] +
                        sig(g[u]) * tanh(g[2 * h + u]);
            out[r * 2 * h + u] = sig(g[3 * h + u]) * tanh(cn);
            out[r * 2 * h + h + u] = cn;
        }
    }
}

/* The ON-LSTM cell straight from on_lstm.md §3, in double. */
static void onlstm_ref(const double *z, const double *cp, int64_t b,
                       int64_t h, int64_t chunk, double *hout, double *cout,
                       double *df, double *di)
{
    int64_t n = h / chunk, w = 2 * n + 4 * h;
    double *mi = malloc((size_t)n * sizeof *mi);
    double *mf = malloc((size_t)n * sizeof *mf);
    for (int64_t r = 0; r < b; r++) {
        const double *zr = z + r * w;
        cumax_d(zr, mi, n);
        cumax_d(zr + n, mf, n);
        double sf = 0.0, si = 0.0;
        for (int64_t k = 0; k < n; k++) {
            mi[k] = 1.0 - mi[k];
            sf += mf[k];
            si += mi[k];
        }
        if (df) {
            df[r] = 1.0 - sf / (double)n;
            di[r] = si / (double)n;
        }
        for (int64_t u = 0; u < h; u++) {
            int64_t k = u / chunk;
            double o = sig(zr[2 * n + u]), ch = tanh(zr[2 * n + h + u]);
            double ig = sig(zr[2 * n + 2 * h + u]);
            double fg = sig(zr[2 * n + 3 * h + u]);
            double om = mf[k] * mi[k];
            double fh = fg * om + (mf[k] - om), ih = ig * om + (mi[k] - om);
            double cn = fh * cp[r * h + u] + ih * ch;
            cout[r * h + u] = cn;
            hout[r * h + u] = o * tanh(cn);
        }
    }
    free(mi);
    free(mf);
}

static void r_onlstm_cell(const struct op_case *c, double *const *in,
                          double *out)
{
    int64_t b = c->in[1].s.d[0], h = c->in[1].s.d[1];
    double *hh = malloc((size_t)(2 * b * h) * sizeof *hh);
    onlstm_ref(in[0], in[1], b, h, c->ip[0], hh, hh + b * h, NULL, NULL);
    for (int64_t r = 0; r < b; r++) {
        for (int64_t u = 0; u < h; u++) {
            out[r * 2 * h + u] = hh[r * h + u];
            out[r * 2 * h + h + u] = hh[b * h + r * h + u];
        }
    }
    free(hh);
}

/* ---- input adjustments ---- */

/* Keep |x| >= 0.1 (relu, abs kinks) */
static void i_away_from_zero(const struct op_case *c, float **h)
{
    for (int64_t e = 0; e < numel_of(c->in[0].s); e++) {
        float v = h[0][e];
        h[0][e] = (v >= 0 ? 1.0f : -1.0f) * (0.1f + 0.9f * fabsf(v));
    }
}

/* Keep x away from the clamp bounds fp[0], fp[1] by 0.06. */
static void i_clamp(const struct op_case *c, float **h)
{
    for (int64_t e = 0; e < numel_of(c->in[0].s); e++) {
        float *v = &h[0][e];
        for (int k = 0; k < 2; k++) {
            if (fabsf(*v - c->fp[k]) < 0.06f) {
                *v = c->fp[k] + (*v >= c->fp[k] ? 0.06f : -0.06f);
            }
        }
    }
}

/* min/max: b = a + ±U(0.1, 0.5) where b has a's shape, so no ties. */
static void i_minmax(const struct op_case *c, float **h)
{
    for (int64_t e = 0; e < numel_of(c->in[1].s); e++) {
        float d = h[1][e];
        h[1][e] = h[0][e] + (d >= 0 ? 1.0f : -1.0f) * (0.1f + 0.4f * fabsf(d));
    }
}

/* Cross entropy: every third target is the ignore index. */
static void i_xent(const struct op_case *c, float **h)
{
    for (int64_t r = 0; r < c->in[1].s.d[0]; r += 3) {
        h[1][r] = (float)c->ip[0];
    }
}

/* ---- the table ---- */

/* (shapes are written inline: a macro argument holding braces cannot be
 * passed on to another macro) */
#define MM(nm, sa, sb, ta, tb)                                               \
    {nm, b_matmul, 2, {{IN_X, sa, -1.0f, 1.0f}, {IN_P, sb, -1.0f, 1.0f}},   \
     r_matmul, NULL, {ta, tb}, {0}, 0}
#define BIN(nm, code, sa, sb)                                                \
    {nm, b_binary, 2, {{IN_X, sa, -1.0f, 1.0f}, {IN_X, sb, -1.0f, 1.0f}},   \
     r_binary, NULL, {code}, {0}, 0}
#define UN(nm, code, s, lo, hi, init, a, b)                                  \
    {nm, b_unary, 1, {{IN_X, s, lo, hi}}, r_unary, init, {code}, {a, b}, 0}

static const struct op_case cases[] = {
    /* matrix products */
    MM("matmul 3x4*4x5", SH2(3, 4), SH2(4, 5), 0, 0),
    MM("matmul ta 4x3*4x5", SH2(4, 3), SH2(4, 5), 1, 0),
    MM("matmul tb 3x4*5x4", SH2(3, 4), SH2(5, 4), 0, 1),
    MM("matmul ta tb", SH2(4, 3), SH2(5, 4), 1, 1),
    MM("matmul 1x1*1x1", SH2(1, 1), SH2(1, 1), 0, 0),
    MM("matmul 1x7*7x1", SH2(1, 7), SH2(7, 1), 0, 0),
    MM("matmul batched", SH3(2, 3, 5), SH3(2, 5, 3), 0, 0),
    MM("matmul batched ta tb", SH3(3, 5, 2), SH3(3, 4, 5), 1, 1),
    MM("matmul batched shared b", SH3(3, 2, 5), SH2(5, 3), 0, 0),
    MM("matmul batched shared b tb", SH3(3, 2, 5), SH2(3, 5), 0, 1),
    MM("matmul batched shared b ta", SH3(2, 5, 3), SH2(5, 4), 1, 0),
    MM("matmul batched shared b ta tb", SH3(2, 5, 3), SH2(4, 5), 1, 1),
    MM("matmul 4-D", SH4(2, 1, 3, 4), SH4(2, 1, 5, 4), 0, 1),
    /* one row or one column: the CPU backend runs these as sgemv */
    MM("matmul gemv row 1x9*9x6", SH2(1, 9), SH2(9, 6), 0, 0),
    MM("matmul gemv row tb 1x9*(6x9)^T", SH2(1, 9), SH2(6, 9), 0, 1),
    MM("matmul gemv row ta (9x1)^T*9x6", SH2(9, 1), SH2(9, 6), 1, 0),
    MM("matmul gemv row ta tb", SH2(9, 1), SH2(6, 9), 1, 1),
    MM("matmul gemv col 6x9*9x1", SH2(6, 9), SH2(9, 1), 0, 0),
    MM("matmul gemv col tb 6x9*(1x9)^T", SH2(6, 9), SH2(1, 9), 0, 1),
    MM("matmul gemv col ta (9x6)^T*9x1", SH2(9, 6), SH2(9, 1), 1, 0),
    MM("matmul gemv col ta tb", SH2(9, 6), SH2(1, 9), 1, 1),
    MM("matmul gemv batched rows shared b", SH3(3, 1, 40), SH2(40, 33), 0, 0),
    MM("matmul gemv batched rows shared b tb", SH3(3, 1, 40), SH2(33, 40), 0,
       1),
    MM("matmul gemv batched cols", SH3(2, 17, 8), SH3(2, 8, 1), 0, 0),
    {"linear bias", b_linear, 3, {X(SH2(5, 3)), P(SH2(4, 3)), P(SH1(4))},
     r_linear, NULL, {0}, {0}, 0},
    {"linear no bias", b_linear, 2, {X(SH2(1, 3)), P(SH2(7, 3))}, r_linear,
     NULL, {0}, {0}, 0},
    {"linear 3-D", b_linear, 3, {X(SH3(2, 3, 5)), P(SH2(3, 5)), P(SH1(3))},
     r_linear, NULL, {0}, {0}, 0},
    /* element-wise */
    BIN("add same", 0, SH2(3, 4), SH2(3, 4)),
    BIN("add row broadcast", 0, SH2(3, 5), SH1(5)),
    BIN("add column broadcast", 0, SH3(2, 3, 4), SH3(2, 3, 1)),
    BIN("add scalar", 0, SH2(2, 3), SH1(1)),
    BIN("sub middle broadcast", 1, SH3(3, 4, 2), SH3(3, 1, 2)),
    BIN("mul chunk broadcast", 2, SH3(2, 3, 2), SH3(2, 3, 1)),
    BIN("mul same 1", 2, SH1(1), SH1(1)),
    BIN("mul 4-D", 2, SH4(2, 3, 2, 3), SH4(1, 3, 1, 3)),
    {"div", b_binary, 2, {X(SH2(3, 4)), XR(SH1(4), 0.5f, 2.0f)}, r_binary,
     NULL, {3}, {0}, 0},
    {"minimum", b_binary, 2, {X(SH2(3, 5)), X(SH2(3, 5))}, r_binary, i_minmax,
     {4}, {0}, 0},
    {"maximum", b_binary, 2, {X(SH2(3, 5)), X(SH2(3, 5))}, r_binary, i_minmax,
     {5}, {0}, 0},
    UN("sigmoid", U_SIG, SH2(3, 5), -3.0f, 3.0f, NULL, 0, 0),
    UN("tanh", U_TANH, SH2(7, 1), -2.0f, 2.0f, NULL, 0, 0),
    UN("relu", U_RELU, SH2(3, 5), -1.0f, 1.0f, i_away_from_zero, 0, 0),
    UN("elu", U_ELU, SH2(3, 5), -1.0f, 1.0f, i_away_from_zero, 0, 0),
    UN("exp", U_EXP, SH1(9), -2.0f, 2.0f, NULL, 0, 0),
    UN("log", U_LOG, SH2(3, 3), 0.5f, 3.0f, NULL, 0, 0),
    UN("abs", U_ABS, SH2(2, 5), -1.0f, 1.0f, i_away_from_zero, 0, 0),
    UN("square", U_SQ, SH2(3, 5), -1.0f, 1.0f, NULL, 0, 0),
    UN("sqrt", U_SQRT, SH2(3, 5), 0.5f, 3.0f, NULL, 0, 0),
    UN("scale", U_SCALE, SH2(3, 5), -1.0f, 1.0f, NULL, -0.7f, 0),
    UN("affine", U_AFFINE, SH1(1), -1.0f, 1.0f, NULL, -1.0f, 1.0f),
    UN("clamp", U_CLAMP, SH2(4, 5), -1.0f, 1.0f, i_clamp, -0.5f, 0.4f),
    /* last dimension */
    {"softmax", b_softmax, 1, {XR(SH2(3, 5), -2, 2)}, r_softmax, NULL, {0},
     {0}, 0},
    {"softmax 1 col", b_softmax, 1, {X(SH2(4, 1))}, r_softmax, NULL, {0},
     {0}, 0},
    {"softmax masked (-inf, a full row)", b_softmax, 2,
     {XR(SH3(2, 3, 4), -2, 2), C(SH2(3, 4), -1, 1)}, r_softmax, NULL, {0},
     {0}, 0},
    {"log_softmax", b_softmax, 1, {XR(SH2(3, 7), -2, 2)}, r_softmax, NULL,
     {1}, {0}, 0},
    {"log_softmax masked", b_softmax, 2,
     {XR(SH3(2, 3, 4), -2, 2), C(SH3(2, 1, 4), -30, 0)}, r_softmax, NULL,
     {1}, {0}, 0},
    {"cumsum", b_cumsum, 1, {X(SH2(3, 6))}, r_cumsum, NULL, {0}, {0}, 0},
    {"cumsum 1", b_cumsum, 1, {X(SH1(1))}, r_cumsum, NULL, {0}, {0}, 0},
    {"cumax", b_cumax, 1, {XR(SH2(3, 7), -2, 2)}, r_cumax, NULL, {0}, {0},
     0},
    {"cumax 3-D", b_cumax, 1, {XR(SH3(2, 2, 5), -2, 2)}, r_cumax, NULL, {0},
     {0}, 0},
    {"layer_norm affine", b_layernorm, 3,
     {X(SH2(3, 6)), P(SH1(6)), P(SH1(6))}, r_layernorm, NULL, {0}, {1e-5f},
     0},
    {"layer_norm plain", b_layernorm, 1, {X(SH3(2, 2, 5))}, r_layernorm, NULL,
     {0}, {1e-5f}, 0},
    /* indexing and shape */
    {"embedding (repeated ids)", b_embedding, 2,
     {P(SH2(7, 3)), IDX(SH2(2, 5), 0, 6)}, r_embedding, NULL, {0}, {0}, 0},
    {"embedding 1-D ids", b_embedding, 2, {P(SH2(4, 1)), IDX(SH1(3), 0, 3)},
     r_embedding, NULL, {0}, {0}, 0},
    {"gather", b_gather, 2, {X(SH2(3, 5)), IDX(SH2(3, 4), 0, 4)}, r_gather,
     NULL, {0}, {0}, 0},
    {"gather 3-D", b_gather, 2, {X(SH3(2, 2, 4)), IDX(SH3(2, 2, 1), 0, 3)},
     r_gather, NULL, {0}, {0}, 0},
    {"sparse_matmul values", b_sparse, 3,
     {IDX(SH2(3, 4), -1, 6), P(SH2(7, 5)), X(SH2(3, 4))}, r_sparse, NULL,
     {0}, {0}, 0},
    {"sparse_matmul ones", b_sparse, 2, {IDX(SH2(2, 3), -1, 4), P(SH2(5, 3))},
     r_sparse, NULL, {0}, {0}, 0},
    /* 70 columns: the CPU forward's 64-column register block and a tail */
    {"sparse_matmul values, 70 columns", b_sparse, 3,
     {IDX(SH2(3, 4), -1, 6), P(SH2(7, 70)), X(SH2(3, 4))}, r_sparse, NULL,
     {0}, {0}, 0},
    {"concat dim 0", b_concat, 3, {X(SH2(1, 3)), X(SH2(2, 3)), X(SH2(3, 3))},
     r_concat, NULL, {0}, {0}, 0},
    {"concat dim -1", b_concat, 2, {X(SH3(2, 3, 1)), X(SH3(2, 3, 4))},
     r_concat, NULL, {-1}, {0}, 0},
    {"concat dim 1", b_concat, 2, {X(SH3(2, 2, 3)), P(SH3(2, 1, 3))},
     r_concat, NULL, {1}, {0}, 0},
    {"stack", b_stack, 3, {X(SH2(2, 3)), X(SH2(2, 3)), P(SH2(2, 3))},
     r_stack, NULL, {0}, {0}, 0},
    {"slice dim 1", b_slice, 1, {X(SH3(2, 5, 3))}, r_slice, NULL, {1, 1, 3},
     {0}, 0},
    {"slice last", b_slice, 1, {X(SH2(3, 7))}, r_slice, NULL, {-1, 6, 1},
     {0}, 0},
    {"split + concat", b_split, 1, {X(SH3(2, 6, 2))}, r_split, NULL,
     {1, 1, 2}, {0}, 0},
    {"transpose 0 1", b_transpose, 1, {X(SH2(3, 5))}, r_transpose, NULL,
     {0, 1}, {0}, 0},
    {"transpose 4-D 1 3", b_transpose, 1, {X(SH4(2, 3, 1, 4))}, r_transpose,
     NULL, {1, 3}, {0}, 0},
    {"transpose 3-D 0 1 (BT <-> TB)", b_transpose, 1, {X(SH3(3, 2, 4))},
     r_transpose, NULL, {0, -2}, {0}, 0},
    {"select + reshape views", b_views, 2, {X(SH3(3, 2, 3)), P(SH2(3, 2))},
     r_views, NULL, {1}, {0}, 0},
    /* reductions */
    {"sum", b_reduce, 1, {X(SH3(2, 3, 4))}, r_reduce, NULL, {0}, {0}, 0},
    {"mean", b_reduce, 1, {X(SH1(7))}, r_reduce, NULL, {1}, {0}, 0},
    {"sum_dim 0", b_reduce, 1, {X(SH3(3, 2, 4))}, r_reduce, NULL, {2, 0},
     {0}, 0},
    {"sum_dim 1", b_reduce, 1, {X(SH3(3, 2, 4))}, r_reduce, NULL, {2, 1},
     {0}, 0},
    {"mean_dim -1", b_reduce, 1, {X(SH3(3, 2, 5))}, r_reduce, NULL, {3, -1},
     {0}, 0},
    {"sum_dim of 1-D", b_reduce, 1, {X(SH1(5))}, r_reduce, NULL, {2, 0}, {0},
     0},
    /* dropout */
    {"dropout", b_dropout, 1, {X(SH2(5, 7))}, r_dropout, NULL, {0}, {0.3f},
     0},
    {"locked dropout", b_dropout, 1, {X(SH3(4, 3, 5))}, r_dropout, NULL, {1},
     {0.5f}, 0},
    {"row dropout, no rescale", b_dropout, 1, {P(SH2(6, 3))}, r_dropout, NULL,
     {2}, {0.4f}, 0},
    /* loss */
    {"cross_entropy ignore", b_xent, 2,
     {XR(SH2(7, 5), -2, 2), IDX(SH1(7), 0, 4)}, r_xent, i_xent, {-100}, {0},
     0},
    {"cross_entropy 1 row", b_xent, 2, {X(SH2(1, 3)), IDX(SH1(1), 0, 2)},
     r_xent, NULL, {-1}, {0}, 0},
    /* sequences */
    {"conv1d k2 dil2", b_conv, 3,
     {X(SH3(5, 2, 3)), P(SH3(4, 3, 2)), P(SH1(4))}, r_conv, NULL, {2}, {0},
     0},
    {"conv1d k3 dil1 no bias", b_conv, 2, {X(SH3(4, 1, 2)), P(SH3(3, 2, 3))},
     r_conv, NULL, {1}, {0}, 0},
    {"conv1d T=1", b_conv, 3, {X(SH3(1, 2, 2)), P(SH3(2, 2, 2)), P(SH1(2))},
     r_conv, NULL, {1}, {0}, 0},
    /* fused cells */
    {"lstm_cell", b_lstm_cell, 2, {XR(SH2(3, 20), -2, 2), X(SH2(3, 5))},
     r_lstm_cell, NULL, {0}, {0}, 0},
    {"lstm_cell 1x1", b_lstm_cell, 2, {X(SH2(1, 4)), X(SH2(1, 1))},
     r_lstm_cell, NULL, {0}, {0}, 0},
    {"onlstm_cell C=2", b_onlstm_cell, 2,
     {XR(SH2(3, 2 * 3 + 4 * 6), -2, 2), X(SH2(3, 6))}, r_onlstm_cell, NULL,
     {2}, {0}, 0},
    {"onlstm_cell C=1", b_onlstm_cell, 2,
     {XR(SH2(2, 2 * 3 + 4 * 3), -2, 2), X(SH2(2, 3))}, r_onlstm_cell, NULL,
     {1}, {0}, 0},
    {"onlstm_cell n=1", b_onlstm_cell, 2,
     {XR(SH2(1, 2 + 4 * 4), -2, 2), X(SH2(1, 4))}, r_onlstm_cell, NULL, {4},
     {0}, 0},
};
#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

/* ---- running a case ---- */

struct runner {
    struct gr_ctx *ctx;
    const struct op_case *c;
    float *host[MAX_IN];
    struct gr_tensor *params[MAX_IN];
    int64_t out_n;
    float *r; /* random projection of the output */
};

static void fill_inputs(const struct op_case *c, float **host, uint64_t seed)
{
    for (int k = 0; k < c->n_in; k++) {
        const struct in_spec *s = &c->in[k];
        int64_t n = numel_of(s->s);
        uint64_t key = gr_rng_key_of(seed, (uint64_t)k + 1);
        for (int64_t e = 0; e < n; e++) {
            float u = gr_rng_uniform(key, (uint64_t)e);
            if (s->kind == IN_I) {
                int span = (int)(s->hi - s->lo) + 1;
                int v = (int)s->lo + (int)(u * (float)span);
                if (v > (int)s->hi) {
                    v = (int)s->hi;
                }
                host[k][e] = (float)v;
            } else {
                host[k][e] = s->lo + (s->hi - s->lo) * u;
            }
        }
    }
    /* masks of the softmax case: plant -inf, and one full row of it */
    if (c->build == b_softmax && c->n_in > 1 && c->ip[0] == 0) {
        int64_t n = numel_of(c->in[1].s);
        for (int64_t e = 0; e < n; e++) {
            if (host[1][e] < -0.5f) {
                host[1][e] = -INFINITY;
            }
        }
        int64_t cols = last_dim(c->in[1].s);
        for (int64_t j = 0; j < cols; j++) {
            host[1][j] = -INFINITY;
        }
    }
    if (c->init) {
        c->init(c, host);
    }
}

static int runner_init(struct runner *rn, struct gr_ctx *ctx,
                       const struct op_case *c, uint64_t seed)
{
    memset(rn, 0, sizeof *rn);
    rn->ctx = ctx;
    rn->c = c;
    for (int k = 0; k < c->n_in; k++) {
        rn->host[k] = malloc((size_t)numel_of(c->in[k].s) * sizeof(float));
    }
    fill_inputs(c, rn->host, seed);
    for (int k = 0; k < c->n_in; k++) {
        if (c->in[k].kind == IN_P) {
            char nm[16];
            snprintf(nm, sizeof nm, "p%d", k);
            rn->params[k] = gr_param_new(ctx, nm, c->in[k].s);
            if (!rn->params[k]) {
                return -1;
            }
        }
    }
    return 0;
}

static void runner_free(struct runner *rn)
{
    for (int k = 0; k < MAX_IN; k++) {
        free(rn->host[k]);
    }
    free(rn->r);
}

/* One forward from the host inputs; returns the output (step tensor). */
static struct gr_tensor *forward(struct runner *rn, struct gr_tensor **ins)
{
    const struct op_case *c = rn->c;
    struct gr_ctx *ctx = rn->ctx;
    gr_step_reset(ctx);
    for (int k = 0; k < c->n_in; k++) {
        const struct in_spec *s = &c->in[k];
        int64_t n = numel_of(s->s);
        if (s->kind == IN_P) {
            gr_tensor_set_host(rn->params[k], rn->host[k]);
            ins[k] = rn->params[k];
        } else if (s->kind == IN_I) {
            int32_t *iv = malloc((size_t)n * sizeof *iv);
            for (int64_t e = 0; e < n; e++) {
                iv[e] = (int32_t)rn->host[k][e];
            }
            ins[k] = gr_tensor_from_host(ctx, GR_I32, s->s, iv);
            free(iv);
        } else {
            ins[k] = gr_tensor_from_host(ctx, GR_F32, s->s, rn->host[k]);
            gr_tensor_set_requires_grad(ins[k], s->kind == IN_X);
        }
    }
    return c->build(ctx, ins, c);
}

/* Σ r_i out_i in double, from a forward without recording. */
static double projected(struct runner *rn, float *outbuf)
{
    struct gr_tensor *ins[MAX_IN];
    int was = gr_set_grad_enabled(rn->ctx, 0);
    struct gr_tensor *y = forward(rn, ins);
    gr_set_grad_enabled(rn->ctx, was);
    if (!y) {
        return NAN;
    }
    gr_tensor_to_host(y, outbuf);
    double s = 0.0;
    for (int64_t i = 0; i < rn->out_n; i++) {
        if (rn->r[i] != 0.0f) {
            s += (double)rn->r[i] * (double)outbuf[i];
        }
    }
    return s;
}

/* Forward + backward with the projection as seed; fills out and grads. */
static int analytic(struct runner *rn, float *out, float **grads)
{
    struct gr_ctx *ctx = rn->ctx;
    struct gr_tensor *ins[MAX_IN];
    gr_zero_grad(ctx);
    struct gr_tensor *y = forward(rn, ins);
    if (!y) {
        fprintf(stderr, "  %s: forward failed: %s\n", rn->c->name,
                gr_ctx_error(ctx));
        return -1;
    }
    if (rn->out_n == 0) {
        rn->out_n = y->numel;
        rn->r = malloc((size_t)y->numel * sizeof *rn->r);
        uint64_t key = gr_rng_key_of(777, 5);
        for (int64_t i = 0; i < y->numel; i++) {
            rn->r[i] = 2.0f * gr_rng_uniform(key, (uint64_t)i) - 1.0f;
        }
    }
    if (out) {
        gr_tensor_to_host(y, out);
        /* -inf outputs (masked log-softmax) get no weight */
        for (int64_t i = 0; i < y->numel; i++) {
            if (!isfinite(out[i])) {
                rn->r[i] = 0.0f;
            }
        }
    }
    struct gr_tensor *seed = gr_tensor_from_host(ctx, GR_F32,
                                                 gr_tensor_shape(y), rn->r);
    if (!seed || gr_backward_with(ctx, y, seed) < 0) {
        fprintf(stderr, "  %s: backward failed: %s\n", rn->c->name,
                gr_last_error());
        return -1;
    }
    for (int k = 0; k < rn->c->n_in; k++) {
        if (!grads || !grads[k]) {
            continue;
        }
        struct gr_tensor *g = ins[k]->grad;
        if (!g) {
            memset(grads[k], 0,
                   (size_t)numel_of(rn->c->in[k].s) * sizeof(float));
        } else {
            gr_tensor_to_host(g, grads[k]);
        }
    }
    return 0;
}

/* The comparison used for gradients: |a - b| <= tol (|a| + 0.05 M). */
static int grads_close(const float *an, const double *fd, int64_t n,
                       double tol, double scale_an, double *worst)
{
    double m = 0.0;
    for (int64_t i = 0; i < n; i++) {
        m = fmax(m, fabs((double)an[i] * scale_an));
    }
    m = fmax(m, 1e-4);
    int ok = 1;
    *worst = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double a = (double)an[i] * scale_an;
        double err = fabs(a - fd[i]) / (fabs(a) + 0.05 * m);
        if (err > *worst) {
            *worst = err;
        }
        if (err > tol) {
            ok = 0;
        }
    }
    return ok;
}

static int grad_check(const struct op_case *c, int *n_grad_checks)
{
    struct gr_ctx_config cfg = gr_ctx_config_default();
    cfg.device = GR_DEVICE_CPU;
    cfg.step_chunk_bytes = 1 << 20;
    struct gr_ctx *ctx;
    if (gr_ctx_new(&ctx, &cfg) < 0) {
        return -1;
    }
    struct runner rn;
    int bad = 0;
    if (runner_init(&rn, ctx, c, 42) < 0) {
        fprintf(stderr, "%s: setup failed: %s\n", c->name, gr_last_error());
        gr_ctx_free(ctx);
        return -1;
    }
    float *grads[MAX_IN] = {0};
    for (int k = 0; k < c->n_in; k++) {
        if (c->in[k].kind == IN_X || c->in[k].kind == IN_P) {
            grads[k] = malloc((size_t)numel_of(c->in[k].s) * sizeof(float));
        }
    }
    /* out buffer large enough: find the size with a first analytic run */
    float *out = NULL;
    if (analytic(&rn, NULL, NULL) < 0) {
        bad = 1;
        goto done;
    }
    out = malloc((size_t)rn.out_n * sizeof *out);
    if (analytic(&rn, out, grads) < 0) {
        bad = 1;
        goto done;
    }
    /* forward vs the double reference */
    if (c->ref) {
        double *din[MAX_IN];
        for (int k = 0; k < c->n_in; k++) {
            int64_t n = numel_of(c->in[k].s);
            din[k] = malloc((size_t)n * sizeof(double));
            for (int64_t e = 0; e < n; e++) {
                din[k][e] = rn.host[k][e];
            }
        }
        double *ref = malloc((size_t)rn.out_n * sizeof *ref);
        c->ref(c, din, ref);
        double worst = 0.0;
        int64_t at = -1;
        for (int64_t i = 0; i < rn.out_n; i++) {
            double err;
            if (isinf(ref[i]) || isinf(out[i])) {
                err = (ref[i] == (double)out[i]) ? 0.0 : INFINITY;
            } else {
                err = fabs((double)out[i] - ref[i]) / (1e-2 + fabs(ref[i]));
            }
            if (err > worst) {
                worst = err;
                at = i;
            }
        }
        CHECK_MSG(worst <= 2e-5, "%s: forward differs from the double "
                  "reference by %.3g (relative) at element %lld: %.9g vs "
                  "%.9g", c->name, worst, (long long)at,
                  at >= 0 ? (double)out[at] : 0.0, at >= 0 ? ref[at] : 0.0);
        for (int k = 0; k < c->n_in; k++) {
            free(din[k]);
        }
        free(ref);
    }
    /* gradients vs finite differences */
    const double h = 1e-2;
    double tol = c->tol > 0 ? c->tol : 2e-3;
    float *tmp = malloc((size_t)rn.out_n * sizeof *tmp);
    for (int k = 0; k < c->n_in; k++) {
        if (!grads[k]) {
            continue;
        }
        int64_t n = numel_of(c->in[k].s);
        double *fd = malloc((size_t)n * sizeof *fd);
        for (int64_t e = 0; e < n; e++) {
            float v0 = rn.host[k][e];
            double f[4];
            const double steps[4] = {h, -h, 2 * h, -2 * h};
            for (int q = 0; q < 4; q++) {
                rn.host[k][e] = (float)((double)v0 + steps[q]);
                f[q] = projected(&rn, tmp);
            }
            rn.host[k][e] = v0;
            fd[e] = (8.0 * (f[0] - f[1]) - (f[2] - f[3])) / (12.0 * h);
        }
        double worst = 0.0, worst_bad = 0.0;
        int ok = grads_close(grads[k], fd, n, tol, 1.0, &worst);
        double gmax = 0.0;
        for (int64_t e = 0; e < n; e++) {
            gmax = fmax(gmax, fabs((double)grads[k][e]));
        }
        /* An identically zero gradient (softmax of one column) cannot be
         * scaled into an error; there the FD side alone must be ~0. */
        int caught = gmax == 0.0
                         ? 1
                         : !grads_close(grads[k], fd, n, tol, 1.01,
                                        &worst_bad);
        (*n_grad_checks)++;
        CHECK_MSG(ok, "%s: gradient of input %d (%c) differs from finite "
                  "differences: worst %.3g > %.3g", c->name, k,
                  c->in[k].kind, worst, tol);
        CHECK_MSG(caught, "%s: input %d: the check does not reject a 1%% "
                  "gradient error (worst %.3g <= %.3g): tolerance too loose",
                  c->name, k, worst_bad, tol);
        if (!ok || !caught) {
            for (int64_t e = 0; e < n && e < 8; e++) {
                fprintf(stderr, "    [%lld] analytic %.7g  fd %.7g\n",
                        (long long)e, (double)grads[k][e], fd[e]);
            }
        }
        free(fd);
    }
    free(tmp);
done:
    free(out);
    for (int k = 0; k < MAX_IN; k++) {
        free(grads[k]);
    }
    runner_free(&rn);
    gr_ctx_free(ctx);
    return bad ? -1 : 0;
}

/* ---- CUDA vs CPU ---- */

static int parity_case(const struct op_case *c)
{
    struct gr_ctx *cpu, *gpu;
    struct gr_ctx_config cfg = gr_ctx_config_default();
    cfg.step_chunk_bytes = 1 << 20;
    cfg.device = GR_DEVICE_CPU;
    if (gr_ctx_new(&cpu, &cfg) < 0) {
        return -1;
    }
    cfg.device = GR_DEVICE_CUDA;
    if (gr_ctx_new(&gpu, &cfg) < 0) {
        fprintf(stderr, "cuda context: %s\n", gr_last_error());
        gr_ctx_free(cpu);
        return -1;
    }
    struct runner a, b;
    runner_init(&a, cpu, c, 42);
    runner_init(&b, gpu, c, 42);
    float *ga[MAX_IN] = {0}, *gb[MAX_IN] = {0};
    for (int k = 0; k < c->n_in; k++) {
        if (c->in[k].kind == IN_X || c->in[k].kind == IN_P) {
            size_t bytes = (size_t)numel_of(c->in[k].s) * sizeof(float);
            ga[k] = malloc(bytes);
            gb[k] = malloc(bytes);
        }
    }
    int rc = analytic(&a, NULL, NULL);
    rc |= analytic(&b, NULL, NULL);
    float *oa = malloc((size_t)(a.out_n + 1) * sizeof *oa);
    float *ob = malloc((size_t)(b.out_n + 1) * sizeof *ob);
    if (rc == 0 && a.out_n == b.out_n) {
        rc |= analytic(&a, oa, ga);
        rc |= analytic(&b, ob, gb);
    } else {
        rc = -1;
    }
    CHECK_MSG(rc == 0, "%s: a run failed", c->name);
    if (rc == 0) {
        /* forward */
        double m = 1e-6;
        for (int64_t i = 0; i < a.out_n; i++) {
            if (isfinite(oa[i])) {
                m = fmax(m, fabs(oa[i]));
            }
        }
        double worst = 0.0;
        for (int64_t i = 0; i < a.out_n; i++) {
            double e = isfinite(oa[i]) ? fabs((double)oa[i] - ob[i]) / m
                                       : (oa[i] == ob[i] ? 0.0 : INFINITY);
            worst = fmax(worst, e);
        }
        CHECK_MSG(worst <= 1e-5, "%s: CUDA forward differs from CPU by %.3g "
                  "(relative to max |y|)", c->name, worst);
        if (c->build == b_dropout) {
            int same = 1;
            for (int64_t i = 0; i < a.out_n; i++) {
                same &= (oa[i] == 0.0f) == (ob[i] == 0.0f);
            }
            CHECK_MSG(same, "%s: CUDA and CPU dropout masks differ", c->name);
        }
        for (int k = 0; k < c->n_in; k++) {
            if (!ga[k]) {
                continue;
            }
            int64_t n = numel_of(c->in[k].s);
            double gm = 1e-6, gw = 0.0;
            for (int64_t i = 0; i < n; i++) {
                gm = fmax(gm, fabs(ga[k][i]));
            }
            for (int64_t i = 0; i < n; i++) {
                gw = fmax(gw, fabs((double)ga[k][i] - gb[k][i]) / gm);
            }
            CHECK_MSG(gw <= 1e-5, "%s: CUDA gradient of input %d differs from "
                      "CPU by %.3g (relative to max |g|)", c->name, k, gw);
        }
    }
    free(oa);
    free(ob);
    for (int k = 0; k < MAX_IN; k++) {
        free(ga[k]);
        free(gb[k]);
    }
    runner_free(&a);
    runner_free(&b);
    gr_ctx_free(cpu);
    gr_ctx_free(gpu);
    return rc;
}

/* sigmoid and tanh run 8 lanes (AVX2), 4 lanes or scalar depending on an
 * element's position in the call: 15 copies of one value cover all three
 * (0-7, 8-11, 12-14), and must give the same bits, close to the double
 * result. Values: a sweep of [-30, 30], the tanh branch points, the exp
 * clamp, signed zeros and large magnitudes. */
static void check_activation_lanes(void)
{
    struct gr_ctx *ctx;
    struct gr_ctx_config cfg = gr_ctx_config_default();
    cfg.device = GR_DEVICE_CPU;
    if (gr_ctx_new(&ctx, &cfg) < 0) {
        CHECK_MSG(0, "cpu context: %s", gr_last_error());
        return;
    }
    const float special[] = {0.0f, -0.0f, 0.4f, -0.4f, 0.39999998f, 9.0f,
                             -9.0f, 43.5f, -43.5f, 44.0f, -44.0f, 88.0f,
                             -87.0f, 100.0f, -100.0f, 1e-30f, -1e-30f};
    const int n_special = (int)(sizeof special / sizeof special[0]);
    int bad_bits = 0, bad_value = 0;
    for (int k = 0; k < n_special + 4001; k++) {
        float v = k < n_special ? special[k]
                                : -30.0f + 60.0f * (float)(k - n_special) / 4000;
        float in[15], out[15];
        for (int i = 0; i < 15; i++) {
            in[i] = v;
        }
        for (int op = 0; op < 2; op++) {
            gr_step_reset(ctx);
            struct gr_tensor *x =
                gr_tensor_from_host(ctx, GR_F32, gr_shape1(15), in);
            struct gr_tensor *y = op ? gr_tanh(ctx, x) : gr_sigmoid(ctx, x);
            if (!y || gr_tensor_to_host(y, out) < 0) {
                CHECK_MSG(0, "activation: %s", gr_ctx_error(ctx));
                gr_ctx_free(ctx);
                return;
            }
            for (int i = 1; i < 15; i++) {
                bad_bits += memcmp(&out[i], &out[0], sizeof out[0]) != 0;
            }
            double ref = op ? tanh((double)v) : 1.0 / (1.0 + exp(-(double)v));
            bad_value += !(fabs(out[0] - ref) <= 5e-7 * fabs(ref) + 1e-37);
        }
    }
    CHECK_MSG(bad_bits == 0, "sigmoid/tanh: %d elements differ in bits "
              "between the 8-lane, 4-lane and scalar paths", bad_bits);
    CHECK_MSG(bad_value == 0, "sigmoid/tanh: %d values off the double "
              "reference by more than 5e-7 relative", bad_value);
    gr_ctx_free(ctx);
}

/* The ON-LSTM cell's distance outputs (on_lstm.md §3: d^f = 1 - mean_k
 * f̃_k, d^i = mean_k ĩ_k), which the op table's cases leave out (they are
 * not differentiated): df and di of gr_onlstm_cell on `dev` against
 * onlstm_ref, with h and c again for good measure, over shapes with one
 * chunk, several chunks, and a master gate wider than a SIMD lane. Inputs
 * in [-4, 4] from a fixed LCG, so the cumax's mass spreads over the
 * chunks (a few large logits would make every distance 0 or 1). */
static void check_onlstm_distances(enum gr_device dev)
{
    struct gr_ctx *ctx;
    struct gr_ctx_config cfg = gr_ctx_config_default();
    cfg.device = dev;
    if (gr_ctx_new(&ctx, &cfg) < 0) {
        CHECK_MSG(0, "context: %s", gr_last_error());
        return;
    }
    static const int shapes[][3] = {{3, 6, 2}, {2, 3, 3}, {4, 40, 2},
                                    {5, 60, 5}, {1, 4, 1}};
    uint64_t lcg = 0x9E3779B97F4A7C15ull;
    double spread_f = 0.0, spread_i = 0.0;
    for (size_t sc = 0; sc < sizeof shapes / sizeof shapes[0]; sc++) {
        const int64_t b = shapes[sc][0], h = shapes[sc][1],
                      chunk = shapes[sc][2], n = h / chunk,
                      w = 2 * n + 4 * h;
        float *z = malloc((size_t)(b * w) * sizeof *z);
        float *cp = malloc((size_t)(b * h) * sizeof *cp);
        double *zd = malloc((size_t)(b * w) * sizeof *zd);
        double *cd = malloc((size_t)(b * h) * sizeof *cd);
        double *hr = malloc((size_t)(2 * b * h) * sizeof *hr);
        double dfr[8], dir[8];
        float *got = malloc((size_t)(2 * b * h + 2 * b) * sizeof *got);
        for (int64_t k = 0; k < b * w + b * h; k++) {
            lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
            float v = -4.0f + 8.0f * (float)(lcg >> 40) / (float)(1 << 24);
            if (k < b * w) {
                z[k] = v;
                zd[k] = v;
            } else {
                cp[k - b * w] = v / 4;
                cd[k - b * w] = v / 4;
            }
        }
        onlstm_ref(zd, cd, b, h, chunk, hr, hr + b * h, dfr, dir);
        gr_step_reset(ctx);
        struct gr_tensor *zt = gr_tensor_from_host(ctx, GR_F32,
                                                   gr_shape2(b, w), z);
        struct gr_tensor *ct = gr_tensor_from_host(ctx, GR_F32,
                                                   gr_shape2(b, h), cp);
        struct gr_tensor *ho = NULL, *co = NULL, *df = NULL, *di = NULL;
        int rc = zt && ct ? gr_onlstm_cell(ctx, zt, ct, (int)chunk, &ho, &co,
                                           &df, &di)
                          : -1;
        CHECK_MSG(rc == 0 && df != NULL && di != NULL && df->numel == b &&
                      di->numel == b,
                  "onlstm_cell %lldx%lld chunk %lld: %s", (long long)b,
                  (long long)h, (long long)chunk, gr_ctx_error(ctx));
        if (rc == 0 && df && di && df->numel == b && di->numel == b &&
            gr_tensor_to_host(ho, got) == 0 &&
            gr_tensor_to_host(co, got + b * h) == 0 &&
            gr_tensor_to_host(df, got + 2 * b * h) == 0 &&
            gr_tensor_to_host(di, got + 2 * b * h + b) == 0) {
            for (int64_t r = 0; r < b; r++) {
                CHECK_MSG(fabs(got[2 * b * h + r] - dfr[r]) <= 2e-6,
                          "onlstm_cell %lldx%lld chunk %lld row %lld: df "
                          "%.7f, reference %.7f", (long long)b, (long long)h,
                          (long long)chunk, (long long)r,
                          got[2 * b * h + r], dfr[r]);
                CHECK_MSG(fabs(got[2 * b * h + b + r] - dir[r]) <= 2e-6,
                          "onlstm_cell %lldx%lld chunk %lld row %lld: di "
                          "%.7f, reference %.7f", (long long)b, (long long)h,
                          (long long)chunk, (long long)r,
                          got[2 * b * h + b + r], dir[r]);
                spread_f = fmax(spread_f, fmin(dfr[r], 1.0 - dfr[r]));
                spread_i = fmax(spread_i, fmin(dir[r], 1.0 - dir[r]));
            }
            for (int64_t k = 0; k < 2 * b * h; k++) {
                CHECK_MSG(fabs(got[k] - hr[k]) <= 1e-5 * (1 + fabs(hr[k])),
                          "onlstm_cell h/c element %lld: %.7f vs %.7f",
                          (long long)k, got[k], hr[k]);
            }
        }
        free(z);
        free(cp);
        free(zd);
        free(cd);
        free(hr);
        free(got);
    }
    /* the inputs reach the inside of (0, 1): a distance stuck at 0 or 1
     * would not be a test */
    CHECK(spread_f > 0.2 && spread_i > 0.2);
    printf("onlstm_cell distances (%s): df and di of 5 shapes against the "
           "reference\n", dev == GR_DEVICE_CUDA ? "CUDA" : "CPU");
    gr_ctx_free(ctx);
}

/* Cases for the parity run only (too large for finite differences): a
 * table of 2^22 + 3 rows makes the CUDA sparse backward densify its rows
 * in blocks of 3 (at most 2^24 floats per block). */
static const struct op_case parity_only[] = {
    {"sparse_matmul, table of 2^22 + 3 rows (blocked backward)", b_sparse, 3,
     {IDX(SH2(9, 3), -1, 4194306), P(SH2(4194307, 2)), X(SH2(9, 3))},
     r_sparse, NULL, {0}, {0}, 0},
    /* the recurrent layers' per-step shapes, which the CUDA backend sends
     * to its skinny kernels (GROVE_CUDA_GEMM=auto|cublas|skinny picks) */
    MM("matmul skinny 16x128*(512x128)^T", SH2(16, 128), SH2(512, 128), 0, 1),
    MM("matmul skinny 16x512*512x128", SH2(16, 512), SH2(512, 128), 0, 0),
    MM("matmul skinny ta (128x16)^T*(512x128)^T", SH2(128, 16),
       SH2(512, 128), 1, 1),
    MM("matmul skinny ta (512x16)^T*512x128", SH2(512, 16), SH2(512, 128), 1,
       0),
    MM("matmul skinny edges 33x70*70x129", SH2(33, 70), SH2(70, 129), 0, 0),
    MM("matmul skinny edges 33x70*(129x70)^T", SH2(33, 70), SH2(129, 70), 0,
       1),
    MM("matmul skinny batched 7x5x300*300x40", SH3(7, 5, 300), SH2(300, 40), 0,
       0),
    MM("matmul 40x64*(100x64)^T (cuBLAS in auto)", SH2(40, 64), SH2(100, 64), 0,
       1),
};

/* On a device the cross entropy checks its targets by the bounds recorded
 * when they were uploaded (no copy back): the errors of the CPU's exact
 * check still come, without the index. */
static void check_xent_device_bounds(void)
{
    struct gr_ctx *ctx;
    struct gr_ctx_config cfg = gr_ctx_config_default();
    cfg.device = GR_DEVICE_CUDA;
    if (gr_ctx_new(&ctx, &cfg) < 0) {
        CHECK_MSG(0, "cuda context: %s", gr_last_error());
        return;
    }
    struct {
        int32_t t[3];
        int32_t ignore;
        const char *error; /* NULL: accepted */
    } cs[] = {
        {{0, 3, 1}, -1, NULL},
        {{-1, 3, -1}, -1, NULL},
        {{-100, 2, 0}, -100, NULL},
        {{0, 4, 1}, -1, "targets hold values up to 4, outside [0, 4)"},
        {{-5, 2, 0}, -1, "negative values other than the ignore index -1"},
        {{-1, -2, 0}, -1, "negative values other than the ignore index -1"},
    };
    for (size_t i = 0; i < sizeof cs / sizeof *cs; i++) {
        gr_step_reset(ctx);
        struct gr_tensor *lg = gr_zeros(ctx, gr_shape2(3, 4));
        struct gr_tensor *tg =
            gr_tensor_from_host(ctx, GR_I32, gr_shape1(3), cs[i].t);
        struct gr_tensor *y = gr_cross_entropy(ctx, lg, tg, cs[i].ignore);
        if (!cs[i].error) {
            CHECK_MSG(y != NULL, "cross entropy case %zu refused: %s", i,
                      gr_ctx_error(ctx));
        } else {
            CHECK_MSG(y == NULL, "cross entropy case %zu accepted", i);
            CHECK_STR_CONTAINS(gr_ctx_error(ctx), cs[i].error);
        }
    }
    gr_ctx_free(ctx);
}

int main(int argc, char **argv)
{
    int parity = 0;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--parity") == 0) {
            parity = 1;
        } else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
            only = argv[++i];
        }
    }
    if (parity) {
        if (!gr_cuda_compiled()) {
            return test_skip("kernels_cuda_parity", NULL,
                             "CUDA is not compiled into this build; the "
                             "CUDA-vs-CPU parity test needs -DGROVE_CUDA=ON "
                             "and a GPU");
        }
        if (gr_cuda_device_count() == 0) {
            char why[256];
            gr_cuda_status(why, sizeof why);
            return test_skip("kernels_cuda_parity", TEST_NEED_GPU,
                             "no GPU visible (%s); the CUDA-vs-CPU parity "
                             "test needs one", why);
        }
    }
    int ran = 0, checks = 0;
    for (int i = 0; i < N_CASES; i++) {
        if (only && !strstr(cases[i].name, only)) {
            continue;
        }
        ran++;
        int rc = parity ? parity_case(&cases[i])
                        : grad_check(&cases[i], &checks);
        CHECK_MSG(rc == 0, "case '%s' could not run", cases[i].name);
    }
    for (size_t i = 0; parity && i < sizeof parity_only / sizeof *parity_only;
         i++) {
        if (only && !strstr(parity_only[i].name, only)) {
            continue;
        }
        ran++;
        CHECK_MSG(parity_case(&parity_only[i]) == 0, "case '%s' could not run",
                  parity_only[i].name);
    }
    if (!parity && !only) {
        check_activation_lanes();
    }
    if (parity && !only) {
        check_xent_device_bounds();
    }
    if (!only || strstr("onlstm_cell distances", only)) {
        check_onlstm_distances(parity ? GR_DEVICE_CUDA : GR_DEVICE_CPU);
    }
    printf("%d op cases (%s), %d gradient comparisons\n", ran,
           parity ? "CUDA vs CPU" : "forward reference + finite differences",
           checks);
    return test_report(parity ? "kernels_cuda_parity" : "kernels_ops");
}
