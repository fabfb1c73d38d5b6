/* The attention ops of kernels/attention.h, in three modes:
 *
 *   test_kernels_attention            (ctest kernels_attention)
 *       gr_attention against a double-precision reference written here
 *       (masks, bias, dropout with the same Philox decisions), every
 *       gradient (q, k, v, bias) against a 4-point finite-difference
 *       stencil on a random projection, each check also required to REJECT
 *       the analytic gradient scaled by 1.01; the same for the
 *       label-smoothed cross entropy; chunked scores equal unchunked ones;
 *       the causal mask never lets position t see t+1 (perturbation);
 *       padding invariance (a padded batch equals the sequences run
 *       alone); positions; bad arguments; and the step-arena peak of
 *       forward + backward at growing T, against the plain composition
 *       (matmul, softmax, matmul), printed and required to grow linearly.
 *   test_kernels_attention --fixture DIR   (ctest kernels_attention_fixture)
 *       one nn.MultiheadAttention + LayerNorm layer and the label-smoothed
 *       cross entropy against float64 PyTorch
 *       (tests/fixtures/kernels/make_attention_fixture.py): outputs and
 *       every gradient to 1e-5 relative (+1e-6 of the tensor's max), on
 *       the CPU and, where visible, on CUDA; a gradient scaled by 1.0001
 *       must fail the same comparison.
 *   test_kernels_attention --parity   (ctest kernels_attention_cuda_parity)
 *       every case CUDA against CPU, forward and gradients (exit 77 without
 *       a GPU).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/files.h"
#include "kernels/attention.h"
#include "kernels/device.h"
#include "kernels/ops.h"
#include "kernels/rng.h"
#include "kernels/tape.h"
#include "kernels/tensor.h"
#include "tests/test.h"

/* ---- cases ---- */

struct acase {
    const char *name;
    int tq, tk, b, h, dk, dv;
    int bias_nd;        /* 0: none */
    int64_t bias_shape[4];
    int bias_grad;      /* the bias takes a gradient */
    int bias_neg_inf;   /* plant -inf entries in the bias */
    int key_len[4];     /* per batch item; 0 entries allowed; all -1: none */
    int causal;
    float dropout;
    int64_t budget;     /* scratch budget (0: default) */
};

static const struct acase cases[] = {
    {"self, no mask", 5, 5, 2, 2, 3, 3, 0, {0}, 0, 0, {-1}, 0, 0.0f, 0},
    {"self, key padding + causal", 6, 6, 3, 2, 2, 3, 0, {0}, 0, 0, {6, 2, 4},
     1, 0.0f, 0},
    {"cross, dv != dk, bias [B,1,Tq,Tk] with gradient, padding", 3, 6, 2, 2,
     3, 4, 4, {2, 1, 3, 6}, 1, 0, {5, 6}, 0, 0.0f, 0},
    {"self, bias [Tq,Tk] with -inf and gradient, causal", 5, 5, 2, 3, 2, 2,
     2, {5, 5}, 1, 1, {-1}, 1, 0.0f, 0},
    {"self, dropout 0.3, bias [H,1,Tk] with gradient", 4, 4, 2, 2, 3, 2, 3,
     {2, 1, 4}, 1, 0, {-1}, 0, 0.3f, 0},
    {"a batch item with every key masked", 4, 4, 2, 1, 3, 3, 0, {0}, 0, 0,
     {0, 3}, 0, 0.0f, 0},
    {"cross, Tq > Tk, causal offset", 5, 3, 1, 2, 2, 2, 0, {0}, 0, 0, {-1},
     1, 0.0f, 0},
    {"chunked by rows (budget 7), bias [B,H,Tq,Tk], dropout", 5, 6, 2, 2, 2,
     3, 4, {2, 2, 5, 6}, 1, 0, {6, 4}, 0, 0.2f, 7},
    {"chunked by heads (budget 60), causal", 5, 5, 3, 2, 2, 2, 0, {0}, 0, 0,
     {5, 3, 5}, 1, 0.0f, 60},
};
#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

static int has_len(const struct acase *c) { return c->key_len[0] >= 0; }

static int64_t bias_numel(const struct acase *c)
{
    int64_t n = 1;
    for (int d = 0; d < c->bias_nd; d++) {
        n *= c->bias_shape[d];
    }
    return c->bias_nd ? n : 0;
}

/* Host inputs of a case: q, k, v, bias, projection r (of the output). */
struct inputs {
    float *x[4]; /* q, k, v, bias */
    int64_t n[4];
    float *r;
    int64_t n_out;
};

static uint64_t lcg_state;
static float urand(float lo, float hi)
{
    lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * (float)(lcg_state >> 40) / (float)(1 << 24);
}

static void inputs_make(struct inputs *in, const struct acase *c,
                        uint64_t seed)
{
    lcg_state = seed;
    in->n[0] = (int64_t)c->tq * c->b * c->h * c->dk;
    in->n[1] = (int64_t)c->tk * c->b * c->h * c->dk;
    in->n[2] = (int64_t)c->tk * c->b * c->h * c->dv;
    in->n[3] = bias_numel(c);
    in->n_out = (int64_t)c->tq * c->b * c->h * c->dv;
    for (int k = 0; k < 4; k++) {
        in->x[k] = malloc((size_t)(in->n[k] + 1) * sizeof(float));
        for (int64_t e = 0; e < in->n[k]; e++) {
            in->x[k][e] = urand(-1.5f, 1.5f);
            if (k == 3 && c->bias_neg_inf && e % 4 == 1) {
                in->x[k][e] = -INFINITY;
            }
        }
    }
    in->r = malloc((size_t)in->n_out * sizeof(float));
    for (int64_t e = 0; e < in->n_out; e++) {
        in->r[e] = urand(-1.0f, 1.0f);
    }
}

static void inputs_free(struct inputs *in)
{
    for (int k = 0; k < 4; k++) {
        free(in->x[k]);
    }
    free(in->r);
}

static struct gr_rng case_rng(void) { return gr_rng_make(77, 5); }

/* Runs the op on ctx: output into out (n_out), gradients of the projection
 * Σ r·y into g[k] (k < 4, NULL to skip) when g != NULL. */
