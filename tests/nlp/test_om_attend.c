/* The fused Ordered Memory attention gr_om_attend (kernels/ops.h):
 *   - against the composition of ops it replaces in nlp/models/om.c (row
 *     gathers, dropout, linear, layer norm, add, ReLU, dropout, linear,
 *     scale, the masked softmax, the mask from the previous cumulative
 *     pointer, the floor, both cumulative sums and their transposes), with
 *     dropout on and off, on a batch with cut slots and a padded row: p,
 *     cp, rcp and the gradients of all nine inputs of Σ wp⊙p + Σ wc⊙cp +
 *     Σ wr⊙rcp, to 1e-5;
 *   - central finite differences of that loss in entries of every input
 *     (the dropout masks are fixed by their keys and the allowed slots by
 *     bpos, so the loss is smooth away from ReLU kinks);
 *   - K = 0 (every row padded): zeros and no gradient; shape errors;
 *   - with --cuda: the op on CUDA against CPU (exit 77 without a GPU).
 *
 *   test_nlp_om_attend [--cuda]
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/random.h"
#include "kernels/device.h"
#include "kernels/ops.h"
#include "kernels/tape.h"
#include "tests/test.h"

#define N 5
#define B 4
#define D 6
#define CUT 1e-5f

struct inputs {
    float mh[N * B * D], q[B * D], pp[B * N], wk[D * D], bk[D], lg[D];
    float lb[D], wb[D], bb[1], wp[B * N], wc[N * B], wr[N * B];
    int valid[B];
};

struct outs {
    float p[B * N], cp[N * B], rcp[N * B];
    float gmh[N * B * D], gq[B * D], gpp[B * N], gwk[D * D], gbk[D];
    float glg[D], glb[D], gwb[D], gbb[1];
    double loss;
};

static void fill(struct gr_philox_stream *ps, float *x, int n, float s)
{
    for (int i = 0; i < n; i++) {
        x[i] = s * (2.0f * gr_u32_to_uniform(gr_philox_next_u32(ps)) - 1.0f);
    }
}

/* Random weights; previous pointers with leading zeros (cut slots), the
 * last row padded unless all_valid. */
static void make_inputs(struct inputs *in, uint64_t seed, int all_valid)
{
    struct gr_philox_stream ps = gr_philox_stream_init(seed, 0);
    fill(&ps, in->mh, N * B * D, 1.0f);
    fill(&ps, in->q, B * D, 1.0f);
    fill(&ps, in->wk, D * D, 0.5f);
    fill(&ps, in->bk, D, 0.2f);
    fill(&ps, in->lg, D, 0.5f);
    for (int i = 0; i < D; i++) {
        in->lg[i] += 1.0f;
    }
    fill(&ps, in->lb, D, 0.3f);
    fill(&ps, in->wb, D, 1.5f);
    fill(&ps, in->bb, 1, 0.2f);
    fill(&ps, in->wp, B * N, 1.0f);
    fill(&ps, in->wc, N * B, 1.0f);
    fill(&ps, in->wr, N * B, 1.0f);
    for (int b = 0; b < B; b++) {
        in->valid[b] = all_valid || b < B - 1;
        float s = 0.0f;
        for (int i = 0; i < N; i++) {
            float u = gr_u32_to_uniform(gr_philox_next_u32(&ps));
            /* row b has b leading zeros (row 0 none) */
            in->pp[b * N + i] = i < b ? 0.0f : 0.1f + u;
            s += in->pp[b * N + i];
        }
        for (int i = 0; i < N; i++) {
            in->pp[b * N + i] /= s;
        }
    }
}

/* The allowed pairs as nlp/models/om.c computes them. Returns K. */
static int make_index(const struct inputs *in, int32_t *kidx, int32_t *qidx,
                      int32_t *bpos, float *smask, float *cut)
{
    int K = 0;
    for (int b = 0; b < B; b++) {
        float c[N];
        float acc = 0.0f;
        for (int i = 0; i < N; i++) {
            acc += in->pp[b * N + i];
            c[i] = acc;
        }
        for (int i = 0; i < N; i++) {
            int ok = i == N - 1 || c[i + 1] >= CUT;
            if (i < N - 1) {
                cut[b * (N - 1) + i] = ok ? 1.0f : 0.0f;
            }
            if (ok && in->valid[b]) {
                kidx[K] = i * B + b;
                qidx[K] = b;
                bpos[b * N + i] = K++;
                smask[b * N + i] = 0.0f;
            } else {
                bpos[b * N + i] = -1;
                smask[b * N + i] = -INFINITY;
            }
        }
    }
    return K;
}

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

