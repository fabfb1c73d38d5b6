/* The MLM task's pieces with fake rows of the model table
 * (nlp/tasks/mlm_task.h): the perplexity is exp of the mean over maskings
 * of the token-weighted mean loss, every sentence is seen once per masking,
 * <pad>/<unk> never masked, maskings differ between runs and repeat
 * between calls; the gold-tree word normalisation; depparse through a
 * model's heads (an oracle scores 100 under Chu-Liu, argmax loses exactly
 * the roots); the table itself; the transformer row's LeakyReLU FFN
 * (udgn.md §7) and its ReLU checkpoints (no ffn_act line) reopened as
 * ReLU; its learned positions (the reference's --pos_emb), sinusoidal
 * ones by flag and for checkpoints without a positions line, which also
 * resume. */
#define _XOPEN_SOURCE 700
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "kernels/attention.h"
#include "kernels/checkpoint.h"
#include "kernels/ops.h"
#include "kernels/optim.h"
#include "nlp/models/udgn.h"
#include "nlp/tasks/mlm_task.h"
#include "tests/test.h"

#define MAX_CALLS 4096

struct fake {
    int calls;
    double value[MAX_CALLS];
    int32_t masked[MAX_CALLS];
    int64_t tokens;       /* real tokens seen */
    int64_t bad_mask;     /* masked <pad> or <unk> */
    uint64_t hash;        /* of the masked positions */
    const struct nlp_deptrees *gold;
    int sentence;
};

static int fake_loss(void *state, struct gr_ctx *ctx,
                     const struct nlp_mlm_input *in, int training,
                     struct gr_rng rng, struct gr_tensor **loss,
                     int32_t *n_masked)
{
    (void)training;
    (void)rng;
    struct fake *f = state;
    double sum = 0.0;
    int32_t m = 0;
    for (int32_t b = 0; b < in->B; b++) {
        f->tokens += in->lens[b];
        for (int32_t t = 0; t < in->n; t++) {
            int32_t k = b * in->n + t;
            if (in->targets[k] >= 0) {
                m++;
                sum += 0.01 * in->targets[k] + 0.1 * (t % 3);
                f->bad_mask += in->targets[k] == NLP_MLM_PAD ||
                               in->targets[k] == NLP_MLM_UNK ||
                               in->ids[k] != NLP_MLM_MASK;
                f->hash = f->hash * 1000003u + (uint64_t)k * 31u +
                          (uint64_t)in->targets[k];
            }
        }
    }
    *n_masked = m;
    *loss = NULL;
    if (m == 0) {
        return 0;
    }
    float v = (float)(sum / m);
    f->value[f->calls] = v;
    f->masked[f->calls] = m;
    f->calls++;
    *loss = gr_tensor_from_host(ctx, GR_F32, gr_shape0(), &v);
    return 0;
}

/* The oracle: 0.9 on the gold head, 0.01 elsewhere, nothing on a root's
 * row; sentences come in order. */
static int fake_heads(void *state, struct gr_ctx *ctx, const int32_t *ids,
                      int32_t n, float *H)
{
    (void)ctx;
    (void)ids;
    struct fake *f = state;
    const struct nlp_dep_sentence *s = &f->gold->sentences[f->sentence++];
    CHECK(s->n == n);
    for (int32_t i = 0; i < n; i++) {
        for (int32_t j = 0; j < n; j++) {
            H[i * n + j] = i == j ? 0.0f
                           : (s->heads[i] == j ? 0.9f : 0.01f);
        }
    }
    return 0;
}

static void make_split(struct nlp_mlm_split *s, int32_t ns, int32_t V)
{
    s->n_sentences = ns;
    s->offsets = malloc((size_t)(ns + 1) * sizeof *s->offsets);
    s->offsets[0] = 0;
    for (int32_t i = 0; i < ns; i++) {
        s->offsets[i + 1] = s->offsets[i] + 2 + (i * 7) % 11;
    }
    s->n_tokens = s->offsets[ns];
    s->ids = malloc((size_t)s->n_tokens * sizeof *s->ids);
    for (int64_t k = 0; k < s->n_tokens; k++) {
        /* some <unk> (0); never <pad> or <mask> inside sentences */
        s->ids[k] = k % 9 == 4 ? NLP_MLM_UNK : 3 + (int32_t)(k * 5 % (V - 3));
    }
}

