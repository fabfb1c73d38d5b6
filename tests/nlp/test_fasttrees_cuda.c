/* The FastTrees cells on CUDA against the CPU (kernels/fasttrees.h):
 *   - the parallel prefix scan (kernels/scan_cuda.cu) against a
 *     double-precision sequential loop for every T from 1 to 1,000 (37
 *     lanes: a full and a partial lane block), and at 4,099 lanes for a few
 *     T; forward and the gradients of a, b and c0, to 1e-5;
 *   - one forward/backward of FT, CFT (time, with carried rows; and
 *     batch_compat) and FFT with the same weights on both devices: outputs,
 *     distances and every gradient to 1e-4 of each tensor's scale;
 *   - one training window of each FastTrees LM (every dropout, the same
 *     Philox masks on both devices): loss and every parameter gradient.
 * Exits 77 (skipped) when no GPU is visible or CUDA is not compiled in. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/device.h"
#include "kernels/fasttrees.h"
#include "kernels/ops.h"
#include "kernels/tape.h"
#include "nlp/models/onlstm.h"
#include "tests/test.h"

static struct gr_ctx *new_ctx(enum gr_device dev)
{
    struct gr_ctx_config cc = gr_ctx_config_default();
    cc.device = dev;
    struct gr_ctx *ctx = NULL;
    if (gr_ctx_new(&ctx, &cc) < 0) {
        fprintf(stderr, "context: %s\n", gr_last_error());
        return NULL;
    }
    return ctx;
}

static float urand(uint64_t *s, float lo, float hi)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return lo + (hi - lo) * (float)((*s >> 40) / 16777216.0);
}

static double rel_diff(const struct gr_tensor *a, const struct gr_tensor *b)
{
    if (a == NULL || b == NULL || a->numel != b->numel) {
        return INFINITY;
    }
    float *x = malloc((size_t)a->numel * sizeof *x);
    float *y = malloc((size_t)b->numel * sizeof *y);
    gr_tensor_to_host(a, x);
    gr_tensor_to_host(b, y);
    double scale = 1e-12, worst = 0.0;
    for (int64_t i = 0; i < a->numel; i++) {
        scale = fmax(scale, fabs(x[i]));
    }
    for (int64_t i = 0; i < a->numel; i++) {
        worst = fmax(worst, fabs((double)x[i] - y[i]) / scale);
    }
    free(x);
    free(y);
    return worst;
}

/* ---- the scan against the sequential loop ---- */

static double scan_case(struct gr_ctx *ctx, const float *a, const float *b,
                        const float *c0, const float *g, int64_t t,
                        int64_t n, double *c, double *d)
{
    gr_step_reset(ctx);
    gr_zero_grad(ctx);
    struct gr_tensor *ta = gr_tensor_from_host(ctx, GR_F32, gr_shape2(t, n),
                                               a);
    struct gr_tensor *tb = gr_tensor_from_host(ctx, GR_F32, gr_shape2(t, n),
                                               b);
    struct gr_tensor *tc = gr_tensor_from_host(ctx, GR_F32, gr_shape1(n), c0);
    struct gr_tensor *tg = gr_tensor_from_host(ctx, GR_F32, gr_shape2(t, n),
                                               g);
    gr_tensor_set_requires_grad(ta, 1);
    gr_tensor_set_requires_grad(tb, 1);
    gr_tensor_set_requires_grad(tc, 1);
    struct gr_tensor *out = gr_linear_scan(ctx, ta, tb, tc);
    struct gr_tensor *loss = gr_sum(ctx, gr_mul(ctx, out, tg));
    if (loss == NULL || gr_backward(ctx, loss) < 0) {
        CHECK_MSG(0, "scan T %lld n %lld: %s", (long long)t, (long long)n,
                  gr_ctx_error(ctx));
        return INFINITY;
    }
    for (int64_t s = 0; s < t; s++) {
        for (int64_t j = 0; j < n; j++) {
            double prev = s ? c[(s - 1) * n + j] : c0[j];
            c[s * n + j] = (double)a[s * n + j] * prev + b[s * n + j];
        }
    }
    for (int64_t s = t - 1; s >= 0; s--) {
        for (int64_t j = 0; j < n; j++) {
            d[s * n + j] = g[s * n + j] +
                           (s + 1 < t ? (double)a[(s + 1) * n + j] *
                                            d[(s + 1) * n + j]
                                      : 0.0);
        }
    }
    float *got = malloc((size_t)(t * n) * sizeof *got);
    double worst = 0.0;
    gr_tensor_to_host(out, got);
    for (int64_t i = 0; i < t * n; i++) {
        worst = fmax(worst, fabs(got[i] - c[i]) / (1.0 + fabs(c[i])));
    }
    gr_tensor_to_host(tb->grad, got);
    for (int64_t i = 0; i < t * n; i++) {
        worst = fmax(worst, fabs(got[i] - d[i]) / (1.0 + fabs(d[i])));
    }
    gr_tensor_to_host(ta->grad, got);
    for (int64_t s = 0; s < t; s++) {
        for (int64_t j = 0; j < n; j++) {
            double cp = s ? c[(s - 1) * n + j] : c0[j];
            double want = d[s * n + j] * cp;
            worst = fmax(worst, fabs(got[s * n + j] - want) /
                                    (1.0 + fabs(want)));
        }
    }
    gr_tensor_to_host(tc->grad, got);
    for (int64_t j = 0; j < n; j++) {
        double want = (double)a[j] * d[j];
        worst = fmax(worst, fabs(got[j] - want) / (1.0 + fabs(want)));
    }
    free(got);
    return worst;
}

