/* nlp/data/mlm.h — the masked-language-modelling corpus of udgn.md §6
 * (issue 24 §1): sentences as ids over a vocabulary with the three special
 * ids, Bernoulli masking with `<mask>` only, and token-count batches.
 *
 * Sources:
 *   treebank  the kept words of nlp/data/treebank.h (word tags only,
 *             lower-cased, digit runs -> N, empty sentences dropped);
 *             splits by WSJ section: train 00-20, valid 21-22, test 23-24.
 *             A treebank with no sentence in 21-24 (NLTK's sample: sections
 *             00-01) is split by file instead: wsj_NNNN with NNNN % 10 == 8
 *             valid, == 9 test, the rest train (`by_file` is set; say so).
 *   ptb       Mikolov's ptb.{train,valid,test}.txt: one sentence per
 *             non-empty line, words as written ("<unk>" -> id 0). A
 *             different corpus from the thesis's (10k vocabulary, already
 *             <unk>-ed), for CI runs and StructFormer's own setting.
 * Vocabulary: 0 <unk>, 1 <pad>, 2 <mask>, then every training word with
 * count >= min_count in descending count order, ties in reverse order of
 * first appearance (the reference's id order). Words outside it -> <unk>.
 *
 * Masking (nlp_mlm_mask): each token independently with probability
 * `rate` (0.3 by default) becomes <mask>, except <pad> and <unk> which are
 * never masked; target = the original id at masked positions, -1 elsewhere.
 * Batches (nlp_mlm_batches): sentences sorted by length, longest first
 * (ties by index), packed greedily: a batch takes the next sentence while
 * the sum of its sentences' lengths stays below max_tokens (a batch holds
 * at least one sentence); nlp_mlm_batch_fill pads right with <pad>; the
 * batch order is shuffled per epoch by nlp_mlm_shuffle (seeded).
 *
 * Memory: the corpus and batch list own their arrays until *_free.
 * Thread safety: no shared state; read-only use from any thread.
 */
#ifndef GROVE_NLP_MLM_H
#define GROVE_NLP_MLM_H

#include <stdint.h>

#include "nlp/data/treebank.h"
#include "nlp/data/vocab.h"

#define NLP_MLM_UNK 0
#define NLP_MLM_PAD 1
#define NLP_MLM_MASK 2

struct nlp_mlm_split {
    int32_t n_sentences;
    int64_t n_tokens;
    int64_t *offsets; /* [n_sentences + 1] into ids */
    int32_t *ids;     /* [n_tokens] */
};

struct nlp_mlm_corpus {
    struct nlp_vocab vocab;
    struct nlp_mlm_split train, valid, test;
    int by_file;      /* treebank split by file number, not by section */
    int64_t n_unk;    /* training tokens mapped to <unk> */
};

int nlp_mlm_from_treebank(struct nlp_mlm_corpus *c,
                          const struct nlp_treebank *tb, int32_t min_count);
int nlp_mlm_from_ptb(struct nlp_mlm_corpus *c, const char *dir,
                     int32_t min_count);
void nlp_mlm_free(struct nlp_mlm_corpus *c);

/* Masks ids[0, n) into input/target; returns how many were masked. */
int32_t nlp_mlm_mask(const int32_t *ids, int32_t n, float rate,
                     uint64_t seed, uint64_t offset, int32_t *input,
                     int32_t *target);

struct nlp_mlm_batch {
    int32_t first;  /* index into order[] */
    int32_t count;  /* sentences */
    int32_t max_len;
};

struct nlp_mlm_batches {
    int32_t n_batches;
    struct nlp_mlm_batch *batches;
    int32_t *order; /* sentence indices, longest first */
};

int nlp_mlm_batches(struct nlp_mlm_batches *b, const struct nlp_mlm_split *s,
                    int32_t max_tokens);
/* Writes batch k as [count, max_len] ids, right-padded with <pad>, and the
 * lengths [count]. */
void nlp_mlm_batch_fill(const struct nlp_mlm_batches *b, int32_t k,
                        const struct nlp_mlm_split *s, int32_t *ids,
                        int32_t *lens);
/* A seeded permutation of batch indices 0..n-1 into perm (Fisher-Yates). */
void nlp_mlm_shuffle(int32_t n, uint64_t seed, int32_t *perm);
void nlp_mlm_batches_free(struct nlp_mlm_batches *b);

#endif
