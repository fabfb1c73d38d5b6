/* ON-LSTM parity with PyTorch (on_lstm.md §13), fixtures written by
 * tests/fixtures/nlp/gen_lm_fixtures.py in float64:
 *   - one ON-LSTM layer (d_in 6, H 8, C 2, B 3, T 5): outputs, final
 *     states, both distances and every gradient (weights, biases, input,
 *     initial state), in evaluation mode (U·(1-p)) and in training mode
 *     with a supplied DropConnect mask (kept weights not rescaled);
 *   - the 3-layer LM with tied decoder (embedding dropout, locked dropouts
 *     and DropConnect with fixed masks, AR on the undropped output, TAR):
 *     window 1 loss parts, logits, distances, states and every gradient,
 *     the clipped global norm and the SGD step (lr·T/bptt, weight decay);
 *     window 2 from the carried state with the new weights; window 3 in
 *     evaluation mode.
 * Everything matched to 1e-5 relative (to each tensor's scale).
 * Also: the model's random masks are the ones nlp_lm_rng names (the same
 * forward with those masks given explicitly gives the same loss).
 *
 *   test_nlp_lm_fixture FIXTURE_DIR
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/layers.h"
#include "kernels/ops.h"
#include "kernels/optim.h"
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

static struct gr_tensor *step_from(struct gr_ctx *ctx, const struct fx_file *f,
                                   const char *name, struct gr_shape shape,
                                   int grad)
{
    float *v = fx_floats(f, name);
    struct gr_tensor *t = gr_tensor_from_host(ctx, GR_F32, shape, v);
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

/* ---- the cell fixture ---- */

static void test_cell(const char *dir)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/onlstm_cell.txt", dir);
    struct fx_file f;
    if (fx_load(&f, path) < 0) {
        CHECK(0);
        return;
    }
    struct gr_ctx *ctx = cpu_ctx();
    CHECK(ctx != NULL);
    if (ctx == NULL) {
        fx_free(&f);
        return;
    }
    const int IN = 6, H = 8, C = 2, B = 3, T = 5;
    struct gr_onlstm l;
    CHECK(gr_onlstm_init(&l, ctx, "cell", IN, H, C, gr_rng_make(1, 2)) == 0);
    set_param(&f, "w_ih", l.w_ih);
    set_param(&f, "b_ih", l.b_ih);
    set_param(&f, "w_hh", l.w_hh);
    set_param(&f, "b_hh", l.b_hh);
    float p = (float)fx_scalar(&f, "p");
    const char *modes[2] = {"eval", "train"};
    double worst = 0.0;
    for (int mode = 0; mode < 2; mode++) {
        gr_step_reset(ctx);
        gr_zero_grad(ctx);
        struct gr_tensor *x = step_from(ctx, &f, "x", gr_shape3(T, B, IN), 1);
        struct gr_tensor *h0 = step_from(ctx, &f, "h0", gr_shape2(B, H), 1);
        struct gr_tensor *c0 = step_from(ctx, &f, "c0", gr_shape2(B, H), 1);
        struct gr_tensor *u;
        if (mode == 0) {
            u = gr_dropconnect(ctx, l.w_hh, p, GR_WDROP_ONLSTM, 0,
                               gr_rng_make(0, 0));
        } else {
            struct gr_tensor *mk = step_from(
                ctx, &f, "mask", gr_tensor_shape(l.w_hh), 0);
            u = gr_mul(ctx, l.w_hh, mk);
        }
        struct gr_rnn_out o;
        CHECK(gr_onlstm_forward(ctx, &l, x, h0, c0, u, &o) == 0);
        struct gr_tensor *ry = step_from(ctx, &f, "ry", gr_shape3(T, B, H), 0);
        struct gr_tensor *rh = step_from(ctx, &f, "rh", gr_shape2(B, H), 0);
        struct gr_tensor *rc = step_from(ctx, &f, "rc", gr_shape2(B, H), 0);
        struct gr_tensor *loss = gr_add(
            ctx,
            gr_add(ctx, gr_sum(ctx, gr_mul(ctx, o.y, ry)),
                   gr_sum(ctx, gr_mul(ctx, o.h, rh))),
            gr_sum(ctx, gr_mul(ctx, o.c, rc)));
        CHECK_MSG(loss != NULL, "%s", gr_ctx_error(ctx));
        if (loss == NULL) {
            break;
        }
        CHECK(gr_backward(ctx, loss) == 0);
        char name[64];
#define CMP(field, tensor)                                                    \
    snprintf(name, sizeof name, "%s.%s", modes[mode], field);                 \
    worst = fmax(worst, fx_compare_tensor(&f, name, tensor, RTOL))
        CMP("y", o.y);
        CMP("h", o.h);
        CMP("c", o.c);
        CMP("df", o.df);
        CMP("di", o.di);
        CMP("loss", loss);
        CMP("grad.w_ih", l.w_ih->grad);
        CMP("grad.b_ih", l.b_ih->grad);
        CMP("grad.w_hh", l.w_hh->grad);
        CMP("grad.b_hh", l.b_hh->grad);
        CMP("grad.x", x->grad);
        CMP("grad.h0", h0->grad);
        CMP("grad.c0", c0->grad);
#undef CMP
    }
    printf("cell fixture: worst error %.3g of the tensor's scale\n", worst);
    gr_ctx_free(ctx);
    fx_free(&f);
}