static void test_perplexity(void)
{
    struct gr_ctx *ctx = NULL;
    struct gr_ctx_config cc = gr_ctx_config_default();
    cc.device = GR_DEVICE_CPU;
    CHECK(gr_ctx_new(&ctx, &cc) == 0);
    struct nlp_mlm_split s;
    make_split(&s, 200, 40);
    struct nlp_mlm_model_entry e = {"fake", "test", NULL, fake_loss, NULL,
                                    NULL};
    static struct fake f;
    memset(&f, 0, sizeof f);
    double ppl = 0, loss = 0;
    CHECK(nlp_mlm_perplexity(ctx, &e, &f, &s, 64, 0.3f, 3, 5, &ppl,
                             &loss) == 0);
    /* each run sees every real token once */
    CHECK_MSG(f.tokens == 3 * s.n_tokens, "%lld tokens seen, %lld",
              (long long)f.tokens, (long long)(3 * s.n_tokens));
    CHECK(f.bad_mask == 0);
    /* the aggregation, recomputed from the calls: runs split the calls in
     * three equal parts (same batches each run) */
    int per = f.calls / 3;
    CHECK(per * 3 == f.calls);
    double mean = 0.0, total_masked = 0.0;
    for (int r = 0; r < 3; r++) {
        double sum = 0.0, cnt = 0.0;
        for (int c = r * per; c < (r + 1) * per; c++) {
            sum += f.value[c] * f.masked[c];
            cnt += f.masked[c];
        }
        mean += sum / cnt / 3.0;
        total_masked += cnt;
    }
    CHECK_NEAR(loss, mean, 1e-9);
    CHECK_NEAR(ppl, exp(mean), 1e-9 * exp(mean));
    /* about 30 % of the maskable tokens */
    int64_t maskable = 0;
    for (int64_t k = 0; k < s.n_tokens; k++) {
        maskable += s.ids[k] != NLP_MLM_UNK;
    }
    double rate = total_masked / (3.0 * (double)maskable);
    CHECK_MSG(rate > 0.25 && rate < 0.35, "mask rate %.3f", rate);
    /* the same call again gives the same maskings; one run alone is the
     * first run of three; another seed other maskings */
    uint64_t h3 = f.hash;
    memset(&f, 0, sizeof f);
    double ppl2 = 0, loss2 = 0;
    nlp_mlm_perplexity(ctx, &e, &f, &s, 64, 0.3f, 3, 5, &ppl2, &loss2);
    CHECK(f.hash == h3 && ppl2 == ppl);
    memset(&f, 0, sizeof f);
    nlp_mlm_perplexity(ctx, &e, &f, &s, 64, 0.3f, 1, 5, &ppl2, &loss2);
    uint64_t h1 = f.hash;
    double first_run = 0.0, cnt = 0.0;
    for (int c = 0; c < f.calls; c++) {
        first_run += f.value[c] * f.masked[c];
        cnt += f.masked[c];
    }
    CHECK(f.calls == per);
    CHECK_NEAR(loss2, first_run / cnt, 1e-9);
    CHECK(fabs(loss2 - loss) > 1e-6); /* runs differ */
    memset(&f, 0, sizeof f);
    nlp_mlm_perplexity(ctx, &e, &f, &s, 64, 0.3f, 1, 6, &ppl2, &loss2);
    CHECK(f.hash != h1);
    free(s.offsets);
    free(s.ids);
    gr_ctx_free(ctx);
}