static struct gr_tensor *leaf(struct gr_ctx *ctx, const float *x,
                              struct gr_shape s)
{
    struct gr_tensor *t = gr_tensor_from_host(ctx, GR_F32, s, x);
    gr_tensor_set_requires_grad(t, 1);
    return t;
}

static void grad(struct gr_tensor *t, float *out)
{
    if (t->grad == NULL) {
        memset(out, 0, (size_t)t->numel * sizeof *out);
        return;
    }
    CHECK(gr_tensor_to_host(t->grad, out) == 0);
}

static struct gr_ctx *run_ctx[2];

static void free_run_ctx(void)
{
    for (int i = 0; i < 2; i++) {
        if (run_ctx[i] != NULL) {
            gr_ctx_free(run_ctx[i]);
            run_ctx[i] = NULL;
        }
    }
}

static struct gr_tensor *weighted(struct gr_ctx *ctx, struct gr_tensor *x,
                                  const float *w)
{
    return gr_sum(ctx, gr_mul(ctx, x,
                              gr_tensor_from_host(ctx, GR_F32,
                                                  gr_tensor_shape(x), w)));
}

/* One forward and backward: fused (gr_om_attend) or the composition. */
static int run(enum gr_device dev, const struct inputs *in, int fused,
               float pd, struct outs *o)
{
    int slot = dev == GR_DEVICE_CPU ? 0 : 1;
    if (run_ctx[slot] == NULL) {
        run_ctx[slot] = new_ctx(dev);
    }
    struct gr_ctx *ctx = run_ctx[slot];
    if (ctx == NULL) {
        return -1;
    }
    int32_t kidx[N * B], qidx[N * B], bpos[B * N], rev[B * N];
    float smask[B * N], cut[B * (N - 1)];
    const int K = make_index(in, kidx, qidx, bpos, smask, cut);
    gr_step_reset(ctx);
    struct gr_tensor *mh = leaf(ctx, in->mh, gr_shape3(N, B, D));
    struct gr_tensor *q = leaf(ctx, in->q, gr_shape2(B, D));
    struct gr_tensor *pp = leaf(ctx, in->pp, gr_shape2(B, N));
    struct gr_tensor *wk = leaf(ctx, in->wk, gr_shape2(D, D));
    struct gr_tensor *bk = leaf(ctx, in->bk, gr_shape1(D));
    struct gr_tensor *lg = leaf(ctx, in->lg, gr_shape1(D));
    struct gr_tensor *lb = leaf(ctx, in->lb, gr_shape1(D));
    struct gr_tensor *wb = leaf(ctx, in->wb, gr_shape2(1, D));
    struct gr_tensor *bb = leaf(ctx, in->bb, gr_shape1(1));
    struct gr_rng rk = gr_rng_make(17, 3), rb = gr_rng_make(17, 4);
    struct gr_tensor *kt = K > 0 ? gr_tensor_from_host(ctx, GR_I32,
                                                       gr_shape1(K), kidx)
                                 : NULL;
    struct gr_tensor *qt = K > 0 ? gr_tensor_from_host(ctx, GR_I32,
                                                       gr_shape1(K), qidx)
                                 : NULL;
    struct gr_tensor *p = NULL, *cpT = NULL, *rcpT = NULL;
    if (fused) {
        const struct gr_om_attend_w w = {wk, bk, lg, lb, wb, bb};
        struct gr_tensor *bt = gr_tensor_from_host(ctx, GR_I32,
                                                   gr_shape2(B, N), bpos);
        CHECK_MSG(gr_om_attend(ctx, mh, q, pp, kt, qt, bt, &w, 1e-5f, pd, rk,
                               rb, &p, &cpT, &rcpT) == 0,
                  "%s", gr_ctx_error(ctx));
    } else {
        /* nlp/models/om.c's composition (GROVE_OM_UNFUSED=1) */
        for (int j = 0; j < B * N; j++) {
            if (bpos[j] < 0) {
                bpos[j] = K;
            }
            rev[j] = N - 1 - j % N;
        }
        struct gr_tensor *beta;
        if (K > 0) {
            struct gr_tensor *rows = gr_embedding(
                ctx, gr_reshape(ctx, mh, gr_shape2(N * B, D)), kt);
            if (pd > 0.0f) {
                rows = gr_dropout(ctx, rows, pd, rk);
            }
            struct gr_tensor *k =
                gr_layer_norm(ctx, gr_linear(ctx, rows, wk, bk), lg, lb,
                              1e-5f);
            struct gr_tensor *a =
                gr_relu(ctx, gr_add(ctx, k, gr_embedding(ctx, q, qt)));
            if (pd > 0.0f) {
                a = gr_dropout(ctx, a, pd, rb);
            }
            struct gr_tensor *s = gr_scale(ctx, gr_linear(ctx, a, wb, bb),
                                           1.0f / sqrtf((float)D));
            struct gr_tensor *cat[2] = {s, gr_zeros(ctx, gr_shape2(1, 1))};
            beta = gr_reshape(
                ctx,
                gr_embedding(ctx, gr_concat(ctx, 2, cat, 0),
                             gr_tensor_from_host(ctx, GR_I32,
                                                 gr_shape1(B * N), bpos)),
                gr_shape2(B, N));
        } else {
            beta = gr_zeros(ctx, gr_shape2(B, N));
        }
        struct gr_tensor *c = gr_cumsum(ctx, pp);
        struct gr_tensor *mparts[2] = {
            gr_mul(ctx, gr_slice(ctx, c, 1, 1, N - 1),
                   gr_tensor_from_host(ctx, GR_F32, gr_shape2(B, N - 1),
                                       cut)),
            gr_full(ctx, gr_shape2(B, 1), 1.0f)};
        struct gr_tensor *e = gr_mul(
            ctx,
            gr_softmax(ctx, beta,
                       gr_tensor_from_host(ctx, GR_F32, gr_shape2(B, N),
                                           smask)),
            gr_concat(ctx, 2, mparts, 1));
        struct gr_tensor *sum = gr_maximum(
            ctx, gr_reshape(ctx, gr_sum_dim(ctx, e, 1), gr_shape2(B, 1)),
            gr_full(ctx, gr_shape1(1), 1e-12f));
        p = gr_div(ctx, e, sum);
        struct gr_tensor *rv = gr_tensor_from_host(ctx, GR_I32,
                                                   gr_shape2(B, N), rev);
        cpT = gr_reshape(ctx, gr_transpose(ctx, gr_cumsum(ctx, p), 0, 1),
                         gr_shape3(N, B, 1));
        rcpT = gr_reshape(
            ctx,
            gr_transpose(ctx,
                         gr_gather(ctx,
                                   gr_cumsum(ctx, gr_gather(ctx, p, rv)),
                                   rv),
                         0, 1),
            gr_shape3(N, B, 1));
    }
    struct gr_tensor *loss = NULL;
    if (p != NULL && cpT != NULL && rcpT != NULL) {
        loss = gr_add(ctx, gr_add(ctx, weighted(ctx, p, in->wp),
                                  weighted(ctx, cpT, in->wc)),
                      weighted(ctx, rcpT, in->wr));
    }
    CHECK_MSG(loss != NULL, "%s", gr_ctx_error(ctx));
    if (loss == NULL) {
        gr_ctx_free(ctx);
        run_ctx[slot] = NULL;
        return -1;
    }
    o->loss = gr_tensor_item(loss);
    CHECK_MSG(gr_backward(ctx, loss) == 0, "%s", gr_last_error());
    CHECK(gr_tensor_to_host(p, o->p) == 0);
    CHECK(gr_tensor_to_host(cpT, o->cp) == 0);
    CHECK(gr_tensor_to_host(rcpT, o->rcp) == 0);
    grad(mh, o->gmh);
    grad(q, o->gq);
    grad(pp, o->gpp);
    grad(wk, o->gwk);
    grad(bk, o->gbk);
    grad(lg, o->glg);
    grad(lb, o->glb);
    grad(wb, o->gwb);
    grad(bb, o->gbb);
    return 0;
}

