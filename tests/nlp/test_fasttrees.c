/* The FastTrees cells (kernels/fasttrees.h; fasttrees.md §2-§4) and their
 * language models (nlp/models/onlstm.h, kinds ft / cft / fft):
 *   - PyTorch parity (tests/fixtures/fasttrees/gen_fasttrees_fixtures.py,
 *     float64, a Python loop over time): FT, CFT with conv_axis
 *     batch_compat and time (with carried rows), FFT: outputs, final
 *     states, both distances and every gradient to 1e-5 relative;
 *   - the linear scan against a double-precision sequential loop for every
 *     T from 1 to 1,000 (forward and backward), and its gradients against
 *     central finite differences (which must also reject the analytic
 *     gradient scaled by 1.01);
 *   - CFT on the time axis never reads a future step (perturbing x_{t+1}
 *     leaves h_0..h_t unchanged) and carries its context across windows
 *     (two windows equal one); batch_compat mixes batch neighbours;
 *   - FFT allocates no recurrent weight; parameter counts of every kind
 *     equal what nlp_lm_init allocates, and the PTB counts of the spec
 *     (24,670,640 / 24,895,580 / 13,439,840, reference 25,232,180);
 *   - the LM of each kind: a training window backward, distances from
 *     nlp_lm_sentences, a config text round trip (conv axis included).
 *
 *   test_nlp_fasttrees FIXTURE_DIR
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/fasttrees.h"
#include "kernels/ops.h"
#include "kernels/tape.h"
#include "nlp/models/onlstm.h"
#include "tests/nlp/lm_fixture.h"
#include "tests/test.h"

#define RTOL 1e-5

static struct gr_ctx *cpu_ctx(void)
{
    struct gr_ctx_config cc = gr_ctx_config_default();
    cc.device = GR_DEVICE_CPU;
    struct gr_ctx *ctx = NULL;
    if (gr_ctx_new(&ctx, &cc) < 0) {
        fprintf(stderr, "context: %s\n", gr_last_error());
        return NULL;
    }
    return ctx;
}

static struct gr_tensor *from_fx(struct gr_ctx *ctx, const struct fx_file *f,
                                 const char *name, struct gr_shape shape,
                                 int grad)
{
    float *v = fx_floats(f, name);
    struct gr_tensor *t = v ? gr_tensor_from_host(ctx, GR_F32, shape, v)
                            : NULL;
    free(v);
    if (t != NULL && grad) {
        gr_tensor_set_requires_grad(t, 1);
    }
    return t;
}

static void set_param(const struct fx_file *f, const char *name,
                      struct gr_tensor *p)
{
    float *v = fx_floats(f, name);
    CHECK_MSG(v != NULL && gr_tensor_set_host(p, v) == 0, "setting %s", name);
    free(v);
}

/* Deterministic pseudo-random floats in [lo, hi). */
static float urand(uint64_t *s, float lo, float hi)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return lo + (hi - lo) * (float)((*s >> 40) / 16777216.0);
}

/* ---- PyTorch fixtures ---- */

enum { V_FT, V_CFT_BATCH, V_CFT_TIME, V_FFT, N_VARIANTS };
static const char *const variant_names[N_VARIANTS] = {"ft", "cft_batch",
                                                      "cft_time", "fft"};