/* ---- the LM fixture ---- */

struct lm_masks_host {
    float *embed, *input, *output;
    float *hidden[NLP_LM_MAX_LAYERS], *weight[NLP_LM_MAX_LAYERS];
};

static void masks_load(const struct fx_file *f, int win, int L,
                       struct lm_masks_host *mh, struct nlp_lm_masks *mk)
{
    char name[64];
    memset(mh, 0, sizeof *mh);
    memset(mk, 0, sizeof *mk);
    snprintf(name, sizeof name, "w%d.mask.embed", win);
    mk->embed = mh->embed = fx_floats(f, name);
    snprintf(name, sizeof name, "w%d.mask.input", win);
    mk->input = mh->input = fx_floats(f, name);
    snprintf(name, sizeof name, "w%d.mask.output", win);
    mk->output = mh->output = fx_floats(f, name);
    for (int l = 0; l < L; l++) {
        snprintf(name, sizeof name, "w%d.mask.weight%d", win, l);
        mk->weight[l] = mh->weight[l] = fx_floats(f, name);
        if (l < L - 1) {
            snprintf(name, sizeof name, "w%d.mask.hidden%d", win, l);
            mk->hidden[l] = mh->hidden[l] = fx_floats(f, name);
        }
    }
}

static void masks_free(struct lm_masks_host *mh)
{
    free(mh->embed);
    free(mh->input);
    free(mh->output);
    for (int l = 0; l < NLP_LM_MAX_LAYERS; l++) {
        free(mh->hidden[l]);
        free(mh->weight[l]);
    }
}

/* Compares every parameter (or its gradient) with "<prefix><name>". */
static double compare_params(struct gr_ctx *ctx, const struct fx_file *f,
                             const char *prefix, int grads)
{
    double worst = 0.0;
    for (int i = 0; i < gr_ctx_n_named(ctx); i++) {
        struct gr_tensor *t = gr_ctx_named(ctx, i);
        if (t->kind != GR_KIND_PARAM) {
            continue;
        }
        char name[160];
        snprintf(name, sizeof name, "%s%s", prefix, t->name);
        worst = fmax(worst, fx_compare_tensor(f, name, grads ? t->grad : t,
                                              RTOL));
    }
    return worst;
}

/* Window `win` (1-based) of T rows from `row`: forward (and backward when
 * training), compared with the fixture. */