static void test_depparse(void)
{
    /* A hand-made CoNLL text; the "." goes in the §3 filtering. */
    const char *text =
        "1\tThe\t_\tDT\tDT\t_\t2\tdet\t_\t_\n"
        "2\tDog\t_\tNN\tNN\t_\t3\tnsubj\t_\t_\n"
        "3\tsaw\t_\tVBD\tVBD\t_\t0\troot\t_\t_\n"
        "4\t1,500\t_\tCD\tCD\t_\t5\tnum\t_\t_\n"
        "5\tcats\t_\tNNS\tNNS\t_\t3\tdobj\t_\t_\n"
        "6\t.\t_\t.\t.\t_\t3\tpunct\t_\t_\n"
        "\n"
        "1\tGo\t_\tVB\tVB\t_\t0\troot\t_\t_\n"
        "2\tnow\t_\tRB\tRB\t_\t1\tadvmod\t_\t_\n"
        "\n";
    struct nlp_deptrees raw, gold;
    CHECK(nlp_conll_read_text(&raw, text, strlen(text), "t.conll", 0) == 0);
    CHECK(nlp_deps_filter(&gold, &raw) == 0);
    nlp_deptrees_free(&raw);
    CHECK(gold.n_sentences == 2 && gold.sentences[0].n == 5);

    /* word normalisation: lower case, each digit run -> one N */
    struct nlp_vocab v;
    nlp_vocab_init(&v);
    const char *words[] = {"<unk>", "<pad>", "<mask>", "the", "dog", "saw",
                           "N,N", "cats"};
    for (int i = 0; i < 8; i++) {
        nlp_vocab_add(&v, words[i], strlen(words[i]), NULL);
    }
    int32_t ids[8];
    nlp_mlm_tree_ids(&v, &gold.sentences[0], ids);
    const int32_t want[5] = {3, 4, 5, 6, 7};
    for (int i = 0; i < 5; i++) {
        CHECK_MSG(ids[i] == want[i], "word %d: id %d, want %d", i, ids[i],
                  want[i]);
    }
    nlp_mlm_tree_ids(&v, &gold.sentences[1], ids);
    CHECK(ids[0] == NLP_MLM_UNK && ids[1] == NLP_MLM_UNK);

    struct gr_ctx *ctx = NULL;
    struct gr_ctx_config cc = gr_ctx_config_default();
    cc.device = GR_DEVICE_CPU;
    CHECK(gr_ctx_new(&ctx, &cc) == 0);
    struct nlp_mlm_model_entry e = {"oracle", "test", NULL, fake_loss,
                                    fake_heads, NULL};
    static struct fake f;
    for (int d = 0; d < 3; d++) {
        memset(&f, 0, sizeof f);
        f.gold = &gold;
        struct nlp_dep_eval ev;
        nlp_dep_eval_init(&ev);
        int32_t pred[16];
        CHECK(nlp_mlm_depparse(ctx, &e, &f, &v, &gold, 0,
                               (enum nlp_dep_decoder)d, pred, &ev) == 0);
        struct nlp_dep_scores sc;
        nlp_dep_eval_scores(&ev, &sc);
        CHECK(sc.n_tokens == 7 && sc.n_sentences == 2);
        if (d == NLP_DEP_ARGMAX) {
            /* every token right but the two roots */
            CHECK_NEAR(sc.uas, 100.0 * 5 / 7, 1e-9);
        } else {
            CHECK_NEAR(sc.uas, 100.0, 1e-9);
            CHECK(pred[2] == 2 && pred[5] == 0);
        }
        nlp_dep_eval_free(&ev);
    }
    /* a row without a parser is refused */
    struct nlp_mlm_model_entry np = {"none", "test", NULL, fake_loss, NULL,
                                     NULL};
    struct nlp_dep_eval ev;
    nlp_dep_eval_init(&ev);
    CHECK(nlp_mlm_depparse(ctx, &np, &f, &v, &gold, 0, NLP_DEP_CHULIU, NULL,
                           &ev) == GR_EINVAL);
    CHECK(strstr(gr_last_error(), "no parser") != NULL);
    nlp_dep_eval_free(&ev);
    gr_ctx_free(ctx);
    nlp_vocab_free(&v);
    nlp_deptrees_free(&gold);
}

/* Table 4.3 against a two-pass Pearson recomputed here from
 * nlp_udgn_channels, for every label and every (layer, channel): the
 * reported one is the largest. */
