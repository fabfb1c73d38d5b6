/* UDGN (nlp/models/udgn.h, udgn.md §10) against the float64 PyTorch
 * fixture of tests/fixtures/udgn/gen_udgn_fixtures.py (dropout off):
 * parser softmax with padding (diagonal allowed), mask formula and its
 * symmetry, one DGN layer (channel softmax across c, bias before the
 * scaling, the 1e-6 term, padded senders zeroed), the tied MLM loss and
 * every parameter gradient (the tied embedding's = input + output parts),
 * all to 1e-5 relative; an ablated loss; the parameter count of §5; the
 * packed parser's padding invariance. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/device.h"
#include "kernels/ops.h"
#include "kernels/optim.h"
#include "nlp/data/mlm.h"
#include "core/random.h"
#include "kernels/tape.h"
#include "nlp/models/udgn.h"
#include "tests/nlp/lm_fixture.h"
#include "tests/test.h"

#define RTOL 1e-5

static struct gr_ctx *dev_ctx(enum gr_device dev)
{
    struct gr_ctx *ctx = NULL;
    struct gr_ctx_config cc = gr_ctx_config_default();
    cc.device = dev;
    if (gr_ctx_new(&ctx, &cc) < 0) {
        fprintf(stderr, "%s\n", gr_last_error());
        exit(1);
    }
    return ctx;
}

static struct gr_ctx *cpu_ctx(void)
{
    return dev_ctx(GR_DEVICE_CPU);
}

static void test_param_count(void)
{
    struct nlp_udgn_config c = nlp_udgn_config_default(10798);
    c.pos_classes = 0;
    CHECK_MSG(nlp_udgn_param_count(&c) == 49928878, "%lld",
              (long long)nlp_udgn_param_count(&c));
    c.pos_classes = 5;
    CHECK_MSG(nlp_udgn_param_count(&c) == 49996226, "%lld",
              (long long)nlp_udgn_param_count(&c));
    /* Single channel keeps the count (C·dc unchanged, r shrinks by 2·7·L). */
    struct nlp_udgn_config s = c;
    nlp_udgn_config_single_channel(&s);
    CHECK(s.channels == 1 && s.head_size == 1024);
    CHECK(nlp_udgn_param_count(&s) ==
          nlp_udgn_param_count(&c) - 2 * 7 * c.layers);
    /* What init allocates is what the formula says, every ablation. */
    for (int v = 0; v < 3; v++) {
        struct nlp_udgn_config t = nlp_udgn_config_default(37);
        t.d = 8;
        t.layers = 2;
        t.channels = 2;
        t.head_size = 3;
        t.parser_layers = 2;
        t.pos_classes = v == 1 ? 0 : 4;
        t.abs_pos = v == 2;
        t.max_len = 20;
        struct gr_ctx *ctx = cpu_ctx();
        struct nlp_udgn m;
        CHECK(nlp_udgn_init(&m, ctx, &t, 1) == 0);
        CHECK_MSG(gr_param_count(ctx, NULL) == nlp_udgn_param_count(&t),
                  "variant %d: %lld allocated, formula %lld", v,
                  (long long)gr_param_count(ctx, NULL),
                  (long long)nlp_udgn_param_count(&t));
        gr_ctx_free(ctx);
    }
}

struct setup {
    struct fx_file fx;
    struct gr_ctx *ctx;
    struct nlp_udgn m;
    int B, n;
    int32_t ids[64], lens[8], targets[64];
};

