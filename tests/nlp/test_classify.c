/* The classifier harness (nlp/tasks/classify.h) on made-up tasks small
 * enough to learn in seconds: a single-sequence task whose label is the
 * first token's class, read at the last real token (so the encoder must
 * carry it through the sequence), and a pair task whose label says whether
 * two sequences start alike (so the pair features must compare u and v).
 * Both encoders (lstm, onlstm) must learn them well above chance; a
 * checkpoint reloaded evaluates to the training's own test accuracy;
 * --epochs 0 exports the initial model; the length buckets cover every
 * batch with examples of near lengths; another kind of checkpoint is
 * refused by name. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "core/files.h"
#include "core/random.h"
#include "kernels/checkpoint.h"
#include "nlp/tasks/classify.h"
#include "tests/test.h"

/* tokens 1..8, padding 0; label = first token mod 4 (single) or
 * [first(a) == first(b)] (pair, half the pairs made equal) */
static void make_data(struct nlp_cls_data *d, int pair, uint64_t seed)
{
    nlp_cls_data_init(d);
    snprintf(d->task, sizeof d->task, "%s", pair ? "toy-pair" : "toy");
    d->pair = pair;
    d->n_classes = pair ? 2 : 4;
    d->vocab_size = 9;
    d->pad_id = 0;
    struct gr_philox_stream r = gr_philox_stream_init(seed, 0);
    int counts[3] = {800, 200, 200};
    for (int s = 0; s < 3; s++) {
        for (int i = 0; i < counts[s]; i++) {
            int32_t a[12], b[12];
            /* pairs shorter: the first token must survive in both */
            int32_t span = pair ? 4 : 8, lo = pair ? 2 : 3;
            int32_t la = lo + (int32_t)(gr_philox_next_u32(&r) % span);
            int32_t lb = lo + (int32_t)(gr_philox_next_u32(&r) % span);
            for (int t = 0; t < 12; t++) {
                a[t] = 1 + (int32_t)(gr_philox_next_u32(&r) % 8);
                b[t] = 1 + (int32_t)(gr_philox_next_u32(&r) % 8);
            }
            int32_t label;
            if (pair) {
                if (i % 2 == 0) {
                    b[0] = a[0];
                }
                label = a[0] == b[0];
            } else {
                label = a[0] % 4;
            }
            CHECK(nlp_cls_add(d, s, a, la, b, lb, label, (int)(la % 3)) == 0);
        }
    }
}

static struct gr_ctx_config cpu(void)
{
    struct gr_ctx_config cc = gr_ctx_config_default();
    cc.device = GR_DEVICE_CPU;
    cc.threads = 1;
    return cc;
}

static void config(struct nlp_cls_train_config *tc, const char *model,
                   const char *dir, int epochs)
{
    nlp_cls_train_config_default(tc, NULL);
    CHECK(nlp_encoder_config_default(&tc->enc, model, NULL) == 0);
    tc->enc.vocab = 9;
    tc->enc.pad_id = 0;
    tc->enc.emsize = 16;
    tc->enc.hidden = 40;
    tc->enc.chunk = 4;
    tc->enc.dropout_in = 0.0f;
    tc->dropout_out = 0.0f;
    tc->beta1 = 0.9f;
    tc->lr = 1e-2f;
    tc->batch = 32;
    tc->epochs = epochs;
    tc->seed = 5;
    tc->quiet = 1;
    tc->force = 1;
    tc->out_dir = dir;
}