static int run_case(struct gr_ctx *ctx, const struct acase *c,
                    const struct inputs *in, float *out, float **g)
{
    gr_step_reset(ctx);
    gr_zero_grad(ctx);
    int64_t old = gr_attention_set_scratch(c->budget ? c->budget
                                                     : (int64_t)1 << 22);
    struct gr_tensor *t[4] = {NULL, NULL, NULL, NULL};
    t[0] = gr_tensor_from_host(ctx, GR_F32,
                               gr_shape3(c->tq, c->b, c->h * c->dk), in->x[0]);
    t[1] = gr_tensor_from_host(ctx, GR_F32,
                               gr_shape3(c->tk, c->b, c->h * c->dk), in->x[1]);
    t[2] = gr_tensor_from_host(ctx, GR_F32,
                               gr_shape3(c->tk, c->b, c->h * c->dv), in->x[2]);
    if (c->bias_nd) {
        struct gr_shape s = {c->bias_nd, {1, 1, 1, 1}};
        for (int d = 0; d < c->bias_nd; d++) {
            s.d[d] = c->bias_shape[d];
        }
        t[3] = gr_tensor_from_host(ctx, GR_F32, s, in->x[3]);
    }
    struct gr_tensor *kl = NULL;
    if (has_len(c)) {
        int32_t lens[4];
        for (int b = 0; b < c->b; b++) {
            lens[b] = c->key_len[b];
        }
        kl = gr_tensor_from_host(ctx, GR_I32, gr_shape1(c->b), lens);
    }
    for (int k = 0; k < 3; k++) {
        if (t[k]) {
            gr_tensor_set_requires_grad(t[k], g != NULL);
        }
    }
    if (t[3]) {
        gr_tensor_set_requires_grad(t[3], g != NULL && c->bias_grad);
    }
    struct gr_tensor *y = gr_attention(ctx, t[0], t[1], t[2], c->h, t[3], kl,
                                       c->causal, c->dropout, case_rng());
    gr_attention_set_scratch(old);
    if (!y || gr_tensor_to_host(y, out) < 0) {
        fprintf(stderr, "  %s: forward failed: %s\n", c->name,
                gr_ctx_error(ctx));
        return -1;
    }
    if (!g) {
        return 0;
    }
    struct gr_tensor *seed = gr_tensor_from_host(ctx, GR_F32,
                                                 gr_tensor_shape(y), in->r);
    gr_attention_set_scratch(c->budget ? c->budget : (int64_t)1 << 22);
    int rc = seed ? gr_backward_with(ctx, y, seed) : -1;
    gr_attention_set_scratch(old);
    if (rc < 0) {
        fprintf(stderr, "  %s: backward failed: %s\n", c->name,
                gr_last_error());
        return -1;
    }
    for (int k = 0; k < 4; k++) {
        if (!g[k]) {
            continue;
        }
        if (t[k] && t[k]->grad) {
            gr_tensor_to_host(t[k]->grad, g[k]);
        } else {
            memset(g[k], 0, (size_t)in->n[k] * sizeof(float));
        }
    }
    return 0;
}

/* The double reference of the forward. */
static void ref_attention(const struct acase *c, const struct inputs *in,
                          double *out)
{
    int64_t dq = (int64_t)c->h * c->dk, dvv = (int64_t)c->h * c->dv;
    double scale = 1.0 / sqrt((double)c->dk);
    uint64_t key = gr_rng_key(case_rng());
    double *z = malloc((size_t)c->tk * sizeof *z);
    int64_t full[4] = {c->b, c->h, c->tq, c->tk}, bs[4], st[4];
    int pad = 4 - c->bias_nd;
    for (int d = 0; d < 4; d++) {
        bs[d] = d < pad ? 1 : c->bias_shape[d - pad];
    }
    int64_t s = 1;
    for (int d = 3; d >= 0; d--) {
        st[d] = bs[d] == 1 ? 0 : s;
        s *= bs[d];
    }
    (void)full;
    for (int b = 0; b < c->b; b++) {
        for (int h = 0; h < c->h; h++) {
            for (int i = 0; i < c->tq; i++) {
                double m = -INFINITY;
                for (int j = 0; j < c->tk; j++) {
                    int masked = (has_len(c) && j >= c->key_len[b]) ||
                                 (c->causal && j > i + (c->tk - c->tq));
                    double dot = 0.0;
                    for (int e = 0; e < c->dk; e++) {
                        dot += (double)in->x[0][((int64_t)i * c->b + b) * dq +
                                                h * c->dk + e] *
                               (double)in->x[1][((int64_t)j * c->b + b) * dq +
                                                h * c->dk + e];
                    }
                    double bv = c->bias_nd
                                    ? (double)in->x[3][b * st[0] + h * st[1] +
                                                       i * st[2] + j * st[3]]
                                    : 0.0;
                    z[j] = masked ? -INFINITY : dot * scale + bv;
                    m = fmax(m, z[j]);
                }
                double sum = 0.0;
                for (int j = 0; j < c->tk; j++) {
                    z[j] = m == -INFINITY ? 0.0 : exp(z[j] - m);
                    sum += z[j];
                }
                for (int e = 0; e < c->dv; e++) {
                    double acc = 0.0;
                    for (int j = 0; j < c->tk && sum > 0; j++) {
                        double p = z[j] / sum;
                        if (c->dropout > 0) {
                            uint64_t idx = (uint64_t)(((int64_t)(b * c->h + h) *
                                                           c->tq + i) *
                                                          c->tk + j);
                            p = gr_rng_keep(key, idx, c->dropout)
                                    ? p / (1.0 - c->dropout)
                                    : 0.0;
                        }
                        acc += p * in->x[2][((int64_t)j * c->b + b) * dvv +
                                            h * c->dv + e];
                    }
                    out[((int64_t)i * c->b + b) * dvv + h * c->dv + e] = acc;
                }
            }
        }
    }
    free(z);
}

static double projected(struct gr_ctx *ctx, const struct acase *c,
                        const struct inputs *in, float *tmp)
{
    if (run_case(ctx, c, in, tmp, NULL) < 0) {
        return NAN;
    }
    double s = 0.0;
    for (int64_t e = 0; e < in->n_out; e++) {
        s += (double)tmp[e] * in->r[e];
    }
    return s;
}

/* |a - b| <= tol (|a| + 0.05 M), M the largest |analytic|. */
static int grads_close(const float *an, const double *fd, int64_t n,
                       double tol, double scale_an, double *worst)
{
    double m = 1e-4;
    for (int64_t i = 0; i < n; i++) {
        m = fmax(m, fabs((double)an[i] * scale_an));
    }
    int ok = 1;
    *worst = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double a = (double)an[i] * scale_an;
        double err = fabs(a - fd[i]) / (fabs(a) + 0.05 * m);
        *worst = fmax(*worst, err);
        ok &= err <= tol;
    }
    return ok;
}

