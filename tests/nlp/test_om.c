#define _POSIX_C_SOURCE 200809L
/* Ordered Memory behaviour that the fixtures do not pin
 * (ordered_memory.md §3, §4.1, §8, §11):
 *   - parameter counts of the spec (logic 1,247,608; ListOps 448,523 with
 *     their heads) and of the built context; config text round trip and
 *     errors naming the key;
 *   - the worked first steps of §4.1 on random weights: t = 0 is FRESH
 *     (p_0 = 0, y_0 = xt_0), t = 1 forces the pointer to slot N-1 and
 *     y_1 = cell(xt_1, xt_0), t = 2 allows only slots N-2 and N-1;
 *   - N = 12 vs N = 24 on sequences shorter than 12: the same outputs and
 *     the same pointers shifted by 12 slots (no parameter depends on N);
 *   - build_tree on left- and right-branching distances with the brackets
 *     written out by hand, remove_leaves, the bracket format;
 *   - dropout: the same (seed, batch) gives the same encoding, another
 *     batch another one, evaluation none; bad token ids are an error;
 *   - a few Adam steps on one batch lower the loss (the whole model
 *     trains end to end with dropout on).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/random.h"
#include "kernels/ops.h"
#include "kernels/optim.h"
#include "kernels/tape.h"
#include "nlp/models/encoder.h"
#include "nlp/models/heads.h"
#include "nlp/models/om.h"
#include "tests/test.h"

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

static void host(const struct gr_tensor *t, float *out)
{
    CHECK(t != NULL && gr_tensor_to_host(t, out) == 0);
}

static void test_counts(void)
{
    struct nlp_om_config c;
    nlp_om_config_default(&c, NLP_OM_LOGIC);
    struct nlp_head_config h = {NLP_HEAD_PAIR, 200, 200, 7, 0.3f};
    CHECK_EQ_U64(nlp_om_param_count(&c), 1086001);
    CHECK_EQ_U64(nlp_om_param_count(&c) + nlp_head_param_count(&h), 1247608);
    struct gr_ctx *ctx = cpu_ctx();
    struct nlp_om om;
    struct nlp_head head;
    CHECK(nlp_om_init(&om, ctx, &c, 1111) == 0);
    CHECK(nlp_head_init(&head, ctx, "mlp", &h, 1111) == 0);
    CHECK_EQ_U64(gr_param_count(ctx, NULL), 1247608);
    nlp_om_free(&om);
    gr_ctx_free(ctx);

    nlp_om_config_default(&c, NLP_OM_LISTOPS);
    struct nlp_head_config hl = {NLP_HEAD_LINEAR, 128, 0, 10, 0.2f};
    CHECK_EQ_U64(nlp_om_param_count(&c) + nlp_head_param_count(&hl), 448523);
    ctx = cpu_ctx();
    CHECK(nlp_om_init(&om, ctx, &c, 1111) == 0);
    CHECK(nlp_head_init(&head, ctx, "mlp", &hl, 1111) == 0);
    CHECK_EQ_U64(gr_param_count(ctx, NULL), 448523);
    /* ListOps: N(0, 1) embedding with a zero padding row */
    float *e = malloc(20 * 128 * sizeof *e);
    host(om.embedding, e);
    double s2 = 0.0, pad = 0.0;
    for (int i = 0; i < 128; i++) {
        pad += fabs(e[i]);
    }
    for (int i = 128; i < 20 * 128; i++) {
        s2 += (double)e[i] * e[i];
    }
    CHECK(pad == 0.0);
    CHECK_MSG(fabs(s2 / (19 * 128) - 1.0) < 0.15, "variance %g",
              s2 / (19 * 128));
    free(e);
    nlp_om_free(&om);
    gr_ctx_free(ctx);
}

