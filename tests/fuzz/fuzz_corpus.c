/* libFuzzer target for the PTB corpus reader (nlp/data/corpus.c): the
 * bytes are cut at their first two NUL bytes into train, valid and test
 * (missing parts are empty files), written as ptb.{train,valid,test}.txt
 * in a scratch folder and loaded with nlp_corpus_load; a loaded corpus is
 * then batched and fitted by the unigram model, as the LM does. Never a
 * crash or a leak; verdicts are tested in tests/nlp/test_corpus.c.
 *
 * Seeds: tests/fuzz/seeds/corpus/ (make_seeds.py). ctest nlp_fuzz_corpus
 * replays tests/fuzz/regressions/corpus/ and the seeds. */
#include "tests/fuzz/fuzz_util.h"

#include "nlp/data/corpus.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const names[3] = {"ptb.train.txt", "ptb.valid.txt",
                                         "ptb.test.txt"};
    fuzz_input_accepted = 0;
    size_t start = 0;
    for (int k = 0; k < 3; k++) {
        size_t end = start;
        while (end < size && (k == 2 || data[end] != 0)) {
            end++;
        }
        if (fuzz_write_file(names[k], data + start, end - start) == NULL) {
            return 0;
        }
        start = end < size ? end + 1 : size;
    }
    struct nlp_corpus c;
    if (nlp_corpus_load(&c, fuzz_scratch_dir()) < 0) {
        return 0;
    }
    fuzz_input_accepted = 1;
    size_t n = c.n_tokens[NLP_TRAIN];
    size_t rows = nlp_batchify_rows(n, 3);
    if (rows > 0) {
        int32_t *batch = malloc(rows * 3 * sizeof *batch);
        if (batch != NULL) {
            nlp_batchify(c.ids[NLP_TRAIN], n, 3, batch);
            free(batch);
        }
    }
    struct nlp_unigram u;
    if (nlp_unigram_fit(&u, c.ids[NLP_TRAIN], n, c.vocab.size) == 0) {
        nlp_unigram_perplexity(&u, c.ids[NLP_TEST], c.n_tokens[NLP_TEST]);
        nlp_unigram_free(&u);
    }
    nlp_corpus_free(&c);
    return 0;
}
