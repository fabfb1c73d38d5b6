/* grove against PyTorch: the LSTM layer, the ON-LSTM cell (DropConnect in
 * evaluation and training mode) and a 3-layer ON-LSTM stack with the tied
 * decoder and AR/TAR, from fixtures made by
 * tests/fixtures/kernels/make_fixtures.py (float64 PyTorch). Outputs and
 * every gradient must match to 1e-5 relative plus an absolute term at the
 * f32 noise level of the tensor: |a - b| <= 1e-5·|b| + 1e-6·max|ref|
 * (elements that are exactly 0 in exact arithmetic, such as the gradient
 * through the top chunk's master-input gate 1 - Σ softmax, are f32 noise of
 * ~1e-7·max). Runs on the CPU and, where a GPU is visible, on CUDA too. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/files.h"
#include "kernels/device.h"
#include "kernels/layers.h"
#include "kernels/ops.h"
#include "kernels/tape.h"
#include "kernels/tensor.h"
#include "tests/test.h"

#ifndef GROVE_FIXTURE_DIR
#error "GROVE_FIXTURE_DIR must name tests/fixtures/kernels"
#endif

#define MAXT 64

struct fx {
    int n;
    char name[MAXT][64];
    struct gr_shape shape[MAXT];
    double *data[MAXT];
    int64_t numel[MAXT];
};

static int fx_load(struct fx *f, const char *file)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", GROVE_FIXTURE_DIR, file);
    char *buf = NULL;
    size_t size = 0;
    memset(f, 0, sizeof *f);
    if (gr_read_file(path, 1 << 24, &buf, &size) < 0) {
        fprintf(stderr, "%s\n", gr_last_error());
        return -1;
    }
    char *p = buf;
    if (strncmp(p, "grove-fixture 1\n", 16) != 0) {
        fprintf(stderr, "%s: not a grove fixture\n", path);
        free(buf);
        return -1;
    }
    p += 16;
    while (*p && f->n < MAXT) {
        int k = f->n;
        int used = 0, nd = 0;
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

static int fx_find(const struct fx *f, const char *name)
{
    for (int i = 0; i < f->n; i++) {
        if (strcmp(f->name[i], name) == 0) {
            return i;
        }
    }
    fprintf(stderr, "fixture lacks '%s'\n", name);
    return -1;
}

/* f32 copy of a fixture tensor (malloc'd). */
static float *fx_f32(const struct fx *f, const char *name, int64_t *n)
{
    int i = fx_find(f, name);
    if (i < 0) {
        return NULL;
    }
    float *v = malloc((size_t)f->numel[i] * sizeof *v);
    for (int64_t e = 0; e < f->numel[i]; e++) {
        v[e] = (float)f->data[i][e];
    }
    if (n) {
        *n = f->numel[i];
    }
    return v;
}

static struct gr_tensor *fx_tensor(struct gr_ctx *ctx, const struct fx *f,
                                   const char *name, int grad)
{
    int i = fx_find(f, name);
    if (i < 0) {
        return NULL;
    }
    float *v = fx_f32(f, name, NULL);
    struct gr_tensor *t = gr_tensor_from_host(ctx, GR_F32, f->shape[i], v);
    free(v);
    gr_tensor_set_requires_grad(t, grad);
    return t;
}

static struct gr_tensor *fx_index(struct gr_ctx *ctx, const struct fx *f,
                                  const char *name, struct gr_shape s)
{
    int i = fx_find(f, name);
    int32_t *v = malloc((size_t)f->numel[i] * sizeof *v);
    for (int64_t e = 0; e < f->numel[i]; e++) {
        v[e] = (int32_t)f->data[i][e];
    }
    struct gr_tensor *t = gr_tensor_from_host(ctx, GR_I32, s, v);
    free(v);
    return t;
}

