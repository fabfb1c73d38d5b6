/* StructFormer (nlp/models/structformer.h, udgn.md §7) against float64
 * PyTorch written literally from the spec
 * (tests/fixtures/nlp/make_structformer_fixture.py): the distance and
 * height parsers with the batch-wide calibration (μ > 0 in the fixture, so
 * its gradient path is exercised), the parent distribution Par, one
 * gated-sigmoid-attention layer with an independent gate, and the whole
 * tied MLM model (logits, loss at chosen rows, every parameter's
 * gradient), all to 1e-5 relative, on the CPU and, where visible, on CUDA;
 * a gradient scaled by 1.001 must fail the same comparison. Without the
 * fixture argument: construction (parameter count), bad batches, the
 * decoder on a hand-made Par, Par's rows as distributions, a training
 * forward with dropout, and a seeded copy task it must learn (each token
 * is repeated once, "x x y y z z"; one of each pair is masked and must be
 * read from its neighbour). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/device.h"
#include "kernels/ops.h"
#include "kernels/optim.h"
#include "kernels/tape.h"
#include "nlp/models/structformer.h"
#include "tests/nlp/lm_fixture.h"
#include "tests/test.h"

#define TOL 1e-5

static struct gr_ctx *new_ctx(enum gr_device dev)
{
    struct gr_ctx_config cfg = gr_ctx_config_default();
    cfg.device = dev;
    cfg.step_chunk_bytes = 1 << 22;
    struct gr_ctx *ctx = NULL;
    if (gr_ctx_new(&ctx, &cfg) < 0) {
        fprintf(stderr, "context: %s\n", gr_last_error());
        return NULL;
    }
    return ctx;
}

static struct nlp_structformer_config fixture_config(void)
{
    struct nlp_structformer_config c = nlp_structformer_config_default(11);
    c.d = 8;
    c.layers = 2;
    c.heads = 2;
    c.ffn = 16;
    c.parser_layers = 2;
    c.conv = 3;
    c.dropout = 0.0f;
    c.dropout_attn = 0.0f;
    c.pos_emb = 0;
    c.norm_affine = 1;
    return c;
}

static const int32_t T = 6, B = 3;
static const int32_t LENGTHS[3] = {6, 4, 3};

/* Copies every "param.NAME" of the fixture into "sf.NAME"; checks that the
 * model has exactly those parameters. */
static int load_params(struct gr_ctx *ctx, const struct fx_file *fx)
{
    int64_t total = 0;
    for (int i = 0; i < fx->n; i++) {
        const struct fx_entry *e = &fx->e[i];
        if (strncmp(e->name, "param.", 6) != 0) {
            continue;
        }
        char name[160];
        snprintf(name, sizeof name, "sf.%s", e->name + 6);
        struct gr_tensor *t = gr_ctx_find(ctx, name);
        CHECK_MSG(t != NULL && t->numel == e->numel, "parameter %s", name);
        if (t == NULL || t->numel != e->numel) {
            return -1;
        }
        float *v = fx_floats(fx, e->name);
        gr_tensor_set_host(t, v);
        free(v);
        total += e->numel;
    }
    CHECK_MSG(gr_param_count(ctx, "sf.") == total, "model has %lld parameters, "
              "fixture %lld", (long long)gr_param_count(ctx, "sf."),
              (long long)total);
    return 0;
}

static struct gr_tensor *from_fx(struct gr_ctx *ctx, const struct fx_file *fx,
                                 const char *name, struct gr_shape s)
{
    float *v = fx_floats(fx, name);
    struct gr_tensor *t = v ? gr_tensor_from_host(ctx, GR_F32, s, v) : NULL;
    free(v);
    return t;
}

static struct gr_tensor *ids_tensor(struct gr_ctx *ctx,
                                    const struct fx_file *fx)
{
    const struct fx_entry *e = fx_get(fx, "model.ids");
    int32_t ids[6 * 3];
    for (int i = 0; i < T * B; i++) {
        ids[i] = (int32_t)e->v[i];
    }
    return gr_tensor_from_host(ctx, GR_I32, gr_shape2(T, B), ids);
}