static int setup(struct setup *s, const char *dir, enum gr_device dev)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/udgn.txt", dir);
    if (fx_load(&s->fx, path) < 0) {
        return -1;
    }
    const struct fx_entry *z = fx_get(&s->fx, "sizes");
    struct nlp_udgn_config c = nlp_udgn_config_default((int)z->v[0]);
    c.d = (int)z->v[1];
    c.channels = (int)z->v[2];
    c.head_size = (int)z->v[3];
    c.layers = (int)z->v[4];
    c.parser_layers = (int)z->v[5];
    c.pos_classes = (int)z->v[6];
    s->B = (int)z->v[7];
    s->n = (int)z->v[8];
    const struct fx_entry *ids = fx_get(&s->fx, "ids");
    const struct fx_entry *tg = fx_get(&s->fx, "targets");
    const struct fx_entry *ln = fx_get(&s->fx, "lens");
    for (int i = 0; i < s->B * s->n; i++) {
        s->ids[i] = (int32_t)ids->v[i];
        s->targets[i] = (int32_t)tg->v[i];
    }
    for (int b = 0; b < s->B; b++) {
        s->lens[b] = (int32_t)ln->v[b];
    }
    s->ctx = dev_ctx(dev);
    if (nlp_udgn_init(&s->m, s->ctx, &c, 7) < 0) {
        fprintf(stderr, "%s\n", gr_last_error());
        return -1;
    }
    /* Every parameter from the fixture, by name; the two sets equal. */
    int n_params = 0;
    for (int i = 0; i < gr_ctx_n_named(s->ctx); i++) {
        struct gr_tensor *t = gr_ctx_named(s->ctx, i);
        if (t->kind != GR_KIND_PARAM) {
            continue;
        }
        n_params++;
        char key[300];
        snprintf(key, sizeof key, "param.%s", t->name);
        float *v = fx_floats(&s->fx, key);
        CHECK_MSG(v != NULL, "fixture lacks %s", key);
        if (v) {
            CHECK(fx_get(&s->fx, key)->numel == t->numel);
            gr_tensor_set_host(t, v);
            free(v);
        }
    }
    int n_fx = 0;
    for (int i = 0; i < s->fx.n; i++) {
        n_fx += strncmp(s->fx.e[i].name, "param.", 6) == 0;
    }
    CHECK_MSG(n_fx == n_params, "fixture %d params, model %d", n_fx,
              n_params);
    return 0;
}

static void test_model(struct setup *s)
{
    struct gr_ctx *ctx = s->ctx;
    gr_zero_grad(ctx);
    gr_step_reset(ctx);
    struct nlp_udgn_out o;
    int rc = nlp_udgn_forward(ctx, &s->m, s->ids, s->lens, s->B, s->n,
                              s->targets, 0, gr_rng_make(1, 2), &o);
    CHECK_MSG(rc == 0 && o.loss, "%s", gr_last_error());
    if (rc < 0 || !o.loss) {
        return;
    }
    fx_compare_tensor(&s->fx, "P", o.P, RTOL);
    fx_compare_tensor(&s->fx, "M", o.M, RTOL);
    fx_compare_tensor(&s->fx, "X", o.X, RTOL);
    fx_compare_tensor(&s->fx, "logits", o.logits, RTOL);
    CHECK(o.n_masked == 3);
    double loss = gr_tensor_item(o.loss);
    double want = fx_scalar(&s->fx, "loss");
    CHECK_MSG(fabs(loss - want) <= RTOL * fabs(want), "loss %.9g vs %.9g",
              loss, want);

    /* Parser (§3.2): rows sum to 1, padded columns 0, diagonal allowed.
     * Mask (§4): symmetric (bitwise), in [0, 1], zero diagonal. */
    int B = s->B, n = s->n;
    float P[64], M[64];
    gr_tensor_to_host(o.P, P);
    gr_tensor_to_host(o.M, M);
    int diag_positive = 0;
    for (int b = 0; b < B; b++) {
        for (int i = 0; i < n; i++) {
            double sum = 0.0;
            for (int j = 0; j < n; j++) {
                float pij = P[(b * n + i) * n + j];
                float mij = M[(b * n + i) * n + j];
                sum += pij;
                if (j >= s->lens[b]) {
                    CHECK(pij == 0.0f);
                }
                if (i == j) {
                    diag_positive += i < s->lens[b] && pij > 0.0f;
                    CHECK(mij == 0.0f);
                }
                CHECK(mij == M[(b * n + j) * n + i]);
                CHECK(mij >= 0.0f && mij <= 1.0f);
            }
            CHECK_NEAR(sum, 1.0, 1e-5);
        }
    }
    CHECK(diag_positive == s->lens[0] + s->lens[1]);

    CHECK(gr_backward(ctx, o.loss) == 0);
    int compared = 0;
    for (int i = 0; i < gr_ctx_n_named(ctx); i++) {
        struct gr_tensor *t = gr_ctx_named(ctx, i);
        if (t->kind != GR_KIND_PARAM) {
            continue;
        }
        char key[300];
        snprintf(key, sizeof key, "grad.%s", t->name);
        fx_compare_tensor(&s->fx, key, t->grad, RTOL);
        compared++;
    }
    CHECK(compared > 20);
    /* The parser learns through M only: its output layer has a gradient. */
    float *gw = malloc((size_t)s->m.mlp_w->numel * sizeof *gw);
    gr_tensor_to_host(s->m.mlp_w->grad, gw);
    double gn = 0.0;
    for (int64_t i = 0; i < s->m.mlp_w->numel; i++) {
        gn += fabs(gw[i]);
    }
    free(gw);
    CHECK(gn > 1e-6);

    /* A gradient scaled by 1.001 must fail the comparison (the tolerance
     * is tight enough to see it). */
    struct gr_tensor *e = s->m.emb;
    float *ge = malloc((size_t)e->numel * sizeof *ge);
    gr_tensor_to_host(e->grad, ge);
    for (int64_t i = 0; i < e->numel; i++) {
        ge[i] *= 1.001f;
    }
    int before = test_failures;
    fprintf(stderr, "expected to fail (a gradient scaled by 1.001):\n");
    fx_compare(&s->fx, "grad.emb.weight", ge, e->numel, RTOL);
    CHECK_MSG(test_failures == before + 1,
              "a gradient off by 0.1%% passed the comparison");
    test_failures = before;
    test_checks++;
    free(ge);
}