static struct gr_ctx *new_ctx(enum gr_device dev)
{
    struct gr_ctx_config cfg = gr_ctx_config_default();
    cfg.device = dev;
    cfg.step_chunk_bytes = 1 << 20;
    struct gr_ctx *ctx = NULL;
    if (gr_ctx_new(&ctx, &cfg) < 0) {
        fprintf(stderr, "context: %s\n", gr_last_error());
        return NULL;
    }
    return ctx;
}

static void grad_check(const struct acase *c, int *n_checks)
{
    struct gr_ctx *ctx = new_ctx(GR_DEVICE_CPU);
    if (!ctx) {
        CHECK(0);
        return;
    }
    struct inputs in;
    inputs_make(&in, c, 1234 + (uint64_t)c->tq * 7 + (uint64_t)c->b);
    float *out = malloc((size_t)in.n_out * sizeof *out);
    float *tmp = malloc((size_t)in.n_out * sizeof *tmp);
    float *g[4] = {NULL, NULL, NULL, NULL};
    for (int k = 0; k < 4; k++) {
        if (k < 3 || (c->bias_nd && c->bias_grad)) {
            g[k] = malloc((size_t)(in.n[k] + 1) * sizeof(float));
        }
    }
    if (run_case(ctx, c, &in, out, g) < 0) {
        CHECK_MSG(0, "%s: could not run", c->name);
        goto done;
    }
    /* forward vs the double reference */
    double *ref = malloc((size_t)in.n_out * sizeof *ref);
    ref_attention(c, &in, ref);
    double worst = 0.0;
    int64_t at = 0;
    for (int64_t e = 0; e < in.n_out; e++) {
        double err = fabs(out[e] - ref[e]) / (1e-2 + fabs(ref[e]));
        if (err > worst) {
            worst = err;
            at = e;
        }
    }
    CHECK_MSG(worst <= 2e-5, "%s: forward differs from the double reference "
              "by %.3g at %lld: %.9g vs %.9g", c->name, worst, (long long)at,
              (double)out[at], ref[at]);
    free(ref);
    /* gradients vs finite differences */
    const double hstep = 1e-2, tol = 2e-3;
    for (int k = 0; k < 4; k++) {
        if (!g[k]) {
            continue;
        }
        double *fd = malloc((size_t)(in.n[k] + 1) * sizeof *fd);
        for (int64_t e = 0; e < in.n[k]; e++) {
            float v0 = in.x[k][e];
            if (isinf(v0)) {
                fd[e] = 0.0; /* an excluded entry: no gradient */
                continue;
            }
            const double steps[4] = {hstep, -hstep, 2 * hstep, -2 * hstep};
            double f[4];
            for (int s = 0; s < 4; s++) {
                in.x[k][e] = (float)((double)v0 + steps[s]);
                f[s] = projected(ctx, c, &in, tmp);
            }
            in.x[k][e] = v0;
            fd[e] = (8.0 * (f[0] - f[1]) - (f[2] - f[3])) / (12.0 * hstep);
        }
        double w = 0.0, wbad = 0.0, gmax = 0.0;
        int ok = grads_close(g[k], fd, in.n[k], tol, 1.0, &w);
        for (int64_t e = 0; e < in.n[k]; e++) {
            gmax = fmax(gmax, fabs(g[k][e]));
        }
        int caught = gmax == 0.0 ||
                     !grads_close(g[k], fd, in.n[k], tol, 1.01, &wbad);
        (*n_checks)++;
        static const char *names[4] = {"q", "k", "v", "bias"};
        CHECK_MSG(ok, "%s: gradient of %s differs from finite differences: "
                  "worst %.3g > %.3g", c->name, names[k], w, tol);
        CHECK_MSG(caught, "%s: %s: a 1%% gradient error passes (worst %.3g)",
                  c->name, names[k], wbad);
        free(fd);
    }
done:
    for (int k = 0; k < 4; k++) {
        free(g[k]);
    }
    free(out);
    free(tmp);
    inputs_free(&in);
    gr_ctx_free(ctx);
}

/* A batch item with every key masked: output and gradients exactly 0
 * there. */
static void check_fully_masked(void)
{
    const struct acase *c = &cases[5];
    struct gr_ctx *ctx = new_ctx(GR_DEVICE_CPU);
    struct inputs in;
    inputs_make(&in, c, 99);
    float *out = malloc((size_t)in.n_out * sizeof *out);
    float *g[4] = {NULL, NULL, NULL, NULL};
    for (int k = 0; k < 3; k++) {
        g[k] = malloc((size_t)in.n[k] * sizeof(float));
    }
    CHECK(ctx && run_case(ctx, c, &in, out, g) == 0);
    int zeros = 1, nonzero_other = 0;
    int64_t w = (int64_t)c->h * c->dv;
    for (int i = 0; i < c->tq; i++) {
        for (int e = 0; e < w; e++) {
            zeros &= out[((int64_t)i * c->b + 0) * w + e] == 0.0f;
            nonzero_other |= out[((int64_t)i * c->b + 1) * w + e] != 0.0f;
        }
        for (int e = 0; e < c->h * c->dk; e++) {
            zeros &= g[0][((int64_t)i * c->b + 0) * c->h * c->dk + e] == 0.0f;
        }
    }
    CHECK_MSG(zeros && nonzero_other, "key_len 0: the rows of that batch "
              "item must be exactly 0 (and their q gradient), the others not");
    for (int k = 0; k < 3; k++) {
        free(g[k]);
    }
    free(out);
    inputs_free(&in);
    gr_ctx_free(ctx);
}

/* Chunked (small budget) against one chunk: same numbers up to f32
 * rounding of the differently blocked products. */
static void check_chunking(void)
{
    const struct acase *c = &cases[7];
    struct acase one = *c;
    one.budget = 0;
    struct gr_ctx *ctx = new_ctx(GR_DEVICE_CPU);
    struct inputs in;
    inputs_make(&in, c, 4321);
    float *o1 = malloc((size_t)in.n_out * sizeof *o1);
    float *o2 = malloc((size_t)in.n_out * sizeof *o2);
    float *g1[4], *g2[4];
    for (int k = 0; k < 4; k++) {
        g1[k] = malloc((size_t)in.n[k] * sizeof(float));
        g2[k] = malloc((size_t)in.n[k] * sizeof(float));
    }
    CHECK(ctx && run_case(ctx, c, &in, o1, g1) == 0 &&
          run_case(ctx, &one, &in, o2, g2) == 0);
    double worst = 0.0;
    for (int64_t e = 0; e < in.n_out; e++) {
        worst = fmax(worst, fabs(o1[e] - o2[e]));
    }
    for (int k = 0; k < 4; k++) {
        for (int64_t e = 0; e < in.n[k]; e++) {
            worst = fmax(worst, fabs(g1[k][e] - g2[k][e]));
        }
    }
    CHECK_MSG(worst <= 1e-5, "chunked attention differs from one chunk by "
              "%.3g", worst);
    for (int k = 0; k < 4; k++) {
        free(g1[k]);
        free(g2[k]);
    }
    free(o1);
    free(o2);
    inputs_free(&in);
    gr_ctx_free(ctx);
}