/* Compares the gradient of parameter sf.NAME with "TAG.grad.NAME". */
static void cmp_param_grad(struct gr_ctx *ctx, const struct fx_file *fx,
                           const char *tag, const char *pname, double *worst)
{
    char name[200], fname[200];
    snprintf(name, sizeof name, "sf.%s", pname);
    snprintf(fname, sizeof fname, "%s.grad.%s", tag, pname);
    struct gr_tensor *t = gr_ctx_find(ctx, name);
    CHECK_MSG(t != NULL, "no parameter %s", name);
    const struct fx_entry *e = fx_get(fx, fname);
    if (t == NULL || e == NULL) {
        CHECK(0);
        return;
    }
    double scale = 0.0;
    for (int64_t i = 0; i < e->numel; i++) {
        scale = fmax(scale, fabs(e->v[i]));
    }
    if (scale > 1e-9) {
        *worst = fmax(*worst, fx_compare_tensor(fx, fname, t->grad, TOL));
        return;
    }
    /* zero in exact arithmetic (the biases of δ and η: the calibration and
     * the span softmax cancel a shift of every δ or every η): f32 rounding
     * of an O(1) computation is all that may remain */
    float *g = malloc((size_t)t->numel * sizeof *g);
    gr_tensor_to_host(t->grad, g);
    double m = 0.0;
    for (int64_t i = 0; i < t->numel; i++) {
        m = fmax(m, fabs(g[i]));
    }
    CHECK_MSG(m <= TOL, "%s: zero in the fixture, %g here", fname, m);
    free(g);
}

/* A comparison that must fail when the values are off by `factor`. */
static void check_rejects(const struct fx_file *fx, const char *name,
                          const struct gr_tensor *t, double factor)
{
    float *v = malloc((size_t)t->numel * sizeof *v);
    gr_tensor_to_host(t, v);
    for (int64_t i = 0; i < t->numel; i++) {
        v[i] = (float)(v[i] * factor);
    }
    const struct fx_entry *e = fx_get(fx, name);
    double scale = 0.0, worst = 0.0;
    for (int64_t i = 0; e && i < e->numel; i++) {
        scale = fmax(scale, fabs(e->v[i]));
    }
    for (int64_t i = 0; e && i < e->numel; i++) {
        worst = fmax(worst, fabs(v[i] - e->v[i]) /
                                (TOL * scale + TOL * fabs(e->v[i])));
    }
    CHECK_MSG(worst > 1.0, "%s: the comparison cannot tell a factor %g", name,
              factor);
    free(v);
}

/* Values at the mask's positions, zero elsewhere (host copy of [B, T]). */
static struct gr_tensor *masked(struct gr_ctx *ctx, struct gr_tensor *x,
                                int gap)
{
    float m[3 * 6];
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            m[b * T + t] = t < LENGTHS[b] - (gap ? 1 : 0) ? 1.0f : 0.0f;
        }
    }
    return gr_mul(ctx, x, gr_tensor_from_host(ctx, GR_F32, gr_shape2(B, T), m));
}