static double lm_window(struct nlp_lm *lm, struct nlp_lm_state *st,
                        const struct fx_file *f, const int32_t *data,
                        int row, int T, int win, int training)
{
    struct gr_ctx *ctx = lm->ctx;
    int B = st->batch, L = lm->cfg.nlayers;
    gr_step_reset(ctx);
    gr_zero_grad(ctx);
    struct gr_tensor *in = gr_tensor_from_host(ctx, GR_I32, gr_shape2(T, B),
                                               data + row * B);
    struct gr_tensor *tg = gr_tensor_from_host(ctx, GR_I32,
                                               gr_shape1(T * B),
                                               data + (row + 1) * B);
    struct lm_masks_host mh;
    struct nlp_lm_masks mk;
    struct nlp_lm_drop drop = nlp_lm_drop_eval();
    memset(&mh, 0, sizeof mh);
    if (training) {
        masks_load(f, win, L, &mh, &mk);
        drop = nlp_lm_drop_train(1, 0, 0);
        drop.masks = &mk;
    }
    struct nlp_lm_out o;
    int rc = nlp_lm_forward(lm, st, in, tg, &drop, &o);
    CHECK_MSG(rc == 0, "window %d: %s", win, gr_last_error());
    masks_free(&mh);
    if (rc < 0) {
        return INFINITY;
    }
    double worst = 0.0;
    char name[64];
#define CMP(field, tensor)                                                    \
    snprintf(name, sizeof name, "w%d.%s", win, field);                        \
    worst = fmax(worst, fx_compare_tensor(f, name, tensor, RTOL))
    CMP("loss", o.loss);
    CMP("ce", o.ce);
    if (training) {
        CMP("ar", o.ar);
        CMP("tar", o.tar);
    } else {
        CHECK(o.ar == NULL && o.tar == NULL);
    }
    CMP("logits", o.logits);
    /* distances: [L, T, B] in the fixture, one [T, B] per layer here */
    float *df = malloc((size_t)L * T * B * sizeof *df);
    float *di = malloc((size_t)L * T * B * sizeof *di);
    for (int l = 0; l < L; l++) {
        gr_tensor_to_host(o.df[l], df + (size_t)l * T * B);
        gr_tensor_to_host(o.di[l], di + (size_t)l * T * B);
    }
    snprintf(name, sizeof name, "w%d.df", win);
    worst = fmax(worst, fx_compare(f, name, df, (int64_t)L * T * B, RTOL));
    snprintf(name, sizeof name, "w%d.di", win);
    worst = fmax(worst, fx_compare(f, name, di, (int64_t)L * T * B, RTOL));
    free(df);
    free(di);
    for (int l = 0; l < L; l++) {
        char field[16];
        snprintf(field, sizeof field, "h%d", l);
        CMP(field, st->h[l]);
        snprintf(field, sizeof field, "c%d", l);
        CMP(field, st->c[l]);
    }
#undef CMP
    if (training) {
        CHECK(gr_backward(ctx, o.loss) == 0);
        snprintf(name, sizeof name, "w%d.grad.", win);
        worst = fmax(worst, compare_params(ctx, f, name, 1));
    }
    return worst;
}