static void test_channels(void)
{
    const char *text =
        "1\tthe\t_\tDT\tDT\t_\t2\tdet\t_\t_\n"
        "2\tdog\t_\tNN\tNN\t_\t3\tnsubj\t_\t_\n"
        "3\tsaw\t_\tVBD\tVBD\t_\t0\troot\t_\t_\n"
        "4\tthe\t_\tDT\tDT\t_\t5\tdet\t_\t_\n"
        "5\tcat\t_\tNN\tNN\t_\t3\tdobj\t_\t_\n"
        "\n"
        "1\ta\t_\tDT\tDT\t_\t2\tdet\t_\t_\n"
        "2\tcat\t_\tNN\tNN\t_\t3\tnsubj\t_\t_\n"
        "3\tran\t_\tVBD\tVBD\t_\t0\troot\t_\t_\n"
        "\n";
    struct nlp_deptrees gold;
    CHECK(nlp_conll_read_text(&gold, text, strlen(text), "c.conll", 0) == 0);
    struct nlp_vocab v;
    nlp_vocab_init(&v);
    const char *words[] = {"<unk>", "<pad>", "<mask>", "the", "dog", "saw",
                           "cat", "a", "ran"};
    for (int i = 0; i < 9; i++) {
        nlp_vocab_add(&v, words[i], strlen(words[i]), NULL);
    }
    struct gr_ctx *ctx = NULL;
    struct gr_ctx_config cc = gr_ctx_config_default();
    cc.device = GR_DEVICE_CPU;
    CHECK(gr_ctx_new(&ctx, &cc) == 0);
    const struct nlp_mlm_model_entry *e = nlp_mlm_model_find("udgn");
    struct nlp_mlm_options o;
    nlp_mlm_options_default(&o);
    o.nemb = 8;
    o.nlayers = 2;
    o.nheads = 3;
    o.head_size = 2;
    o.parser_layers = 1;
    o.pos_classes = 0;
    void *model = NULL;
    CHECK(e->init(&model, ctx, &o, v.size, 4) == 0);
    struct nlp_mlm_channel_corr c;
    CHECK(nlp_mlm_channel_correlation(ctx, e, model, &v, &gold, 0, &c) == 0);
    CHECK(c.n_arcs == 6 && c.n_labels == 3);
    /* x[arc][k], k = l·C + c, recomputed (6 arcs: det 3, nsubj 2,
     * dobj 1) */
    enum { K = 6 };
    double x[6][K];
    int lab[6], a = 0;
    float pi[2 * 5 * 5 * 3];
    for (int32_t si = 0; si < gold.n_sentences; si++) {
        const struct nlp_dep_sentence *s = &gold.sentences[si];
        int32_t ids[5];
        nlp_mlm_tree_ids(&v, s, ids);
        gr_step_reset(ctx);
        CHECK(nlp_udgn_channels(ctx, model, ids, s->n, pi) == 0);
        for (int32_t i = 0; i < s->n; i++) {
            int32_t j = s->heads[i];
            if (j == i) {
                continue;
            }
            for (int k = 0; k < K; k++) {
                int l = k / 3, ch = k % 3;
                x[a][k] = pi[((l * s->n + i) * s->n + j) * 3 + ch];
            }
            if (a == 6) {
                break;
            }
            lab[a++] = strcmp(s->labels[i], "det") == 0   ? 0
                       : strcmp(s->labels[i], "nsubj") == 0 ? 1 : 2;
        }
    }
    CHECK(a == 6);
    const char *names[3] = {"det", "nsubj", "dobj"};
    for (int li = 0; li < 3; li++) {
        int32_t at = -1;
        for (int32_t q = 0; q < c.n_labels; q++) {
            at = strcmp(c.labels[q], names[li]) == 0 ? q : at;
        }
        CHECK(at >= 0);
        if (at < 0) {
            continue;
        }
        double best = -2.0;
        int bk = -1;
        for (int k = 0; k < K; k++) {
            double mx = 0, my = 0;
            for (int q = 0; q < 6; q++) {
                mx += x[q][k] / 6;
                my += (lab[q] == li) / 6.0;
            }
            double sxy = 0, sxx = 0, syy = 0;
            for (int q = 0; q < 6; q++) {
                double dx = x[q][k] - mx, dy = (lab[q] == li) - my;
                sxy += dx * dy;
                sxx += dx * dx;
                syy += dy * dy;
            }
            double r = sxy / sqrt(sxx * syy);
            if (r > best) {
                best = r;
                bk = k;
            }
        }
        CHECK_MSG(fabs(c.r[at] - best) < 1e-4, "%s: r %.6f, recomputed "
                  "%.6f", names[li], c.r[at], best);
        CHECK(c.layer[at] * 3 + c.channel[at] == bk);
        CHECK(c.count[at] == (li == 0 ? 3 : li == 1 ? 2 : 1));
    }
    nlp_mlm_channel_corr_free(&c);
    /* a model without channels is refused */
    struct nlp_mlm_model_entry t = *e;
    t.name = "transformer";
    CHECK(nlp_mlm_channel_correlation(ctx, &t, model, &v, &gold, 0, &c) ==
          GR_EINVAL);
    e->free(model);
    gr_ctx_free(ctx);
    nlp_vocab_free(&v);
    nlp_deptrees_free(&gold);
}

static void test_table(void)
{
    CHECK(nlp_mlm_model_find("udgn") && nlp_mlm_model_find("udgn")->heads);
    CHECK(nlp_mlm_model_find("transformer") &&
          !nlp_mlm_model_find("transformer")->heads);
    CHECK(nlp_mlm_model_find("bert") == NULL);
    CHECK(strstr(nlp_mlm_model_names(), "udgn|transformer") != NULL);
}

/* gr_ffn with neg_slope 0.01 is W2·LeakyReLU(W1·x + b1) + b2, computed
 * here in double from its own weights; with slope 0 it is the ReLU one. */