static void run_fixture_on(const struct fx_file *fx, enum gr_device dev)
{
    const char *dn = dev == GR_DEVICE_CUDA ? "cuda" : "cpu";
    struct gr_ctx *ctx = new_ctx(dev);
    CHECK(ctx != NULL);
    if (!ctx) {
        return;
    }
    struct nlp_structformer_config c = fixture_config();
    struct nlp_structformer m;
    CHECK(nlp_structformer_init(&m, ctx, "sf", &c, gr_rng_make(1, 2)) == 0);
    if (load_params(ctx, fx) < 0) {
        gr_ctx_free(ctx);
        return;
    }
    double w = 0.0;
    /* 1. the parser */
    gr_step_reset(ctx);
    gr_zero_grad(ctx);
    struct gr_tensor *ids = ids_tensor(ctx, fx);
    struct nlp_structformer_out o;
    CHECK(nlp_structformer_parse(ctx, &m, ids, LENGTHS, &o) == 0);
    struct gr_tensor *dm = masked(ctx, o.distance, 1);
    struct gr_tensor *hm = masked(ctx, o.height, 0);
    w = fmax(w, fx_compare_tensor(fx, "parse.distance", dm, TOL));
    w = fmax(w, fx_compare_tensor(fx, "parse.height", hm, TOL));
    w = fmax(w, fx_compare_tensor(fx, "parse.head", o.head, TOL));
    struct gr_tensor *loss = gr_add(
        ctx,
        gr_add(ctx,
               gr_sum(ctx, gr_mul(ctx, dm, from_fx(ctx, fx, "parse.w_distance",
                                                   gr_shape2(B, T)))),
               gr_sum(ctx, gr_mul(ctx, hm, from_fx(ctx, fx, "parse.w_height",
                                                   gr_shape2(B, T))))),
        gr_sum(ctx, gr_mul(ctx, o.head, from_fx(ctx, fx, "parse.w_head",
                                                gr_shape3(B, T, T)))));
    CHECK_MSG(loss && gr_backward(ctx, loss) == 0, "%s parser backward: %s",
              dn, gr_ctx_error(ctx));
    for (int i = 0; i < fx->n; i++) {
        if (strncmp(fx->e[i].name, "parse.grad.", 11) == 0) {
            cmp_param_grad(ctx, fx, "parse", fx->e[i].name + 11, &w);
        }
    }
    check_rejects(fx, "parse.grad.parser.size",
                  gr_ctx_find(ctx, "sf.parser.size")->grad, 1.001);
    check_rejects(fx, "parse.grad.parser.distance.out.weight",
                  gr_ctx_find(ctx, "sf.parser.distance.out.weight")->grad,
                  1.001);
    printf("%s: parser worst %.3g\n", dn, w);

    /* 2. one layer with the fixture's gate */
    double wl = 0.0;
    gr_step_reset(ctx);
    gr_zero_grad(ctx);
    struct gr_tensor *x = from_fx(ctx, fx, "layer.x", gr_shape3(T, B, c.d));
    struct gr_tensor *gate = from_fx(ctx, fx, "layer.gate",
                                     gr_shape4(B, c.heads, T, T));
    gr_tensor_set_requires_grad(x, 1);
    gr_tensor_set_requires_grad(gate, 1);
    struct gr_tensor *klen = gr_tensor_from_host(ctx, GR_I32, gr_shape1(B),
                                                 LENGTHS);
    struct gr_tensor *y = nlp_structformer_layer_forward(
        ctx, &m, 0, x, gate, klen, 0, gr_rng_make(0, 0));
    wl = fmax(wl, fx_compare_tensor(fx, "layer.y", y, TOL));
    loss = gr_sum(ctx, gr_mul(ctx, y, from_fx(ctx, fx, "layer.w",
                                             gr_shape3(T, B, c.d))));
    CHECK_MSG(loss && gr_backward(ctx, loss) == 0, "%s layer backward: %s", dn,
              gr_ctx_error(ctx));
    wl = fmax(wl, fx_compare_tensor(fx, "layer.grad.x", x->grad, TOL));
    wl = fmax(wl, fx_compare_tensor(fx, "layer.grad.gate", gate->grad, TOL));
    check_rejects(fx, "layer.grad.gate", gate->grad, 1.001);
    for (int i = 0; i < fx->n; i++) {
        if (strncmp(fx->e[i].name, "layer.grad.layers.", 18) == 0) {
            cmp_param_grad(ctx, fx, "layer", fx->e[i].name + 11, &wl);
        }
    }
    printf("%s: layer worst %.3g\n", dn, wl);

    /* 3. the whole model */
    double wm = 0.0;
    gr_step_reset(ctx);
    gr_zero_grad(ctx);
    ids = ids_tensor(ctx, fx);
    CHECK(nlp_structformer_forward(ctx, &m, ids, LENGTHS, NULL, 0,
                                   gr_rng_make(0, 0), &o) == 0);
    wm = fmax(wm, fx_compare_tensor(fx, "model.logits", o.logits, TOL));
    const struct fx_entry *re = fx_get(fx, "model.rows");
    const struct fx_entry *te = fx_get(fx, "model.targets");
    int32_t rows[16], tg[16];
    int nr = (int)re->numel;
    for (int i = 0; i < nr; i++) {
        rows[i] = (int32_t)re->v[i];
        tg[i] = (int32_t)te->v[i];
    }
    struct gr_tensor *rt = gr_tensor_from_host(ctx, GR_I32, gr_shape1(nr), rows);
    struct gr_tensor *tt = gr_tensor_from_host(ctx, GR_I32, gr_shape1(nr), tg);
    /* the rows path: logits of the chosen rows only */
    struct nlp_structformer_out o2;
    CHECK(nlp_structformer_forward(ctx, &m, ids, LENGTHS, rt, 0,
                                   gr_rng_make(0, 0), &o2) == 0);
    loss = gr_cross_entropy(ctx, o2.logits, tt, -1);
    wm = fmax(wm, fx_compare_tensor(fx, "model.loss", loss, TOL));
    CHECK_MSG(loss && gr_backward(ctx, loss) == 0, "%s model backward: %s", dn,
              gr_ctx_error(ctx));
    for (int i = 0; i < fx->n; i++) {
        if (strncmp(fx->e[i].name, "model.grad.", 11) == 0) {
            cmp_param_grad(ctx, fx, "model", fx->e[i].name + 11, &wm);
        }
    }
    check_rejects(fx, "model.grad.emb.weight",
                  gr_ctx_find(ctx, "sf.emb.weight")->grad, 1.001);
    check_rejects(fx, "model.grad.rel_weight",
                  gr_ctx_find(ctx, "sf.rel_weight")->grad, 1.001);
    printf("%s: model worst %.3g (loss %.6f, fixture %.6f)\n", dn, wm,
           loss ? (double)gr_tensor_item(loss) : NAN,
           fx_scalar(fx, "model.loss"));
    nlp_structformer_free(&m);
    gr_ctx_free(ctx);
}