static void test_fixtures(const char *dir)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/fasttrees_cells.txt", dir);
    struct fx_file f;
    if (fx_load(&f, path) < 0) {
        CHECK(0);
        return;
    }
    const int IN = 10, H = 8, C = 2, B = 3, T = 5, M = 2 * (H / C);
    for (int v = 0; v < N_VARIANTS; v++) {
        struct gr_ctx *ctx = cpu_ctx();
        CHECK(ctx != NULL);
        if (ctx == NULL) {
            break;
        }
        const char *vn = variant_names[v];
        struct gr_rng rng = gr_rng_make(5, 6);
        struct gr_onlstm *ft = NULL;
        struct gr_cft cft;
        struct gr_fft fft;
        struct gr_onlstm ftl;
        struct gr_tensor *w_ih, *b_ih, *w_hh = NULL, *b_hh = NULL;
        if (v == V_FT) {
            CHECK(gr_ft_init(&ftl, ctx, "ft", IN, H, C, rng) == 0);
            ft = &ftl;
        } else if (v == V_FFT) {
            CHECK(gr_fft_init(&fft, ctx, "fft", IN, H, C, rng) == 0);
        } else {
            CHECK(gr_cft_init(&cft, ctx, "cft", IN, H, C,
                              v == V_CFT_BATCH ? GR_CONV_BATCH_COMPAT
                                               : GR_CONV_TIME,
                              rng) == 0);
            ft = &cft.ft;
            set_param(&f, "conv_w", cft.conv_w);
            set_param(&f, "conv_b", cft.conv_b);
        }
        if (v == V_FFT) {
            w_ih = fft.w_ih;
            b_ih = fft.b_ih;
        } else {
            w_ih = ft->w_ih;
            b_ih = ft->b_ih;
            w_hh = ft->w_hh;
            b_hh = ft->b_hh;
            set_param(&f, "w_hh", w_hh);
            set_param(&f, "b_hh", b_hh);
        }
        set_param(&f, "w_ih", w_ih);
        set_param(&f, "b_ih", b_ih);
        gr_step_reset(ctx);
        gr_zero_grad(ctx);
        struct gr_tensor *x = from_fx(ctx, &f, "x", gr_shape3(T, B, IN), 1);
        struct gr_tensor *h0 = from_fx(ctx, &f, "h0", gr_shape2(B, H), 1);
        struct gr_tensor *c0 = from_fx(ctx, &f, "c0", gr_shape2(B, H), 1);
        struct gr_tensor *prev =
            from_fx(ctx, &f, "prev", gr_shape3(GR_CFT_CONTEXT, B, M), 0);
        struct gr_tensor *next = NULL;
        struct gr_rnn_out o;
        int rc;
        if (v == V_FT) {
            rc = gr_onlstm_forward(ctx, ft, x, h0, c0, NULL, &o);
        } else if (v == V_FFT) {
            rc = gr_fft_forward(ctx, &fft, x, c0, &o);
        } else {
            rc = gr_cft_forward(ctx, &cft, x, prev, h0, c0, NULL, 0,
                                gr_rng_make(0, 0), &o, &next);
        }
        CHECK_MSG(rc == 0, "%s: %s", vn, gr_ctx_error(ctx));
        struct gr_tensor *ry = from_fx(ctx, &f, "ry", gr_shape3(T, B, H), 0);
        struct gr_tensor *rh = from_fx(ctx, &f, "rh", gr_shape2(B, H), 0);
        struct gr_tensor *rcs = from_fx(ctx, &f, "rc", gr_shape2(B, H), 0);
        struct gr_tensor *loss = gr_add(
            ctx,
            gr_add(ctx, gr_sum(ctx, gr_mul(ctx, o.y, ry)),
                   gr_sum(ctx, gr_mul(ctx, o.h, rh))),
            gr_sum(ctx, gr_mul(ctx, o.c, rcs)));
        CHECK_MSG(loss != NULL && gr_backward(ctx, loss) == 0, "%s: %s", vn,
                  gr_ctx_error(ctx));
        if (loss == NULL) {
            gr_ctx_free(ctx);
            continue;
        }
        double worst = 0.0;
        char name[96];
#define CMP(field, tensor)                                                    \
    snprintf(name, sizeof name, "%s.%s", vn, field);                          \
    worst = fmax(worst, fx_compare_tensor(&f, name, tensor, RTOL))
        CMP("y", o.y);
        CMP("h", o.h);
        CMP("c", o.c);
        CMP("df", o.df);
        CMP("di", o.di);
        CMP("loss", loss);
        CMP("grad.w_ih", w_ih->grad);
        CMP("grad.b_ih", b_ih->grad);
        CMP("grad.x", x->grad);
        CMP("grad.c0", c0->grad);
        if (v != V_FFT) {
            CMP("grad.w_hh", w_hh->grad);
            CMP("grad.b_hh", b_hh->grad);
            CMP("grad.h0", h0->grad);
        } else {
            /* no gate reads h_{t-1}: h0 takes no gradient at all */
            CHECK(h0->grad == NULL);
        }
        if (v == V_CFT_BATCH || v == V_CFT_TIME) {
            CMP("grad.conv_w", cft.conv_w->grad);
            CMP("grad.conv_b", cft.conv_b->grad);
        }
#undef CMP
        if (v == V_CFT_TIME) {
            /* the carried rows are the window's last two conv inputs */
            CHECK(next != NULL);
            if (next != NULL) {
                float *nx = malloc((size_t)next->numel * sizeof *nx);
                float *xs = fx_floats(&f, "x");
                gr_tensor_to_host(next, nx);
                int same = 1;
                for (int r = 0; r < GR_CFT_CONTEXT; r++) {
                    for (int b = 0; b < B; b++) {
                        for (int k = 0; k < M; k++) {
                            same &= nx[(r * B + b) * M + k] ==
                                    xs[((T - GR_CFT_CONTEXT + r) * B + b) *
                                           IN +
                                       k];
                        }
                    }
                }
                CHECK(same);
                free(nx);
                free(xs);
            }
        }
        printf("fixture %-9s worst error %.3g of the tensor's scale\n", vn,
               worst);
        gr_ctx_free(ctx);
    }
    fx_free(&f);
}