static void test_lm(const char *dir)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/onlstm_lm_step.txt", dir);
    struct fx_file f;
    if (fx_load(&f, path) < 0) {
        CHECK(0);
        return;
    }
    struct gr_ctx *ctx = cpu_ctx();
    CHECK(ctx != NULL);
    if (ctx == NULL) {
        fx_free(&f);
        return;
    }
    struct nlp_lm_config cfg;
    nlp_lm_config_default(&cfg, NLP_LM_ONLSTM, (int32_t)fx_scalar(&f, "cfg.V"));
    cfg.emsize = (int32_t)fx_scalar(&f, "cfg.E");
    cfg.nhid = (int32_t)fx_scalar(&f, "cfg.H");
    cfg.nlayers = (int32_t)fx_scalar(&f, "cfg.L");
    cfg.chunk = (int32_t)fx_scalar(&f, "cfg.C");
    cfg.dropout = (float)fx_scalar(&f, "cfg.dropout");
    cfg.dropouth = (float)fx_scalar(&f, "cfg.dropouth");
    cfg.dropouti = (float)fx_scalar(&f, "cfg.dropouti");
    cfg.dropoute = (float)fx_scalar(&f, "cfg.dropoute");
    cfg.wdrop = (float)fx_scalar(&f, "cfg.wdrop");
    cfg.alpha = (float)fx_scalar(&f, "cfg.alpha");
    cfg.beta = (float)fx_scalar(&f, "cfg.beta");
    int B = (int)fx_scalar(&f, "cfg.B");
    struct nlp_lm lm;
    CHECK_MSG(nlp_lm_init(&lm, ctx, &cfg, 5) == 0, "%s", gr_last_error());
    /* the parameter names are the reference's state-dict keys */
    for (int i = 0; i < gr_ctx_n_named(ctx); i++) {
        struct gr_tensor *t = gr_ctx_named(ctx, i);
        char name[160];
        snprintf(name, sizeof name, "param0.%s", t->name);
        set_param(&f, name, t);
    }
    CHECK(gr_param_count(ctx, NULL) == nlp_lm_param_count(&cfg));
    const struct fx_entry *de = fx_get(&f, "data");
    int32_t *data = malloc((size_t)de->numel * sizeof *data);
    for (int64_t i = 0; i < de->numel; i++) {
        data[i] = (int32_t)de->v[i];
    }
    struct nlp_lm_state st;
    CHECK(nlp_lm_state_init(&st, &lm, "fx", B) == 0);

    double worst = lm_window(&lm, &st, &f, data, 0, 6, 1, 1);
    float norm = 0.0f;
    CHECK(gr_clip_grad_norm(ctx, NULL, (float)fx_scalar(&f, "cfg.clip"),
                            &norm) == 0);
    CHECK_MSG(fabs(norm - fx_scalar(&f, "w1.grad_norm")) <=
                  RTOL * fx_scalar(&f, "w1.grad_norm"),
              "grad norm %.9g vs %.9g", (double)norm,
              fx_scalar(&f, "w1.grad_norm"));
    struct gr_optim_config oc = gr_optim_config_default(GR_OPTIM_SGD);
    oc.lr = (float)fx_scalar(&f, "cfg.lr");
    oc.weight_decay = (float)fx_scalar(&f, "cfg.wdecay");
    struct gr_optim *opt = NULL;
    CHECK(gr_optim_new(&opt, ctx, "sgd", &oc) == 0);
    gr_optim_set_lr(opt, oc.lr * 6.0f / (float)fx_scalar(&f, "cfg.bptt"));
    CHECK(gr_optim_step(opt) == 0);
    worst = fmax(worst, compare_params(ctx, &f, "param1.", 0));
    worst = fmax(worst, lm_window(&lm, &st, &f, data, 6, 7, 2, 1));
    worst = fmax(worst, lm_window(&lm, &st, &f, data, 13, 5, 3, 0));
    printf("LM fixture: worst error %.3g of the tensor's scale\n", worst);

    /* The random path draws exactly the masks nlp_lm_rng names. */
    const uint64_t seed = 99;
    const int64_t epoch = 3, window = 7;
    int T = 6, L = cfg.nlayers;
    int64_t rows_w[NLP_LM_MAX_LAYERS];
    struct lm_masks_host mh;
    memset(&mh, 0, sizeof mh);
    struct nlp_lm_masks mk;
    memset(&mk, 0, sizeof mk);
    uint64_t key = gr_rng_key(
        nlp_lm_rng(seed, epoch, window, NLP_LM_RNG_EMBED, 0));
    mh.embed = malloc((size_t)cfg.vocab * sizeof(float));
    for (int i = 0; i < cfg.vocab; i++) {
        mh.embed[i] = gr_rng_keep(key, (uint64_t)i, cfg.dropoute)
                          ? 1.0f / (1.0f - cfg.dropoute)
                          : 0.0f;
    }
    struct {
        float **dst;
        int purpose, layer, n;
        float p;
    } lk[2 + NLP_LM_MAX_LAYERS];
    int nlk = 0;
    lk[nlk].dst = &mh.input, lk[nlk].purpose = NLP_LM_RNG_INPUT,
    lk[nlk].layer = 0, lk[nlk].n = B * cfg.emsize, lk[nlk].p = cfg.dropouti;
    nlk++;
    lk[nlk].dst = &mh.output, lk[nlk].purpose = NLP_LM_RNG_OUTPUT,
    lk[nlk].layer = 0, lk[nlk].n = B * cfg.emsize, lk[nlk].p = cfg.dropout;
    nlk++;
    for (int l = 0; l < L - 1; l++) {
        lk[nlk].dst = &mh.hidden[l], lk[nlk].purpose = NLP_LM_RNG_HIDDEN,
        lk[nlk].layer = l, lk[nlk].n = B * nlp_lm_layer_out(&cfg, l),
        lk[nlk].p = cfg.dropouth;
        nlk++;
    }
    for (int k = 0; k < nlk; k++) {
        key = gr_rng_key(
            nlp_lm_rng(seed, epoch, window, lk[k].purpose, lk[k].layer));
        *lk[k].dst = malloc((size_t)lk[k].n * sizeof(float));
        for (int i = 0; i < lk[k].n; i++) {
            (*lk[k].dst)[i] = gr_rng_keep(key, (uint64_t)i, lk[k].p)
                                  ? 1.0f / (1.0f - lk[k].p)
                                  : 0.0f;
        }
    }
    for (int l = 0; l < L; l++) {
        rows_w[l] = nlp_lm_layer_w_hh(&lm, l)->numel;
        key = gr_rng_key(
            nlp_lm_rng(seed, epoch, window, NLP_LM_RNG_WEIGHT, l));
        mh.weight[l] = malloc((size_t)rows_w[l] * sizeof(float));
        for (int64_t i = 0; i < rows_w[l]; i++) {
            mh.weight[l][i] = gr_rng_keep(key, (uint64_t)i, cfg.wdrop) ? 1.0f
                                                                      : 0.0f;
        }
    }
    mk.embed = mh.embed;
    mk.input = mh.input;
    mk.output = mh.output;
    for (int l = 0; l < L; l++) {
        mk.hidden[l] = mh.hidden[l];
        mk.weight[l] = mh.weight[l];
    }
    float losses[2];
    for (int path_i = 0; path_i < 2; path_i++) {
        nlp_lm_state_zero(&st);
        gr_step_reset(ctx);
        struct gr_tensor *in = gr_tensor_from_host(ctx, GR_I32,
                                                   gr_shape2(T, B), data);
        struct gr_tensor *tg = gr_tensor_from_host(ctx, GR_I32,
                                                   gr_shape1(T * B), data + B);
        struct nlp_lm_drop drop = nlp_lm_drop_train(seed, epoch, window);
        if (path_i == 1) {
            drop.masks = &mk;
        }
        struct nlp_lm_out o;
        CHECK(nlp_lm_forward(&lm, &st, in, tg, &drop, &o) == 0);
        losses[path_i] = o.loss ? gr_tensor_item(o.loss) : NAN;
    }
    CHECK_MSG(fabs(losses[0] - losses[1]) <= 1e-6 * fabs(losses[1]),
              "random-mask loss %.9g vs explicit-mask loss %.9g",
              (double)losses[0], (double)losses[1]);
    masks_free(&mh);

    gr_optim_free(opt);
    free(data);
    gr_ctx_free(ctx);
    fx_free(&f);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_nlp_lm_fixture FIXTURE_DIR\n");
        return 2;
    }
    test_cell(argv[1]);
    test_lm(argv[1]);
    return test_report("nlp_lm_fixture");
}