static void test_config_text(void)
{
    struct nlp_om_config c, back;
    nlp_om_config_default(&c, NLP_OM_LISTOPS);
    c.bidirection = 1;
    c.dropoutm = 0.25f;
    struct nlp_text t = {0};
    CHECK(nlp_om_config_write(&c, &t) == 0);
    struct nlp_head_config h = {NLP_HEAD_LINEAR, 256, 0, 10, 0.2f}, hb;
    CHECK(nlp_head_config_write(&h, &t) == 0);
    CHECK(nlp_om_config_read(t.s, "x.ckpt", &back) == 0);
    CHECK(memcmp(&c, &back, sizeof c) == 0);
    CHECK(nlp_head_config_read(t.s, "x.ckpt", &hb) == 0);
    CHECK(memcmp(&h, &hb, sizeof h) == 0);
    /* a missing key and a malformed value are named */
    char *bad = strdup(t.s);
    char *k = strstr(bad, "om.nslot ");
    k[3] = 'X';
    CHECK(nlp_om_config_read(bad, "x.ckpt", &back) < 0);
    CHECK_STR_CONTAINS(gr_last_error(), "'om.nslot'");
    free(bad);
    bad = strdup(t.s);
    k = strstr(bad, "om.emsize ");
    memcpy(k + 10, "1x8", 3);
    CHECK(nlp_om_config_read(bad, "x.ckpt", &back) < 0);
    CHECK_STR_CONTAINS(gr_last_error(), "om.emsize");
    free(bad);
    nlp_text_free(&t);
    c.pad_id = 20;
    CHECK(nlp_om_config_check(&c) < 0);
    CHECK_STR_CONTAINS(gr_last_error(), "padding id");
}

/* A small random-weight model (default init, seed s). */
static void small_cfg(struct nlp_om_config *c)
{
    nlp_om_config_default(c, NLP_OM_LOGIC);
    c->emsize = 7;
    c->nhid = 8;
}

static void test_first_steps(void)
{
    struct gr_ctx *ctx = cpu_ctx();
    struct nlp_om_config c;
    small_cfg(&c);
    struct nlp_om om;
    CHECK(nlp_om_init(&om, ctx, &c, 5) == 0);
    const int T = 4, B = 3, N = 6, D = 8;
    int32_t ids[4 * 3] = {2, 3, 0, 8, 4, 5, 9, 1, 10, 2, 6, 7};
    float probs[4 * 3 * 6];
    gr_step_reset(ctx);
    struct nlp_om_run run = nlp_om_run_eval(N);
    run.probs_out = probs;
    struct gr_tensor *idt = gr_tensor_from_host(ctx, GR_I32,
                                                gr_shape2(T, B), ids);
    struct gr_tensor *x = gr_embedding(ctx, om.embedding, idt);
    struct nlp_om_seq seq;
    CHECK(nlp_om_forward(&om, 0, x, NULL, &run, &seq) == 0);
    float p[4 * 3 * 6], y[4 * 3 * 8];
    host(seq.p, p);
    host(seq.y, y);
    struct gr_tensor *xt = nlp_om_input(&om, 0, x); /* [T, B, D] */
    float xh[4 * 3 * 8];
    host(xt, xh);
    for (int i = 0; i < B * N; i++) {
        CHECK_MSG(p[i] == 0.0f, "p_0 must be 0 (FRESH)");
    }
    for (int i = 0; i < B * D; i++) {
        CHECK_NEAR(y[i], xh[i], 1e-6); /* y_0 = xt_0 */
    }
    for (int b = 0; b < B; b++) {
        for (int i = 0; i < N; i++) {
            float want = i == N - 1 ? 1.0f : 0.0f;
            CHECK_MSG(p[(1 * B + b) * N + i] == want,
                      "p_1[%d][%d] = %g: forced to slot N-1", b, i,
                      (double)p[(1 * B + b) * N + i]);
        }
        float s = 0.0f;
        for (int i = 0; i < N; i++) {
            float v = p[(2 * B + b) * N + i];
            s += v;
            if (i < N - 2) {
                CHECK_MSG(v == 0.0f, "p_2 slot %d must be masked", i);
            } else {
                CHECK_MSG(v > 0.0f && v < 1.0f, "p_2 slot %d = %g", i,
                          (double)v);
            }
        }
        CHECK_NEAR(s, 1.0, 1e-6);
    }
    /* y_1 = cell(xt_1, xt_0) */
    struct gr_tensor *o = nlp_om_cell(&om, 0, gr_select(ctx, xt, 1),
                                      gr_select(ctx, xt, 0));
    float oh[3 * 8];
    host(o, oh);
    for (int i = 0; i < B * D; i++) {
        CHECK_NEAR(y[B * D + i], oh[i], 1e-6);
    }
    /* probs_out of the encoder equals the forward's p */
    struct gr_tensor *enc = NULL;
    CHECK(nlp_om_encode(&om, ids, T, B, &run, &enc) == 0);
    for (int i = 0; i < T * B * N; i++) {
        CHECK_NEAR(probs[i], p[i], 1e-7);
    }
    nlp_om_free(&om);
    gr_ctx_free(ctx);
}