/* ---- the linear scan ---- */

/* c_t = a_t c_{t-1} + b_t in double; d_t = g_t + a_{t+1} d_{t+1}. */
static void scan_ref(const float *a, const float *b, const float *c0,
                     const float *g, int64_t t, int64_t n, double *c,
                     double *d)
{
    for (int64_t s = 0; s < t; s++) {
        for (int64_t j = 0; j < n; j++) {
            double prev = s ? c[(s - 1) * n + j] : (c0 ? c0[j] : 0.0);
            c[s * n + j] = (double)a[s * n + j] * prev + b[s * n + j];
        }
    }
    for (int64_t s = t - 1; s >= 0; s--) {
        for (int64_t j = 0; j < n; j++) {
            double nx = s + 1 < t ? (double)a[(s + 1) * n + j] *
                                        d[(s + 1) * n + j]
                                  : 0.0;
            d[s * n + j] = g[s * n + j] + nx;
        }
    }
}

static void test_scan_sequential(void)
{
    struct gr_ctx *ctx = cpu_ctx();
    if (ctx == NULL) {
        CHECK(0);
        return;
    }
    const int64_t n = 3, tmax = 1000;
    float *a = malloc((size_t)(tmax * n) * sizeof *a);
    float *b = malloc((size_t)(tmax * n) * sizeof *b);
    float *g = malloc((size_t)(tmax * n) * sizeof *g);
    float *got = malloc((size_t)(tmax * n) * sizeof *got);
    double *c = malloc((size_t)(tmax * n) * sizeof *c);
    double *d = malloc((size_t)(tmax * n) * sizeof *d);
    float c0[3] = {0.5f, -1.0f, 2.0f};
    uint64_t s = 7;
    for (int64_t i = 0; i < tmax * n; i++) {
        a[i] = urand(&s, 0.0f, 1.0f); /* f̂ lies in [0, 1] */
        b[i] = urand(&s, -1.0f, 1.0f);
        g[i] = urand(&s, -1.0f, 1.0f);
    }
    double worst_c = 0.0, worst_d = 0.0;
    for (int64_t t = 1; t <= tmax; t++) {
        gr_step_reset(ctx);
        gr_zero_grad(ctx);
        struct gr_tensor *ta = gr_tensor_from_host(ctx, GR_F32,
                                                   gr_shape2(t, n), a);
        struct gr_tensor *tb = gr_tensor_from_host(ctx, GR_F32,
                                                   gr_shape2(t, n), b);
        struct gr_tensor *tc0 = gr_tensor_from_host(ctx, GR_F32,
                                                    gr_shape1(n), c0);
        struct gr_tensor *tg = gr_tensor_from_host(ctx, GR_F32,
                                                   gr_shape2(t, n), g);
        gr_tensor_set_requires_grad(tb, 1);
        struct gr_tensor *tcc = gr_linear_scan(ctx, ta, tb, tc0);
        struct gr_tensor *loss = gr_sum(ctx, gr_mul(ctx, tcc, tg));
        if (loss == NULL || gr_backward(ctx, loss) < 0) {
            CHECK_MSG(0, "T %lld: %s", (long long)t, gr_ctx_error(ctx));
            break;
        }
        scan_ref(a, b, c0, g, t, n, c, d);
        gr_tensor_to_host(tcc, got);
        for (int64_t i = 0; i < t * n; i++) {
            worst_c = fmax(worst_c, fabs(got[i] - c[i]) / (1.0 + fabs(c[i])));
        }
        gr_tensor_to_host(tb->grad, got); /* ∂/∂b_t = d_t */
        for (int64_t i = 0; i < t * n; i++) {
            worst_d = fmax(worst_d, fabs(got[i] - d[i]) / (1.0 + fabs(d[i])));
        }
    }
    printf("scan vs sequential loop, T = 1..%lld: worst %.3g (c), %.3g "
           "(backward)\n",
           (long long)tmax, worst_c, worst_d);
    CHECK(worst_c < 1e-5);
    CHECK(worst_d < 1e-5);
    free(a);
    free(b);
    free(g);
    free(got);
    free(c);
    free(d);
    gr_ctx_free(ctx);
}