/* One DGN layer from the fixture's X0 and M; then with the bias added
 * after the scaling (r·√dc before it), which must not match. */
static void test_layer(struct setup *s)
{
    struct gr_ctx *ctx = s->ctx;
    int B = s->B, n = s->n, d = s->m.cfg.d;
    float kp[64];
    for (int b = 0; b < B; b++) {
        for (int j = 0; j < n; j++) {
            kp[b * n + j] = j < s->lens[b] ? 1.0f : 0.0f;
        }
    }
    for (int variant = 0; variant < 2; variant++) {
        gr_step_reset(ctx);
        float *x0 = fx_floats(&s->fx, "X0");
        float *m = fx_floats(&s->fx, "M");
        struct gr_tensor *x =
            gr_tensor_from_host(ctx, GR_F32, gr_shape3(B, n, d), x0);
        struct gr_tensor *M =
            gr_tensor_from_host(ctx, GR_F32, gr_shape3(B, n, n), m);
        struct gr_tensor *keep =
            gr_tensor_from_host(ctx, GR_F32, gr_shape4(B, n, 1, 1), kp);
        free(x0);
        free(m);
        struct gr_tensor *r = s->m.layer[0].relpos;
        float saved[64], scaled[64];
        gr_tensor_to_host(r, saved);
        if (variant == 1) {
            for (int64_t i = 0; i < r->numel; i++) {
                scaled[i] = saved[i] * sqrtf((float)s->m.cfg.head_size);
            }
            gr_tensor_set_host(r, scaled);
        }
        struct gr_tensor *pi = NULL;
        struct gr_tensor *y = nlp_udgn_layer_forward(
            ctx, &s->m, 0, x, M, keep, 0, gr_rng_make(1, 1), &pi);
        CHECK_MSG(y != NULL, "%s", gr_ctx_error(ctx));
        if (variant == 0) {
            fx_compare_tensor(&s->fx, "layer0", y, RTOL);
            /* π sums to 1 over the channels for every pair. */
            float *pv = malloc((size_t)pi->numel * sizeof *pv);
            gr_tensor_to_host(pi, pv);
            int C = s->m.cfg.channels;
            for (int64_t q = 0; q < pi->numel / C; q++) {
                double sum = 0.0;
                for (int c = 0; c < C; c++) {
                    sum += pv[q * C + c];
                }
                CHECK_NEAR(sum, 1.0, 1e-5);
            }
            free(pv);
        } else {
            int before = test_failures;
            fprintf(stderr, "expected to fail (the bias after the "
                    "scaling):\n");
            fx_compare_tensor(&s->fx, "layer0", y, RTOL);
            CHECK_MSG(test_failures == before + 1,
                      "bias after the scaling matched the fixture");
            test_failures = before;
            test_checks++;
            gr_tensor_set_host(r, saved);
        }
    }
}