static void test_slot_invariance(void)
{
    struct gr_ctx *ctx = cpu_ctx();
    struct nlp_om_config c;
    small_cfg(&c);
    struct nlp_om om;
    CHECK(nlp_om_init(&om, ctx, &c, 9) == 0);
    const int T = 11, B = 4, D = 8;
    int32_t ids[11 * 4];
    struct gr_philox_stream s = gr_philox_stream_init(3, 0);
    for (int i = 0; i < T * B; i++) {
        ids[i] = (int32_t)(gr_philox_next_u32(&s) % 11u);
    }
    ids[10 * B + 1] = 11; /* one right-padded sequence */
    ids[9 * B + 1] = 11;
    float *p12 = malloc((size_t)T * B * 12 * sizeof *p12);
    float *p24 = malloc((size_t)T * B * 24 * sizeof *p24);
    float e12[4 * 8], e24[4 * 8];
    gr_step_reset(ctx);
    struct nlp_om_run r = nlp_om_run_eval(12);
    r.probs_out = p12;
    struct gr_tensor *enc = NULL;
    CHECK(nlp_om_encode(&om, ids, T, B, &r, &enc) == 0);
    host(enc, e12);
    r = nlp_om_run_eval(24);
    r.probs_out = p24;
    CHECK(nlp_om_encode(&om, ids, T, B, &r, &enc) == 0);
    host(enc, e24);
    double worst = 0.0;
    for (int i = 0; i < B * D; i++) {
        worst = fmax(worst, fabs(e12[i] - e24[i]));
    }
    CHECK_MSG(worst < 1e-5, "N 12 vs 24: encodings differ by %g", worst);
    double wp = 0.0, above = 0.0, mass0 = 0.0;
    for (int t = 0; t < T; t++) {
        for (int b = 0; b < B; b++) {
            for (int i = 0; i < 24; i++) {
                float v = p24[(t * B + b) * 24 + i];
                if (i < 12) {
                    above += fabs(v);
                } else {
                    wp = fmax(wp, fabs(v - p12[(t * B + b) * 12 + i - 12]));
                }
            }
            mass0 += p12[(t * B + b) * 12];
        }
    }
    CHECK_MSG(wp < 1e-6, "pointers differ by %g", wp);
    CHECK_MSG(above == 0.0, "pointer mass above slot 12 of 24: %g", above);
    CHECK_MSG(mass0 == 0.0, "the test needs no mass at slot 0 of 12");
    free(p12);
    free(p24);
    nlp_om_free(&om);
    gr_ctx_free(ctx);
}

static int cmp_span(const void *a, const void *b)
{
    const int32_t *x = a, *y = b;
    if (x[0] != y[0]) {
        return x[0] < y[0] ? -1 : 1;
    }
    return (x[1] > y[1]) - (x[1] < y[1]);
}

