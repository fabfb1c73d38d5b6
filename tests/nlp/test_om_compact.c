#define _POSIX_C_SOURCE 200809L
/* Ordered Memory's compaction of finished rows (nlp/models/om.h): once a
 * row's last real step is behind, the fused path drops it from every
 * tensor of the step; GROVE_OM_FULL_BATCH=1 keeps every row (the path
 * before compaction). On batches where rows end at different steps (right
 * padding, a row with no real token, trailing all-padding steps) and on a
 * left-padded batch, with dropout on, both settings must give the same
 * values of y and p at every step and of the loss, and the same
 * gradients of every parameter and of the embedded input up to rounding
 * (1e-6 relative: the same terms, associated differently where a cell
 * takes its rows directly instead of gathered). Slot counts 12, 5 and 4
 * (every slot allowed before the rows end), and the second direction's
 * parameters.
 *
 *   test_nlp_om_compact
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/random.h"
#include "kernels/ops.h"
#include "kernels/tape.h"
#include "nlp/models/om.h"
#include "tests/test.h"

#define T 9
#define B 6
#define DIN 7
#define DH 8

struct result {
    float y[T * B * DH];
    float *p; /* [T, B, N] */
    float gx[T * B * DIN];
    float *gparams; /* every named tensor's gradient, in context order */
    int64_t n_params;
    double loss;
};

/* lengths per row: right padding with rows ending at every step, one row
 * with no real token, the longest row shorter than T (trailing steps all
 * padding); left: the same lengths at the end of the window. */
static const int len_of[B] = {5, 1, 7, 0, 3, 2};

static void make_valid(uint8_t *valid, int left)
{
    for (int t = 0; t < T; t++) {
        for (int b = 0; b < B; b++) {
            int on = left ? t >= T - len_of[b] : t < len_of[b];
            valid[t * B + b] = (uint8_t)on;
        }
    }
}

static int run(int full, int left, int nslot, int bidir, struct result *r)
{
    if (full) {
        setenv("GROVE_OM_FULL_BATCH", "1", 1);
    } else {
        unsetenv("GROVE_OM_FULL_BATCH");
    }
    struct gr_ctx_config cc = gr_ctx_config_default();
    cc.device = GR_DEVICE_CPU;
    struct gr_ctx *ctx = NULL;
    if (gr_ctx_new(&ctx, &cc) < 0) {
        fprintf(stderr, "context: %s\n", gr_last_error());
        return -1;
    }
    struct nlp_om_config cfg;
    nlp_om_config_default(&cfg, NLP_OM_LOGIC);
    cfg.emsize = DIN;
    cfg.nhid = DH;
    cfg.bidirection = bidir;
    struct nlp_om om;
    int rc = nlp_om_init(&om, ctx, &cfg, 4242);
    CHECK_MSG(rc == 0, "%s", gr_last_error());
    if (rc < 0) {
        gr_ctx_free(ctx);
        return -1;
    }
    uint8_t valid[T * B];
    make_valid(valid, left);
    float xh[T * B * DIN];
    struct gr_philox_stream ps = gr_philox_stream_init(99, (uint64_t)left);
    for (int i = 0; i < T * B * DIN; i++) {
        xh[i] = 2.0f * gr_u32_to_uniform(gr_philox_next_u32(&ps)) - 1.0f;
    }
    gr_step_reset(ctx);
    gr_zero_grad(ctx);
    struct gr_tensor *x = gr_tensor_from_host(ctx, GR_F32,
                                              gr_shape3(T, B, DIN), xh);
    gr_tensor_set_requires_grad(x, 1);
    struct nlp_om_run rr = nlp_om_run_train(7, 3, nslot);
    struct nlp_om_seq seq;
    rc = nlp_om_forward(&om, bidir, x, valid, &rr, &seq);
    CHECK_MSG(rc == 0, "%s", gr_last_error());
    /* a loss that reaches every y and p (weights from a fixed stream) */
    struct gr_tensor *loss = NULL;
    if (rc == 0) {
        float *wy = malloc(sizeof(float) * T * B * DH);
        float *wp = malloc(sizeof(float) * (size_t)T * B * nslot);
        for (int i = 0; i < T * B * DH; i++) {
            wy[i] = gr_u32_to_uniform(gr_philox_next_u32(&ps)) - 0.5f;
        }
        for (int i = 0; i < T * B * nslot; i++) {
            wp[i] = gr_u32_to_uniform(gr_philox_next_u32(&ps)) - 0.5f;
        }
        loss = gr_add(
            ctx,
            gr_sum(ctx, gr_mul(ctx, seq.y,
                               gr_tensor_from_host(ctx, GR_F32,
                                                   gr_shape3(T, B, DH), wy))),
            gr_sum(ctx,
                   gr_mul(ctx, seq.p,
                          gr_tensor_from_host(ctx, GR_F32,
                                              gr_shape3(T, B, nslot), wp))));
        free(wy);
        free(wp);
        CHECK_MSG(loss != NULL, "%s", gr_ctx_error(ctx));
    }
    if (loss != NULL) {
        r->loss = gr_tensor_item(loss);
        CHECK_MSG(gr_backward(ctx, loss) == 0, "%s", gr_last_error());
        CHECK(gr_tensor_to_host(seq.y, r->y) == 0);
        r->p = malloc(sizeof(float) * (size_t)T * B * nslot);
        CHECK(gr_tensor_to_host(seq.p, r->p) == 0);
        CHECK(x->grad != NULL && gr_tensor_to_host(x->grad, r->gx) == 0);
        int64_t n = 0;
        for (int i = 0; i < gr_ctx_n_named(ctx); i++) {
            n += gr_ctx_named(ctx, i)->numel;
        }
        r->n_params = n;
        r->gparams = calloc((size_t)n, sizeof(float));
        n = 0;
        for (int i = 0; i < gr_ctx_n_named(ctx); i++) {
            struct gr_tensor *t = gr_ctx_named(ctx, i);
            if (t->grad != NULL) {
                CHECK(gr_tensor_to_host(t->grad, r->gparams + n) == 0);
            }
            n += t->numel;
        }
    }
    nlp_om_free(&om);
    gr_ctx_free(ctx);
    unsetenv("GROVE_OM_FULL_BATCH");
    return loss != NULL ? 0 : -1;
}

