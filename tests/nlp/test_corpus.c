/* PTB corpus (lm_and_parsing.md §1 and §6): tokenisation and id order on
 * hand-made files, batchify and windows against a direct reading of the
 * layout, and on the real PTB the vocabulary, token counts, id order,
 * batchify shapes and the unigram oracle's 639.30.
 *
 *   test_nlp_corpus PTB_DIR      (exit 77 when PTB_DIR is absent)
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "core/files.h"
#include "nlp/data/corpus.h"
#include "tests/test.h"

static void write_text(const char *dir, const char *name, const char *text)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    CHECK(gr_write_file_atomic(path, text, strlen(text), 1) == 0);
}

static int32_t id_of(const struct nlp_corpus *c, const char *w)
{
    return nlp_vocab_find(&c->vocab, w, strlen(w));
}

static void test_small_corpus(void)
{
    char dir[] = "/tmp/grove_test_corpus_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    /* CRLF, a blank line, tabs, a last line without a newline; valid adds
     * one new word (the reference would add it too). Uses the
     * Ordered-Neurons names train.txt, valid.txt, test.txt. */
    write_text(dir, "train.txt", " b a b \r\n\n c\ta  \n a");
    write_text(dir, "valid.txt", " a d \n");
    write_text(dir, "test.txt", "b\n");
    struct nlp_corpus c;
    int rc = nlp_corpus_load(&c, dir);
    CHECK_MSG(rc == 0, "%s", gr_last_error());
    if (rc == 0) {
        /* train: b a b <eos> | <eos> | c a <eos> | a <eos> */
        CHECK(c.n_tokens[NLP_TRAIN] == 10);
        CHECK(c.n_lines[NLP_TRAIN] == 4);
        CHECK(id_of(&c, "b") == 0 && id_of(&c, "a") == 1);
        CHECK(id_of(&c, "<eos>") == 2 && c.eos == 2);
        CHECK(id_of(&c, "c") == 3 && id_of(&c, "d") == 4);
        CHECK(c.n_types_train == 4 && c.vocab.size == 5);
        CHECK(c.unk == -1);
        const int32_t want[10] = {0, 1, 0, 2, 2, 3, 1, 2, 1, 2};
        CHECK(memcmp(c.ids[NLP_TRAIN], want, sizeof want) == 0);
        CHECK(c.n_tokens[NLP_VALID] == 3 && c.n_tokens[NLP_TEST] == 2);

        /* Unigram on train: counts b 2, a 3, <eos> 4, c 1 of 10. */
        struct nlp_unigram u;
        CHECK(nlp_unigram_fit(&u, c.ids[NLP_TRAIN], 10, c.vocab.size) == 0);
        CHECK_NEAR(u.logp[1], log(3.0 / 10.0), 1e-12);
        CHECK(isinf(u.logp[4]) && u.logp[4] < 0);
        /* test "b <eos>": exp(-(log 2/10 + log 4/10) / 2) */
        double ppl = nlp_unigram_perplexity(&u, c.ids[NLP_TEST], 2);
        CHECK_NEAR(ppl, exp(-(log(0.2) + log(0.4)) / 2.0), 1e-12);
        /* valid has "d", never seen in train */
        CHECK(isinf(nlp_unigram_perplexity(&u, c.ids[NLP_VALID], 3)));
        nlp_unigram_free(&u);
        nlp_corpus_free(&c);
    }
    /* A missing split names the folder and both file names. */
    char path[1024];
    snprintf(path, sizeof path, "%s/test.txt", dir);
    unlink(path);
    CHECK(nlp_corpus_load(&c, dir) == GR_EIO);
    CHECK_STR_CONTAINS(gr_last_error(), "no ptb.test.txt or test.txt");
    /* An empty split is named (not "a vocabulary of 0 words" later). */
    write_text(dir, "test.txt", "");
    CHECK(nlp_corpus_load(&c, dir) == GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "/test.txt: the file is empty");
    unlink(path);
    snprintf(path, sizeof path, "%s/train.txt", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/valid.txt", dir);
    unlink(path);
    rmdir(dir);
}