static void test_scan(struct gr_ctx *cu)
{
    const int64_t tmax = 1000, nmax = 4099;
    size_t cap = (size_t)(tmax * nmax);
    float *a = malloc(cap * sizeof *a), *b = malloc(cap * sizeof *b);
    float *g = malloc(cap * sizeof *g), *c0 = malloc(nmax * sizeof *c0);
    double *c = malloc(cap * sizeof *c), *d = malloc(cap * sizeof *d);
    uint64_t s = 5;
    for (size_t i = 0; i < cap; i++) {
        a[i] = urand(&s, 0.0f, 1.0f);
        b[i] = urand(&s, -1.0f, 1.0f);
        g[i] = urand(&s, -1.0f, 1.0f);
    }
    for (int64_t j = 0; j < nmax; j++) {
        c0[j] = urand(&s, -1.0f, 1.0f);
    }
    double worst = 0.0;
    for (int64_t t = 1; t <= tmax; t++) {
        worst = fmax(worst, scan_case(cu, a, b, c0, g, t, 37, c, d));
    }
    const int64_t ts[4] = {1, 17, 333, 1000};
    for (int i = 0; i < 4; i++) {
        worst = fmax(worst, scan_case(cu, a, b, c0, g, ts[i], nmax, c, d));
    }
    printf("CUDA prefix scan vs sequential loop (T 1..1000): worst %.3g\n",
           worst);
    CHECK(worst < 1e-5);
    free(a);
    free(b);
    free(g);
    free(c0);
    free(c);
    free(d);
}

/* ---- cells: CUDA vs CPU ---- */

enum { V_FT, V_CFT_TIME, V_CFT_BATCH, V_FFT, N_V };
static const char *const vnames[N_V] = {"ft", "cft_time", "cft_batch", "fft"};

struct cell_side {
    struct gr_ctx *ctx;
    struct gr_onlstm ft;
    struct gr_cft cft;
    struct gr_fft fft;
    struct gr_tensor *x, *h0, *c0, *prev;
    struct gr_rnn_out o;
};

static void fill(struct gr_tensor *t, uint64_t seed, float lo, float hi)
{
    float *v = malloc((size_t)t->numel * sizeof *v);
    for (int64_t i = 0; i < t->numel; i++) {
        v[i] = urand(&seed, lo, hi);
    }
    gr_tensor_set_host(t, v);
    free(v);
}