/* Central differences of L = Σ scan(a, b, c0)·r for every element of a,
 * b, c0 (double-checked: the analytic gradient scaled by 1.01 must fail). */
static double scan_loss(struct gr_ctx *ctx, const float *a, const float *b,
                        const float *c0, const float *r, int64_t t, int64_t n)
{
    gr_step_reset(ctx);
    struct gr_tensor *c = gr_linear_scan(
        ctx, gr_tensor_from_host(ctx, GR_F32, gr_shape3(t, 1, n), a),
        gr_tensor_from_host(ctx, GR_F32, gr_shape3(t, 1, n), b),
        gr_tensor_from_host(ctx, GR_F32, gr_shape2(1, n), c0));
    float *cv = malloc((size_t)(t * n) * sizeof *cv);
    gr_tensor_to_host(c, cv);
    double l = 0.0;
    for (int64_t i = 0; i < t * n; i++) {
        l += (double)cv[i] * r[i];
    }
    free(cv);
    return l;
}

static void test_scan_fd(void)
{
    struct gr_ctx *ctx = cpu_ctx();
    if (ctx == NULL) {
        CHECK(0);
        return;
    }
    enum { TT = 6, NN = 4 };
    float a[TT * NN], b[TT * NN], r[TT * NN], c0[NN];
    uint64_t s = 99;
    for (int i = 0; i < TT * NN; i++) {
        a[i] = urand(&s, 0.1f, 1.2f);
        b[i] = urand(&s, -1.0f, 1.0f);
        r[i] = urand(&s, -1.0f, 1.0f);
    }
    for (int i = 0; i < NN; i++) {
        c0[i] = urand(&s, -1.0f, 1.0f);
    }
    gr_step_reset(ctx);
    gr_zero_grad(ctx);
    struct gr_tensor *ta = gr_tensor_from_host(ctx, GR_F32,
                                               gr_shape3(TT, 1, NN), a);
    struct gr_tensor *tb = gr_tensor_from_host(ctx, GR_F32,
                                               gr_shape3(TT, 1, NN), b);
    struct gr_tensor *tc = gr_tensor_from_host(ctx, GR_F32, gr_shape2(1, NN),
                                               c0);
    gr_tensor_set_requires_grad(ta, 1);
    gr_tensor_set_requires_grad(tb, 1);
    gr_tensor_set_requires_grad(tc, 1);
    struct gr_tensor *loss = gr_sum(
        ctx, gr_mul(ctx, gr_linear_scan(ctx, ta, tb, tc),
                    gr_tensor_from_host(ctx, GR_F32, gr_shape3(TT, 1, NN),
                                        r)));
    CHECK(loss != NULL && gr_backward(ctx, loss) == 0);
    float ga[TT * NN], gb[TT * NN], gc[NN];
    gr_tensor_to_host(ta->grad, ga);
    gr_tensor_to_host(tb->grad, gb);
    gr_tensor_to_host(tc->grad, gc);
    float *xs[3] = {a, b, c0};
    float *gs[3] = {ga, gb, gc};
    int counts[3] = {TT * NN, TT * NN, NN};
    double worst = 0.0, worst_scaled = 0.0;
    const float eps = 1e-2f;
    for (int w = 0; w < 3; w++) {
        for (int i = 0; i < counts[w]; i++) {
            float keep = xs[w][i];
            double f[4];
            const float off[4] = {-2 * eps, -eps, eps, 2 * eps};
            for (int k = 0; k < 4; k++) {
                xs[w][i] = keep + off[k];
                f[k] = scan_loss(ctx, a, b, c0, r, TT, NN);
            }
            xs[w][i] = keep;
            /* 4-point stencil */
            double fd = (f[0] - 8 * f[1] + 8 * f[2] - f[3]) / (12.0 * eps);
            double err = fabs(fd - gs[w][i]) / (1.0 + fabs(fd));
            worst = fmax(worst, err);
            worst_scaled = fmax(worst_scaled, fabs(fd - 1.01 * gs[w][i]) /
                                                  (1.0 + fabs(fd)));
        }
    }
    printf("scan gradients vs finite differences: worst %.3g; 1.01x "
           "analytic: worst %.3g\n",
           worst, worst_scaled);
    CHECK(worst < 1e-3);
    CHECK(worst_scaled > 1e-3); /* the tolerance catches a 1% error */
    gr_ctx_free(ctx);
}