static void fx_set_param(struct gr_ctx *ctx, const struct fx *f,
                         const char *name)
{
    struct gr_tensor *p = gr_ctx_find(ctx, name);
    int i = fx_find(f, name);
    CHECK_MSG(p && i >= 0 && p->numel == f->numel[i], "parameter '%s'", name);
    if (p && i >= 0 && p->numel == f->numel[i]) {
        float *v = fx_f32(f, name, NULL);
        gr_tensor_set_host(p, v);
        free(v);
    }
}

/* Compares a tensor with the fixture's `ref`; prints the worst element. */
static void match(const char *label, const struct gr_tensor *t,
                  const struct fx *f, const char *ref)
{
    int i = fx_find(f, ref);
    CHECK_MSG(t != NULL && i >= 0, "%s: '%s' missing", label, ref);
    if (!t || i < 0) {
        return;
    }
    CHECK_MSG(t->numel == f->numel[i], "%s: %s has %lld elements, fixture "
              "%lld", label, ref, (long long)t->numel,
              (long long)f->numel[i]);
    if (t->numel != f->numel[i]) {
        return;
    }
    float *v = malloc((size_t)t->numel * sizeof *v);
    gr_tensor_to_host(t, v);
    double m = 0.0, worst = 0.0;
    int64_t at = 0;
    for (int64_t e = 0; e < t->numel; e++) {
        m = fmax(m, fabs(f->data[i][e]));
    }
    for (int64_t e = 0; e < t->numel; e++) {
        double r = f->data[i][e];
        double err = fabs((double)v[e] - r) / fmax(fabs(r) + 0.1 * m, 1e-30);
        if (err > worst) {
            worst = err;
            at = e;
        }
    }
    CHECK_MSG(worst <= 1e-5, "%s: %s differs from PyTorch by %.3g relative "
              "at element %lld (%.9g vs %.9g)", label, ref, worst,
              (long long)at, (double)v[at], f->data[i][at]);
    free(v);
}

/* Σ a ⊙ R as an op (a scalar). */
static struct gr_tensor *proj(struct gr_ctx *ctx, struct gr_tensor *a,
                              const struct fx *f, const char *r)
{
    return gr_sum(ctx, gr_mul(ctx, a, fx_tensor(ctx, f, r, 0)));
}

static void lstm_case(struct gr_ctx *ctx, const char *dev)
{
    struct fx f;
    if (fx_load(&f, "lstm_layer.txt") < 0) {
        CHECK(0);
        return;
    }
    char label[64];
    snprintf(label, sizeof label, "lstm layer (%s)", dev);
    struct gr_lstm l;
    CHECK(gr_lstm_init(&l, ctx, "lstm", 6, 8, gr_rng_make(1, 1)) == 0);
    const char *names[4] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};
    for (int i = 0; i < 4; i++) {
        char n[64];
        snprintf(n, sizeof n, "lstm.%s", names[i]);
        struct gr_tensor *p = gr_ctx_find(ctx, n);
        int k = fx_find(&f, names[i]);
        float *v = fx_f32(&f, names[i], NULL);
        CHECK(p && k >= 0 && p->numel == f.numel[k]);
        gr_tensor_set_host(p, v);
        free(v);
    }
    gr_zero_grad(ctx);
    gr_step_reset(ctx);
    struct gr_tensor *x = fx_tensor(ctx, &f, "x", 1);
    struct gr_tensor *h0 = fx_tensor(ctx, &f, "h0", 1);
    struct gr_tensor *c0 = fx_tensor(ctx, &f, "c0", 1);
    struct gr_rnn_out o;
    CHECK(gr_lstm_forward(ctx, &l, x, h0, c0, NULL, &o) == 0);
    struct gr_tensor *loss = gr_add(
        ctx, gr_add(ctx, proj(ctx, o.y, &f, "R_y"), proj(ctx, o.h, &f, "R_h")),
        proj(ctx, o.c, &f, "R_c"));
    CHECK_MSG(gr_backward(ctx, loss) == 0, "%s", gr_last_error());
    match(label, o.y, &f, "y");
    match(label, o.h, &f, "h");
    match(label, o.c, &f, "c");
    match(label, x->grad, &f, "grad_x");
    match(label, h0->grad, &f, "grad_h0");
    match(label, c0->grad, &f, "grad_c0");
    match(label, l.w_ih->grad, &f, "grad_weight_ih");
    match(label, l.w_hh->grad, &f, "grad_weight_hh");
    match(label, l.b_ih->grad, &f, "grad_bias_ih");
    match(label, l.b_hh->grad, &f, "grad_bias_hh");
    fx_free(&f);
}