static int run_fixture(const char *dir)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/structformer.txt", dir);
    struct fx_file fx;
    if (fx_load(&fx, path) < 0) {
        CHECK_MSG(0, "cannot read %s", path);
        return test_report("nlp_structformer_fixture");
    }
    run_fixture_on(&fx, GR_DEVICE_CPU);
    if (gr_cuda_compiled() && gr_cuda_device_count() > 0) {
        run_fixture_on(&fx, GR_DEVICE_CUDA);
    } else {
        test_absent(TEST_NEED_GPU, "no GPU visible: the StructFormer fixture "
                    "ran on the CPU only");
    }
    fx_free(&fx);
    return test_report("nlp_structformer_fixture");
}

/* ---- without the fixture ---- */

static void check_count(void)
{
    struct gr_ctx *ctx = new_ctx(GR_DEVICE_CPU);
    struct nlp_structformer_config c = fixture_config();
    c.pos_emb = 20;
    struct nlp_structformer m;
    CHECK(nlp_structformer_init(&m, ctx, "sf", &c, gr_rng_make(3, 4)) == 0);
    const int64_t V = 11, d = 8, L = 2, H = 2, F = 16, P = 2, K = 3;
    int64_t want = V * d + V + 20 * d + P * (d * d * K + d) +
                   (d * d * 2 + d) + (d + 1) + (d * d + d) + (d + 1) + 2 +
                   L * H * 2 +
                   L * (3 * d * d + 3 * d + d * d + d + F * d + F + d * F + d +
                        4 * d) +
                   2 * d;
    CHECK_MSG(gr_param_count(ctx, "sf.") == want, "%lld parameters, formula "
              "%lld", (long long)gr_param_count(ctx, "sf."), (long long)want);
    nlp_structformer_free(&m);
    gr_ctx_free(ctx);
    /* the UDGN copy's layers: LayerNorms without gain/bias inside layers */
    ctx = new_ctx(GR_DEVICE_CPU);
    c.norm_affine = 0;
    CHECK(nlp_structformer_init(&m, ctx, "sf", &c, gr_rng_make(3, 4)) == 0);
    CHECK(gr_param_count(ctx, "sf.") == want - L * 4 * d);
    CHECK(gr_ctx_find(ctx, "sf.layers.0.norm1.weight") == NULL &&
          gr_ctx_find(ctx, "sf.norm.weight") != NULL);
    gr_step_reset(ctx);
    int32_t ids[6 * 3] = {3, 4, 5, 6, 7, 8, 9, 10, 3, 4, 5, 6,
                          7, 8, 9, 10, 3, 4};
    struct gr_tensor *it = gr_tensor_from_host(ctx, GR_I32, gr_shape2(T, B),
                                               ids);
    struct nlp_structformer_out o;
    CHECK(nlp_structformer_forward(ctx, &m, it, LENGTHS, NULL, 0,
                                   gr_rng_make(1, 1), &o) == 0);
    CHECK(o.logits && o.logits->shape[0] == T && o.logits->shape[1] == B &&
          o.logits->shape[2] == V);
    nlp_structformer_free(&m);
    gr_ctx_free(ctx);
    c.norm_affine = 1;
    /* bad configurations */
    ctx = new_ctx(GR_DEVICE_CPU);
    c.heads = 3;
    CHECK(nlp_structformer_init(&m, ctx, "sf", &c, gr_rng_make(3, 4)) < 0);
    CHECK_STR_CONTAINS(gr_last_error(), "structformer 'sf'");
    c.heads = 2;
    c.conv = 4;
    CHECK(nlp_structformer_init(&m, ctx, "sf2", &c, gr_rng_make(3, 4)) < 0);
    gr_ctx_free(ctx);
}

