/* The training schedule end to end on a small synthetic corpus
 * (on_lstm.md §8; nlp/tasks/lm.h):
 *   - the switch to ASGD happens at the epoch the NT-ASGD rule gives on
 *     the recorded validation losses, and ASGD epochs validate the
 *     averaged weights;
 *   - the finetuning restart creates a new ASGD optimizer;
 *   - the run folder: metrics.csv with one row per epoch, best.ckpt,
 *     last.ckpt; an existing folder is refused without --force;
 *   - --resume: a run stopped after 4 epochs and resumed to 9 gives the
 *     same metrics (bit for bit, but time) and the same best weights as an
 *     uninterrupted run of 9 epochs;
 *   - a run of 0 epochs writes last.ckpt (the initial model) and no
 *     best.ckpt; resumed, it gives the uninterrupted run's epochs.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "core/files.h"
#include "core/random.h"
#include "kernels/checkpoint.h"
#include "nlp/data/corpus.h"
#include "nlp/models/onlstm.h"
#include "nlp/tasks/lm.h"
#include "tests/test.h"

/* A few hundred lines from a small grammar. */
static void write_split(const char *dir, const char *name, int lines,
                        uint64_t seed)
{
    static const char *const det[] = {"the", "a", "every", "no"};
    static const char *const noun[] = {"cat", "dog", "bird", "man", "idea",
                                       "car", "tree", "house"};
    static const char *const verb[] = {"sees", "likes", "eats", "finds",
                                       "wants"};
    static const char *const adj[] = {"big", "red", "old", "happy"};
    static const char *const prep[] = {"near", "under", "with"};
    struct gr_philox_stream s = gr_philox_stream_init(seed, 0);
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
#define PICK(a) a[gr_philox_next_u32(&s) % (sizeof a / sizeof a[0])]
    for (int i = 0; i < lines; i++) {
        fprintf(f, " %s", PICK(det));
        if (gr_philox_next_u32(&s) % 3 == 0) {
            fprintf(f, " %s", PICK(adj));
        }
        fprintf(f, " %s %s %s %s", PICK(noun), PICK(verb), PICK(det),
                PICK(noun));
        if (gr_philox_next_u32(&s) % 2 == 0) {
            fprintf(f, " %s %s %s", PICK(prep), PICK(det), PICK(noun));
        }
        fprintf(f, " \n");
    }
#undef PICK
    fclose(f);
}

struct record {
    struct nlp_lm_epoch_log log[16];
    int n;
};

static int on_epoch(void *user, const struct nlp_lm_epoch_log *e)
{
    struct record *r = user;
    if (r->n < 16) {
        r->log[r->n++] = *e;
    }
    return 0;
}

static void config(struct nlp_lm_train_config *tc, const char *out)
{
    nlp_lm_train_config_default(tc, NLP_LM_ONLSTM);
    tc->model.emsize = 16;
    tc->model.nhid = 24;
    tc->model.nlayers = 2;
    tc->model.chunk = 4;
    tc->lr = 30.0f;
    tc->batch = 4;
    tc->bptt = 12;
    tc->epochs = 9;
    tc->nonmono = 1;
    tc->finetuning = 6;
    tc->eval_batch = 4;
    tc->test_batch = 2;
    tc->seed = 5;
    tc->quiet = 1;
    tc->out_dir = out;
}

/* Two checkpoints hold bit-identical parameters. */
static int same_weights(const char *a, const char *b)
{
    struct gr_ctx_config cc = gr_ctx_config_default();
    cc.device = GR_DEVICE_CPU;
    struct nlp_lm_loaded x, y;
    if (nlp_lm_load(&x, a, &cc) < 0) {
        return 0;
    }
    if (nlp_lm_load(&y, b, &cc) < 0) {
        nlp_lm_loaded_free(&x);
        return 0;
    }
    int eq = 1;
    for (int i = 0; i < gr_ctx_n_named(x.ctx); i++) {
        struct gr_tensor *p = gr_ctx_named(x.ctx, i);
        struct gr_tensor *q = gr_ctx_find(y.ctx, p->name);
        if (p->kind != GR_KIND_PARAM) {
            continue;
        }
        if (q == NULL || q->numel != p->numel) {
            eq = 0;
            break;
        }
        float *u = malloc((size_t)p->numel * sizeof *u);
        float *w = malloc((size_t)p->numel * sizeof *w);
        gr_tensor_to_host(p, u);
        gr_tensor_to_host(q, w);
        eq &= memcmp(u, w, (size_t)p->numel * sizeof *u) == 0;
        free(u);
        free(w);
    }
    nlp_lm_loaded_free(&x);
    nlp_lm_loaded_free(&y);
    return eq;
}