/* − competition + single channel: π ≡ 1, so w = M + 1e-6 exactly. */
static void test_single_channel(void)
{
    struct nlp_udgn_config t = nlp_udgn_config_default(17);
    t.d = 6;
    t.layers = 1;
    t.channels = 3;
    t.head_size = 2;
    t.parser_layers = 1;
    t.pos_classes = 0;
    nlp_udgn_config_single_channel(&t);
    CHECK(t.channels == 1 && t.head_size == 6);
    struct gr_ctx *ctx = cpu_ctx();
    struct nlp_udgn m;
    CHECK(nlp_udgn_init(&m, ctx, &t, 3) == 0);
    float x[2 * 4 * 6], mk[2 * 4 * 4], kp[8] = {1, 1, 1, 1, 1, 1, 0, 0};
    for (int i = 0; i < 48; i++) {
        x[i] = (float)sin(i * 0.7);
    }
    for (int i = 0; i < 32; i++) {
        mk[i] = 0.5f;
    }
    struct gr_tensor *pi = NULL;
    struct gr_tensor *y = nlp_udgn_layer_forward(
        ctx, &m, 0, gr_tensor_from_host(ctx, GR_F32, gr_shape3(2, 4, 6), x),
        gr_tensor_from_host(ctx, GR_F32, gr_shape3(2, 4, 4), mk),
        gr_tensor_from_host(ctx, GR_F32, gr_shape4(2, 4, 1, 1), kp), 0,
        gr_rng_make(1, 1), &pi);
    CHECK(y != NULL && pi != NULL && pi->numel == 32);
    float pv[32];
    if (pi) {
        gr_tensor_to_host(pi, pv);
        for (int i = 0; i < 32; i++) {
            CHECK(pv[i] == 1.0f);
        }
    }
    gr_ctx_free(ctx);
}

static void test_ablated(struct setup *s)
{
    struct nlp_udgn m = s->m;
    m.cfg.no_nonlinear = 1;
    m.cfg.no_gates = 1;
    m.cfg.sigmoid = 1;
    gr_step_reset(s->ctx);
    struct nlp_udgn_out o;
    int rc = nlp_udgn_forward(s->ctx, &m, s->ids, s->lens, s->B, s->n,
                              s->targets, 0, gr_rng_make(1, 2), &o);
    CHECK(rc == 0 && o.loss);
    if (o.loss) {
        double want = fx_scalar(&s->fx, "loss_ablate");
        double got = gr_tensor_item(o.loss);
        CHECK_MSG(fabs(got - want) <= RTOL * fabs(want), "%.9g vs %.9g",
                  got, want);
        CHECK(fabs(got - fx_scalar(&s->fx, "loss")) > 1e-3);
    }
}

/* Packing: a sentence's head distributions do not depend on the other
 * sentences of its batch or on padding (parsing runs one at a time). */
static void test_padding(struct setup *s)
{
    int n = s->n, b = 1, len = s->lens[b];
    gr_step_reset(s->ctx);
    struct nlp_udgn_out o;
    CHECK(nlp_udgn_forward(s->ctx, &s->m, s->ids, s->lens, s->B, n, NULL, 0,
                           gr_rng_make(1, 2), &o) == 0);
    float P[64];
    gr_tensor_to_host(o.P, P);
    float H[64];
    gr_step_reset(s->ctx);
    CHECK(nlp_udgn_heads(s->ctx, &s->m, s->ids + b * n, len, H) == 0);
    for (int i = 0; i < len; i++) {
        for (int j = 0; j < len; j++) {
            float want = i == j ? 0.0f : P[(b * n + i) * n + j];
            CHECK_NEAR(H[i * len + j], want, 1e-6);
        }
    }
}

/* A seeded task it must learn: sentences w_0 .. w_5 with w_{i+1} =
 * (w_i + 1) mod 8 (ids 3..10), masked at 0.3; only the context tells a
 * masked word, so the loss must fall far below log 8 (2.08). */