/* Random model: Par's rows are distributions over the other real tokens
 * (zero diagonal, zero on padding), bad batches are refused, and a
 * training forward with dropout is finite and differs from evaluation. */
static void check_model(void)
{
    struct gr_ctx *ctx = new_ctx(GR_DEVICE_CPU);
    struct nlp_structformer_config c = fixture_config();
    c.dropout = 0.3f;
    c.dropout_attn = 0.2f;
    c.parser_dropout = 0.1f;
    struct nlp_structformer m;
    CHECK(nlp_structformer_init(&m, ctx, "sf", &c, gr_rng_make(5, 6)) == 0);
    gr_step_reset(ctx);
    int32_t ids[6 * 3];
    for (int i = 0; i < T * B; i++) {
        ids[i] = 3 + (i * 7) % 8;
    }
    struct gr_tensor *it = gr_tensor_from_host(ctx, GR_I32, gr_shape2(T, B),
                                               ids);
    struct nlp_structformer_out o;
    CHECK(nlp_structformer_parse(ctx, &m, it, LENGTHS, &o) == 0);
    float par[3 * 6 * 6], height[3 * 6];
    gr_tensor_to_host(o.head, par);
    gr_tensor_to_host(o.height, height);
    for (int b = 0; b < B; b++) {
        for (int i = 0; i < LENGTHS[b]; i++) {
            double s = 0.0, pad = 0.0;
            for (int k = 0; k < T; k++) {
                float p = par[(b * T + i) * T + k];
                CHECK(p >= -1e-6f && p <= 1.0f + 1e-6f);
                s += p;
                if (k >= LENGTHS[b] || k == i) {
                    pad += fabs(p);
                }
            }
            /* the root's row keeps what no span head claims: at most 1 */
            CHECK_MSG(s <= 1.0 + 1e-5 && pad <= 1e-6, "row %d of %d: sum %g, "
                      "on padding/diagonal %g", i, b, s, pad);
        }
        int32_t heads[6];
        nlp_structformer_decode(par + b * T * T, T, height + b * T,
                                LENGTHS[b], heads);
        int roots = 0;
        for (int i = 0; i < LENGTHS[b]; i++) {
            roots += heads[i] == i;
            CHECK(heads[i] >= 0 && heads[i] < LENGTHS[b]);
        }
        CHECK(roots == 1);
    }
    /* training vs evaluation */
    struct nlp_structformer_out a, e;
    CHECK(nlp_structformer_forward(ctx, &m, it, LENGTHS, NULL, 1,
                                   gr_rng_make(7, 8), &a) == 0);
    CHECK(nlp_structformer_forward(ctx, &m, it, LENGTHS, NULL, 0,
                                   gr_rng_make(7, 8), &e) == 0);
    float *va = malloc((size_t)a.logits->numel * sizeof *va);
    float *ve = malloc((size_t)e.logits->numel * sizeof *ve);
    gr_tensor_to_host(a.logits, va);
    gr_tensor_to_host(e.logits, ve);
    int finite = 1, differ = 0;
    for (int64_t i = 0; i < a.logits->numel; i++) {
        finite &= isfinite(va[i]) && isfinite(ve[i]);
        differ |= va[i] != ve[i];
    }
    CHECK(finite && differ);
    free(va);
    free(ve);
    /* one-token sentences: no arcs, the forward still runs */
    int32_t one_len[2] = {1, 1};
    struct gr_tensor *one = gr_tensor_from_host(ctx, GR_I32, gr_shape2(1, 2),
                                                ids);
    CHECK(nlp_structformer_forward(ctx, &m, one, one_len, NULL, 1,
                                   gr_rng_make(7, 9), &a) == 0);
    float p1[2] = {1.0f, 1.0f};
    if (a.head) {
        gr_tensor_to_host(a.head, p1);
    }
    CHECK(a.logits && a.logits->numel == 2 * 11 && p1[0] == 0.0f &&
          p1[1] == 0.0f);
    /* bad batches */
    int32_t bad_len[3] = {6, 0, 3};
    CHECK(nlp_structformer_forward(ctx, &m, it, bad_len, NULL, 0,
                                   gr_rng_make(7, 8), &a) < 0);
    CHECK_STR_CONTAINS(gr_last_error(), "length 0 of sequence 1");
    int32_t long_len[3] = {7, 2, 3};
    CHECK(nlp_structformer_parse(ctx, &m, it, long_len, &a) < 0);
    nlp_structformer_free(&m);
    gr_ctx_free(ctx);
}