static void test_batchify(void)
{
    int32_t ids[23], out[23];
    for (int i = 0; i < 23; i++) {
        ids[i] = 100 + i;
    }
    /* 23 tokens, B = 5: 4 rows, 3 dropped; column b = ids[4b .. 4b+3]. */
    CHECK(nlp_batchify_rows(23, 5) == 4);
    CHECK(nlp_batchify(ids, 23, 5, out) == 0);
    const int32_t want[20] = {100, 104, 108, 112, 116, 101, 105, 109, 113, 117,
                              102, 106, 110, 114, 118, 103, 107, 111, 115, 119};
    CHECK(memcmp(out, want, sizeof want) == 0);
    CHECK(nlp_batchify(ids, 3, 5, out) == GR_EINVAL);
    CHECK(nlp_batchify(ids, 23, 0, out) == GR_EINVAL);
    /* windows over 4 rows with bptt 2: rows 0-1 (targets 1-2), then row 2
     * only (target 3), then nothing. */
    CHECK(nlp_batch_window(4, 0, 2) == 2);
    CHECK(nlp_batch_window(4, 2, 2) == 1);
    CHECK(nlp_batch_window(4, 3, 2) == 0);
    CHECK(nlp_batch_window(4, 9, 2) == 0);
}

static void test_ptb(const char *dir)
{
    struct nlp_corpus c;
    int rc = nlp_corpus_load(&c, dir);
    CHECK_MSG(rc == 0, "%s", gr_last_error());
    if (rc < 0) {
        return;
    }
    /* §1.2 */
    CHECK(c.vocab.size == 10000);
    CHECK(c.n_types_train == 10000); /* valid and test add nothing */
    CHECK(c.n_tokens[NLP_TRAIN] == 929589);
    CHECK(c.n_tokens[NLP_VALID] == 73760);
    CHECK(c.n_tokens[NLP_TEST] == 82430);
    CHECK(c.n_lines[NLP_TRAIN] == 42068);
    CHECK(c.n_lines[NLP_VALID] == 3370);
    CHECK(c.n_lines[NLP_TEST] == 3761);
    const char *first[] = {"aer", "banknote", "berlitz", "calloway",
                           "centrust"};
    for (int i = 0; i < 5; i++) {
        CHECK_MSG(id_of(&c, first[i]) == i, "%s", first[i]);
    }
    CHECK(id_of(&c, "<eos>") == 24 && c.eos == 24);
    CHECK(id_of(&c, "<unk>") == 26 && c.unk == 26);
    CHECK(id_of(&c, "N") == 27);
    int eos_count = 0;
    for (size_t k = 0; k < c.n_tokens[NLP_TRAIN]; k++) {
        eos_count += c.ids[NLP_TRAIN][k] == 24;
    }
    CHECK(eos_count == 42068);

    /* §1.3: batchify shapes, and the layout at a few places. */
    const int32_t batch[3] = {20, 10, 1};
    const size_t rows_want[3] = {46479, 7376, 82430};
    for (int s = 0; s < 3; s++) {
        size_t rows = nlp_batchify_rows(c.n_tokens[s], batch[s]);
        CHECK_MSG(rows == rows_want[s], "%s: %zu rows", nlp_split_name(s),
                  rows);
        int32_t *out = malloc(rows * (size_t)batch[s] * sizeof *out);
        CHECK(nlp_batchify(c.ids[s], c.n_tokens[s], batch[s], out) == 0);
        size_t probes[4] = {0, 1, rows / 2, rows - 1};
        for (int b = 0; b < batch[s]; b++) {
            for (int k = 0; k < 4; k++) {
                size_t r = probes[k];
                CHECK(out[r * (size_t)batch[s] + (size_t)b] ==
                      c.ids[s][(size_t)b * rows + r]);
            }
        }
        free(out);
    }
    CHECK(c.n_tokens[NLP_TRAIN] - 46479 * 20 == 9);
    CHECK(nlp_batch_window(46479, 46478 - 70, 70) == 70);
    CHECK(nlp_batch_window(46479, 46479 - 50, 70) == 49);

    /* §1.4: the unigram oracle. */
    struct nlp_unigram u;
    CHECK(nlp_unigram_fit(&u, c.ids[NLP_TRAIN], c.n_tokens[NLP_TRAIN],
                          c.vocab.size) == 0);
    double ppl = nlp_unigram_perplexity(&u, c.ids[NLP_TEST],
                                        c.n_tokens[NLP_TEST]);
    printf("unigram test perplexity %.4f\n", ppl);
    CHECK_MSG(fabs(ppl - 639.30) < 0.005, "%.4f", ppl);
    nlp_unigram_free(&u);
    nlp_corpus_free(&c);
}

int main(int argc, char **argv)
{
    test_small_corpus();
    test_batchify();
    if (argc < 2 || !gr_path_exists(argv[1])) {
        return test_skip("nlp_corpus", TEST_NEED_DATA,
                         "PTB folder %s is absent: data checks skipped",
                         argc < 2 ? "(none given)" : argv[1]);
    }
    test_ptb(argv[1]);
    return test_report("nlp_corpus");
}