static void test_trees(void)
{
    const char *w[6] = {"a", "b", "c", "d", "e", "f"};
    int32_t spans[16], out[16];
    char text[128];
    /* pointer one slot higher each step: pure shifts, right-branching */
    const int32_t right[5] = {24, 23, 22, 21, 20};
    CHECK(nlp_om_build_tree(right, 5, spans) == 4);
    nlp_om_tree_format(spans, 4, 5, w, text, sizeof text);
    CHECK_MSG(strcmp(text, "(a (b (c (d e))))") == 0, "%s", text);
    /* pointer back on the previous slot: one reduction per shift */
    const int32_t left[5] = {24, 23, 23, 23, 23};
    CHECK(nlp_om_build_tree(left, 5, spans) == 4);
    nlp_om_tree_format(spans, 4, 5, w, text, sizeof text);
    CHECK_MSG(strcmp(text, "((((a b) c) d) e)") == 0, "%s", text);
    const int32_t want_left[8] = {0, 2, 0, 3, 0, 4, 0, 5};
    CHECK(memcmp(spans, want_left, sizeof want_left) == 0);
    /* two reductions at once: ((a (b c)) d) */
    const int32_t mixed[4] = {24, 23, 22, 24};
    CHECK(nlp_om_build_tree(mixed, 4, spans) == 3);
    nlp_om_tree_format(spans, 3, 4, w, text, sizeof text);
    CHECK_MSG(strcmp(text, "((a (b c)) d)") == 0, "%s", text);
    /* a reduction asked on a one-element stack stops there */
    const int32_t over[3] = {24, 23, 24};
    CHECK(nlp_om_build_tree(over, 3, spans) == 2);
    nlp_om_tree_format(spans, 2, 3, w, text, sizeof text);
    CHECK_MSG(strcmp(text, "((a b) c)") == 0, "%s", text);
    /* one and two leaves */
    const int32_t one[1] = {24};
    CHECK(nlp_om_build_tree(one, 1, spans) == 0);
    nlp_om_tree_format(spans, 0, 1, w, text, sizeof text);
    CHECK(strcmp(text, "a") == 0);
    /* remove_leaves: "( a and b )" right-branching -> (a (and b)) minus
     * the parentheses, unary nodes collapsed */
    const char *lw[5] = {"(", "a", "and", "b", ")"};
    (void)lw;
    CHECK(nlp_om_build_tree(right, 5, spans) == 4);
    const uint8_t drop[5] = {1, 0, 0, 0, 1};
    int32_t k = nlp_om_tree_remove_leaves(spans, 5, drop, out);
    CHECK(k == 2);
    qsort(out, (size_t)k, 2 * sizeof *out, cmp_span);
    const int32_t want_r[4] = {0, 3, 1, 3};
    CHECK(memcmp(out, want_r, sizeof want_r) == 0);
    const char *kw[3] = {"a", "and", "b"};
    nlp_om_tree_format(out, k, 3, kw, text, sizeof text);
    CHECK_MSG(strcmp(text, "(a (and b))") == 0, "%s", text);
    /* distances from pointers: argmax, d_0 = N */
    const float probs[3 * 4] = {0, 0, 0, 0, 0, 0, 0, 1, 0, 0.6f, 0.4f, 0};
    int32_t d[3];
    nlp_om_distances(probs, 3, 4, d);
    CHECK(d[0] == 4 && d[1] == 3 && d[2] == 1);
    /* a truncated format reports the length it needed */
    CHECK(nlp_om_tree_format(want_left, 4, 5, w, text, 4) == 17);
    CHECK(strlen(text) == 3);
}

static void test_dropout_and_errors(void)
{
    struct gr_ctx *ctx = cpu_ctx();
    struct nlp_om_config c;
    small_cfg(&c);
    struct nlp_om om;
    CHECK(nlp_om_init(&om, ctx, &c, 2) == 0);
    int32_t ids[5 * 2] = {0, 2, 3, 9, 4, 3, 10, 1, 1, 11};
    float a[16], b[16], e[16], f[16];
    struct gr_tensor *enc = NULL;
    gr_step_reset(ctx);
    struct nlp_om_run r = nlp_om_run_train(7, 3, 12);
    CHECK(nlp_om_encode(&om, ids, 5, 2, &r, &enc) == 0);
    host(enc, a);
    CHECK(nlp_om_encode(&om, ids, 5, 2, &r, &enc) == 0);
    host(enc, b);
    CHECK(memcmp(a, b, sizeof a) == 0);
    r.batch = 4;
    CHECK(nlp_om_encode(&om, ids, 5, 2, &r, &enc) == 0);
    host(enc, f);
    CHECK(memcmp(a, f, sizeof a) != 0);
    r = nlp_om_run_eval(12);
    CHECK(nlp_om_encode(&om, ids, 5, 2, &r, &enc) == 0);
    host(enc, e);
    CHECK(memcmp(a, e, sizeof a) != 0);
    ids[3] = 12;
    CHECK(nlp_om_encode(&om, ids, 5, 2, &r, &enc) < 0);
    CHECK_STR_CONTAINS(gr_last_error(), "token id 12 at step 1, sequence 1");
    r.nslot = 1;
    ids[3] = 1;
    CHECK(nlp_om_encode(&om, ids, 5, 2, &r, &enc) < 0);
    CHECK_STR_CONTAINS(gr_last_error(), "slots");
    nlp_om_free(&om);
    gr_ctx_free(ctx);
}