/* The decoder on a hand-made Par: token 1 is the highest (root); 0 and 2
 * attach by the row arg-max, never to themselves. */
static void check_config_text(void)
{
    struct nlp_structformer_config c = fixture_config(), back;
    c.dropout = 0.25f;
    c.parser_dropout = 0.125f;
    c.norm_affine = 0;
    c.pos_emb = 77;
    char text[1024];
    int len = 0;
    CHECK(nlp_structformer_config_format(&c, text, sizeof text, &len) == 0);
    back = nlp_structformer_config_default(5);
    CHECK(nlp_structformer_config_parse(text, "config", &back) == 0);
    CHECK(memcmp(&c, &back, sizeof c) == 0);
    CHECK(nlp_structformer_config_parse("sf-heads two\n", "run/config",
                                        &back) < 0);
    CHECK_STR_CONTAINS(gr_last_error(), "run/config: structformer config: "
                       "bad value for sf-heads");
}

static void check_decode(void)
{
    const float par[9] = {0.9f, 0.3f, 0.7f,  /* diagonal ignored */
                          0.5f, 0.0f, 0.5f,  /* root row: ignored */
                          0.2f, 0.6f, 0.1f};
    const float height[3] = {0.1f, 2.0f, -1.0f};
    int32_t heads[3];
    nlp_structformer_decode(par, 3, height, 3, heads);
    CHECK(heads[0] == 2 && heads[1] == 1 && heads[2] == 1);
}

