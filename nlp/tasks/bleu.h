/* nlp/tasks/bleu.h — corpus BLEU as sacreBLEU computes it by default
 * (BLEU+case.mixed+numrefs.1+smooth.exp+tok.13a): the 13a tokenizer of
 * mteval-v13a.pl, n-grams up to 4, clipped counts summed over the corpus,
 * the brevity penalty exp(1 - ref_len/sys_len) when the system is shorter,
 * and the "exp" smoothing: the k-th order with no match (k = 1, 2, ...)
 * gets precision 1 / (2^k · total); an order with no n-gram at all in the
 * system output makes the score 0. One reference per segment. For the
 * seq2seq path of issue 23 (`grove nlp seq2seq eval`).
 *
 * Memory: an accumulator is a few counters (no allocation); tokenizing
 * writes into a caller's buffer. Pure functions, any thread.
 * Errors: 0 or a negative code with gr_last_error (a line that does not
 * fit the buffer).
 *
 *   struct nlp_bleu_acc acc = {0};
 *   for (i...) nlp_bleu_add(&acc, hyp[i], ref[i]);
 *   struct nlp_bleu b;
 *   nlp_bleu_score(&acc, &b);        // b.score in [0, 100]
 */
#ifndef GROVE_NLP_TASKS_BLEU_H
#define GROVE_NLP_TASKS_BLEU_H

#include <stddef.h>
#include <stdint.h>

#define NLP_BLEU_ORDER 4

struct nlp_bleu_acc {
    int64_t correct[NLP_BLEU_ORDER], total[NLP_BLEU_ORDER];
    int64_t sys_len, ref_len;
    int64_t segments;
};

struct nlp_bleu {
    double score;                       /* 0..100 */
    double precisions[NLP_BLEU_ORDER];  /* 0..100, smoothed */
    double bp;                          /* brevity penalty */
    int64_t sys_len, ref_len;
};

/* sacreBLEU's 13a tokenizer: "<skipped>" removed, "-\n" joined, newlines
 * to spaces, &quot; &amp; &lt; &gt; unescaped, then the mteval rules
 * (punctuation and symbols split; period and comma split unless between
 * digits; a dash after a digit split), single spaces. out[cap]. */
int nlp_bleu_tokenize_13a(const char *line, char *out, size_t cap);

/* Adds one segment (raw text; tokenized with 13a here). */
int nlp_bleu_add(struct nlp_bleu_acc *acc, const char *hyp,
                 const char *ref);

void nlp_bleu_score(const struct nlp_bleu_acc *acc, struct nlp_bleu *out);

#endif