/* metrics.csv without the time columns (wall_s, tokens_per_s). */
static void strip_times(const char *path, char *out, size_t cap)
{
    char *x = NULL;
    size_t n = 0;
    out[0] = '\0';
    if (gr_read_file(path, 1 << 20, &x, &n) < 0) {
        return;
    }
    size_t k = 0;
    int col = 0;
    for (size_t i = 0; i < n && k + 1 < cap; i++) {
        if (x[i] == '\n') {
            col = 0;
            out[k++] = '\n';
            continue;
        }
        if (x[i] == ',') {
            col++;
        }
        if (col != 2 && col != 11) {
            out[k++] = x[i];
        }
    }
    out[k] = '\0';
    free(x);
}

int main(void)
{
    char dir[] = "/tmp/grove_test_lm_schedule_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char data[600], run_a[600], run_b[600], run_c[600];
    snprintf(data, sizeof data, "%s/data", dir);
    snprintf(run_a, sizeof run_a, "%s/a", dir);
    snprintf(run_b, sizeof run_b, "%s/b", dir);
    snprintf(run_c, sizeof run_c, "%s/c", dir);
    CHECK(gr_mkdir_p(data) == 0);
    write_split(data, "ptb.train.txt", 80, 1);
    write_split(data, "ptb.valid.txt", 60, 2);
    write_split(data, "ptb.test.txt", 60, 3);
    struct nlp_corpus c;
    CHECK(nlp_corpus_load(&c, data) == 0);
    struct gr_ctx_config cc = gr_ctx_config_default();
    cc.device = GR_DEVICE_CPU;
    cc.threads = 1;

    /* run A: 9 epochs in one go */
    struct nlp_lm_train_config tc;
    config(&tc, run_a);
    struct record ra = {.n = 0};
    struct nlp_lm_train_result res_a;
    CHECK_MSG(nlp_lm_train(&tc, &c, &cc, on_epoch, &ra, &res_a) == 0, "%s",
              gr_last_error());
    CHECK(ra.n == 9 && res_a.epochs_done == 9);
    double hist[16];
    int switch_epoch = 0;
    for (int e = 0; e < ra.n; e++) {
        printf("epoch %d: %s val ppl %.4f (compat %.4f) train loss %.4f%s\n",
               ra.log[e].epoch, ra.log[e].asgd ? "asgd" : "sgd ",
               ra.log[e].val_ppl, ra.log[e].val_ppl_compat,
               ra.log[e].train_loss, ra.log[e].best ? " best" : "");
        hist[e] = log(ra.log[e].val_ppl_compat);
        if (switch_epoch == 0 &&
            nlp_ntasgd_should_switch(hist, e, hist[e], tc.nonmono)) {
            switch_epoch = e + 1;
        }
    }
    CHECK_MSG(switch_epoch > 0 && switch_epoch < tc.finetuning,
              "no switch before the finetuning epoch (switch %d)",
              switch_epoch);
    CHECK(res_a.asgd_switch_epoch == switch_epoch);
    for (int e = 0; e < ra.n; e++) {
        CHECK(ra.log[e].asgd == (ra.log[e].epoch >= switch_epoch));
    }
    CHECK(!isnan(res_a.test_ppl) && res_a.test_ppl < 30.0);
    char path[700], path2[700];
    snprintf(path, sizeof path, "%s/last.ckpt", run_a);
    char *cfg = NULL;
    CHECK(gr_checkpoint_read_config(path, &cfg) == 0);
    size_t len = 0;
    const char *v = cfg ? nlp_config_value(cfg, "state-asgd-count", &len)
                        : NULL;
    CHECK_MSG(v != NULL && len == 1 && v[0] == '2',
              "a restart at epoch %d makes a second ASGD", tc.finetuning);
    free(cfg);

    /* an existing run folder is refused without force */
    struct nlp_lm_train_result r;
    CHECK(nlp_lm_train(&tc, &c, &cc, NULL, NULL, &r) == GR_EEXIST);

    /* run B: 4 epochs, then --resume to 9 */
    config(&tc, run_b);
    tc.epochs = 4;
    tc.skip_test = 1;
    struct record rb = {.n = 0};
    CHECK(nlp_lm_train(&tc, &c, &cc, on_epoch, &rb, &r) == 0);
    config(&tc, run_b);
    tc.resume = 1;
    tc.lr = 1.0f; /* ignored: a resumed run keeps its own settings */
    CHECK_MSG(nlp_lm_train(&tc, &c, &cc, on_epoch, &rb, &r) == 0, "%s",
              gr_last_error());
    CHECK(rb.n == 9 && r.epochs_done == 9);
    for (int e = 0; e < 9 && e < rb.n; e++) {
        CHECK_MSG(ra.log[e].val_loss == rb.log[e].val_loss &&
                      ra.log[e].train_loss == rb.log[e].train_loss &&
                      ra.log[e].asgd == rb.log[e].asgd,
                  "epoch %d differs after resume: val %.9g vs %.9g", e + 1,
                  ra.log[e].val_loss, rb.log[e].val_loss);
    }
    static char ma[1 << 16], mb[1 << 16];
    snprintf(path, sizeof path, "%s/metrics.csv", run_a);
    snprintf(path2, sizeof path2, "%s/metrics.csv", run_b);
    strip_times(path, ma, sizeof ma);
    strip_times(path2, mb, sizeof mb);
    CHECK_MSG(strcmp(ma, mb) == 0, "metrics differ:\n%s\nvs\n%s", ma, mb);
    snprintf(path, sizeof path, "%s/best.ckpt", run_a);
    snprintf(path2, sizeof path2, "%s/best.ckpt", run_b);
    CHECK(same_weights(path, path2));
    CHECK(res_a.test_ppl == r.test_ppl);

    /* run C: 0 epochs (the initial model only), then --resume to 3 */
    config(&tc, run_c);
    tc.epochs = 0;
    tc.skip_test = 1;
    CHECK(nlp_lm_train(&tc, &c, &cc, NULL, NULL, &r) == 0);
    CHECK(r.epochs_done == 0);
    snprintf(path, sizeof path, "%s/last.ckpt", run_c);
    CHECK_MSG(gr_path_exists(path), "a 0-epoch run writes last.ckpt");
    snprintf(path, sizeof path, "%s/best.ckpt", run_c);
    CHECK_MSG(gr_path_exists(path), "a 0-epoch run writes best.ckpt too "
              "(the initial model, as every trainer's --epochs 0)");
    config(&tc, run_c);
    tc.epochs = 3;
    tc.skip_test = 1;
    tc.resume = 1;
    struct record rc3 = {.n = 0};
    CHECK_MSG(nlp_lm_train(&tc, &c, &cc, on_epoch, &rc3, &r) == 0, "%s",
              gr_last_error());
    CHECK(rc3.n == 3);
    for (int e = 0; e < 3 && e < rc3.n; e++) {
        CHECK_MSG(ra.log[e].val_loss == rc3.log[e].val_loss &&
                      ra.log[e].train_loss == rc3.log[e].train_loss,
                  "epoch %d differs after resuming a 0-epoch run", e + 1);
    }

    /* clean up */
    static const char *const files[] = {"best.ckpt", "last.ckpt",
                                        "metrics.csv", "command", "config"};
    const char *runs[3] = {run_a, run_b, run_c};
    for (int k = 0; k < 3; k++) {
        for (int i = 0; i < 5; i++) {
            snprintf(path, sizeof path, "%s/%s", runs[k], files[i]);
            unlink(path);
        }
        rmdir(runs[k]);
    }
    static const char *const splits[] = {"ptb.train.txt", "ptb.valid.txt",
                                         "ptb.test.txt"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", data, splits[i]);
        unlink(path);
    }
    rmdir(data);
    rmdir(dir);
    nlp_corpus_free(&c);
    return test_report("nlp_lm_schedule");
}