static void test_ffn_leaky(void)
{
    struct gr_ctx_config cc = gr_ctx_config_default();
    cc.device = GR_DEVICE_CPU;
    struct gr_ctx *ctx = NULL;
    CHECK(gr_ctx_new(&ctx, &cc) == 0);
    if (!ctx) {
        return;
    }
    enum { D = 3, F = 5, R = 4 };
    struct gr_ffn f;
    CHECK(gr_ffn_init(&f, ctx, "ffn", D, F, gr_rng_make(3, 1)) == 0);
    CHECK(f.neg_slope == 0.0f); /* gr_ffn_init: ReLU */
    float xv[R * D], w1[F * D], b1[F], w2[D * F], b2[D], y[R * D], yr[R * D];
    for (int i = 0; i < R * D; i++) {
        xv[i] = (float)((i * 7) % 11) / 3.0f - 1.7f;
    }
    struct gr_tensor *x = gr_tensor_from_host(ctx, GR_F32, gr_shape2(R, D),
                                              xv);
    f.neg_slope = 0.01f;
    struct gr_tensor *yl = gr_ffn_forward(ctx, &f, x, 0.0f, gr_rng_make(0, 0));
    f.neg_slope = 0.0f;
    struct gr_tensor *yz = gr_ffn_forward(ctx, &f, x, 0.0f, gr_rng_make(0, 0));
    CHECK(yl && yz);
    if (!yl || !yz) {
        gr_ctx_free(ctx);
        return;
    }
    gr_tensor_to_host(f.w1, w1);
    gr_tensor_to_host(f.b1, b1);
    gr_tensor_to_host(f.w2, w2);
    gr_tensor_to_host(f.b2, b2);
    gr_tensor_to_host(yl, y);
    gr_tensor_to_host(yz, yr);
    int negative = 0;
    double err = 0.0, err_relu = 0.0, moved = 0.0;
    for (int r = 0; r < R; r++) {
        double h[F], hr[F];
        for (int j = 0; j < F; j++) {
            double a = b1[j];
            for (int k = 0; k < D; k++) {
                a += (double)w1[j * D + k] * xv[r * D + k];
            }
            negative += a < 0.0;
            h[j] = a > 0.0 ? a : 0.01 * a;
            hr[j] = a > 0.0 ? a : 0.0;
        }
        for (int i = 0; i < D; i++) {
            double o = b2[i], orl = b2[i];
            for (int j = 0; j < F; j++) {
                o += (double)w2[i * F + j] * h[j];
                orl += (double)w2[i * F + j] * hr[j];
            }
            err = fmax(err, fabs(o - y[r * D + i]));
            err_relu = fmax(err_relu, fabs(orl - yr[r * D + i]));
            moved = fmax(moved, fabs(o - orl));
        }
    }
    CHECK_MSG(negative > 0, "no negative pre-activation: the test is void");
    CHECK_MSG(err < 1e-5, "LeakyReLU FFN: max error %g", err);
    CHECK_MSG(err_relu < 1e-5, "ReLU FFN: max error %g", err_relu);
    CHECK_MSG(moved > 1e-4, "LeakyReLU and ReLU agree (%g)", moved);
    gr_ctx_free(ctx);
}

/* The masked loss of one fixed batch, dropout off. */
static double row_loss(const struct nlp_mlm_model_entry *e, void *model,
                       struct gr_ctx *ctx)
{
    static const int32_t ids[2 * 5] = {3, 2, 5, 2, 7, 8, 2, 4, 9, 1};
    static const int32_t tg[2 * 5] = {-1, 4, -1, 6, -1, -1, 10, -1, -1, -1};
    static const int32_t lens[2] = {5, 4};
    struct nlp_mlm_input in = {ids, lens, tg, 2, 5};
    gr_step_reset(ctx);
    struct gr_tensor *l = NULL;
    int32_t nm = 0;
    int rc = e->loss(model, ctx, &in, 0, gr_rng_make(1, 0), &l, &nm);
    CHECK_MSG(rc == 0 && l && nm == 3, "loss: %s", gr_last_error());
    return rc == 0 && l ? (double)gr_tensor_item(l) : NAN;
}

/* A fresh CPU context holding row e built from o (vocabulary 12, seed 5). */
static void *new_row(const struct nlp_mlm_model_entry *e,
                     const struct nlp_mlm_options *o,
                     const struct gr_ctx_config *cc, struct gr_ctx **ctx)
{
    void *model = NULL;
    *ctx = NULL;
    CHECK(gr_ctx_new(ctx, cc) == 0);
    CHECK_MSG(*ctx && e->init(&model, *ctx, o, 12, 5) == 0, "init: %s",
              gr_last_error());
    return model;
}

/* Saves the model's parameters with `cfg` as the config, frees the model
 * and its context, and reopens the file as `grove nlp mlm` does. */
static int save_reopen(const struct nlp_mlm_model_entry *e, void *model,
                       struct gr_ctx *ctx, const char *path, const char *cfg,
                       const struct gr_ctx_config *cc,
                       struct nlp_mlm_runtime *rt)
{
    CHECK(gr_checkpoint_save(ctx, path, cfg, GR_CKPT_PARAMS, 1) == 0);
    e->free(model);
    gr_ctx_free(ctx);
    return nlp_mlm_open(rt, path, cc);
}