/* ---- Conv. FastTrees: causality and the carried context ---- */

static void fill_random(struct gr_tensor *t, uint64_t seed)
{
    float *v = malloc((size_t)t->numel * sizeof *v);
    uint64_t s = seed;
    for (int64_t i = 0; i < t->numel; i++) {
        v[i] = urand(&s, -1.0f, 1.0f);
    }
    gr_tensor_set_host(t, v);
    free(v);
}

static void cft_run(struct gr_ctx *ctx, const struct gr_cft *l,
                    const float *x, int T, int B, int IN, float *y)
{
    gr_step_reset(ctx);
    struct gr_tensor *tx = gr_tensor_from_host(ctx, GR_F32,
                                               gr_shape3(T, B, IN), x);
    struct gr_rnn_out o;
    CHECK(gr_cft_forward(ctx, l, tx, NULL, NULL, NULL, NULL, 0,
                         gr_rng_make(0, 0), &o, NULL) == 0);
    gr_tensor_to_host(o.y, y);
}

static void test_cft_causal_and_carry(void)
{
    struct gr_ctx *ctx = cpu_ctx();
    if (ctx == NULL) {
        CHECK(0);
        return;
    }
    const int IN = 12, H = 8, C = 2, B = 3, T = 8;
    struct gr_cft lt, lb;
    CHECK(gr_cft_init(&lt, ctx, "t", IN, H, C, GR_CONV_TIME,
                      gr_rng_make(1, 1)) == 0);
    CHECK(gr_cft_init(&lb, ctx, "b", IN, H, C, GR_CONV_BATCH_COMPAT,
                      gr_rng_make(1, 2)) == 0);
    /* a conv weight large enough to matter (the init is N(0, 0.01²)) */
    fill_random(lt.conv_w, 3);
    fill_random(lb.conv_w, 4);
    size_t nx = (size_t)T * B * IN, ny = (size_t)T * B * H;
    float *x = malloc(nx * sizeof *x), *x2 = malloc(nx * sizeof *x2);
    float *y = malloc(ny * sizeof *y), *y2 = malloc(ny * sizeof *y2);
    uint64_t s = 11;
    for (size_t i = 0; i < nx; i++) {
        x[i] = urand(&s, -1.0f, 1.0f);
    }
    cft_run(ctx, &lt, x, T, B, IN, y);
    int causal = 1, future_moves = 1;
    for (int t = 0; t + 1 < T; t++) {
        memcpy(x2, x, nx * sizeof *x);
        for (int k = 0; k < B * IN; k++) {
            x2[(size_t)(t + 1) * B * IN + (size_t)k] += 0.5f;
        }
        cft_run(ctx, &lt, x2, T, B, IN, y2);
        for (size_t i = 0; i < (size_t)(t + 1) * B * H; i++) {
            causal &= y[i] == y2[i];
        }
        double moved = 0.0;
        for (size_t i = (size_t)(t + 1) * B * H; i < (size_t)(t + 2) * B * H;
             i++) {
            moved = fmax(moved, fabs(y[i] - y2[i]));
        }
        future_moves &= moved > 1e-4;
    }
    CHECK_MSG(causal, "time axis: perturbing x_{t+1} changed some h_<=t");
    CHECK(future_moves);
    /* batch_compat: perturbing batch column 1 changes columns 0 and 2 at
     * the same step through the convolution (the reference's defect) */
    cft_run(ctx, &lb, x, T, B, IN, y);
    memcpy(x2, x, nx * sizeof *x);
    for (int k = 0; k < IN; k++) {
        x2[(size_t)(0 * B + 1) * IN + (size_t)k] += 0.5f;
    }
    cft_run(ctx, &lb, x2, T, B, IN, y2);
    double moved0 = 0.0;
    for (int k = 0; k < H; k++) {
        moved0 = fmax(moved0, fabs(y[k] - y2[k]));
    }
    CHECK_MSG(moved0 > 1e-4, "batch_compat: column 0 did not see column 1");

    /* carry: one window of 8 steps == windows of 5 and 3 with h, c and the
     * conv rows carried */
    cft_run(ctx, &lt, x, T, B, IN, y);
    const int T1 = 5, T2 = T - T1;
    gr_step_reset(ctx);
    struct gr_tensor *xa = gr_tensor_from_host(ctx, GR_F32,
                                               gr_shape3(T1, B, IN), x);
    struct gr_tensor *xb = gr_tensor_from_host(
        ctx, GR_F32, gr_shape3(T2, B, IN), x + (size_t)T1 * B * IN);
    struct gr_rnn_out o1, o2;
    struct gr_tensor *next = NULL;
    CHECK(gr_cft_forward(ctx, &lt, xa, NULL, NULL, NULL, NULL, 0,
                         gr_rng_make(0, 0), &o1, &next) == 0);
    CHECK(gr_cft_forward(ctx, &lt, xb, next, o1.h, o1.c, NULL, 0,
                         gr_rng_make(0, 0), &o2, NULL) == 0);
    gr_tensor_to_host(o1.y, y2);
    gr_tensor_to_host(o2.y, y2 + (size_t)T1 * B * H);
    double worst = 0.0;
    for (size_t i = 0; i < ny; i++) {
        worst = fmax(worst, fabs(y[i] - y2[i]));
    }
    CHECK_MSG(worst < 1e-6, "two windows differ from one by %.3g", worst);
    /* and without the carried rows the second window's first steps differ */
    CHECK(gr_cft_forward(ctx, &lt, xb, NULL, o1.h, o1.c, NULL, 0,
                         gr_rng_make(0, 0), &o2, NULL) == 0);
    gr_tensor_to_host(o2.y, y2 + (size_t)T1 * B * H);
    worst = 0.0;
    for (size_t i = (size_t)T1 * B * H; i < ny; i++) {
        worst = fmax(worst, fabs(y[i] - y2[i]));
    }
    CHECK_MSG(worst > 1e-4, "dropping the carried rows changed nothing");
    free(x);
    free(x2);
    free(y);
    free(y2);
    gr_ctx_free(ctx);
}