/* The CPU dropout computes each Philox block once for four mask words:
 * its masks must stay the bits gr_rng_keep names (plain, odd sizes, and a
 * broadcast mask whose words are not consecutive). */
static void test_dropout_bits(void)
{
    struct gr_ctx *ctx = cpu_ctx();
    gr_step_reset(ctx);
    const int R = 7, C = 13;
    float x[7 * 13], y[7 * 13];
    for (int i = 0; i < R * C; i++) {
        x[i] = 1.0f + (float)i;
    }
    struct gr_tensor *xt = gr_tensor_from_host(ctx, GR_F32, gr_shape2(R, C),
                                               x);
    struct gr_rng r = gr_rng_make(5, 77);
    uint64_t key = gr_rng_key(r);
    host(gr_dropout(ctx, xt, 0.3f, r), y);
    int bad = 0;
    for (int i = 0; i < R * C; i++) {
        float want = gr_rng_keep(key, (uint64_t)i, 0.3f) ? x[i] / 0.7f : 0.0f;
        bad += fabsf(y[i] - want) > 1e-6f * fabsf(want);
    }
    CHECK_MSG(bad == 0, "%d dropout elements differ from gr_rng_keep", bad);
    /* mask [1, C] broadcast over rows (locked dropout's shape) */
    host(gr_dropout_mask(ctx, xt, 0.5f, r, gr_shape2(1, C), 0), y);
    bad = 0;
    for (int i = 0; i < R * C; i++) {
        float want =
            gr_rng_keep(key, (uint64_t)(i % C), 0.5f) ? x[i] * 2.0f : 0.0f;
        bad += fabsf(y[i] - want) > 1e-6f * fabsf(want);
    }
    CHECK_MSG(bad == 0, "%d broadcast dropout elements differ", bad);
    /* mask [R, 1]: one word per row */
    host(gr_dropout_mask(ctx, xt, 0.5f, r, gr_shape2(R, 1), 0), y);
    bad = 0;
    for (int i = 0; i < R * C; i++) {
        float want =
            gr_rng_keep(key, (uint64_t)(i / C), 0.5f) ? x[i] * 2.0f : 0.0f;
        bad += fabsf(y[i] - want) > 1e-6f * fabsf(want);
    }
    CHECK_MSG(bad == 0, "%d row-mask dropout elements differ", bad);
    gr_ctx_free(ctx);
}

static void test_learns(void)
{
    struct gr_ctx *ctx = cpu_ctx();
    struct nlp_om_config c;
    small_cfg(&c);
    c.nhid = 16;
    c.emsize = 16;
    struct nlp_om om;
    struct nlp_head head;
    struct nlp_head_config hc = {NLP_HEAD_PAIR, 16, 16, 7, 0.1f};
    CHECK(nlp_om_init(&om, ctx, &c, 4) == 0);
    CHECK(nlp_head_init(&head, ctx, "mlp", &hc, 4) == 0);
    struct gr_optim *opt = NULL;
    struct gr_optim_config oc = gr_optim_config_default(GR_OPTIM_ADAM);
    oc.lr = 3e-3f;
    oc.beta1 = 0.0f;
    oc.eps = 1e-9f;
    CHECK(gr_optim_new(&opt, ctx, "adam", &oc) == 0);
    const int T = 6, B = 8;
    int32_t ids[6 * 8], lab[4] = {0, 3, 5, 6};
    struct gr_philox_stream s = gr_philox_stream_init(11, 0);
    for (int i = 0; i < T * B; i++) {
        ids[i] = (int32_t)(gr_philox_next_u32(&s) % 11u);
    }
    float first = 0.0f, last = 0.0f;
    for (int step = 0; step < 40; step++) {
        gr_step_reset(ctx);
        gr_zero_grad(ctx);
        struct nlp_om_run r = nlp_om_run_train(1, step, 6);
        struct gr_tensor *enc = NULL;
        CHECK(nlp_om_encode(&om, ids, T, B, &r, &enc) == 0);
        struct gr_tensor *logits = nlp_head_forward(
            ctx, &head, enc, 1, gr_rng_make(1, (uint64_t)step));
        struct gr_tensor *loss = gr_cross_entropy(
            ctx, logits,
            gr_tensor_from_host(ctx, GR_I32, gr_shape1(4), lab), -1);
        CHECK(gr_backward(ctx, loss) == 0);
        CHECK(gr_clip_grad_norm(ctx, NULL, 1.0f, NULL) == 0);
        CHECK(gr_optim_step(opt) == 0);
        float l = gr_tensor_item(loss);
        if (step == 0) {
            first = l;
        }
        last = l;
    }
    CHECK_MSG(last < 0.5f * first, "loss %g -> %g", (double)first,
              (double)last);
    gr_optim_free(opt);
    nlp_om_free(&om);
    gr_ctx_free(ctx);
}