/* The transformer row uses udgn.md §7's LeakyReLU; a checkpoint written
 * before (its config has no ffn_act line) was trained with ReLU and
 * reopens as ReLU, giving the old model's numbers; "ffn_act relu" does
 * the same, "ffn_act leaky_relu" the new ones, anything else is refused
 * with a line naming the key. */
static void test_transformer_ffn_act(void)
{
    char dir[] = "/tmp/grove_mlm_ffn_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256], vocab[256];
    snprintf(vocab, sizeof vocab, "%s/vocab.txt", dir);
    FILE *f = fopen(vocab, "w");
    CHECK(f != NULL);
    if (!f) {
        return;
    }
    fputs("<unk>\n<pad>\n<mask>\n", f);
    for (int i = 3; i < 12; i++) {
        fprintf(f, "w%d\n", i);
    }
    fclose(f);
    const struct nlp_mlm_model_entry *e = nlp_mlm_model_find("transformer");
    struct nlp_mlm_options o;
    nlp_mlm_options_default(&o);
    snprintf(o.model, sizeof o.model, "transformer");
    o.nemb = 8;
    o.nlayers = 1;
    o.nheads = 2;
    o.learned_pos = 0; /* the configs below have no positions line */
    struct gr_ctx_config cc = gr_ctx_config_default();
    cc.device = GR_DEVICE_CPU;
    double loss[2] = {NAN, NAN}; /* ReLU, LeakyReLU: the trainer's models */
    const char *base =
        "model transformer\nnemb 8\nnlayers 1\nnheads 2\nhead_size 128\n"
        "parser_layers 3\npos_classes 5\ndropout 0.2\ndropatt 0.1\n"
        "parser_dropout 0.2\nno_nonlinear 0\nno_gates 0\nsigmoid 0\n"
        "single_channel 0\nabs_pos 0\nseed 5\n";
    for (int relu = 1; relu >= 0; relu--) {
        struct gr_ctx *ctx = NULL;
        o.ffn_relu = relu;
        void *model = new_row(e, &o, &cc, &ctx);
        loss[relu] = row_loss(e, model, ctx);
        e->free(model);
        gr_ctx_free(ctx);
    }
    CHECK_MSG(fabs(loss[0] - loss[1]) > 1e-6, "ReLU %.9g and LeakyReLU "
              "%.9g rows give the same loss: the test is void", loss[1],
              loss[0]);
    /* the same (ReLU-trained) parameters under each config */
    struct {
        const char *line; /* appended to the config; NULL: none */
        int relu;
    } cases[] = {{NULL, 1}, {"ffn_act relu\n", 1},
                 {"ffn_act leaky_relu\n", 0}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char cfg[1024];
        snprintf(cfg, sizeof cfg, "%s%s", base,
                 cases[c].line ? cases[c].line : "");
        snprintf(path, sizeof path, "%s/c%zu.ckpt", dir, c);
        struct gr_ctx *ctx = NULL;
        o.ffn_relu = 1;
        void *model = new_row(e, &o, &cc, &ctx);
        struct nlp_mlm_runtime rt;
        int rc = save_reopen(e, model, ctx, path, cfg, &cc, &rt);
        CHECK_MSG(rc == 0, "case %zu: %s", c, gr_last_error());
        if (rc == 0) {
            CHECK(rt.opt.ffn_relu == cases[c].relu);
            double l = row_loss(rt.entry, rt.model, rt.ctx);
            /* ReLU: the numbers of the model that wrote it; LeakyReLU:
             * the same parameters give the LeakyReLU row's numbers */
            CHECK_MSG(l == loss[cases[c].relu], "case %zu: loss %.9g, "
                      "want %.9g", c, l, loss[cases[c].relu]);
            nlp_mlm_close(&rt);
        }
        remove(path);
    }
    /* an unknown activation is refused, naming the key */
    char cfg[1024];
    snprintf(cfg, sizeof cfg, "%sffn_act gelu\n", base);
    snprintf(path, sizeof path, "%s/bad.ckpt", dir);
    struct gr_ctx *ctx = NULL;
    void *model = new_row(e, &o, &cc, &ctx);
    struct nlp_mlm_runtime rt;
    CHECK(save_reopen(e, model, ctx, path, cfg, &cc, &rt) == GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "ffn_act 'gelu'");
    remove(path);
    remove(vocab);
    rmdir(dir);
}

static int write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        return -1;
    }
    fputs(text, f);
    return fclose(f);
}

