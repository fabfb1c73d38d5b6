/* Ordered Memory parity with PyTorch (ordered_memory.md §11), fixtures
 * written by tests/fixtures/om/gen_om_fixtures.py in float64, dropout off:
 *   - logic: the pair classifier on 3 unpadded pairs of length 7 with 5
 *     slots: per-step pointers p_t and outputs y_t, the sentence vectors,
 *     logits, loss and the gradient of every parameter (the shared LN_x
 *     included: its gradient sums both uses);
 *   - logicpad: the same weights on a right-padded batch (readout at the
 *     last real position);
 *   - listops: the bidirectional single-sentence classifier on a
 *     left-padded batch: pins the §4.2 rule (a padded sequence's first
 *     token sees p = 0, not FRESH) and the y_{T-1} readouts;
 *   - build_tree (§8) and remove_bracket on hand-made distances.
 * Everything to 1e-5 relative (to each tensor's scale). Also: a gradient
 * scaled by 1.01 must fail the comparison (the tolerance cannot hide it).
 *
 *   test_nlp_om_fixture FIXTURE_DIR
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/ops.h"
#include "kernels/tape.h"
#include "nlp/models/heads.h"
#include "nlp/models/om.h"
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

/* Sets every "<case>.param.<name>" of the fixture into the model's
 * parameter <name>; checks that every parameter of the context got one. */
static void set_params(struct gr_ctx *ctx, const struct fx_file *f,
                       const char *pcase)
{
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s.param.", pcase);
    size_t pl = strlen(prefix);
    int set = 0;
    for (int i = 0; i < f->n; i++) {
        if (strncmp(f->e[i].name, prefix, pl) != 0) {
            continue;
        }
        const char *name = f->e[i].name + pl;
        struct gr_tensor *p = gr_ctx_find(ctx, name);
        CHECK_MSG(p != NULL, "the model has no parameter '%s'", name);
        if (p == NULL) {
            continue;
        }
        CHECK_MSG(p->numel == f->e[i].numel, "%s: %lld values, fixture %lld",
                  name, (long long)p->numel, (long long)f->e[i].numel);
        float *v = fx_floats(f, f->e[i].name);
        CHECK(gr_tensor_set_host(p, v) == 0);
        free(v);
        set++;
    }
    int n_params = 0;
    for (int i = 0; i < gr_ctx_n_named(ctx); i++) {
        n_params += gr_ctx_named(ctx, i)->kind == GR_KIND_PARAM;
    }
    CHECK_MSG(set == n_params, "%s: %d parameters set of %d", pcase, set,
              n_params);
}

static int32_t *fx_ints(const struct fx_file *f, const char *name,
                        int64_t *n)
{
    const struct fx_entry *e = fx_get(f, name);
    if (e == NULL) {
        return NULL;
    }
    int32_t *x = malloc((size_t)(e->numel ? e->numel : 1) * sizeof *x);
    for (int64_t i = 0; i < e->numel; i++) {
        x[i] = (int32_t)lrint(e->v[i]);
    }
    *n = e->numel;
    return x;
}

struct case_def {
    const char *name;   /* fixture case */
    const char *params; /* whose parameters */
    struct nlp_om_config om;
    struct nlp_head_config head;
};