/* ---- parameter counts and the LMs ---- */

static void test_param_counts(void)
{
    struct nlp_lm_config cfg;
    const enum nlp_lm_kind kinds[3] = {NLP_LM_FT, NLP_LM_CFT, NLP_LM_FFT};
    const int64_t want[3] = {24670640, 24895580, 13439840};
    for (int k = 0; k < 3; k++) {
        nlp_lm_config_default(&cfg, kinds[k], 10000);
        CHECK_MSG(nlp_lm_param_count(&cfg) == want[k], "%s: %lld",
                  nlp_lm_kind_name(kinds[k]),
                  (long long)nlp_lm_param_count(&cfg));
    }
    nlp_lm_config_default(&cfg, NLP_LM_FFT, 10000);
    CHECK(nlp_lm_param_count_reference(&cfg) == 25232180);
    char line[200];
    nlp_lm_param_report(&cfg, line, sizeof line);
    CHECK_MSG(strcmp(line, "13,439,840 parameters: 13.44M (reference "
                           "allocates 25.23M, 11.79M unused)") == 0,
              "'%s'", line);
    nlp_lm_config_default(&cfg, NLP_LM_FT, 10000);
    nlp_lm_param_report(&cfg, line, sizeof line);
    CHECK_MSG(strcmp(line, "24,670,640 parameters") == 0, "'%s'", line);
    /* what init allocates equals the count, for every kind */
    for (int kind = 0; kind <= NLP_LM_FTLSTM; kind++) {
        struct gr_ctx *ctx = cpu_ctx();
        if (ctx == NULL) {
            CHECK(0);
            return;
        }
        nlp_lm_config_default(&cfg, (enum nlp_lm_kind)kind, 37);
        cfg.emsize = 12;
        cfg.nhid = 20;
        cfg.chunk = 4;
        struct nlp_lm lm;
        CHECK_MSG(nlp_lm_init(&lm, ctx, &cfg, 3) == 0, "%s", gr_last_error());
        CHECK_MSG(gr_param_count(ctx, "") == nlp_lm_param_count(&cfg),
                  "%s: allocated %lld, counted %lld",
                  nlp_lm_kind_name(cfg.kind),
                  (long long)gr_param_count(ctx, ""),
                  (long long)nlp_lm_param_count(&cfg));
        if (kind == NLP_LM_FFT) {
            int hh = 0;
            for (int i = 0; i < gr_ctx_n_named(ctx); i++) {
                const struct gr_tensor *t = gr_ctx_named(ctx, i);
                hh |= t->name && strstr(t->name, ".hh.") != NULL;
            }
            CHECK_MSG(!hh, "FFT allocated a recurrent weight");
            CHECK(nlp_lm_layer_w_hh(&lm, 0) == NULL);
        }
        gr_ctx_free(ctx);
    }
}