/* Largest difference relative to the larger array's scale. */
static double rel(const float *a, const float *b, int n)
{
    double scale = 1e-6, worst = 0.0;
    for (int i = 0; i < n; i++) {
        scale = fmax(scale, fabs(b[i]));
    }
    for (int i = 0; i < n; i++) {
        worst = fmax(worst, fabs((double)a[i] - b[i]) / scale);
    }
    return worst;
}

static int verbose = 0;

static double compare(const struct outs *a, const struct outs *b)
{
    if (verbose) {
        fprintf(stderr, "p %g cp %g rcp %g gmh %g gq %g gpp %g gwk %g gbk %g "
                "glg %g glb %g gwb %g gbb %g\n", rel(a->p, b->p, B * N),
                rel(a->cp, b->cp, N * B), rel(a->rcp, b->rcp, N * B),
                rel(a->gmh, b->gmh, N * B * D), rel(a->gq, b->gq, B * D),
                rel(a->gpp, b->gpp, B * N), rel(a->gwk, b->gwk, D * D),
                rel(a->gbk, b->gbk, D), rel(a->glg, b->glg, D),
                rel(a->glb, b->glb, D), rel(a->gwb, b->gwb, D),
                rel(a->gbb, b->gbb, 1));
    }
    double w = rel(a->p, b->p, B * N);
    w = fmax(w, rel(a->cp, b->cp, N * B));
    w = fmax(w, rel(a->rcp, b->rcp, N * B));
    w = fmax(w, rel(a->gmh, b->gmh, N * B * D));
    w = fmax(w, rel(a->gq, b->gq, B * D));
    w = fmax(w, rel(a->gpp, b->gpp, B * N));
    w = fmax(w, rel(a->gwk, b->gwk, D * D));
    w = fmax(w, rel(a->gbk, b->gbk, D));
    w = fmax(w, rel(a->glg, b->glg, D));
    w = fmax(w, rel(a->glb, b->glb, D));
    w = fmax(w, rel(a->gwb, b->gwb, D));
    /* ∂/∂b_β is 0 but for rounding (a shift of every allowed score):
     * measured on the scale of ∂/∂w_β */
    double sb = 1e-6;
    for (int i = 0; i < D; i++) {
        sb = fmax(sb, fabs(b->gwb[i]));
    }
    w = fmax(w, fabs((double)a->gbb[0] - b->gbb[0]) / sb);
    return w;
}