static void learn(const char *model, int pair, const char *root)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s-%d", root, model, pair);
    struct nlp_cls_data d;
    make_data(&d, pair, 17);
    struct nlp_cls_train_config tc;
    config(&tc, model, dir, pair ? 12 : 8);
    struct gr_ctx_config cc = cpu();
    struct nlp_cls_train_result res;
    int rc = nlp_cls_train(&tc, &d, &cc, &res);
    CHECK_MSG(rc == 0, "%s: %s", model, gr_last_error());
    printf("%s %s: best valid %.3f at epoch %d, test %.3f (chance %.2f)\n",
           model, pair ? "pair" : "single", res.best_valid_acc,
           (int)res.best_epoch, res.test.acc, pair ? 0.5 : 0.25);
    CHECK_MSG(res.test.acc >= (pair ? 0.85 : 0.8), "%s %s test accuracy %.3f",
              model, pair ? "pair" : "single", res.test.acc);
    CHECK(res.epochs_done == (pair ? 12 : 8));
    /* the group accuracies partition the test set */
    int64_t n = 0;
    double hits = 0;
    for (int g = 0; g < NLP_CLS_MAX_GROUPS; g++) {
        n += res.test.group_n[g];
        if (res.test.group_n[g] > 0) {
            hits += res.test.group_acc[g] * (double)res.test.group_n[g];
        }
    }
    CHECK(n == 200);
    CHECK(fabs(hits / 200.0 - res.test.acc) < 1e-9);

    /* best.ckpt reloaded gives the same test accuracy */
    char best[600];
    snprintf(best, sizeof best, "%s/best.ckpt", dir);
    struct nlp_cls_model *m = NULL;
    char task[16];
    CHECK(nlp_cls_model_load(&m, best, &cc, task, NULL) == 0);
    CHECK(strcmp(task, d.task) == 0);
    struct nlp_cls_eval ev;
    CHECK(m != NULL && nlp_cls_evaluate(m, &d, NLP_CLS_TEST, 64, 0, &ev) == 0);
    CHECK_MSG(ev.acc == res.test.acc, "reloaded %.4f, trained %.4f", ev.acc,
              res.test.acc);
    CHECK(ev.batches == 4); /* 200 by 64, no token cap */
    /* a token cap cuts the batches (down to one example each, which a
     * longer example than the cap also is) and changes only rounding */
    int64_t caps[2] = {1, 3 * 10}, batches[2];
    for (int c = 0; c < 2; c++) {
        struct nlp_cls_eval evc;
        CHECK(nlp_cls_evaluate(m, &d, NLP_CLS_TEST, 64, caps[c], &evc) == 0);
        CHECK_MSG(evc.acc == ev.acc && fabs(evc.loss - ev.loss) < 1e-5,
                  "cap %d: acc %.4f loss %.6f, uncapped %.4f %.6f",
                  (int)caps[c], evc.acc, evc.loss, ev.acc, ev.loss);
        batches[c] = evc.batches;
    }
    CHECK(batches[0] == 200);
    CHECK_MSG(batches[1] > 200 / 30 && batches[1] < 200, "%d batches",
              (int)batches[1]);
    if (strcmp(model, "onlstm") == 0 && !pair) {
        float dist[5];
        int32_t ids[5] = {1, 2, 3, 4, 5};
        CHECK(nlp_cls_distances(m, ids, 5, dist) == 0);
        for (int t = 0; t < 5; t++) {
            CHECK(dist[t] >= 0.0f && dist[t] <= 1.0f + 1e-5f);
        }
    } else if (strcmp(model, "lstm") == 0) {
        float dist[2];
        int32_t ids[2] = {1, 2};
        CHECK(nlp_cls_distances(m, ids, 2, dist) == GR_EUNSUPPORTED);
    }
    nlp_cls_model_free(m);
    nlp_cls_data_free(&d);
}

int main(void)
{
    char root[] = "/tmp/grove_cls_XXXXXX";
    CHECK(mkdtemp(root) != NULL);
    learn("lstm", 0, root);
    learn("onlstm", 0, root);
    learn("lstm", 1, root);

    /* --epochs 0: the initial model as best and last, nothing evaluated */
    {
        char dir[512];
        snprintf(dir, sizeof dir, "%s/zero", root);
        struct nlp_cls_data d;
        make_data(&d, 0, 3);
        struct nlp_cls_train_config tc;
        config(&tc, "lstm", dir, 0);
        struct gr_ctx_config cc = cpu();
        struct nlp_cls_train_result res;
        CHECK(nlp_cls_train(&tc, &d, &cc, &res) == 0);
        CHECK(res.epochs_done == 0 && isnan(res.test.acc));
        char p[600];
        snprintf(p, sizeof p, "%s/best.ckpt", dir);
        CHECK(gr_path_exists(p));
        snprintf(p, sizeof p, "%s/metrics.csv", dir);
        char *text = NULL;
        size_t n = 0;
        CHECK(gr_read_file(p, 4096, &text, &n) == 0);
        CHECK(text != NULL && strchr(text, '\n') == text + n - 1); /* header */
        free(text);
        /* a token outside the vocabulary is refused before any work */
        d.tokens[3] = 9;
        snprintf(dir, sizeof dir, "%s/bad", root);
        tc.out_dir = dir;
        CHECK(nlp_cls_train(&tc, &d, &cc, &res) == GR_EINVAL);
        CHECK_STR_CONTAINS(gr_last_error(), "token id 9 outside");
        CHECK(!gr_path_exists(dir));
        nlp_cls_data_free(&d);
    }

    /* another kind of checkpoint is refused, naming the file */
    {
        char p[600];
        snprintf(p, sizeof p, "%s/other.ckpt", root);
        struct gr_ctx_config cc = cpu();
        struct gr_ctx *ctx = NULL;
        CHECK(gr_ctx_new(&ctx, &cc) == 0);
        CHECK(gr_param_new(ctx, "w", gr_shape1(2)) != NULL);
        CHECK(gr_checkpoint_save(ctx, p, "grove-lm 1\nmodel onlstm\n",
                                 GR_CKPT_ALL, 1) == 0);
        gr_ctx_free(ctx);
        struct nlp_cls_model *m = NULL;
        CHECK(nlp_cls_model_load(&m, p, &cc, NULL, NULL) == GR_EFORMAT);
        CHECK_STR_CONTAINS(gr_last_error(), "not a grove classifier checkpoint");
        CHECK(m == NULL);
    }

    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    CHECK(system(cmd) == 0);
    return test_report("nlp_classify");
}