static int cell_run(struct cell_side *s, enum gr_device dev, int v)
{
    const int IN = 24, H = 16, C = 4, B = 5, T = 9, M = 2 * (H / C);
    s->ctx = new_ctx(dev);
    if (s->ctx == NULL) {
        return -1;
    }
    struct gr_ctx *ctx = s->ctx;
    struct gr_rng rng = gr_rng_make(8, 1);
    int rc;
    if (v == V_FT) {
        rc = gr_ft_init(&s->ft, ctx, "c", IN, H, C, rng);
    } else if (v == V_FFT) {
        rc = gr_fft_init(&s->fft, ctx, "c", IN, H, C, rng);
    } else {
        rc = gr_cft_init(&s->cft, ctx, "c", IN, H, C,
                         v == V_CFT_TIME ? GR_CONV_TIME
                                         : GR_CONV_BATCH_COMPAT,
                         rng);
        if (rc == 0) {
            fill(s->cft.conv_w, 4, -0.5f, 0.5f);
        }
    }
    if (rc < 0) {
        return rc;
    }
    gr_step_reset(ctx);
    gr_zero_grad(ctx);
    s->x = gr_tensor_new(ctx, GR_F32, gr_shape3(T, B, IN));
    s->h0 = gr_tensor_new(ctx, GR_F32, gr_shape2(B, H));
    s->c0 = gr_tensor_new(ctx, GR_F32, gr_shape2(B, H));
    s->prev = gr_tensor_new(ctx, GR_F32, gr_shape3(GR_CFT_CONTEXT, B, M));
    struct gr_tensor *r = gr_tensor_new(ctx, GR_F32, gr_shape3(T, B, H));
    fill(s->x, 1, -1.0f, 1.0f);
    fill(s->h0, 2, -0.5f, 0.5f);
    fill(s->c0, 3, -0.5f, 0.5f);
    fill(s->prev, 5, -1.0f, 1.0f);
    fill(r, 6, -1.0f, 1.0f);
    gr_tensor_set_requires_grad(s->x, 1);
    gr_tensor_set_requires_grad(s->h0, 1);
    gr_tensor_set_requires_grad(s->c0, 1);
    if (v == V_FT) {
        rc = gr_onlstm_forward(ctx, &s->ft, s->x, s->h0, s->c0, NULL, &s->o);
    } else if (v == V_FFT) {
        rc = gr_fft_forward(ctx, &s->fft, s->x, s->c0, &s->o);
    } else {
        /* training: the conv dropout's Philox mask is the same bits */
        rc = gr_cft_forward(ctx, &s->cft, s->x, s->prev, s->h0, s->c0, NULL,
                            1, gr_rng_make(3, 4), &s->o, NULL);
    }
    if (rc < 0) {
        return rc;
    }
    struct gr_tensor *loss = gr_add(ctx, gr_sum(ctx, gr_mul(ctx, s->o.y, r)),
                                    gr_sum(ctx, s->o.c));
    return loss ? gr_backward(ctx, loss) : ctx ? gr_ctx_status(ctx) : -1;
}

static void test_cells(void)
{
    for (int v = 0; v < N_V; v++) {
        struct cell_side cpu, cu;
        memset(&cpu, 0, sizeof cpu);
        memset(&cu, 0, sizeof cu);
        CHECK_MSG(cell_run(&cpu, GR_DEVICE_CPU, v) == 0, "%s cpu: %s",
                  vnames[v], gr_last_error());
        CHECK_MSG(cell_run(&cu, GR_DEVICE_CUDA, v) == 0, "%s cuda: %s",
                  vnames[v], gr_last_error());
        double w = 0.0;
        w = fmax(w, rel_diff(cpu.o.y, cu.o.y));
        w = fmax(w, rel_diff(cpu.o.c, cu.o.c));
        w = fmax(w, rel_diff(cpu.o.df, cu.o.df));
        w = fmax(w, rel_diff(cpu.o.di, cu.o.di));
        w = fmax(w, rel_diff(cpu.x->grad, cu.x->grad));
        w = fmax(w, rel_diff(cpu.c0->grad, cu.c0->grad));
        if (v != V_FFT) {
            w = fmax(w, rel_diff(cpu.h0->grad, cu.h0->grad));
        }
        for (int i = 0; i < gr_ctx_n_named(cpu.ctx); i++) {
            struct gr_tensor *p = gr_ctx_named(cpu.ctx, i);
            struct gr_tensor *q = gr_ctx_find(cu.ctx, p->name);
            if (p->grad != NULL) {
                double e = q ? rel_diff(p->grad, q->grad) : INFINITY;
                CHECK_MSG(e < 1e-4, "%s: gradient of %s off by %.3g",
                          vnames[v], p->name, e);
            }
        }
        printf("%-9s CUDA vs CPU: worst %.3g\n", vnames[v], w);
        CHECK(w < 1e-4);
        gr_ctx_free(cpu.ctx);
        gr_ctx_free(cu.ctx);
    }
}