static void test_learns(void)
{
    struct nlp_udgn_config t = nlp_udgn_config_default(11);
    t.d = 24;
    t.layers = 2;
    t.channels = 4;
    t.head_size = 6;
    t.parser_layers = 1;
    t.pos_classes = 2;
    t.dropout = t.dropatt = t.parser_dropout = 0.0f;
    struct gr_ctx *ctx = cpu_ctx();
    struct nlp_udgn m;
    CHECK(nlp_udgn_init(&m, ctx, &t, 5) == 0);
    struct gr_optim_config oc = gr_optim_config_default(GR_OPTIM_ADAM);
    oc.lr = 1e-2f;
    struct gr_optim *opt = NULL;
    CHECK(gr_optim_new(&opt, ctx, "adam", &oc) == 0);
    enum { B = 16, N = 6 };
    int32_t ids[B * N], in[B * N], tg[B * N], lens[B];
    struct gr_philox_stream ps = gr_philox_stream_init(9, 0);
    double first = 0.0, last = 0.0;
    for (int step = 0; step < 300; step++) {
        for (int b = 0; b < B; b++) {
            lens[b] = N;
            int32_t w = (int32_t)(gr_philox_next_u32(&ps) % 8u);
            for (int i = 0; i < N; i++) {
                ids[b * N + i] = 3 + (w + i) % 8;
            }
            nlp_mlm_mask(ids + b * N, N, 0.3f, 77, (uint64_t)(step * B + b)
                         << 8, in + b * N, tg + b * N);
        }
        gr_step_reset(ctx);
        gr_zero_grad(ctx);
        struct nlp_udgn_out o;
        CHECK(nlp_udgn_forward(ctx, &m, in, lens, B, N, tg, 1,
                               gr_rng_make(1, (uint64_t)step), &o) == 0);
        if (!o.loss) {
            continue;
        }
        double l = gr_tensor_item(o.loss);
        first = step < 10 ? first + l / 10 : first;
        last = step >= 290 ? last + l / 10 : last;
        gr_backward(ctx, o.loss);
        gr_clip_grad_norm(ctx, NULL, 1.0f, NULL);
        gr_optim_step(opt);
    }
    printf("learning: masked loss %.3f (first 10 steps) -> %.3f (last 10)\n",
           first, last);
    CHECK_MSG(first > 1.8 && last < 0.5, "masked loss %.3f -> %.3f", first,
              last);
    gr_optim_free(opt);
    gr_ctx_free(ctx);
}

/* Training mode (every dropout on): the loss for a dropout key. */
static double train_loss(struct setup *s, uint64_t key)
{
    struct nlp_udgn m = s->m;
    m.cfg.dropout = 0.3f;
    m.cfg.parser_dropout = 0.3f;
    m.cfg.dropatt = 0.3f;
    gr_step_reset(s->ctx);
    struct nlp_udgn_out o;
    int rc = nlp_udgn_forward(s->ctx, &m, s->ids, s->lens, s->B, s->n,
                              s->targets, 1, gr_rng_make(key, 5), &o);
    CHECK_MSG(rc == 0 && o.loss, "%s", gr_ctx_error(s->ctx));
    return o.loss ? gr_tensor_item(o.loss) : NAN;
}

/* CUDA: the same fixture on the GPU, and training-mode losses (dropout
 * masks are the same bits on both devices) equal to the CPU's. */
static int run_cuda(const char *dir)
{
    if (!gr_cuda_compiled()) {
        return test_skip("nlp_udgn_cuda", NULL,
                         "CUDA is not compiled in (-DGROVE_CUDA=ON)");
    }
    if (gr_cuda_device_count() < 1) {
        return test_skip("nlp_udgn_cuda", TEST_NEED_GPU, "no GPU visible");
    }
    struct setup c, g;
    memset(&c, 0, sizeof c);
    memset(&g, 0, sizeof g);
    if (setup(&c, dir, GR_DEVICE_CPU) == 0 &&
        setup(&g, dir, GR_DEVICE_CUDA) == 0) {
        test_model(&g);
        for (uint64_t k = 1; k <= 3; k++) {
            double a = train_loss(&c, k), b = train_loss(&g, k);
            CHECK_MSG(fabs(a - b) <= 1e-5 * fabs(a), "dropout key %llu: "
                      "cpu %.9g cuda %.9g", (unsigned long long)k, a, b);
        }
    } else {
        CHECK(0);
    }
    gr_ctx_free(c.ctx);
    gr_ctx_free(g.ctx);
    fx_free(&c.fx);
    fx_free(&g.fx);
    return test_report("nlp_udgn_cuda");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_udgn FIXTURE_DIR [cuda]\n");
        return 2;
    }
    if (argc > 2 && strcmp(argv[2], "cuda") == 0) {
        return run_cuda(argv[1]);
    }
    test_param_count();
    test_single_channel();
    test_learns();
    struct setup s;
    memset(&s, 0, sizeof s);
    if (setup(&s, argv[1], GR_DEVICE_CPU) == 0) {
        test_model(&s);
        test_layer(&s);
        test_ablated(&s);
        test_padding(&s);
        /* dropout: the same key gives the same loss, another key another */
        double a = train_loss(&s, 1), b = train_loss(&s, 1);
        double c = train_loss(&s, 2);
        CHECK(a == b);
        CHECK(a != c);
        CHECK(fabs(a - fx_scalar(&s.fx, "loss")) > 1e-4);
        gr_ctx_free(s.ctx);
    } else {
        CHECK(0);
    }
    fx_free(&s.fx);
    return test_report("nlp_udgn");
}