static double abs_sum(const float *x, int n)
{
    double s = 0.0;
    for (int i = 0; i < n; i++) {
        s += fabs(x[i]);
    }
    return s;
}

static void test_against_composition(void)
{
    static struct inputs in;
    static struct outs f, c;
    for (int all = 0; all < 2; all++) {
        make_inputs(&in, 5 + (uint64_t)all, all);
        const float rates[2] = {0.0f, 0.3f};
        for (int k = 0; k < 2; k++) {
            if (run(GR_DEVICE_CPU, &in, 1, rates[k], &f) < 0 ||
                run(GR_DEVICE_CPU, &in, 0, rates[k], &c) < 0) {
                return;
            }
            double w = compare(&f, &c);
            CHECK_MSG(w < 1e-5, "fused vs composition (p %g, padded row "
                      "%d): %g", (double)rates[k], !all, w);
            CHECK_NEAR(f.loss, c.loss, 1e-5 * fmax(1.0, fabs(c.loss)));
            /* every gradient is really there (the checks have teeth) */
            CHECK(abs_sum(c.gmh, N * B * D) > 1e-3 &&
                  abs_sum(c.gq, B * D) > 1e-3 &&
                  abs_sum(c.gpp, B * N) > 1e-3 &&
                  abs_sum(c.gwk, D * D) > 1e-3 && abs_sum(c.gwb, D) > 1e-3);
        }
    }
    /* the pointer rows: a distribution on real rows, zeros on the padded
     * one, nothing on cut slots, and rcp[0] = cp[N-1] = 1 */
    make_inputs(&in, 5, 0);
    run(GR_DEVICE_CPU, &in, 1, 0.0f, &f);
    for (int b = 0; b < B; b++) {
        double s = 0.0;
        for (int i = 0; i < N; i++) {
            s += f.p[b * N + i];
        }
        CHECK_NEAR(s, b < B - 1 ? 1.0 : 0.0, 1e-6);
        CHECK_NEAR(f.cp[(N - 1) * B + b], s, 1e-6);
        CHECK_NEAR(f.rcp[b], s, 1e-6);
    }
    /* row 3 is padded; row 2 has two leading zeros: c_1 = 0 cuts slot 0 */
    CHECK(f.p[2 * N + 0] == 0.0f && f.p[2 * N + 1] > 0.0f);
    /* the comparison can fail: another dropout rate changes it */
    run(GR_DEVICE_CPU, &in, 1, 0.3f, &f);
    run(GR_DEVICE_CPU, &in, 0, 0.2f, &c);
    CHECK(compare(&f, &c) > 1e-3);
}