/* Causality: changing k and v at positions > t leaves outputs 0..t
 * unchanged (bit for bit), and changing position t changes output t. */
static void check_causal_perturbation(void)
{
    struct acase c = {"causal", 7, 7, 2, 2, 3, 3, 0, {0}, 0, 0, {-1}, 1,
                      0.0f, 0};
    struct gr_ctx *ctx = new_ctx(GR_DEVICE_CPU);
    struct inputs in;
    inputs_make(&in, &c, 555);
    float *base = malloc((size_t)in.n_out * sizeof *base);
    float *got = malloc((size_t)in.n_out * sizeof *got);
    CHECK(ctx && run_case(ctx, &c, &in, base, NULL) == 0);
    int64_t row = (int64_t)c.b * c.h * c.dk, rowv = (int64_t)c.b * c.h * c.dv;
    int leaks = 0, seen = 0;
    for (int t = 0; t < c.tk; t++) {
        struct inputs p = in;
        float *k = malloc((size_t)in.n[1] * sizeof *k);
        float *v = malloc((size_t)in.n[2] * sizeof *v);
        memcpy(k, in.x[1], (size_t)in.n[1] * sizeof *k);
        memcpy(v, in.x[2], (size_t)in.n[2] * sizeof *v);
        for (int64_t e = t * row; e < (t + 1) * row; e++) {
            k[e] += 0.75f;
        }
        for (int64_t e = t * rowv; e < (t + 1) * rowv; e++) {
            v[e] -= 0.5f;
        }
        p.x[1] = k;
        p.x[2] = v;
        CHECK(run_case(ctx, &c, &p, got, NULL) == 0);
        for (int64_t e = 0; e < in.n_out; e++) {
            int64_t i = e / rowv;
            if (i < t && got[e] != base[e]) {
                leaks++;
            }
            if (i == t && got[e] != base[e]) {
                seen = 1;
            }
        }
        free(k);
        free(v);
    }
    CHECK_MSG(leaks == 0, "causal mask: %d outputs before t changed when "
              "key/value t changed", leaks);
    CHECK_MSG(seen, "causal mask: changing key/value t never changed "
              "output t (the perturbation test would not see a leak)");
    free(base);
    free(got);
    inputs_free(&in);
    gr_ctx_free(ctx);
}

/* Padding invariance: a batch of three sequences of lengths 5, 2, 4 padded
 * to 5 with garbage keys and values, key_len set, equals each sequence run
 * alone (B = 1, Tk = its length) on its real query rows. */
static void check_padding_invariance(void)
{
    struct acase c = {"padded", 5, 5, 3, 2, 3, 2, 0, {0}, 0, 0, {5, 2, 4},
                      0, 0.0f, 0};
    struct gr_ctx *ctx = new_ctx(GR_DEVICE_CPU);
    struct inputs in;
    inputs_make(&in, &c, 777);
    float *out = malloc((size_t)in.n_out * sizeof *out);
    CHECK(ctx && run_case(ctx, &c, &in, out, NULL) == 0);
    int64_t dq = c.h * c.dk, dvv = c.h * c.dv;
    double worst = 0.0;
    for (int b = 0; b < c.b; b++) {
        int n = c.key_len[b];
        struct acase one = {"one", n, n, 1, c.h, c.dk, c.dv, 0, {0}, 0, 0,
                            {-1}, 0, 0.0f, 0};
        struct inputs s;
        memset(&s, 0, sizeof s);
        s.n[0] = n * dq;
        s.n[1] = n * dq;
        s.n[2] = n * dvv;
        s.n_out = n * dvv;
        for (int k = 0; k < 3; k++) {
            int64_t w = k == 2 ? dvv : dq;
            s.x[k] = malloc((size_t)(n * w) * sizeof(float));
            for (int t = 0; t < n; t++) {
                memcpy(s.x[k] + t * w, in.x[k] + ((int64_t)t * c.b + b) * w,
                       (size_t)w * sizeof(float));
            }
        }
        s.x[3] = NULL;
        s.r = NULL;
        float *o = malloc((size_t)s.n_out * sizeof *o);
        CHECK(run_case(ctx, &one, &s, o, NULL) == 0);
        for (int t = 0; t < n; t++) {
            for (int e = 0; e < dvv; e++) {
                worst = fmax(worst, fabs(o[t * dvv + e] -
                                         out[((int64_t)t * c.b + b) * dvv + e]));
            }
        }
        free(o);
        for (int k = 0; k < 3; k++) {
            free(s.x[k]);
        }
    }
    CHECK_MSG(worst <= 1e-6, "padding invariance: the padded batch differs "
              "from the sequences alone by %.3g", worst);
    free(out);
    inputs_free(&in);
    gr_ctx_free(ctx);
}

/* ---- label-smoothed cross entropy ---- */