/* The copy task: masked-token loss after training, against log(8) (the
 * loss of a model that knows the vocabulary but not the neighbour). */
static void check_learns(void)
{
    struct gr_ctx *ctx = new_ctx(GR_DEVICE_CPU);
    struct nlp_structformer_config c = fixture_config();
    c.d = 16;
    c.ffn = 32;
    struct nlp_structformer m;
    CHECK(nlp_structformer_init(&m, ctx, "sf", &c, gr_rng_make(11, 1)) == 0);
    struct gr_optim_config oc = gr_optim_config_default(GR_OPTIM_ADAM);
    oc.lr = 5e-3f;
    struct gr_optim *opt = NULL;
    CHECK(gr_optim_new(&opt, ctx, "adam", &oc) == 0);
    enum { TT = 6, BB = 16, STEPS = 150 };
    int32_t len[BB];
    uint64_t key = gr_rng_key(gr_rng_make(12, 3));
    uint64_t ctr = 0;
    double first = 0.0, last = 0.0;
    for (int step = 0; step < STEPS && opt; step++) {
        int32_t ids[TT * BB], rows[TT * BB / 2], tg[TT * BB / 2];
        int nr = 0;
        for (int b = 0; b < BB; b++) {
            len[b] = TT;
            for (int p = 0; p < TT / 2; p++) {
                int32_t w = 3 + (int32_t)(gr_rng_u32(key, ctr++) % 8);
                int which = (int)(gr_rng_u32(key, ctr++) % 2);
                for (int q = 0; q < 2; q++) {
                    int t = 2 * p + q;
                    ids[t * BB + b] = q == which ? 2 : w;
                }
                rows[nr] = (2 * p + which) * BB + b;
                tg[nr++] = w;
            }
        }
        gr_step_reset(ctx);
        gr_zero_grad(ctx);
        struct gr_tensor *it = gr_tensor_from_host(ctx, GR_I32,
                                                   gr_shape2(TT, BB), ids);
        struct gr_tensor *rt = gr_tensor_from_host(ctx, GR_I32,
                                                   gr_shape1(nr), rows);
        struct gr_tensor *tt = gr_tensor_from_host(ctx, GR_I32,
                                                   gr_shape1(nr), tg);
        struct nlp_structformer_out o;
        if (nlp_structformer_forward(ctx, &m, it, len, rt, 1,
                                     gr_rng_make(13, (uint64_t)step),
                                     &o) < 0) {
            CHECK_MSG(0, "forward: %s", gr_last_error());
            break;
        }
        struct gr_tensor *loss = gr_cross_entropy(ctx, o.logits, tt, -1);
        CHECK(loss && gr_backward(ctx, loss) == 0);
        double l = (double)gr_tensor_item(loss);
        if (step < 10) {
            first += l / 10.0;
        }
        if (step >= STEPS - 10) {
            last += l / 10.0;
        }
        gr_clip_grad_norm(ctx, NULL, 1.0f, NULL);
        gr_optim_step(opt);
    }
    printf("copy task: loss %.3f over the first 10 steps, %.3f over the last "
           "10 (log 8 = %.3f)\n", first, last, log(8.0));
    CHECK_MSG(last < 0.5 * log(8.0), "the copy task was not learned: %.3f",
              last);
    gr_optim_free(opt);
    nlp_structformer_free(&m);
    gr_ctx_free(ctx);
}

int main(int argc, char **argv)
{
    if (argc == 2) {
        return run_fixture(argv[1]);
    }
    check_count();
    check_model();
    check_decode();
    check_config_text();
    check_learns();
    return test_report("nlp_structformer");
}