/* A config text without its "positions ..." line. */
static void drop_line(const char *in, const char *key, char *out, size_t cap)
{
    size_t k = 0, kl = strlen(key);
    for (const char *l = in; *l;) {
        const char *eol = strchr(l, '\n');
        size_t len = eol ? (size_t)(eol - l) + 1 : strlen(l);
        if (!(strncmp(l, key, kl) == 0 && l[kl] == ' ') && k + len < cap) {
            memcpy(out + k, l, len);
            k += len;
        }
        l += len;
    }
    out[k] = '\0';
}

/* The transformer row's positions: learned (a [500, d] table, the
 * reference run_transformer.sh's --pos_emb) or sinusoidal. A checkpoint
 * says which ("positions learned|sinusoidal"); one without the line was
 * written when the row was sinusoidal and reopens so, with the numbers of
 * the model that wrote it; anything else is refused naming the key. A
 * sentence longer than the table is an error naming it. A run folder
 * written before the line existed resumes (as sinusoidal). */
static void test_transformer_positions(void)
{
    const struct nlp_mlm_model_entry *e = nlp_mlm_model_find("transformer");
    struct nlp_mlm_options o;
    nlp_mlm_options_default(&o);
    CHECK_MSG(o.learned_pos == 1, "the default is not learned positions");
    snprintf(o.model, sizeof o.model, "transformer");
    o.nemb = 8;
    o.nlayers = 1;
    o.nheads = 2;
    struct gr_ctx_config cc = gr_ctx_config_default();
    cc.device = GR_DEVICE_CPU;
    char dir[] = "/tmp/grove_mlm_pos_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[512], vocab[256];
    snprintf(vocab, sizeof vocab, "%s/vocab.txt", dir);
    char words[256] = "<unk>\n<pad>\n<mask>\n";
    for (int i = 3; i < 12; i++) {
        size_t l = strlen(words);
        snprintf(words + l, sizeof words - l, "w%d\n", i);
    }
    CHECK(write_text(vocab, words) == 0);
    const char *base =
        "model transformer\nnemb 8\nnlayers 1\nnheads 2\nhead_size 128\n"
        "parser_layers 3\npos_classes 5\ndropout 0.2\ndropatt 0.1\n"
        "parser_dropout 0.2\nno_nonlinear 0\nno_gates 0\nsigmoid 0\n"
        "single_channel 0\nabs_pos 0\nseed 5\nffn_act leaky_relu\n";
    double loss[2] = {NAN, NAN}; /* sinusoidal, learned */
    struct {
        const char *line; /* appended to the config; NULL: none */
        int learned;
    } cases[] = {{"positions learned\n", 1}, {"positions sinusoidal\n", 0},
                 {NULL, 0}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        struct gr_ctx *ctx = NULL;
        o.learned_pos = cases[c].learned;
        void *model = new_row(e, &o, &cc, &ctx);
        CHECK((gr_ctx_find(ctx, "pos_emb.weight") != NULL) ==
              cases[c].learned);
        double l0 = row_loss(e, model, ctx);
        loss[cases[c].learned] = l0;
        char cfg[1024];
        snprintf(cfg, sizeof cfg, "%s%s", base,
                 cases[c].line ? cases[c].line : "");
        snprintf(path, sizeof path, "%s/c%zu.ckpt", dir, c);
        struct nlp_mlm_runtime rt;
        int rc = save_reopen(e, model, ctx, path, cfg, &cc, &rt);
        CHECK_MSG(rc == 0, "case %zu: %s", c, gr_last_error());
        if (rc == 0) {
            CHECK(rt.opt.learned_pos == cases[c].learned);
            double l = row_loss(rt.entry, rt.model, rt.ctx);
            CHECK_MSG(l == l0, "case %zu: reopened loss %.9g, want %.9g", c,
                      l, l0);
            nlp_mlm_close(&rt);
        }
        remove(path);
    }
    CHECK_MSG(fabs(loss[0] - loss[1]) > 1e-6, "learned %.9g and sinusoidal "
              "%.9g positions give the same loss: the test is void", loss[1],
              loss[0]);
    /* an unknown kind is refused, naming the key */
    {
        struct gr_ctx *ctx = NULL;
        o.learned_pos = 0;
        void *model = new_row(e, &o, &cc, &ctx);
        char cfg[1024];
        snprintf(cfg, sizeof cfg, "%spositions rotary\n", base);
        snprintf(path, sizeof path, "%s/bad.ckpt", dir);
        struct nlp_mlm_runtime rt;
        CHECK(save_reopen(e, model, ctx, path, cfg, &cc, &rt) == GR_EFORMAT);
        CHECK_STR_CONTAINS(gr_last_error(), "positions 'rotary'");
        remove(path);
    }
    /* past the learned table: an error naming it, not a read past it */
    {
        struct gr_ctx *ctx = NULL;
        o.learned_pos = 1;
        void *model = new_row(e, &o, &cc, &ctx);
        enum { N = NLP_MLM_POS_TABLE + 1 };
        static int32_t ids[N], tg[N];
        for (int i = 0; i < N; i++) {
            ids[i] = 3 + i % 9;
            tg[i] = i % 7 == 0 ? 4 : -1;
        }
        int32_t len = N;
        struct nlp_mlm_input in = {ids, &len, tg, 1, N};
        struct gr_tensor *l = NULL;
        int32_t nm = 0;
        CHECK(e->loss(model, ctx, &in, 0, gr_rng_make(1, 0), &l, &nm) ==
              GR_EINVAL);
        CHECK_STR_CONTAINS(gr_last_error(), "position table has 500");
        e->free(model);
        gr_ctx_free(ctx);
    }
    remove(vocab);

    /* a run folder from before the positions line resumes as sinusoidal */
    char data[300], out[300], last[400];
    snprintf(data, sizeof data, "%s/ptb", dir);
    snprintf(out, sizeof out, "%s/run", dir);
    snprintf(last, sizeof last, "%s/last.ckpt", out);
    CHECK(mkdir(data, 0700) == 0);
    const char *text = "the cat sat on the mat\na dog saw the cat\n"
                       "the mat was on a dog\na cat and a dog sat\n";
    const char *names[] = {"train", "valid", "test"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/ptb.%s.txt", data, names[i]);
        CHECK(write_text(path, text) == 0);
    }
    struct nlp_mlm_train_config tc;
    nlp_mlm_train_config_default(&tc);
    tc.opt = o;
    tc.opt.learned_pos = 0;
    tc.data = data;
    tc.epochs = 1;
    tc.batch_tokens = 64;
    tc.eval_runs = 1;
    tc.out_dir = out;
    tc.quiet = 1;
    tc.seed = 3;
    int usage = 0;
    int rc = nlp_mlm_train(&tc, &cc, &usage);
    CHECK_MSG(rc == 0, "train: %s", gr_last_error());
    /* rewrite last.ckpt with the config an older grove wrote */
    char *cfg = NULL;
    CHECK(gr_checkpoint_read_config(last, &cfg) == 0);
    CHECK(cfg && strstr(cfg, "\npositions sinusoidal\n") != NULL);
    static char old[16384];
    drop_line(cfg ? cfg : "", "positions", old, sizeof old);
    free(cfg);
    struct nlp_mlm_runtime rt;
    int32_t V = 0;
    if (nlp_mlm_open(&rt, last, &cc) == 0) {
        V = rt.vocab.size;
        nlp_mlm_close(&rt);
    }
    CHECK(V > 3);
    {
        struct gr_ctx *ctx = NULL;
        void *model = NULL;
        struct gr_optim *opt = NULL;
        struct gr_optim_config oc = gr_optim_config_default(GR_OPTIM_ADAM);
        CHECK(gr_ctx_new(&ctx, &cc) == 0);
        CHECK(e->init(&model, ctx, &tc.opt, V, 5) == 0);
        CHECK(gr_optim_new(&opt, ctx, "adam", &oc) == 0);
        CHECK_MSG(gr_checkpoint_load(ctx, last, GR_CKPT_ALL, NULL) == 0,
                  "%s", gr_last_error());
        CHECK(gr_checkpoint_save(ctx, last, old, GR_CKPT_ALL, 1) == 0);
        gr_optim_free(opt);
        e->free(model);
        gr_ctx_free(ctx);
    }
    tc.epochs = 2;
    tc.resume = 1;
    tc.opt.learned_pos = 1; /* not what the run was: refused */
    usage = 0;
    CHECK(nlp_mlm_train(&tc, &cc, &usage) == GR_EINVAL && usage == 1);
    CHECK_STR_CONTAINS(gr_last_error(), "positions");
    tc.opt.learned_pos = 0;
    rc = nlp_mlm_train(&tc, &cc, &usage);
    CHECK_MSG(rc == 0, "resume of a run without a positions line: %s",
              gr_last_error());
    snprintf(path, sizeof path, "%s/metrics.csv", out);
    FILE *f = fopen(path, "r");
    int lines = 0;
    for (int ch; f && (ch = fgetc(f)) != EOF;) {
        lines += ch == '\n';
    }
    if (f) {
        fclose(f);
    }
    CHECK_MSG(lines == 3, "metrics.csv has %d lines after the resume", lines);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

int main(void)
{
    test_perplexity();
    test_depparse();
    test_channels();
    test_table();
    test_ffn_leaky();
    test_transformer_ffn_act();
    test_transformer_positions();
    return test_report("nlp_mlm_task");
}