/* Central differences of the fused op's loss in one input element. */
static double fd(struct inputs *in, float *x, float pd)
{
    static struct outs o;
    const float eps = getenv("OM_ATTEND_FD_EPS")
                          ? (float)atof(getenv("OM_ATTEND_FD_EPS"))
                          : 3e-4f;
    const float x0 = *x;
    *x = x0 + eps;
    run(GR_DEVICE_CPU, in, 1, pd, &o);
    double lp = o.loss;
    *x = x0 - eps;
    run(GR_DEVICE_CPU, in, 1, pd, &o);
    double lm = o.loss;
    *x = x0;
    return (lp - lm) / (2.0 * eps);
}

static void test_finite_differences(void)
{
    static struct inputs in;
    static struct outs o;
    make_inputs(&in, 9, 0);
    /* the allowed set is fixed by the unperturbed pointer */
    const float rates[2] = {0.0f, 0.25f};
    for (int k = 0; k < 2; k++) {
        float pd = rates[k];
        if (run(GR_DEVICE_CPU, &in, 1, pd, &o) < 0) {
            return;
        }
        struct {
            float *x;
            const float *g;
            int n;
            const char *name;
        } cases[9] = {
            {in.mh, o.gmh, N * B * D, "mh"}, {in.q, o.gq, B * D, "q"},
            {in.pp, o.gpp, B * N, "p_prev"}, {in.wk, o.gwk, D * D, "wk"},
            {in.bk, o.gbk, D, "bk"},         {in.lg, o.glg, D, "ln_g"},
            {in.lb, o.glb, D, "ln_b"},       {in.wb, o.gwb, D, "wb"},
            {in.bb, o.gbb, 1, "bb"},
        };
        int checked = 0, bad = 0;
        double worst = 0.0;
        for (int c = 0; c < 9; c++) {
            for (int j = 0; j < 7; j++) {
                int e = (j * 37 + c * 11) % cases[c].n;
                if (cases[c].x == in.pp && (e / N) < B - 1 &&
                    in.pp[e] == 0.0f) {
                    /* a leading zero: moving it moves the cut, which the
                     * op takes as given (bpos) */
                    e = (e / N) * N + N - 1;
                }
                double num = fd(&in, cases[c].x + e, pd);
                double ana = cases[c].g[e];
                double err = fabs(num - ana) / fmax(0.1, fabs(num));
                worst = fmax(worst, err);
                bad += err > 2e-2;
                checked++;
                if (err > 2e-2) {
                    fprintf(stderr, "  p %g %s[%d]: analytic %.6g, "
                            "numeric %.6g\n", (double)pd, cases[c].name, e,
                            ana, num);
                }
            }
        }
        /* a ReLU kink inside ±eps can break one difference */
        CHECK_MSG(checked == 63 && bad <= 1, "p %g: %d of %d differences "
                  "off (worst %g)", (double)pd, bad, checked, worst);
    }
}