static void onlstm_case(struct gr_ctx *ctx, const char *dev, int train)
{
    struct fx f;
    const char *file = train ? "onlstm_train.txt" : "onlstm_eval.txt";
    if (fx_load(&f, file) < 0) {
        CHECK(0);
        return;
    }
    char label[64];
    snprintf(label, sizeof label, "onlstm cell %s (%s)",
             train ? "train mask" : "eval", dev);
    struct gr_onlstm l;
    char prefix[32];
    snprintf(prefix, sizeof prefix, "cell%d", train);
    CHECK(gr_onlstm_init(&l, ctx, prefix, 6, 8, 2, gr_rng_make(1, 1)) == 0);
    struct gr_tensor *ps[4] = {l.w_ih, l.b_ih, l.w_hh, l.b_hh};
    const char *names[4] = {"ih.0.weight", "ih.0.bias", "hh.weight",
                            "hh.bias"};
    for (int i = 0; i < 4; i++) {
        float *v = fx_f32(&f, names[i], NULL);
        gr_tensor_set_host(ps[i], v);
        free(v);
    }
    gr_zero_grad(ctx);
    gr_step_reset(ctx);
    float p = (float)f.data[fx_find(&f, "p")][0];
    struct gr_tensor *u;
    if (train) {
        u = gr_mul(ctx, l.w_hh, fx_tensor(ctx, &f, "mask", 0));
    } else {
        u = gr_dropconnect(ctx, l.w_hh, p, GR_WDROP_ONLSTM, 0,
                           gr_rng_make(0, 0));
    }
    struct gr_tensor *x = fx_tensor(ctx, &f, "x", 1);
    struct gr_rnn_out o;
    CHECK(gr_onlstm_forward(ctx, &l, x, NULL, NULL, u, &o) == 0);
    struct gr_tensor *loss = gr_add(
        ctx, gr_add(ctx, proj(ctx, o.y, &f, "R_y"), proj(ctx, o.h, &f, "R_h")),
        proj(ctx, o.c, &f, "R_c"));
    CHECK_MSG(gr_backward(ctx, loss) == 0, "%s", gr_last_error());
    match(label, o.y, &f, "y");
    match(label, o.h, &f, "h");
    match(label, o.c, &f, "c");
    match(label, o.df, &f, "df");
    match(label, o.di, &f, "di");
    match(label, x->grad, &f, "grad_x");
    for (int i = 0; i < 4; i++) {
        char g[64];
        snprintf(g, sizeof g, "grad_%s", names[i]);
        match(label, ps[i]->grad, &f, g);
    }
    fx_free(&f);
}