static void check_smoothed_xent(enum gr_device dev, int *n_checks)
{
    struct gr_ctx *ctx = new_ctx(dev);
    if (!ctx) {
        CHECK(0);
        return;
    }
    enum { N = 5, V = 6 };
    float x[N * V];
    lcg_state = 31;
    for (int e = 0; e < N * V; e++) {
        x[e] = urand(-2.0f, 2.0f);
    }
    const int32_t tg[N] = {2, -1, 0, 5, 2};
    const float eps = 0.2f;
    double ref = 0.0;
    int cnt = 0;
    for (int r = 0; r < N; r++) {
        if (tg[r] < 0) {
            continue;
        }
        double m = -INFINITY, s = 0.0, mean = 0.0;
        for (int j = 0; j < V; j++) {
            m = fmax(m, x[r * V + j]);
            mean += x[r * V + j] / (double)V;
        }
        for (int j = 0; j < V; j++) {
            s += exp(x[r * V + j] - m);
        }
        double lse = m + log(s);
        /* -Σ_v q_v log p_v with q = (1-eps) onehot + eps/V */
        double l = 0.0;
        for (int j = 0; j < V; j++) {
            double qv = eps / V + (j == tg[r] ? 1.0 - eps : 0.0);
            l += qv * (lse - x[r * V + j]);
        }
        (void)mean;
        ref += l;
        cnt++;
    }
    ref /= cnt;
    float an[N * V];
    gr_step_reset(ctx);
    struct gr_tensor *lt = gr_tensor_from_host(ctx, GR_F32, gr_shape2(N, V), x);
    struct gr_tensor *tt = gr_tensor_from_host(ctx, GR_I32, gr_shape1(N), tg);
    gr_tensor_set_requires_grad(lt, 1);
    struct gr_tensor *loss = gr_cross_entropy_smoothed(ctx, lt, tt, -1, eps);
    CHECK_MSG(loss != NULL, "smoothed xent: %s", gr_ctx_error(ctx));
    if (!loss) {
        gr_ctx_free(ctx);
        return;
    }
    float lv = gr_tensor_item(loss);
    CHECK_MSG(fabs(lv - ref) <= 1e-6 * (1 + fabs(ref)), "smoothed xent %.8f "
              "vs reference %.8f", lv, ref);
    CHECK(gr_backward(ctx, loss) == 0);
    gr_tensor_to_host(lt->grad, an);
    /* eps = 0 is gr_cross_entropy */
    gr_step_reset(ctx);
    lt = gr_tensor_from_host(ctx, GR_F32, gr_shape2(N, V), x);
    tt = gr_tensor_from_host(ctx, GR_I32, gr_shape1(N), tg);
    float a0 = gr_tensor_item(gr_cross_entropy_smoothed(ctx, lt, tt, -1, 0));
    float b0 = gr_tensor_item(gr_cross_entropy(ctx, lt, tt, -1));
    CHECK_MSG(fabs(a0 - b0) <= 1e-6, "eps 0: %.8f vs gr_cross_entropy %.8f",
              a0, b0);
    if (dev != GR_DEVICE_CPU) {
        gr_ctx_free(ctx);
        return;
    }
    /* finite differences */
    double fd[N * V];
    const double h = 1e-2;
    for (int e = 0; e < N * V; e++) {
        double f[4];
        const double steps[4] = {h, -h, 2 * h, -2 * h};
        float v0 = x[e];
        for (int s = 0; s < 4; s++) {
            x[e] = (float)(v0 + steps[s]);
            gr_step_reset(ctx);
            lt = gr_tensor_from_host(ctx, GR_F32, gr_shape2(N, V), x);
            tt = gr_tensor_from_host(ctx, GR_I32, gr_shape1(N), tg);
            f[s] = gr_tensor_item(
                gr_cross_entropy_smoothed(ctx, lt, tt, -1, eps));
        }
        x[e] = v0;
        fd[e] = (8.0 * (f[0] - f[1]) - (f[2] - f[3])) / (12.0 * h);
    }
    double w, wbad;
    (*n_checks)++;
    CHECK_MSG(grads_close(an, fd, N * V, 2e-3, 1.0, &w), "smoothed xent "
              "gradient vs finite differences: worst %.3g", w);
    CHECK_MSG(!grads_close(an, fd, N * V, 2e-3, 1.01, &wbad), "smoothed "
              "xent: a 1%% gradient error passes");
    int zero_row = 1;
    for (int j = 0; j < V; j++) {
        zero_row &= an[1 * V + j] == 0.0f;
    }
    CHECK_MSG(zero_row, "smoothed xent: the ignored row has a gradient");
    gr_ctx_free(ctx);
}

/* ---- positions ---- */

static void check_positions(void)
{
    struct gr_ctx *ctx = new_ctx(GR_DEVICE_CPU);
    gr_step_reset(ctx);
    enum { T = 4, D = 6 };
    struct gr_tensor *p = gr_positions_sinusoidal(ctx, T, D, 3);
    float h[T * D];
    CHECK(p && p->ndim == 3 && p->shape[0] == T && p->shape[1] == 1 &&
          p->shape[2] == D && gr_tensor_to_host(p, h) == 0);
    /* hand values: position 3 (offset): sin 3, cos 3; column 2 has
     * frequency 10000^(-2/6) = 0.0464159; column 5: 10000^(-4/6) */
    CHECK_NEAR(h[0], sin(3.0), 1e-6);
    CHECK_NEAR(h[1], cos(3.0), 1e-6);
    CHECK_NEAR(h[1 * D + 2], sin(4.0 * 0.046415888336127795), 1e-6);
    CHECK_NEAR(h[2 * D + 5], cos(5.0 * 0.0021544346900318843), 1e-6);
    struct gr_tensor *tab = gr_param_new(ctx, "pos", gr_shape2(6, 2));
    float tv[12];
    for (int e = 0; e < 12; e++) {
        tv[e] = (float)e;
    }
    gr_tensor_set_host(tab, tv);
    gr_step_reset(ctx);
    struct gr_tensor *l = gr_positions_learned(ctx, tab, 3, 2);
    float lv[6];
    CHECK(l && l->shape[0] == 3 && l->shape[1] == 1 && l->shape[2] == 2 &&
          gr_tensor_to_host(l, lv) == 0 && lv[0] == 4.0f && lv[5] == 9.0f);
    gr_step_reset(ctx);
    CHECK(gr_positions_learned(ctx, tab, 5, 2) == NULL);
    CHECK_STR_CONTAINS(gr_ctx_error(ctx), "MAXT >= 7");
    gr_ctx_free(ctx);
}

/* ---- bad arguments ---- */

