/* nlp/tasks/parse.h — unlabelled constituency trees as bracket sets, the greedy
 * top-down parser from syntactic distances (on_lstm.md §10.3), the
 * branching and random baselines, and the parsing metrics of
 * lm_and_parsing.md §3 (both F1s, per-label recall, depth).
 *
 * A tree over m words is given by its brackets: one struct nlp_span per
 * internal node, root included, as a half-open word interval [start, end).
 * Every internal node of the trees here has >= 2 children, so a binary
 * tree has exactly m - 1 brackets and the brackets determine the tree. A
 * one-word tree has none. Parsers write into a caller buffer of m - 1 spans
 * and allocate nothing; they are pure and thread-safe.
 *
 * Metrics (lm_and_parsing.md §3; P = predicted, G = gold bracket sets):
 *   f1_sentence_mean    the reference's "Mean F1": per sentence, brackets
 *                       strictly below the root covering >= 2 words,
 *                       prec = |P∩G|/(|P|+1e-8), rec = |P∩G|/(|G|+1e-8),
 *                       rec = 1 if G is empty (and prec = 1 if P is too),
 *                       f1 = 2·prec·rec/(prec+rec+1e-8); mean over
 *                       sentences, in percent. The published tables' metric.
 *   f1_corpus_evalb     what EVALB (COLLINS.prm) computes: the whole-sentence
 *                       bracket counted, sentences of one word skipped,
 *                       corpus-level precision/recall/F1, in percent.
 *   f1_corpus_nontrivial the same without the whole-sentence bracket.
 *   per-label recall    gold labelled constituents (>= 2 words, root
 *                       included) whose span is a predicted bracket (root
 *                       included), counted per label over the corpus.
 *   mean depth          mean over sentences of the mean number of brackets
 *                       around a word (root included; a one-word sentence
 *                       has depth 0).
 * Bracket sets are deduplicated; spans of length < 2 and the root are
 * ignored where the definitions say so, so callers may pass raw lists.
 *
 * Memory: struct nlp_parse_eval owns growable scratch and per-label
 * counters (nlp_parse_eval_free). Not thread-safe per accumulator; use one
 * per thread and merge counts yourself if needed.
 *
 *   struct nlp_span spans[MAX_WORDS];
 *   int32_t n = nlp_parse_distances(dist, m, spans);     // dist: [m] f32
 *   struct nlp_parse_eval ev;
 *   nlp_parse_eval_init(&ev);
 *   nlp_parse_eval_add(&ev, m, spans, n, gold, n_gold, labeled, n_labeled);
 *   struct nlp_parse_scores s;
 *   nlp_parse_eval_scores(&ev, &s);
 *   printf("%.2f %.2f\n", s.f1_sentence_mean, s.f1_corpus_evalb);
 *   nlp_parse_eval_free(&ev);
 */
#ifndef GROVE_NLP_PARSE_H
#define GROVE_NLP_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "core/random.h"

struct nlp_span {
    int32_t start, end; /* words [start, end) */
};

struct nlp_labeled_span {
    int32_t start, end; /* words [start, end) */
    int32_t label;      /* label id (the treebank's label table) */
};

/* ---- parsers: each writes the m - 1 brackets (m >= 1) of a binary tree
 * into out[m - 1], parents before children, and returns m - 1 (0 for
 * m <= 1). ---------------------------------------------------------------*/

/* The greedy top-down parser of on_lstm.md §10.3 on distances d[0, m):
 * the word k with the largest distance (first on ties) starts a
 * constituent reaching to the end of the span, with w_k attached first
 * inside it: parse(a..b) = [parse(a..k-1), [w_k, parse(k+1..b)]] (the left
 * part dropped when k = a). Equivalently, span [a, b) splits at
 * max(k, a + 1). d = m, m-1, ..., 1 gives right branching; d = 1..m left.
 * Non-finite distances: NaN compares as smaller than everything. */
int32_t nlp_parse_distances(const float *d, int32_t m, struct nlp_span *out);