/* The fused gated sum against its composition of primitive ops: values
 * and the gradients of z, v and h (also with v and h the same tensor). */
static void test_gate_op(void)
{
    struct gr_ctx *ctx = cpu_ctx();
    const int R = 5, D = 7;
    float z[5 * 28], v[5 * 7], h[5 * 7], w[5 * 7];
    struct gr_philox_stream s = gr_philox_stream_init(21, 0);
    for (int i = 0; i < R * 4 * D; i++) {
        z[i] = 4.0f * ((float)(gr_philox_next_u32(&s) >> 8) / 16777216.0f) -
               2.0f;
    }
    for (int i = 0; i < R * D; i++) {
        v[i] = (float)(gr_philox_next_u32(&s) % 1000u) / 250.0f - 2.0f;
        h[i] = (float)(gr_philox_next_u32(&s) % 1000u) / 300.0f - 1.5f;
        w[i] = (float)(gr_philox_next_u32(&s) % 1000u) / 500.0f - 1.0f;
    }
    for (int same = 0; same < 2; same++) {
        float out[2][5 * 7], gz[2][5 * 28], gv[2][5 * 7], gh[2][5 * 7];
        for (int fused = 0; fused < 2; fused++) {
            gr_step_reset(ctx);
            struct gr_tensor *zt = gr_tensor_from_host(
                ctx, GR_F32, gr_shape2(R, 4 * D), z);
            struct gr_tensor *vt = gr_tensor_from_host(
                ctx, GR_F32, gr_shape2(R, D), v);
            struct gr_tensor *ht = same ? vt
                                        : gr_tensor_from_host(
                                              ctx, GR_F32, gr_shape2(R, D), h);
            gr_tensor_set_requires_grad(zt, 1);
            gr_tensor_set_requires_grad(vt, 1);
            gr_tensor_set_requires_grad(ht, 1);
            struct gr_tensor *y;
            if (fused) {
                y = gr_om_gate(ctx, zt, vt, ht);
            } else {
                struct gr_tensor *p[4];
                const int64_t sz[4] = {D, D, D, D};
                CHECK(gr_split(ctx, zt, 1, 4, sz, p) == 0);
                y = gr_add(ctx,
                           gr_add(ctx, gr_mul(ctx, gr_sigmoid(ctx, p[0]), vt),
                                  gr_mul(ctx, gr_sigmoid(ctx, p[1]), ht)),
                           gr_mul(ctx, gr_sigmoid(ctx, p[2]), p[3]));
            }
            struct gr_tensor *wt = gr_tensor_from_host(
                ctx, GR_F32, gr_shape2(R, D), w);
            struct gr_tensor *loss = gr_sum(ctx, gr_mul(ctx, y, wt));
            CHECK_MSG(loss != NULL, "%s", gr_ctx_error(ctx));
            CHECK(gr_backward(ctx, loss) == 0);
            host(y, out[fused]);
            host(zt->grad, gz[fused]);
            host(vt->grad, gv[fused]);
            host(ht->grad, gh[fused]);
        }
        double worst = 0.0;
        for (int i = 0; i < R * D; i++) {
            worst = fmax(worst, fabs(out[0][i] - out[1][i]));
            worst = fmax(worst, fabs(gv[0][i] - gv[1][i]));
            worst = fmax(worst, fabs(gh[0][i] - gh[1][i]));
        }
        for (int i = 0; i < R * 4 * D; i++) {
            worst = fmax(worst, fabs(gz[0][i] - gz[1][i]));
        }
        CHECK_MSG(worst < 1e-5, "gr_om_gate vs composition (same %d): %g",
                  same, worst);
    }
    gr_step_reset(ctx);
    struct gr_tensor *a = gr_zeros(ctx, gr_shape2(3, 8));
    struct gr_tensor *b = gr_zeros(ctx, gr_shape2(3, 3));
    CHECK(gr_om_gate(ctx, a, b, b) == NULL);
    CHECK_STR_CONTAINS(gr_ctx_error(ctx), "must be [R, 4D]");
    gr_ctx_free(ctx);
}