static double run_case(const char *dir, const struct fx_file *f,
                       const struct case_def *cd)
{
    (void)dir;
    struct gr_ctx *ctx = cpu_ctx();
    if (ctx == NULL) {
        CHECK(0);
        return INFINITY;
    }
    struct nlp_om om;
    struct nlp_head head;
    CHECK(nlp_om_init(&om, ctx, &cd->om, 1) == 0);
    CHECK(nlp_head_init(&head, ctx, "mlp", &cd->head, 1) == 0);
    set_params(ctx, f, cd->params);
    char name[256];
    int64_t n_ids = 0, n_lab = 0;
    snprintf(name, sizeof name, "%s.ids", cd->name);
    int32_t *ids = fx_ints(f, name, &n_ids);
    snprintf(name, sizeof name, "%s.labels", cd->name);
    int32_t *labels = fx_ints(f, name, &n_lab);
    snprintf(name, sizeof name, "%s.ids", cd->name);
    const struct fx_entry *ie = fx_get(f, name);
    snprintf(name, sizeof name, "%s.nslot", cd->name);
    int N = (int)fx_scalar(f, name);
    double worst = 0.0;
    if (ids == NULL || labels == NULL || ie == NULL) {
        CHECK(0);
        goto done;
    }
    int32_t T = (int32_t)ie->shape[0], B = (int32_t)ie->shape[1];
    float *probs = malloc((size_t)T * B * N * sizeof *probs);

    /* 1. encode -> head -> loss, backward */
    gr_step_reset(ctx);
    gr_zero_grad(ctx);
    struct nlp_om_run run = nlp_om_run_eval(N);
    run.probs_out = probs;
    struct gr_tensor *enc = NULL;
    CHECK_MSG(nlp_om_encode(&om, ids, T, B, &run, &enc) == 0, "%s",
              gr_last_error());
    struct gr_tensor *logits = nlp_head_forward(ctx, &head, enc, 0,
                                                gr_rng_make(0, 0));
    struct gr_tensor *tg = gr_tensor_from_host(ctx, GR_I32,
                                               gr_shape1(n_lab), labels);
    struct gr_tensor *loss = gr_cross_entropy(ctx, logits, tg, -1);
    CHECK_MSG(loss != NULL, "%s", gr_ctx_error(ctx));
    if (loss == NULL) {
        free(probs);
        goto done;
    }
    CHECK(gr_backward(ctx, loss) == 0);
#define CMP(field, tensor)                                                    \
    snprintf(name, sizeof name, "%s.%s", cd->name, field);                    \
    worst = fmax(worst, fx_compare_tensor(f, name, tensor, RTOL))
    CMP("enc", enc);
    CMP("logits", logits);
    CMP("loss", loss);
    snprintf(name, sizeof name, "%s.p", cd->name);
    worst = fmax(worst, fx_compare(f, name, probs, (int64_t)T * B * N, RTOL));
    int n_grads = 0;
    for (int i = 0; i < gr_ctx_n_named(ctx); i++) {
        struct gr_tensor *p = gr_ctx_named(ctx, i);
        if (p->kind != GR_KIND_PARAM) {
            continue;
        }
        char field[200];
        snprintf(field, sizeof field, "grad.%s", p->name);
        snprintf(name, sizeof name, "%s.%s", cd->name, field);
        const struct fx_entry *e = fx_get(f, name);
        double scale = 0.0;
        for (int64_t j = 0; e != NULL && j < e->numel; j++) {
            scale = fmax(scale, fabs(e->v[j]));
        }
        if (e != NULL && scale < 1e-12) {
            /* Mathematically zero (b_β: the softmax is shift-invariant):
             * PyTorch's rounding leaves ~1e-18, grove's f32 ~1e-9. */
            float *g = malloc((size_t)p->numel * sizeof *g);
            gr_tensor_to_host(p->grad, g);
            for (int64_t j = 0; j < p->numel; j++) {
                CHECK_MSG(fabsf(g[j]) < 1e-6f, "%s: %g should be 0", name,
                          (double)g[j]);
            }
            free(g);
        } else {
            CMP(field, p->grad);
        }
        n_grads++;
    }
    printf("%s: %d gradients compared\n", cd->name, n_grads);

    /* A gradient 1 % off must be caught at this tolerance. */
    {
        struct gr_tensor *w = gr_ctx_find(ctx, "encoder.OM_forward.cell."
                                               "input_t.1.weight");
        float *g = malloc((size_t)w->numel * sizeof *g);
        gr_tensor_to_host(w->grad, g);
        for (int64_t i = 0; i < w->numel; i++) {
            g[i] *= 1.01f;
        }
        snprintf(name, sizeof name,
                 "%s.grad.encoder.OM_forward.cell.input_t.1.weight",
                 cd->name);
        const struct fx_entry *e = fx_get(f, name);
        double scale = 0.0;
        for (int64_t i = 0; e != NULL && i < e->numel; i++) {
            scale = fmax(scale, fabs(e->v[i]));
        }
        int caught = 0;
        for (int64_t i = 0; e != NULL && i < e->numel; i++) {
            double dd = fabs((double)g[i] - e->v[i]);
            caught |= !(dd <= RTOL * scale + RTOL * fabs(e->v[i]));
        }
        CHECK_MSG(caught, "a gradient scaled by 1.01 passed the comparison");
        free(g);
    }

    /* 2. per-step outputs and pointers of the forward direction */
    gr_step_reset(ctx);
    int was = gr_set_grad_enabled(ctx, 0);
    struct gr_tensor *idt = gr_tensor_from_host(ctx, GR_I32,
                                                gr_shape2(T, B), ids);
    struct gr_tensor *x = gr_embedding(ctx, om.embedding, idt);
    uint8_t *valid = malloc((size_t)T * B);
    for (int64_t i = 0; i < (int64_t)T * B; i++) {
        valid[i] = ids[i] != cd->om.pad_id;
    }
    struct nlp_om_seq seq;
    CHECK(nlp_om_forward(&om, 0, x, valid, &run, &seq) == 0);
    CMP("y", seq.y);
    CMP("p", seq.p);
    gr_set_grad_enabled(ctx, was);
    free(valid);
    free(probs);
#undef CMP
done:
    free(ids);
    free(labels);
    nlp_om_free(&om);
    gr_ctx_free(ctx);
    printf("%s: worst relative error %.3g\n", cd->name, worst);
    return worst;
}