/* ftlstm (fasttrees.md §5) is an LSTM with the ON-LSTM recipe: in
 * evaluation it equals grove's AWD-LSTM kind with U scaled by (1 - wdrop)
 * (non-inverted DropConnect), and its defaults are the ON-LSTM's. */
static void copy_scaled(struct gr_tensor *dst, const struct gr_tensor *src,
                        float scale)
{
    float *v = malloc((size_t)src->numel * sizeof *v);
    gr_tensor_to_host(src, v);
    for (int64_t i = 0; i < src->numel; i++) {
        v[i] *= scale;
    }
    gr_tensor_set_host(dst, v);
    free(v);
}

static void test_ftlstm(void)
{
    struct nlp_lm_config ca, cb;
    nlp_lm_config_default(&ca, NLP_LM_FTLSTM, 31);
    CHECK(ca.dropout == 0.45f && ca.wdrop == 0.45f && ca.dropouti == 0.5f);
    CHECK(nlp_lm_kind_on_recipe(NLP_LM_FTLSTM) &&
          !nlp_lm_kind_ordered(NLP_LM_FTLSTM));
    ca.emsize = 8;
    ca.nhid = 12;
    cb = ca;
    cb.kind = NLP_LM_LSTM;
    struct gr_ctx *x = cpu_ctx(), *y = cpu_ctx();
    if (x == NULL || y == NULL) {
        CHECK(0);
        return;
    }
    struct nlp_lm a, b;
    CHECK(nlp_lm_init(&a, x, &ca, 1) == 0 && nlp_lm_init(&b, y, &cb, 2) == 0);
    copy_scaled(b.encoder, a.encoder, 1.0f);
    copy_scaled(b.decoder_bias, a.decoder_bias, 1.0f);
    for (int l = 0; l < ca.nlayers; l++) {
        copy_scaled(b.lstm[l].w_ih, a.lstm[l].w_ih, 1.0f);
        copy_scaled(b.lstm[l].b_ih, a.lstm[l].b_ih, 1.0f);
        copy_scaled(b.lstm[l].b_hh, a.lstm[l].b_hh, 1.0f);
        copy_scaled(b.lstm[l].w_hh, a.lstm[l].w_hh, 1.0f - ca.wdrop);
    }
    int32_t ids[5 * 2] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    float la[5 * 2 * 31], lb[5 * 2 * 31];
    struct gr_ctx *ctxs[2] = {x, y};
    struct nlp_lm *ms[2] = {&a, &b};
    float *outs[2] = {la, lb};
    for (int k = 0; k < 2; k++) {
        gr_step_reset(ctxs[k]);
        struct gr_tensor *in = gr_tensor_from_host(ctxs[k], GR_I32,
                                                   gr_shape2(5, 2), ids);
        struct nlp_lm_drop d = nlp_lm_drop_eval();
        struct nlp_lm_out o;
        CHECK(nlp_lm_forward(ms[k], NULL, in, NULL, &d, &o) == 0);
        gr_tensor_to_host(o.logits, outs[k]);
    }
    double worst = 0.0;
    for (int i = 0; i < 5 * 2 * 31; i++) {
        worst = fmax(worst, fabs(la[i] - lb[i]));
    }
    CHECK_MSG(worst < 1e-5, "ftlstm vs lstm with U(1-p): %.3g", worst);
    gr_ctx_free(x);
    gr_ctx_free(y);
}

