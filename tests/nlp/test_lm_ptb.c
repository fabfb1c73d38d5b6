/* A short real training run on PTB (issue 9 "Tests"): a small ON-LSTM LM
 * trained by nlp_lm_train (SGD, clipping, the window-length draw, carried
 * state) for a few hundred windows must reach a validation perplexity
 * below the unigram oracle's on the same tokens (and below its 639.30 on
 * test). Release builds only: the Debug + ASan build runs a shorter run
 * and checks that the validation perplexity fell well below its value at
 * initialisation.
 *
 *   test_nlp_lm_ptb PTB_DIR      (exit 77 when PTB_DIR is absent)
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/files.h"
#include "core/progress.h"
#include "nlp/data/corpus.h"
#include "nlp/models/onlstm.h"
#include "nlp/tasks/lm.h"
#include "tests/test.h"

#ifdef NDEBUG
#define WINDOWS 400
#else
#define WINDOWS 60
#endif
#define VALID_ROWS 1001 /* x batch 10: 10,000 predicted tokens */

struct seen {
    double val_ppl[8];
    int n;
};

static int on_epoch(void *user, const struct nlp_lm_epoch_log *e)
{
    struct seen *s = user;
    if (s->n < 8) {
        s->val_ppl[s->n++] = e->val_ppl;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || !gr_path_exists(argv[1])) {
        return test_skip("nlp_lm_ptb", TEST_NEED_DATA, "PTB folder %s absent",
                         argc > 1 ? argv[1] : "(none given)");
    }
    struct nlp_corpus c;
    if (nlp_corpus_load(&c, argv[1]) < 0) {
        fprintf(stderr, "%s\n", gr_last_error());
        return 1;
    }
    /* The unigram oracle on exactly the validation targets used below:
     * rows 1 .. VALID_ROWS-1 of the valid split batchified by 10. */
    struct nlp_unigram u;
    CHECK(nlp_unigram_fit(&u, c.ids[NLP_TRAIN], c.n_tokens[NLP_TRAIN],
                          c.vocab.size) == 0);
    size_t rows = nlp_batchify_rows(c.n_tokens[NLP_VALID], 10);
    int32_t *vb = malloc(rows * 10 * sizeof *vb);
    CHECK(nlp_batchify(c.ids[NLP_VALID], c.n_tokens[NLP_VALID], 10, vb) == 0);
    double uni_ppl = nlp_unigram_perplexity(&u, vb + 10,
                                            (size_t)(VALID_ROWS - 1) * 10);
    printf("unigram oracle on the %d validation targets: %.2f\n",
           (VALID_ROWS - 1) * 10, uni_ppl);
    free(vb);

    struct nlp_lm_train_config tc;
    nlp_lm_train_config_default(&tc, NLP_LM_ONLSTM);
    tc.model.emsize = 32;
    tc.model.nhid = 64;
    tc.model.nlayers = 2;
    tc.model.chunk = 8;
    tc.model.dropout = tc.model.dropouth = tc.model.dropouti = 0.0f;
    tc.model.dropoute = tc.model.wdrop = 0.0f;
    tc.lr = 20.0f;
    tc.clip = 1.0f;
    tc.batch = 10;
    tc.bptt = 20;
    tc.epochs = 1;
    tc.max_batches = WINDOWS;
    tc.eval_batch = 10;
    tc.valid_rows = VALID_ROWS;
    tc.skip_test = 1;
    tc.quiet = 1;
    tc.seed = 141;
    struct gr_ctx_config cc = gr_ctx_config_default();
    cc.device = GR_DEVICE_CPU;

    /* the same validation at initialisation (zero windows) */
    struct nlp_lm_train_config t0 = tc;
    t0.max_batches = 0;
    t0.train_rows = 2; /* no window fits: the loop never runs */
    struct seen s0 = {{0}, 0}, s1 = {{0}, 0};
    struct nlp_lm_train_result r0, r1;
    CHECK_MSG(nlp_lm_train(&t0, &c, &cc, on_epoch, &s0, &r0) == 0, "%s",
              gr_last_error());
    double t_start = gr_now_seconds();
    CHECK_MSG(nlp_lm_train(&tc, &c, &cc, on_epoch, &s1, &r1) == 0, "%s",
              gr_last_error());
    double dt = gr_now_seconds() - t_start;
    CHECK(s0.n == 1 && s1.n == 1);
    printf("validation perplexity: %.2f at initialisation, %.2f after %d "
           "windows (%.1f s)\n",
           s0.val_ppl[0], s1.val_ppl[0], WINDOWS, dt);
    CHECK(s0.val_ppl[0] > 5000.0); /* about uniform over 10,000 words */
#ifdef NDEBUG
    CHECK_MSG(s1.val_ppl[0] < uni_ppl,
              "validation perplexity %.2f is not below the unigram "
              "oracle's %.2f",
              s1.val_ppl[0], uni_ppl);
    CHECK(s1.val_ppl[0] < 639.30);
#else
    CHECK_MSG(s1.val_ppl[0] < 0.3 * s0.val_ppl[0],
              "validation perplexity %.2f did not fall from %.2f",
              s1.val_ppl[0], s0.val_ppl[0]);
#endif
    nlp_unigram_free(&u);
    nlp_corpus_free(&c);
    return test_report("nlp_lm_ptb");
}