static void test_empty_and_errors(void)
{
    static struct inputs in;
    static struct outs o;
    make_inputs(&in, 3, 0);
    for (int b = 0; b < B; b++) {
        in.valid[b] = 0;
    }
    if (run(GR_DEVICE_CPU, &in, 1, 0.2f, &o) == 0) {
        CHECK(abs_sum(o.p, B * N) == 0.0 && abs_sum(o.cp, N * B) == 0.0 &&
              abs_sum(o.rcp, N * B) == 0.0);
        CHECK(abs_sum(o.gpp, B * N) == 0.0 && abs_sum(o.gmh, N * B * D) ==
                                                  0.0);
    }
    struct gr_ctx *ctx = new_ctx(GR_DEVICE_CPU);
    if (ctx == NULL) {
        return;
    }
    gr_step_reset(ctx);
    struct gr_tensor *mh = gr_zeros(ctx, gr_shape3(N, B, D));
    struct gr_tensor *q = gr_zeros(ctx, gr_shape2(B, D));
    struct gr_tensor *pp = gr_zeros(ctx, gr_shape2(B, N + 1));
    int32_t bpos[B * N];
    memset(bpos, 0xff, sizeof bpos);
    struct gr_tensor *bt = gr_tensor_from_host(ctx, GR_I32, gr_shape2(B, N),
                                               bpos);
    struct gr_tensor *wk = gr_zeros(ctx, gr_shape2(D, D));
    struct gr_tensor *v = gr_zeros(ctx, gr_shape1(D));
    struct gr_tensor *wb = gr_zeros(ctx, gr_shape2(1, D));
    struct gr_tensor *bb = gr_zeros(ctx, gr_shape1(1));
    const struct gr_om_attend_w w = {wk, v, v, v, wb, bb};
    struct gr_tensor *p, *cp, *rcp;
    struct gr_rng r = gr_rng_make(1, 1);
    CHECK(gr_om_attend(ctx, mh, q, pp, NULL, NULL, bt, &w, 1e-5f, 0.0f, r, r,
                       &p, &cp, &rcp) < 0);
    CHECK(p == NULL && cp == NULL && rcp == NULL);
    CHECK_STR_CONTAINS(gr_ctx_error(ctx), "gr_om_attend: want mh [N, B, D]");
    gr_ctx_free(ctx);
    ctx = new_ctx(GR_DEVICE_CPU);
    if (ctx == NULL) {
        return;
    }
    gr_step_reset(ctx);
    mh = gr_zeros(ctx, gr_shape3(N, B, D));
    q = gr_zeros(ctx, gr_shape2(B, D));
    pp = gr_zeros(ctx, gr_shape2(B, N));
    bt = gr_tensor_from_host(ctx, GR_I32, gr_shape2(B, N), bpos);
    wk = gr_zeros(ctx, gr_shape2(D, D + 1));
    v = gr_zeros(ctx, gr_shape1(D));
    wb = gr_zeros(ctx, gr_shape2(1, D));
    bb = gr_zeros(ctx, gr_shape1(1));
    const struct gr_om_attend_w w2 = {wk, v, v, v, wb, bb};
    CHECK(gr_om_attend(ctx, mh, q, pp, NULL, NULL, bt, &w2, 1e-5f, 0.0f, r,
                       r, &p, &cp, &rcp) < 0);
    CHECK_STR_CONTAINS(gr_ctx_error(ctx), "want wk [D, D]");
    gr_ctx_free(ctx);
}

static int cuda_parity(void)
{
    if (!gr_cuda_compiled()) {
        return test_skip("nlp_om_attend_cuda", NULL,
                         "CUDA is not compiled in (-DGROVE_CUDA=ON)");
    }
    if (gr_cuda_device_count() < 1) {
        return test_skip("nlp_om_attend_cuda", TEST_NEED_GPU,
                         "no GPU visible");
    }
    static struct inputs in;
    static struct outs c, g;
    for (int all = 0; all < 2; all++) {
        make_inputs(&in, 13 + (uint64_t)all, all);
        const float rates[2] = {0.0f, 0.3f};
        for (int k = 0; k < 2; k++) {
            if (run(GR_DEVICE_CPU, &in, 1, rates[k], &c) < 0 ||
                run(GR_DEVICE_CUDA, &in, 1, rates[k], &g) < 0) {
                free_run_ctx();
                return test_report("nlp_om_attend_cuda");
            }
            double w = compare(&g, &c);
            CHECK_MSG(w < 1e-4, "CUDA vs CPU (p %g, padded row %d): %g",
                      (double)rates[k], !all, w);
        }
    }
    free_run_ctx();
    return test_report("nlp_om_attend_cuda");
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--cuda") == 0) {
        return cuda_parity();
    }
    verbose = getenv("OM_ATTEND_VERBOSE") != NULL;
    test_against_composition();
    test_finite_differences();
    test_empty_and_errors();
    free_run_ctx();
    return test_report("nlp_om_attend");
}