static void check_errors(void)
{
    struct gr_ctx *ctx = new_ctx(GR_DEVICE_CPU);
    gr_step_reset(ctx);
    struct gr_tensor *q = gr_zeros(ctx, gr_shape3(4, 2, 6));
    struct gr_tensor *k = gr_zeros(ctx, gr_shape3(5, 2, 6));
    struct gr_tensor *v = gr_zeros(ctx, gr_shape3(4, 2, 6));
    struct gr_rng r = gr_rng_make(1, 1);
    CHECK(gr_attention(ctx, q, k, v, 2, NULL, NULL, 0, 0, r) == NULL);
    CHECK_STR_CONTAINS(gr_ctx_error(ctx), "[Tk, B, H*dv]");
    gr_step_reset(ctx);
    q = gr_zeros(ctx, gr_shape3(4, 2, 6));
    k = gr_zeros(ctx, gr_shape3(5, 2, 6));
    v = gr_zeros(ctx, gr_shape3(5, 2, 6));
    CHECK(gr_attention(ctx, q, k, v, 4, NULL, NULL, 0, 0, r) == NULL);
    CHECK_STR_CONTAINS(gr_ctx_error(ctx), "4 heads do not divide");
    gr_step_reset(ctx);
    q = gr_zeros(ctx, gr_shape3(4, 2, 6));
    k = gr_zeros(ctx, gr_shape3(5, 2, 6));
    v = gr_zeros(ctx, gr_shape3(5, 2, 6));
    const int32_t bad_len[2] = {3, 6};
    struct gr_tensor *kl = gr_tensor_from_host(ctx, GR_I32, gr_shape1(2),
                                               bad_len);
    CHECK(gr_attention(ctx, q, k, v, 2, NULL, kl, 0, 0, r) == NULL);
    CHECK_STR_CONTAINS(gr_ctx_error(ctx), "key_len[1] = 6");
    gr_step_reset(ctx);
    q = gr_zeros(ctx, gr_shape3(4, 2, 6));
    k = gr_zeros(ctx, gr_shape3(5, 2, 6));
    v = gr_zeros(ctx, gr_shape3(5, 2, 6));
    struct gr_tensor *bias = gr_zeros(ctx, gr_shape2(5, 4));
    CHECK(gr_attention(ctx, q, k, v, 2, bias, NULL, 0, 0, r) == NULL);
    CHECK_STR_CONTAINS(gr_ctx_error(ctx), "does not broadcast");
    gr_step_reset(ctx);
    struct gr_tensor *lg = gr_zeros(ctx, gr_shape2(2, 3));
    const int32_t tg[2] = {1, 3};
    struct gr_tensor *tt = gr_tensor_from_host(ctx, GR_I32, gr_shape1(2), tg);
    CHECK(gr_cross_entropy_smoothed(ctx, lg, tt, -1, 0.1f) == NULL);
    CHECK_STR_CONTAINS(gr_ctx_error(ctx), "targets[1] = 3");
    gr_ctx_free(ctx);
}

/* ---- memory: the step-arena peak of forward + backward ---- */

static size_t peak_of(int t, int fused, int64_t budget)
{
    struct gr_ctx_config cfg = gr_ctx_config_default();
    cfg.device = GR_DEVICE_CPU;
    cfg.step_chunk_bytes = 1 << 16;
    struct gr_ctx *ctx = NULL;
    if (gr_ctx_new(&ctx, &cfg) < 0) {
        return 0;
    }
    const int b = 2, h = 2, dk = 8;
    int64_t old = gr_attention_set_scratch(budget);
    struct gr_tensor *q = gr_zeros(ctx, gr_shape3(t, b, h * dk));
    struct gr_tensor *k = gr_full(ctx, gr_shape3(t, b, h * dk), 0.1f);
    struct gr_tensor *v = gr_full(ctx, gr_shape3(t, b, h * dk), 0.2f);
    gr_tensor_set_requires_grad(q, 1);
    gr_tensor_set_requires_grad(k, 1);
    gr_tensor_set_requires_grad(v, 1);
    struct gr_tensor *y;
    if (fused) {
        y = gr_attention(ctx, q, k, v, h, NULL, NULL, 1, 0, gr_rng_make(1, 1));
    } else {
        /* the composition: [B, H, T, dk] views, scores, softmax, product */
        struct gr_tensor *qh = gr_transpose(
            ctx, gr_transpose(ctx, gr_reshape(ctx, q, gr_shape4(t, b, h, dk)),
                              0, 2), 0, 1); /* [B, H, T, dk] */
        struct gr_tensor *kh = gr_transpose(
            ctx, gr_transpose(ctx, gr_reshape(ctx, k, gr_shape4(t, b, h, dk)),
                              0, 2), 0, 1);
        struct gr_tensor *vh = gr_transpose(
            ctx, gr_transpose(ctx, gr_reshape(ctx, v, gr_shape4(t, b, h, dk)),
                              0, 2), 0, 1);
        struct gr_tensor *s = gr_scale(ctx, gr_matmul(ctx, qh, kh, 0, 1),
                                       1.0f / sqrtf((float)dk));
        y = gr_matmul(ctx, gr_softmax(ctx, s, NULL), vh, 0, 0);
    }
    int ok = y && gr_backward_with(ctx, y, gr_full(ctx, gr_tensor_shape(y),
                                                   1.0f)) == 0;
    gr_attention_set_scratch(old);
    struct gr_mem_stats ms;
    gr_ctx_memory(ctx, &ms);
    gr_ctx_free(ctx);
    return ok ? ms.step_peak_bytes : 0;
}

static void check_memory(void)
{
    const int64_t budget = 1 << 14; /* 64 KiB per scratch buffer */
    const int ts[3] = {256, 512, 1024};
    size_t fused[3], plain[3];
    printf("step-arena peak of forward + backward, B 2, H 2, dk 8, "
           "scratch budget %lld floats:\n", (long long)budget);
    printf("| T | gr_attention | composition (matmul, softmax, matmul) |\n");
    printf("|---|---|---|\n");
    for (int i = 0; i < 3; i++) {
        fused[i] = peak_of(ts[i], 1, budget);
        plain[i] = ts[i] <= 512 ? peak_of(ts[i], 0, budget) : 0;
        printf("| %d | %.2f MiB | %s%.2f MiB |\n", ts[i],
               (double)fused[i] / 1048576.0, plain[i] ? "" : "(not run) ",
               (double)plain[i] / 1048576.0);
    }
    CHECK(fused[0] > 0 && fused[1] > 0 && fused[2] > 0 && plain[0] > 0 &&
          plain[1] > 0);
    /* linear: doubling T at most doubles the peak (plus a constant) */
    CHECK_MSG((double)fused[2] <= 2.2 * (double)fused[1] &&
                  (double)fused[1] <= 2.2 * (double)fused[0],
              "gr_attention's peak is not linear in T: %zu, %zu, %zu bytes",
              fused[0], fused[1], fused[2]);
    /* the composition is quadratic: the check above would catch it */
    CHECK_MSG((double)plain[1] > 3.0 * (double)plain[0],
              "the composition's peak should be quadratic (%zu -> %zu)",
              plain[0], plain[1]);
}

/* ---- PyTorch fixture ---- */

#define FX_MAX 64

struct fx {
    int n;
    char name[FX_MAX][64];
    int64_t numel[FX_MAX];
    struct gr_shape shape[FX_MAX];
    double *data[FX_MAX];
};