static void test_lms(void)
{
    for (int kind = NLP_LM_FT; kind <= NLP_LM_FFT; kind++) {
        for (int axis = 0; axis < (kind == NLP_LM_CFT ? 2 : 1); axis++) {
            struct gr_ctx *ctx = cpu_ctx();
            if (ctx == NULL) {
                CHECK(0);
                return;
            }
            struct nlp_lm_config cfg;
            nlp_lm_config_default(&cfg, (enum nlp_lm_kind)kind, 29);
            cfg.emsize = 12;
            cfg.nhid = 20;
            cfg.chunk = 4;
            cfg.conv_axis = (enum gr_conv_axis)axis;
            struct nlp_lm lm;
            struct nlp_lm_state st;
            const int T = 6, B = 2;
            CHECK(nlp_lm_init(&lm, ctx, &cfg, 4) == 0);
            CHECK(nlp_lm_state_init(&st, &lm, "t", B) == 0);
            CHECK((st.x[0] != NULL) ==
                  (kind == NLP_LM_CFT && axis == GR_CONV_TIME));
            int32_t ids[(6 + 1) * 2];
            for (int i = 0; i < (T + 1) * B; i++) {
                ids[i] = (i * 7 + 3) % 29;
            }
            float first = 0.0f;
            for (int w = 0; w < 2; w++) {
                gr_step_reset(ctx);
                gr_zero_grad(ctx);
                struct gr_tensor *in =
                    gr_tensor_from_host(ctx, GR_I32, gr_shape2(T, B), ids);
                struct gr_tensor *tg =
                    gr_tensor_from_host(ctx, GR_I32, gr_shape1(T * B),
                                        ids + B);
                struct nlp_lm_drop d = nlp_lm_drop_train(1, 1, w);
                struct nlp_lm_out o;
                CHECK_MSG(nlp_lm_forward(&lm, &st, in, tg, &d, &o) == 0,
                          "%s: %s", nlp_lm_kind_name(cfg.kind),
                          gr_last_error());
                CHECK(o.df[1] != NULL && o.di[1] != NULL);
                CHECK(gr_backward(ctx, o.loss) == 0);
                CHECK(lm.encoder->grad != NULL);
                float l = gr_tensor_item(o.loss);
                CHECK(isfinite(l) && l > 0.0f);
                if (w == 0) {
                    first = l;
                } else {
                    CHECK(l != first); /* other masks, carried state */
                }
            }
            /* distances for parsing */
            float df[3 * 5 * 2];
            int32_t sid[5 * 2];
            for (int i = 0; i < 10; i++) {
                sid[i] = (i * 5 + 1) % 29;
            }
            CHECK_MSG(nlp_lm_sentences(&lm, sid, 5, 2, df, NULL) == 0, "%s",
                      gr_last_error());
            for (int i = 0; i < 30; i++) {
                CHECK(df[i] >= -1e-6f && df[i] <= 1.0f + 1e-6f);
            }
            /* config text round trip */
            struct nlp_text t = {0};
            CHECK(nlp_lm_config_write(&cfg, &t) == 0);
            struct nlp_lm_config back;
            CHECK_MSG(nlp_lm_config_read(t.s, "text", &back) == 0, "%s",
                      gr_last_error());
            CHECK(back.kind == cfg.kind);
            CHECK(back.conv_axis == cfg.conv_axis);
            nlp_text_free(&t);
            gr_ctx_free(ctx);
        }
    }
    enum nlp_lm_kind k;
    CHECK(nlp_lm_kind_parse("fft", &k) == 0 && k == NLP_LM_FFT);
    CHECK(nlp_lm_kind_parse("FT", &k) < 0);
    CHECK(strstr(gr_last_error(), "onlstm|lstm|ft|cft|fft|ftlstm") != NULL);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_nlp_fasttrees FIXTURE_DIR\n");
        return 2;
    }
    test_fixtures(argv[1]);
    test_scan_sequential();
    test_scan_fd();
    test_cft_causal_and_carry();
    test_param_counts();
    test_lms();
    test_ftlstm();
    return test_report("nlp_fasttrees");
}