/* Elements where a and b differ by more than tol·(1 + |b|) (tol 0: any
 * difference in value; +0 and -0 are the same value). */
static int64_t differ(const float *a, const float *b, int64_t n, double tol)
{
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++) {
        double dd = fabs((double)a[i] - (double)b[i]);
        if (!(dd <= tol * (1.0 + fabs((double)b[i])))) {
            if (k == 0) {
                fprintf(stderr, "  first difference at %lld: %.9g vs "
                                "%.9g\n",
                        (long long)i, (double)a[i], (double)b[i]);
            }
            k++;
        }
    }
    return k;
}

static int64_t nonzero(const float *a, int64_t n)
{
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++) {
        k += a[i] != 0.0f;
    }
    return k;
}

static void compare(int left, int nslot, int bidir)
{
    static struct result c, f;
    memset(&c, 0, sizeof c);
    memset(&f, 0, sizeof f);
    if (run(0, left, nslot, bidir, &c) < 0 ||
        run(1, left, nslot, bidir, &f) < 0) {
        CHECK_MSG(0, "left %d, N %d: a run failed", left, nslot);
        return;
    }
    const char *pad = left ? "left" : "right";
    CHECK_MSG(c.loss == f.loss,
              "%s, N %d: loss %.9g compacted vs %.9g full", pad, nslot,
              c.loss, f.loss);
    CHECK_MSG(differ(c.y, f.y, T * B * DH, 0.0) == 0, "%s, N %d: y", pad,
              nslot);
    int64_t np = (int64_t)T * B * nslot;
    CHECK_MSG(differ(c.p, f.p, np, 0.0) == 0, "%s, N %d: p", pad, nslot);
    /* Gradients: the same terms, summed in another association where a
     * slot's cell now takes every row in the step directly instead of a
     * gather of them (the cell's input gradient is added to the slot's
     * in two parts instead of one): rounding only. */
    CHECK_MSG(differ(c.gx, f.gx, T * B * DIN, 1e-6) == 0,
              "%s, N %d: the input's gradient", pad, nslot);
    CHECK(c.n_params == f.n_params && c.n_params > 0);
    CHECK_MSG(differ(c.gparams, f.gparams, c.n_params, 1e-6) == 0,
              "%s, N %d: the parameters' gradients", pad, nslot);
    /* not vacuous: the gradients reach the parameters and the input */
    CHECK(nonzero(c.gparams, c.n_params) > c.n_params / 3);
    CHECK(nonzero(c.gx, T * B * DIN) > 0);
    /* the padding rule holds on both: y = 0 and p = 0 off the real steps */
    uint8_t valid[T * B];
    make_valid(valid, left);
    int bad = 0;
    for (int i = 0; i < T * B; i++) {
        if (!valid[i]) {
            bad += nonzero(c.y + (int64_t)i * DH, DH) != 0;
            bad += nonzero(c.p + (int64_t)i * nslot, nslot) != 0;
        }
    }
    CHECK_MSG(bad == 0, "%s, N %d: %d padded positions not zero", pad, nslot,
              bad);
    free(c.p);
    free(f.p);
    free(c.gparams);
    free(f.gparams);
}

int main(void)
{
    if (nlp_om_unfused()) {
        printf("test_nlp_om_compact: GROVE_OM_UNFUSED is set; compaction "
               "is part of the fused path only\n");
        return TEST_SKIP;
    }
    compare(0, 12, 0);
    compare(0, 4, 0);
    compare(1, 12, 0);
    compare(0, 5, 1); /* the backward direction's parameters */
    return test_report("test_nlp_om_compact");
}