static int fx_load(struct fx *f, const char *path)
{
    char *buf = NULL;
    size_t size = 0;
    memset(f, 0, sizeof *f);
    if (gr_read_file(path, 1 << 24, &buf, &size) < 0) {
        fprintf(stderr, "%s\n", gr_last_error());
        return -1;
    }
    char *p = buf;
    if (strncmp(p, "grove-fixture 1\n", 16) != 0) {
        free(buf);
        return -1;
    }
    p += 16;
    while (*p && f->n < FX_MAX) {
        int k = f->n, used = 0, nd = 0;
        if (sscanf(p, "%63s %d%n", f->name[k], &nd, &used) != 2 || nd < 0 ||
            nd > 4) {
            break;
        }
        p += used;
        f->shape[k].ndim = nd;
        f->numel[k] = 1;
        for (int d = 0; d < 4; d++) {
            f->shape[k].d[d] = 1;
        }
        for (int d = 0; d < nd; d++) {
            f->shape[k].d[d] = strtoll(p, &p, 10);
            f->numel[k] *= f->shape[k].d[d];
        }
        f->data[k] = malloc((size_t)f->numel[k] * sizeof(double));
        for (int64_t i = 0; i < f->numel[k]; i++) {
            f->data[k][i] = strtod(p, &p);
        }
        while (*p == '\n' || *p == ' ') {
            p++;
        }
        f->n++;
    }
    free(buf);
    return 0;
}

static void fx_free(struct fx *f)
{
    for (int i = 0; i < f->n; i++) {
        free(f->data[i]);
    }
}

static const double *fx_get(const struct fx *f, const char *name,
                            int64_t *numel)
{
    for (int i = 0; i < f->n; i++) {
        if (strcmp(f->name[i], name) == 0) {
            if (numel) {
                *numel = f->numel[i];
            }
            return f->data[i];
        }
    }
    fprintf(stderr, "fixture: no tensor '%s'\n", name);
    return NULL;
}

static float *to_f32(const double *d, int64_t n)
{
    float *o = malloc((size_t)n * sizeof *o);
    for (int64_t i = 0; i < n; i++) {
        o[i] = (float)d[i];
    }
    return o;
}

/* |got - ref| <= 1e-5 |ref| + 1e-6 max|ref|, got scaled by `scale`. */
static int fx_close(const float *got, const double *ref, int64_t n,
                    double scale, double *worst)
{
    double m = 0.0;
    for (int64_t i = 0; i < n; i++) {
        m = fmax(m, fabs(ref[i]));
    }
    int ok = 1;
    *worst = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs(got[i] * scale - ref[i]);
        double lim = 1e-5 * fabs(ref[i]) + 1e-6 * m;
        *worst = fmax(*worst, d / (lim > 0 ? lim : 1e-30));
        ok &= d <= lim;
    }
    return ok;
}

static void fx_compare(const char *dev, const char *what,
                       const struct gr_tensor *t, const struct fx *f,
                       const char *name)
{
    int64_t n = 0;
    const double *ref = fx_get(f, name, &n);
    if (!ref || !t || t->numel != n) {
        CHECK_MSG(0, "%s: %s missing or of the wrong size", dev, what);
        return;
    }
    float *got = malloc((size_t)n * sizeof *got);
    gr_tensor_to_host(t, got);
    double w, wbad;
    int ok = fx_close(got, ref, n, 1.0, &w);
    int caught = !fx_close(got, ref, n, 1.0001, &wbad);
    CHECK_MSG(ok, "%s: %s differs from PyTorch: worst %.3g x the "
              "tolerance", dev, what, w);
    CHECK_MSG(caught, "%s: %s: a 0.01%% error passes the comparison", dev,
              what);
    free(got);
}

static void fixture_case(enum gr_device dev, const struct fx *f, int which)
{
    const char *dn = dev == GR_DEVICE_CUDA ? "cuda" : "cpu";
    struct gr_ctx *ctx = new_ctx(dev);
    if (!ctx) {
        CHECK(0);
        return;
    }
    const int T = 5, B = 3, D = 8, H = 2;
    struct gr_mha m;
    CHECK(gr_mha_init(&m, ctx, "attn", D, H, gr_rng_make(1, 1)) == 0);
    struct gr_tensor *lnw = gr_param_new(ctx, "ln.weight", gr_shape1(D));
    struct gr_tensor *lnb = gr_param_new(ctx, "ln.bias", gr_shape1(D));
    struct {
        struct gr_tensor *t;
        const char *name;
    } params[] = {{m.in_w, "in_proj_weight"}, {m.in_b, "in_proj_bias"},
                  {m.out_w, "out_proj.weight"}, {m.out_b, "out_proj.bias"},
                  {lnw, "ln.weight"}, {lnb, "ln.bias"}};
    for (size_t i = 0; i < sizeof params / sizeof params[0]; i++) {
        int64_t n = 0;
        const double *d = fx_get(f, params[i].name, &n);
        float *h = d ? to_f32(d, n) : NULL;
        CHECK(h && n == params[i].t->numel &&
              gr_tensor_set_host(params[i].t, h) == 0);
        free(h);
    }
    gr_step_reset(ctx);
    gr_zero_grad(ctx);
    float *xh = to_f32(fx_get(f, "x", NULL), T * B * D);
    float *bh = to_f32(fx_get(f, "bias", NULL), T * T);
    float *rh = to_f32(fx_get(f, which == 1 ? "R1" : "R2", NULL), T * B * D);
    const double *lens = fx_get(f, "lengths", NULL);
    int32_t li[3] = {(int32_t)lens[0], (int32_t)lens[1], (int32_t)lens[2]};
    struct gr_tensor *x = gr_tensor_from_host(ctx, GR_F32,
                                              gr_shape3(T, B, D), xh);
    struct gr_tensor *bias = gr_tensor_from_host(ctx, GR_F32,
                                                 gr_shape2(T, T), bh);
    struct gr_tensor *kl = gr_tensor_from_host(ctx, GR_I32, gr_shape1(B), li);
    gr_tensor_set_requires_grad(x, 1);
    gr_tensor_set_requires_grad(bias, 1);
    struct gr_tensor *a = gr_mha_forward(ctx, &m, x, x,
                                         which == 1 ? bias : NULL, kl,
                                         which == 2, 0.0f, gr_rng_make(1, 1));
    struct gr_tensor *y = gr_layer_norm(ctx, gr_add(ctx, x, a), lnw, lnb,
                                        1e-5f);
    struct gr_tensor *seed = gr_tensor_from_host(ctx, GR_F32,
                                                 gr_shape3(T, B, D), rh);
    int rc = y ? gr_backward_with(ctx, y, seed) : -1;
    CHECK_MSG(rc == 0, "%s fixture case %d: %s", dn, which,
              gr_ctx_error(ctx));
    if (rc == 0) {
        char name[64], what[96];
        const char *g = which == 1 ? "g1" : "g2";
        fx_compare(dn, which == 1 ? "y1" : "y2", y, f,
                   which == 1 ? "y1" : "y2");
        snprintf(name, sizeof name, "%s.x", g);
        fx_compare(dn, name, x->grad, f, name);
        if (which == 1) {
            fx_compare(dn, "g1.bias", bias->grad, f, "g1.bias");
        }
        for (size_t i = 0; i < sizeof params / sizeof params[0]; i++) {
            snprintf(name, sizeof name, "%s.%s", g, params[i].name);
            snprintf(what, sizeof what, "case %d %s", which, name);
            fx_compare(dn, what, params[i].t->grad, f, name);
        }
    }
    free(xh);
    free(bh);
    free(rh);
    /* label-smoothed cross entropy (case 3) */
    if (which == 1) {
        gr_step_reset(ctx);
        float *lg = to_f32(fx_get(f, "logits", NULL), 42);
        const double *td = fx_get(f, "targets", NULL);
        int32_t ti[6];
        for (int i = 0; i < 6; i++) {
            ti[i] = (int32_t)td[i];
        }
        struct gr_tensor *lt = gr_tensor_from_host(ctx, GR_F32,
                                                   gr_shape2(6, 7), lg);
        struct gr_tensor *tt = gr_tensor_from_host(ctx, GR_I32, gr_shape1(6),
                                                   ti);
        gr_tensor_set_requires_grad(lt, 1);
        struct gr_tensor *loss = gr_cross_entropy_smoothed(ctx, lt, tt, -100,
                                                           0.1f);
        CHECK(loss && gr_backward(ctx, loss) == 0);
        fx_compare(dn, "label-smoothed loss", loss, f, "ls.loss");
        fx_compare(dn, "label-smoothed gradient", lt->grad, f, "ls.grad");
        free(lg);
    }
    gr_ctx_free(ctx);
}