/* ---- one LM training window per kind ---- */

static void test_lms(void)
{
    for (int kind = NLP_LM_FT; kind <= NLP_LM_FFT; kind++) {
        struct gr_ctx *ctx[2] = {new_ctx(GR_DEVICE_CPU),
                                 new_ctx(GR_DEVICE_CUDA)};
        struct nlp_lm lm[2];
        float loss[2] = {0, 0};
        struct nlp_lm_config cfg;
        nlp_lm_config_default(&cfg, (enum nlp_lm_kind)kind, 50);
        cfg.emsize = 16;
        cfg.nhid = 24;
        cfg.chunk = 4;
        const int T = 7, B = 4;
        int32_t ids[(7 + 1) * 4];
        for (int i = 0; i < (T + 1) * B; i++) {
            ids[i] = (i * 13 + 5) % 50;
        }
        for (int d = 0; d < 2; d++) {
            struct nlp_lm_state st;
            CHECK(ctx[d] != NULL && nlp_lm_init(&lm[d], ctx[d], &cfg, 2) == 0 &&
                  nlp_lm_state_init(&st, &lm[d], "t", B) == 0);
            gr_step_reset(ctx[d]);
            gr_zero_grad(ctx[d]);
            struct gr_tensor *in = gr_tensor_from_host(ctx[d], GR_I32,
                                                       gr_shape2(T, B), ids);
            struct gr_tensor *tg = gr_tensor_from_host(
                ctx[d], GR_I32, gr_shape1(T * B), ids + B);
            struct nlp_lm_drop dr = nlp_lm_drop_train(3, 1, 0);
            struct nlp_lm_out o;
            CHECK_MSG(nlp_lm_forward(&lm[d], &st, in, tg, &dr, &o) == 0,
                      "%s", gr_last_error());
            CHECK(gr_backward(ctx[d], o.loss) == 0);
            loss[d] = gr_tensor_item(o.loss);
        }
        CHECK_MSG(fabs(loss[0] - loss[1]) <= 1e-4 * fabs(loss[0]),
                  "%s: loss %.7g vs %.7g", nlp_lm_kind_name(cfg.kind),
                  loss[0], loss[1]);
        double w = 0.0;
        for (int i = 0; i < gr_ctx_n_named(ctx[0]); i++) {
            struct gr_tensor *p = gr_ctx_named(ctx[0], i);
            if (p->grad != NULL) {
                struct gr_tensor *q = gr_ctx_find(ctx[1], p->name);
                w = fmax(w, q ? rel_diff(p->grad, q->grad) : INFINITY);
            }
        }
        printf("LM %-3s CUDA vs CPU: loss %.7g / %.7g, gradients worst %.3g\n",
               nlp_lm_kind_name(cfg.kind), loss[0], loss[1], w);
        CHECK(w < 1e-4);
        gr_ctx_free(ctx[0]);
        gr_ctx_free(ctx[1]);
    }
}

int main(void)
{
    if (!gr_cuda_compiled()) {
        return test_skip("nlp_fasttrees_cuda", NULL,
                         "CUDA is not compiled into this build");
    }
    if (gr_cuda_device_count() == 0) {
        char why[256];
        gr_cuda_status(why, sizeof why);
        return test_skip("nlp_fasttrees_cuda", TEST_NEED_GPU,
                         "no GPU visible (%s)", why);
    }
    struct gr_ctx *cu = new_ctx(GR_DEVICE_CUDA);
    CHECK(cu != NULL);
    if (cu != NULL) {
        test_scan(cu);
        gr_ctx_free(cu);
    }
    test_cells();
    test_lms();
    return test_report("nlp_fasttrees_cuda");
}
