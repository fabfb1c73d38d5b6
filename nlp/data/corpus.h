/* nlp/data/corpus.h — the word-level PTB language-modelling corpus, batching,
 * and the unigram oracle (lm_and_parsing.md §1).
 *
 * Loading (reference `data.py`): each of train, valid, test is read line
 * by line (a line ends at "\n", "\r\n" or "\r", and a last line without an
 * end counts), split on ASCII whitespace, and "<eos>" appended; ids are
 * assigned in order of first appearance over train, then valid, then test.
 * On Mikolov's PTB this gives |V| = 10,000 (valid and test add nothing),
 * `aer` 0, `banknote` 1, ..., `<eos>` 24, `<unk>` 26, `N` 27, and
 * 929,589 / 73,760 / 82,430 tokens. `<unk>` is an ordinary word.
 *
 * Batching: nlp_batchify keeps the first floor(N/B)*B tokens and lays them
 * out as a row-major (rows, B) matrix whose column b is the contiguous
 * slice [b*rows, (b+1)*rows) of the stream: out[r*B + b] = ids[b*rows + r].
 * The input window at row i is rows [i, i+T), its targets rows
 * [i+1, i+T+1), with T = nlp_batch_window(rows, i, bptt) (shortened at the
 * end). PTB: train B=20 -> 46,479 rows; valid B=10 -> 7,376; test B=1 ->
 * 82,430.
 *
 * Unigram oracle: p(w) = count_train(w) / N_train (with <eos>); its test
 * perplexity on PTB is 639.30, the sanity floor any LM must beat.
 *
 * Memory: struct nlp_corpus owns its vocabulary and id arrays; batchify
 * writes into the caller's buffer. Thread safety: read-only use of a loaded
 * corpus is safe from any thread. Errors: negative GR_E* codes with the
 * message in gr_last_error() naming the file (and line for bad input).
 *
 *   struct nlp_corpus c;
 *   if (nlp_corpus_load(&c, "data/ptb") < 0) { puts(gr_last_error()); ... }
 *   size_t rows = nlp_batchify_rows(c.n_tokens[NLP_TRAIN], 20);
 *   int32_t *batch = malloc(rows * 20 * sizeof *batch);
 *   nlp_batchify(c.ids[NLP_TRAIN], c.n_tokens[NLP_TRAIN], 20, batch);
 *   for (size_t i = 0; i + 1 < rows; i += 70) {
 *       int32_t T = nlp_batch_window(rows, i, 70);
 *       // inputs batch[i*20 ..], targets batch[(i+1)*20 ..], T rows each
 *   }
 *   nlp_corpus_free(&c);
 */
#ifndef GROVE_NLP_CORPUS_H
#define GROVE_NLP_CORPUS_H

#include <stddef.h>
#include <stdint.h>

#include "nlp/data/vocab.h"

enum nlp_split { NLP_TRAIN = 0, NLP_VALID = 1, NLP_TEST = 2, NLP_N_SPLITS };

/* "train", "valid", "test". */
const char *nlp_split_name(enum nlp_split split);

struct nlp_corpus {
    struct nlp_vocab vocab;
    int32_t *ids[NLP_N_SPLITS];    /* token ids, <eos> after each line */
    size_t n_tokens[NLP_N_SPLITS]; /* <eos> included */
    size_t n_lines[NLP_N_SPLITS];
    int32_t n_types_train; /* vocabulary size after reading train */
    int32_t eos;           /* id of "<eos>" */
    int32_t unk;           /* id of "<unk>", -1 if the text has none */
    char paths[NLP_N_SPLITS][4096]; /* the files read */
};

/* Reads DIR/ptb.{train,valid,test}.txt (or DIR/{train,valid,test}.txt,
 * the Ordered-Neurons names). GR_EIO if a file is missing or unreadable.
 * On failure the corpus is left freed. */
int nlp_corpus_load(struct nlp_corpus *c, const char *dir);

void nlp_corpus_free(struct nlp_corpus *c);

/* Rows of the batched layout: floor(n_tokens / batch). */
size_t nlp_batchify_rows(size_t n_tokens, int32_t batch);

/* Writes the (rows, batch) layout described above into out[rows * batch]
 * (caller-owned, see nlp_batchify_rows). GR_EINVAL if batch < 1 or there
 * are fewer tokens than batch. */
int nlp_batchify(const int32_t *ids, size_t n_tokens, int32_t batch,
                 int32_t *out);

/* Length T of the window starting at row i: min(bptt, rows - 1 - i), or 0
 * when i + 1 >= rows (no target left). */
int32_t nlp_batch_window(size_t rows, size_t i, int32_t bptt);

/* Unigram LM: log p(w) = log(count(w) / N) over the ids it was fitted on,
 * -INFINITY for a word never seen. */
struct nlp_unigram {
    int32_t vocab_size;
    double *logp;     /* [vocab_size], natural log */
    int64_t *counts;  /* [vocab_size] */
    size_t n_tokens;  /* N */
};

/* Fits on ids[0, n) (ids must lie in [0, vocab_size)). */
int nlp_unigram_fit(struct nlp_unigram *u, const int32_t *ids, size_t n,
                    int32_t vocab_size);

void nlp_unigram_free(struct nlp_unigram *u);

/* exp(-(1/n) * sum log p(ids[k])): INFINITY if a token has p = 0. */
double nlp_unigram_perplexity(const struct nlp_unigram *u, const int32_t *ids,
                              size_t n);

#endif