/* OM through the encoder table (nlp/models/encoder.h): the row exists,
 * takes the spec's defaults per task, names its parameters under "enc.",
 * encodes a padded batch like nlp_om_encode and keeps its pointers. */
static void test_encoder_table(void)
{
    struct nlp_encoder_config c;
    CHECK(nlp_encoder_config_default(&c, "om", "logic") == 0);
    CHECK(c.emsize == 200 && c.hidden == 200 && c.slots_train == 12 &&
          c.slots_eval == 24 && !c.left_pad);
    CHECK_NEAR(c.dropout_cell, 0.2, 1e-7);
    CHECK(nlp_encoder_config_default(&c, "om", "listops") == 0);
    CHECK(c.hidden == 128 && c.slots_train == 21 && c.left_pad);
    CHECK(nlp_encoder_config_default(&c, "om", "logic") == 0);
    c.vocab = 12;
    c.pad_id = 11;
    c.emsize = 6;
    c.hidden = 8;
    c.slots_eval = 7;
    CHECK(nlp_encoder_config_check(&c) == 0);
    struct gr_ctx *ctx = cpu_ctx();
    struct nlp_encoder e;
    CHECK(nlp_encoder_init(&e, ctx, &c, gr_rng_make(3, 0)) == 0);
    CHECK(nlp_encoder_out_dim(&e) == 8);
    struct nlp_om_config oc;
    nlp_om_config_default(&oc, NLP_OM_LOGIC);
    oc.emsize = 6;
    oc.nhid = 8;
    CHECK_EQ_U64(gr_param_count(ctx, "enc."), nlp_om_param_count(&oc));
    CHECK(gr_ctx_find(ctx, "enc.encoder.OM_forward.activation.weight") !=
          NULL);
    const int T = 4, B = 3;
    int32_t ids[4 * 3] = {2, 3, 0, 8, 4, 5, 9, 1, 11, 2, 11, 11};
    int32_t lengths[3] = {4, 3, 2};
    gr_step_reset(ctx);
    struct gr_tensor *idt = gr_tensor_from_host(ctx, GR_I32,
                                                gr_shape2(T, B), ids);
    struct nlp_encoder_batch b = {idt, lengths, T, B, NULL};
    struct gr_tensor *u = nlp_encoder_encode(&e, &b, 0, gr_rng_make(0, 0));
    CHECK_MSG(u != NULL && u->shape[0] == B && u->shape[1] == 8, "%s",
              gr_last_error());
    const float *probs = NULL;
    int32_t pT = 0, pB = 0, pN = 0;
    CHECK(nlp_om_encoder_probs(&e, &probs, &pT, &pB, &pN) == 0);
    CHECK(pT == T && pB == B && pN == 7);
    /* t = 1: forced to slot N-1 on every sequence */
    for (int bb = 0; bb < B; bb++) {
        CHECK(probs[(1 * B + bb) * 7 + 6] == 1.0f);
    }
    /* t = 3 of the 2-token sequence is padding: p = 0 */
    for (int i = 0; i < 7; i++) {
        CHECK(probs[(3 * B + 2) * 7 + i] == 0.0f);
    }
    float a[24], t1[24];
    host(u, a);
    u = nlp_encoder_encode(&e, &b, 1, gr_rng_make(5, 9));
    host(u, t1);
    CHECK(nlp_om_encoder_probs(&e, &probs, &pT, &pB, &pN) == 0 && pN == 12);
    CHECK(memcmp(a, t1, sizeof a) != 0);
    nlp_encoder_free(&e);
    gr_ctx_free(ctx);
}

int main(void)
{
    test_counts();
    test_config_text();
    test_first_steps();
    test_slot_invariance();
    test_trees();
    test_dropout_and_errors();
    test_dropout_bits();
    test_learns();
    test_encoder_table();
    test_gate_op();
    return test_report("nlp_om");
}
