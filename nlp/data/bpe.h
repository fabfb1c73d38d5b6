/* nlp/data/bpe.h — byte-pair encoding learned by grove (Sennrich et al.
 * 2016, the subword-nmt form): words are split on whitespace into UTF-8
 * characters with "</w>" glued to the last one; the most frequent adjacent
 * pair (summed over the corpus by word frequency) is merged, N times or
 * until no pair occurs twice. Deterministic: ties go to the pair whose
 * "left right" text is smallest (strcmp). Encoding applies the merges by
 * rank (the lowest-ranked adjacent pair first) and writes subwords with
 * the "@@" continuation mark ("lo@@ w@@ est"); decoding removes "@@ ".
 * For the seq2seq path of issue 23 (`grove nlp seq2seq train --task tsv`).
 *
 * Learning recounts every pair after each merge: O(merges x corpus
 * symbols), fine for the small parallel texts of the tests and the MLU
 * task; a corpus of IWSLT size wants the incremental pair index of
 * subword-nmt (not built).
 *
 * Memory: the struct owns its tables (nlp_bpe_free). Threads: encoding a
 * learned or loaded table is read-only and may run on any thread.
 * Errors: 0 or a negative code with gr_last_error (naming the file and
 * line for load).
 *
 *   struct nlp_bpe b;
 *   nlp_bpe_learn(&b, lines, n_lines, 8000);
 *   nlp_bpe_save(&b, "runs/x/bpe.codes", 0);
 *   nlp_bpe_encode_line(&b, "the lowest", out, sizeof out); // "the lo@@ west"
 *   nlp_bpe_decode_line(out, back, sizeof back);           // "the lowest"
 *   nlp_bpe_free(&b);
 */
#ifndef GROVE_NLP_DATA_BPE_H
#define GROVE_NLP_DATA_BPE_H

#include <stddef.h>
#include <stdint.h>

#include "nlp/data/vocab.h"

struct nlp_bpe {
    struct nlp_vocab sym;   /* symbols: characters, "x</w>", merged */
    struct nlp_vocab pairs; /* "L R" (symbol ids in decimal) -> rank */
    int32_t n_merges;
    int32_t *merge;         /* [n_merges][3]: left, right, merged id */
};

int nlp_bpe_learn(struct nlp_bpe *b, const char *const *lines,
                  int64_t n_lines, int32_t n_merges);

/* "#version: grove-bpe 1" then one "left right" line per merge in rank
 * order ("</w>" written as is), written atomically (an existing file is
 * GR_EEXIST unless force). */
int nlp_bpe_save(const struct nlp_bpe *b, const char *path, int force);
int nlp_bpe_load(struct nlp_bpe *b, const char *path);

/* Whitespace-separated words of `line` -> subwords with "@@" marks,
 * single spaces, into out[cap]. */
int nlp_bpe_encode_line(const struct nlp_bpe *b, const char *line, char *out,
                        size_t cap);

/* Joins "@@ " continuations (and a trailing "@@"). */
int nlp_bpe_decode_line(const char *line, char *out, size_t cap);

void nlp_bpe_free(struct nlp_bpe *b);

#endif
