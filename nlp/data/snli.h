/* nlp/data/snli.h — the SNLI 1.0 JSON-lines format (Bowman et al. 2015;
 * fasttrees.md §6.4): one JSON object per line with "gold_label"
 * (entailment, neutral, contradiction, or "-" when the annotators did not
 * agree: those pairs are skipped and counted, as every SNLI paper does),
 * "sentence1" (premise), "sentence2" (hypothesis), and usually
 * "sentence1_binary_parse" / "sentence2_binary_parse" (the PTB-tokenised
 * sentence in brackets). Tokens: the words of the binary parse when the
 * line has one (the corpus's own tokenisation), else the sentence split
 * at spaces with . , ! ? ; : " split off; lower-cased either way. Other
 * keys are ignored. The corpus itself is not on these machines (size); the
 * reader is tested on a hand-written sample (tests/fixtures/snli/).
 *
 * Memory: the set owns its token pool and vocabulary (nlp_snli_free).
 * Errors: GR_EFORMAT naming the file and line ("file:3: ..."), GR_ENOMEM.
 * Not thread-safe per set.
 *
 *   struct nlp_snli s;
 *   nlp_snli_init(&s);
 *   if (nlp_snli_read_file(&s, NLP_TRAIN, "snli_1.0_train.jsonl") < 0) ...;
 *   const struct nlp_snli_pair *p = &s.pairs[NLP_TRAIN][0];
 *   // s.tokens + p->a, p->len_a (premise ids in s.vocab); p->label 0..2
 */
#ifndef GROVE_NLP_DATA_SNLI_H
#define GROVE_NLP_DATA_SNLI_H

#include <stddef.h>
#include <stdint.h>

#include "nlp/data/corpus.h"
#include "nlp/data/vocab.h"

enum { NLP_SNLI_ENTAILMENT = 0, NLP_SNLI_NEUTRAL = 1,
       NLP_SNLI_CONTRADICTION = 2, NLP_SNLI_CLASSES = 3 };

/* "entailment", "neutral", "contradiction". */
const char *nlp_snli_label_name(int label);

struct nlp_snli_pair {
    int64_t a, b;         /* offsets of premise and hypothesis in tokens */
    int32_t len_a, len_b; /* >= 1 each */
    int32_t label;        /* NLP_SNLI_* */
};

struct nlp_snli {
    struct nlp_vocab vocab; /* every word of every split read */
    int32_t *tokens;
    int64_t n_tokens, cap_tokens;
    struct nlp_snli_pair *pairs[NLP_N_SPLITS];
    int64_t n_pairs[NLP_N_SPLITS], cap_pairs[NLP_N_SPLITS];
    int64_t n_skipped[NLP_N_SPLITS]; /* gold_label "-" */
};

void nlp_snli_init(struct nlp_snli *s);
void nlp_snli_free(struct nlp_snli *s);

/* Appends the pairs of a JSONL text (size bytes, `what` names it in
 * messages) to split `split`. Blank lines are allowed. */
int nlp_snli_read_text(struct nlp_snli *s, enum nlp_split split,
                       const char *text, size_t size, const char *what);

/* The same from a file (GR_EIO naming it when unreadable). */
int nlp_snli_read_file(struct nlp_snli *s, enum nlp_split split,
                       const char *path);

#endif