static void stack_case(struct gr_ctx *ctx, const char *dev)
{
    struct fx f;
    if (fx_load(&f, "onlstm_stack.txt") < 0) {
        CHECK(0);
        return;
    }
    char label[64];
    snprintf(label, sizeof label, "onlstm stack (%s)", dev);
    const int T = 5, B = 3, V = 11, E = 6, H = 8, C = 2;
    const int sizes[4] = {E, H, H, E};
    struct gr_tensor *emb = gr_param_new(ctx, "encoder.weight",
                                         gr_shape2(V, E));
    struct gr_tensor *dec_b = gr_param_new(ctx, "decoder.bias", gr_shape1(V));
    struct gr_onlstm layers[3];
    for (int i = 0; i < 3; i++) {
        char prefix[32];
        snprintf(prefix, sizeof prefix, "rnn.cells.%d", i);
        CHECK(gr_onlstm_init(&layers[i], ctx, prefix, sizes[i], sizes[i + 1],
                             C, gr_rng_make(1, 1)) == 0);
    }
    /* every parameter of the context comes from the fixture */
    int n_params = 0;
    for (int i = 0; i < gr_ctx_n_named(ctx); i++) {
        struct gr_tensor *t = gr_ctx_named(ctx, i);
        if (t->kind == GR_KIND_PARAM && (strncmp(t->name, "rnn.", 4) == 0 ||
                                         strncmp(t->name, "encoder", 7) == 0 ||
                                         strncmp(t->name, "decoder", 7) ==
                                             0)) {
            fx_set_param(ctx, &f, t->name);
            n_params++;
        }
    }
    CHECK(n_params == 14);
    gr_zero_grad(ctx);
    gr_step_reset(ctx);
    struct gr_tensor *tok = fx_index(ctx, &f, "tokens", gr_shape2(T, B));
    struct gr_tensor *tgt = fx_index(ctx, &f, "targets", gr_shape1(T * B));
    struct gr_tensor *x = gr_embedding(ctx, emb, tok);
    for (int i = 0; i < 3; i++) {
        struct gr_rnn_out o;
        CHECK(gr_onlstm_forward(ctx, &layers[i], x, NULL, NULL, NULL, &o) ==
              0);
        x = o.y;
    }
    struct gr_tensor *y = x;
    struct gr_tensor *logits =
        gr_linear(ctx, gr_reshape(ctx, y, gr_shape2(T * B, E)), emb, dec_b);
    struct gr_tensor *ce = gr_cross_entropy(ctx, logits, tgt, -1);
    struct gr_tensor *ar = gr_scale(ctx, gr_mean(ctx, gr_square(ctx, y)), 2);
    struct gr_tensor *tar = gr_mean(
        ctx, gr_square(ctx, gr_sub(ctx, gr_slice(ctx, y, 0, 1, T - 1),
                                   gr_slice(ctx, y, 0, 0, T - 1))));
    struct gr_tensor *loss = gr_add(ctx, gr_add(ctx, ce, ar), tar);
    CHECK_MSG(gr_backward(ctx, loss) == 0, "%s", gr_last_error());
    match(label, logits, &f, "logits");
    match(label, ce, &f, "ce");
    match(label, ar, &f, "ar");
    match(label, tar, &f, "tar");
    match(label, loss, &f, "loss");
    for (int i = 0; i < gr_ctx_n_named(ctx); i++) {
        struct gr_tensor *t = gr_ctx_named(ctx, i);
        if (t->kind == GR_KIND_PARAM && strncmp(t->name, "cell", 4) != 0 &&
            strncmp(t->name, "lstm", 4) != 0) {
            char g[128];
            snprintf(g, sizeof g, "grad_%s", t->name);
            match(label, t->grad, &f, g);
        }
    }
    fx_free(&f);
}

static void run_on(enum gr_device d)
{
    struct gr_ctx_config cfg = gr_ctx_config_default();
    cfg.device = d;
    cfg.step_chunk_bytes = 1 << 20;
    struct gr_ctx *ctx;
    if (gr_ctx_new(&ctx, &cfg) < 0) {
        CHECK_MSG(0, "context: %s", gr_last_error());
        return;
    }
    const char *dev = gr_device_name(d);
    lstm_case(ctx, dev);
    onlstm_case(ctx, dev, 0);
    onlstm_case(ctx, dev, 1);
    stack_case(ctx, dev);
    gr_ctx_free(ctx);
}

int main(void)
{
    run_on(GR_DEVICE_CPU);
    if (gr_cuda_device_count() > 0) {
        run_on(GR_DEVICE_CUDA);
    } else {
        printf("no GPU visible: fixtures checked on the CPU only\n");
    }
    return test_report("kernels_fixtures");
}