static int cmp_span(const void *a, const void *b)
{
    const int32_t *x = a, *y = b;
    if (x[0] != y[0]) {
        return x[0] < y[0] ? -1 : 1;
    }
    return (x[1] > y[1]) - (x[1] < y[1]);
}

/* build_tree and remove_bracket against the Python written from §8. */
static void test_trees(const struct fx_file *f)
{
    int cases = 0;
    for (int k = 0;; k++) {
        char name[64];
        snprintf(name, sizeof name, "tree.%d.dist", k);
        int found = 0;
        for (int i = 0; i < f->n; i++) {
            found |= strcmp(f->e[i].name, name) == 0;
        }
        if (!found) {
            break;
        }
        int64_t n = 0, ns = 0, nd = 0, nr = 0;
        int32_t *dist = fx_ints(f, name, &n);
        snprintf(name, sizeof name, "tree.%d.spans", k);
        int32_t *want = fx_ints(f, name, &ns);
        snprintf(name, sizeof name, "tree.%d.drop", k);
        int32_t *drop32 = fx_ints(f, name, &nd);
        snprintf(name, sizeof name, "tree.%d.removed", k);
        int32_t *want_r = fx_ints(f, name, &nr);
        int32_t spans[64], removed[64];
        uint8_t drop[32];
        int32_t got = nlp_om_build_tree(dist, (int32_t)n, spans);
        CHECK_MSG(got == (n > 1 ? n - 1 : 0) && 2 * got == ns,
                  "tree %d: %d brackets, fixture %lld", k, (int)got,
                  (long long)ns / 2);
        qsort(spans, (size_t)got, 2 * sizeof *spans, cmp_span);
        CHECK_MSG(2 * got == ns &&
                      memcmp(spans, want, (size_t)ns * sizeof *spans) == 0,
                  "tree %d: brackets differ from the fixture", k);
        for (int64_t i = 0; i < nd; i++) {
            drop[i] = (uint8_t)drop32[i];
        }
        /* remove_leaves takes the spans in build order: rebuild them */
        got = nlp_om_build_tree(dist, (int32_t)n, spans);
        int32_t r = nlp_om_tree_remove_leaves(spans, (int32_t)n, drop,
                                              removed);
        qsort(removed, (size_t)(r > 0 ? r : 0), 2 * sizeof *removed,
              cmp_span);
        CHECK_MSG(2 * r == nr && memcmp(removed, want_r,
                                        (size_t)nr * sizeof *removed) == 0,
                  "tree %d: brackets after removing leaves differ (%d vs "
                  "%lld)",
                  k, (int)r, (long long)nr / 2);
        free(dist);
        free(want);
        free(drop32);
        free(want_r);
        cases++;
    }
    CHECK_MSG(cases >= 7, "only %d tree cases in the fixture", cases);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_nlp_om_fixture FIXTURE_DIR\n");
        return 2;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/om_fixture.txt", argv[1]);
    struct fx_file f;
    if (fx_load(&f, path) < 0) {
        return 1;
    }
    struct case_def logic;
    memset(&logic, 0, sizeof logic);
    nlp_om_config_default(&logic.om, NLP_OM_LOGIC);
    logic.om.emsize = 5;
    logic.om.nhid = 6;
    logic.om.nslot = 5;
    logic.om.nslot_eval = 5;
    logic.head.kind = NLP_HEAD_PAIR;
    logic.head.in = 6;
    logic.head.hidden = 6;
    logic.head.classes = 7;
    logic.name = "logic";
    logic.params = "logic";
    run_case(argv[1], &f, &logic);
    struct case_def pad = logic;
    pad.name = "logicpad";
    run_case(argv[1], &f, &pad);

    struct case_def lo;
    memset(&lo, 0, sizeof lo);
    nlp_om_config_default(&lo.om, NLP_OM_LISTOPS);
    lo.om.emsize = 4;
    lo.om.nhid = 5;
    lo.om.nslot = 4;
    lo.om.nslot_eval = 4;
    lo.om.bidirection = 1;
    lo.head.kind = NLP_HEAD_LINEAR;
    lo.head.in = 10;
    lo.head.classes = 10;
    lo.name = "listops";
    lo.params = "listops";
    run_case(argv[1], &f, &lo);

    test_trees(&f);
    fx_free(&f);
    return test_report("nlp_om_fixture");
}