static int run_fixture(const char *dir)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/attention_layer.txt", dir);
    struct fx f;
    if (fx_load(&f, path) < 0) {
        CHECK_MSG(0, "cannot read the fixture %s", path);
        return test_report("kernels_attention_fixture");
    }
    fixture_case(GR_DEVICE_CPU, &f, 1);
    fixture_case(GR_DEVICE_CPU, &f, 2);
    int gpu = gr_cuda_compiled() && gr_cuda_device_count() > 0;
    if (gpu) {
        fixture_case(GR_DEVICE_CUDA, &f, 1);
        fixture_case(GR_DEVICE_CUDA, &f, 2);
    }
    printf("nn.MultiheadAttention + LayerNorm (bias + padding; causal + "
           "padding) and label-smoothed cross entropy against float64 "
           "PyTorch on %s\n", gpu ? "CPU and CUDA" : "CPU (no GPU visible)");
    fx_free(&f);
    return test_report("kernels_attention_fixture");
}

/* ---- CUDA against CPU ---- */

static int run_parity(void)
{
    if (!gr_cuda_compiled()) {
        return test_skip("kernels_attention_cuda_parity", NULL,
                         "CUDA is not compiled into this build; the "
                         "attention parity test needs -DGROVE_CUDA=ON and a "
                         "GPU");
    }
    if (gr_cuda_device_count() == 0) {
        char why[256];
        gr_cuda_status(why, sizeof why);
        return test_skip("kernels_attention_cuda_parity", TEST_NEED_GPU,
                         "no GPU visible (%s); the attention parity test "
                         "needs one", why);
    }
    struct gr_ctx *cpu = new_ctx(GR_DEVICE_CPU);
    struct gr_ctx *gpu = new_ctx(GR_DEVICE_CUDA);
    if (!cpu || !gpu) {
        CHECK(0);
        return test_report("kernels_attention_cuda_parity");
    }
    for (int i = 0; i < N_CASES; i++) {
        const struct acase *c = &cases[i];
        struct inputs in;
        inputs_make(&in, c, 2024 + (uint64_t)i);
        float *oa = malloc((size_t)in.n_out * sizeof *oa);
        float *ob = malloc((size_t)in.n_out * sizeof *ob);
        float *ga[4] = {NULL}, *gb[4] = {NULL};
        for (int k = 0; k < 4; k++) {
            if (k < 3 || (c->bias_nd && c->bias_grad)) {
                ga[k] = malloc((size_t)(in.n[k] + 1) * sizeof(float));
                gb[k] = malloc((size_t)(in.n[k] + 1) * sizeof(float));
            }
        }
        int rc = run_case(cpu, c, &in, oa, ga) | run_case(gpu, c, &in, ob, gb);
        CHECK_MSG(rc == 0, "%s: a run failed", c->name);
        if (rc == 0) {
            double m = 1e-6, w = 0.0;
            for (int64_t e = 0; e < in.n_out; e++) {
                m = fmax(m, fabs(oa[e]));
            }
            for (int64_t e = 0; e < in.n_out; e++) {
                w = fmax(w, fabs(oa[e] - ob[e]) / m);
            }
            CHECK_MSG(w <= 1e-5, "%s: CUDA forward differs from CPU by %.3g",
                      c->name, w);
            for (int k = 0; k < 4; k++) {
                if (!ga[k]) {
                    continue;
                }
                double gm = 1e-6, gw = 0.0;
                for (int64_t e = 0; e < in.n[k]; e++) {
                    gm = fmax(gm, fabs(ga[k][e]));
                }
                for (int64_t e = 0; e < in.n[k]; e++) {
                    gw = fmax(gw, fabs(ga[k][e] - gb[k][e]) / gm);
                }
                CHECK_MSG(gw <= 1e-5, "%s: CUDA gradient %d differs from "
                          "CPU by %.3g", c->name, k, gw);
            }
        }
        for (int k = 0; k < 4; k++) {
            free(ga[k]);
            free(gb[k]);
        }
        free(oa);
        free(ob);
        inputs_free(&in);
    }
    int dummy = 0;
    check_smoothed_xent(GR_DEVICE_CUDA, &dummy);
    gr_ctx_free(cpu);
    gr_ctx_free(gpu);
    printf("%d attention cases and the smoothed cross entropy, CUDA vs CPU\n",
           N_CASES);
    return test_report("kernels_attention_cuda_parity");
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--parity") == 0) {
        return run_parity();
    }
    if (argc == 3 && strcmp(argv[1], "--fixture") == 0) {
        return run_fixture(argv[2]);
    }
    int checks = 0;
    for (int i = 0; i < N_CASES; i++) {
        grad_check(&cases[i], &checks);
    }
    check_smoothed_xent(GR_DEVICE_CPU, &checks);
    check_fully_masked();
    check_chunking();
    check_causal_perturbation();
    check_padding_invariance();
    check_positions();
    check_errors();
    check_memory();
    printf("%d attention cases, %d gradient comparisons\n", N_CASES, checks);
    return test_report("kernels_attention");
}
