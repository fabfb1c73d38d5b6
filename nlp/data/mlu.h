/* nlp/data/mlu.h — grove's generator of the mathematical-language-
 * understanding task (MLU; Wangperawong 2018, arXiv:1812.02825; FastTrees
 * Table 6 reports sequence accuracy on it). Tensor2Tensor only downloads
 * the author's file, so this is grove's own definition of the task,
 * written down in docs/nlp/mlu.md with how it follows the paper:
 *
 *   x, y uniform integers in [-1000, 1000); op uniform in {+, -, *};
 *   the two assignments in a random order ("x=85,y=-523" or
 *   "y=-523,x=85"); the expression's operands in a random order ("x*y" or
 *   "y*x"); source = assignments "," expression, no spaces;
 *   target = the exact value in decimal ("-44455").
 *
 * A draw is five Philox words of the seed's stream (x, y, op, assignment
 * order, expression order; x = u % 2000 - 1000). Draws whose (x, y, op,
 * orders) repeat an earlier one are skipped, so the n examples are
 * distinct and a split by position (train first, then validation, then
 * test) never shares an example. The same seed gives the same examples on
 * every machine. The space holds 2000 · 2000 · 3 · 2 · 2 = 48,000,000
 * distinct examples; n is limited to 24,000,000 (half of it).
 *
 * Memory: the set owns one buffer (nlp_mlu_free); a 6 MB bit set of the
 * examples seen lives during generation. Errors: 0 or a negative code with
 * gr_last_error. Thread safety: no shared state.
 *
 *   struct nlp_mlu_set s;
 *   nlp_mlu_generate(&s, 1000, 7);
 *   s.src[0];   // "y=-311,x=640,x-y"
 *   s.tgt[0];   // "951"
 *   nlp_mlu_free(&s);
 */
#ifndef GROVE_NLP_DATA_MLU_H
#define GROVE_NLP_DATA_MLU_H

#include <stdint.h>

#define NLP_MLU_MAX_N 24000000

struct nlp_mlu_set {
    char **src, **tgt; /* [n] NUL-terminated, pointing into buf */
    int64_t n;
    int64_t draws;     /* draws made (n plus the repeats skipped) */
    char *buf;
};

/* n distinct examples of seed's stream (1 <= n <= NLP_MLU_MAX_N). */
int nlp_mlu_generate(struct nlp_mlu_set *s, int64_t n, uint64_t seed);
void nlp_mlu_free(struct nlp_mlu_set *s);

#endif