/* The greedy top-down parser on gap scores g[0, m - 1), g[i] scoring the
 * gap between words i and i + 1 (StructFormer's distance δ, udgn.md §7;
 * g[m - 1], if any, is not read): span [a, b) splits at k + 1 for the
 * first argmax k of g over [a, b - 1), i.e. at its largest inner gap.
 * g = 1, 2, ..., m-1 gives left branching; m-1, ..., 1 right. NaN
 * compares as smaller than everything. */
int32_t nlp_parse_gaps(const float *g, int32_t m, struct nlp_span *out);

/* [w1, [w2, [ ... ]]] */
int32_t nlp_parse_right_branching(int32_t m, struct nlp_span *out);

/* [[[ ... ], w_{m-1}], w_m] */
int32_t nlp_parse_left_branching(int32_t m, struct nlp_span *out);

/* A span of n words splits into the first floor(n/2) and the rest. */
int32_t nlp_parse_balanced(int32_t m, struct nlp_span *out);

/* The reference's `parse_comparison.randomize`: repeatedly merge a
 * uniformly chosen adjacent pair of the current sequence (not uniform
 * over trees). Draws m - 2 numbers from `rng`. `work` is scratch for m
 * spans. Brackets come out children first. */
int32_t nlp_parse_random(int32_t m, struct gr_philox_stream *rng,
                         struct nlp_span *out, struct nlp_span *work);

/* Writes the tree as nested brackets "((the cat) (sat down))" into
 * buf[cap] (words[i] for word i; NULL words print as their index). Returns
 * the length it needed (like snprintf); GR_EINVAL if the brackets do not
 * form a tree over m words (crossing, out of range, repeated). Allocates
 * nothing: `work` is scratch for 2n spans. */
int nlp_tree_format(const char *const *words, int32_t m,
                    const struct nlp_span *spans, int32_t n,
                    struct nlp_span *work, char *buf, size_t cap);

/* ---- metrics --------------------------------------------------------- */

struct nlp_parse_scores {
    int64_t n_sentences;          /* evaluated (m >= 1) */
    double f1_sentence_mean;      /* percent */
    double precision_sentence_mean, recall_sentence_mean; /* percent */
    double f1_corpus_evalb;       /* percent */
    double precision_evalb, recall_evalb; /* percent */
    double f1_corpus_nontrivial;  /* percent */
    double mean_depth;            /* brackets around a word */
};

struct nlp_parse_eval {
    int64_t n_sentences;
    double sum_f1, sum_prec, sum_rec;
    int64_t evalb_match, evalb_pred, evalb_gold;
    int64_t nt_match, nt_pred, nt_gold;
    double sum_depth;
    int32_t n_labels;        /* counters below have n_labels entries */
    int64_t *label_correct;  /* gold items of the label found */
    int64_t *label_total;    /* gold items of the label */
    struct nlp_span *scratch; /* sorted copies of P and G */
    size_t scratch_cap;
};

void nlp_parse_eval_init(struct nlp_parse_eval *e);
void nlp_parse_eval_free(struct nlp_parse_eval *e);

/* Adds one sentence of m >= 1 words: predicted brackets pred[n_pred] and
 * gold brackets gold[n_gold] (internal nodes of each tree, root included;
 * extra spans of length < 2 are ignored), and the gold labelled items
 * labeled[n_labeled] (may be NULL/0; label ids >= 0; a set: each
 * (start, end, label) once, as the treebank reader gives them; items under
 * 2 words are ignored). GR_EINVAL if a span
 * lies outside [0, m] or is reversed, GR_ENOMEM on allocation failure. */
int nlp_parse_eval_add(struct nlp_parse_eval *e, int32_t m,
                       const struct nlp_span *pred, int32_t n_pred,
                       const struct nlp_span *gold, int32_t n_gold,
                       const struct nlp_labeled_span *labeled,
                       int32_t n_labeled);

/* The metrics so far (all zero when no sentence was added). */
void nlp_parse_eval_scores(const struct nlp_parse_eval *e,
                           struct nlp_parse_scores *s);

/* Per-label counts; 0/0 for a label never seen. */
void nlp_parse_eval_label(const struct nlp_parse_eval *e, int32_t label,
                          int64_t *correct, int64_t *total);

#endif
