/* nlp/data/sst.h — the Stanford Sentiment Treebank (Socher et al. 2013) in
 * its PTB-bracket release (train.txt, dev.txt, test.txt; data/sst2/README.md)
 * and the SST-2 / SST-5 tasks derived from it (hybrid_and_trees.md §3.3).
 *
 * Format: one tree per line, `(LABEL (LABEL word) ...)`, LABEL 0-4 (0 very
 * negative .. 4 very positive) on every node; a node is a leaf
 * `(L word)` or has exactly two child nodes (the trees are binary). Words
 * are split on ASCII space and parentheses only (a few train words hold
 * U+00A0) and kept as written (PTB escapes such as -LRB- and \/ stay).
 * Anything else (an empty line, a label outside 0-4, a unary or ternary
 * node, unbalanced brackets, text after the tree) is GR_EFORMAT
 * "FILE:LINE: what (byte B)".
 *
 * Trees: nodes in pre-order (root = node 0), each with its word span
 * [start, end), label and children (-1 for a leaf); words as ids of one
 * vocabulary built in order of first appearance over train, dev, test.
 *
 * Tasks (nlp_sst_items):
 *   SST-5 sentences  the root label: 8,544 / 1,101 / 2,210.
 *   SST-2 sentences  roots labelled 2 dropped, 0-1 -> 0, 3-4 -> 1:
 *                    6,920 / 872 / 1,821.
 *   SST-2 nodes      every non-neutral node of the trees, leaves included,
 *                    duplicates kept (what training on subtrees sees):
 *                    98,794 on train.
 *   SST-2 phrases    the same, one item per distinct word sequence (first
 *                    occurrence; no phrase has two polarities): 77,616 on
 *                    train. (GLUE's ~67k train.tsv is a further-filtered
 *                    selection we cannot reproduce exactly.)
 *   SST-5 nodes / phrases: every node, labels 0-4.
 *
 * Memory: struct nlp_sst owns everything (nlp_sst_free); item arrays are
 * malloc'd for the caller (free()). Read-only use is thread-safe.
 *
 *   struct nlp_sst s;
 *   if (nlp_sst_load(&s, "data/sst2") < 0) ... gr_last_error();
 *   struct nlp_sst_item *it; int32_t n;
 *   nlp_sst_items(&s, NLP_TRAIN, NLP_SST2, NLP_SST_SENTENCES, &it, &n);
 *   const struct nlp_sst_tree *t = &s.trees[NLP_TRAIN][it[0].tree];
 *   const struct nlp_sst_node *nd = &t->nodes[it[0].node];
 *   ... t->words[nd->start .. nd->end), it[0].label ...
 *   free(it); nlp_sst_free(&s);
 */
#ifndef GROVE_NLP_SST_H
#define GROVE_NLP_SST_H

#include <stdint.h>

#include "nlp/data/corpus.h"
#include "nlp/data/vocab.h"

struct nlp_sst_node {
    int32_t start, end;  /* words [start, end) */
    int32_t left, right; /* child node indices, -1 for a leaf */
    int8_t label;        /* 0-4 */
};

struct nlp_sst_tree {
    int32_t n_words;
    const int32_t *words; /* [n_words] vocabulary ids */
    int32_t n_nodes;      /* 2 n_words - 1 */
    const struct nlp_sst_node *nodes; /* [n_nodes], pre-order, root 0 */
    int32_t line;         /* 1-based line of its file */
};

struct nlp_sst {
    struct nlp_vocab vocab;
    int32_t n_types_train; /* vocabulary size after train */
    int32_t n_trees[NLP_N_SPLITS]; /* NLP_VALID is dev.txt */
    struct nlp_sst_tree *trees[NLP_N_SPLITS];
    char paths[NLP_N_SPLITS][4096];
    struct nlp_sst_store *store; /* internal */
};

enum nlp_sst_task { NLP_SST2 = 2, NLP_SST5 = 5 };

enum nlp_sst_unit {
    NLP_SST_SENTENCES, /* the root of each tree */
    NLP_SST_NODES,     /* every node, duplicates kept */
    NLP_SST_PHRASES,   /* every distinct phrase once */
};

struct nlp_sst_item {
    int32_t tree, node; /* tree of the split, node of the tree */
    int32_t label;      /* SST-2: 0 negative, 1 positive; SST-5: 0-4 */
};

/* Reads DIR/train.txt, DIR/dev.txt, DIR/test.txt. On failure s is freed. */
int nlp_sst_load(struct nlp_sst *s, const char *dir);

/* Reads one file's text into split `split` of a new (or, for tests,
 * growing) set: call nlp_sst_init first. */
void nlp_sst_init(struct nlp_sst *s);
int nlp_sst_read_text(struct nlp_sst *s, enum nlp_split split,
                      const char *text, size_t n, const char *name);
void nlp_sst_free(struct nlp_sst *s);

/* The task's label of a 0-4 sentiment: SST-5 itself; SST-2 0 for 0-1, 1
 * for 3-4, -1 for 2 (neutral: not an item). */
int nlp_sst_label(enum nlp_sst_task task, int sentiment);

/* The items of one split (see the table above) into a malloc'd *out
 * (free() it) of *n entries; *n_neutral (may be NULL) gets the number of
 * candidates dropped as neutral (SST-2), and *n_repeated (may be NULL) the
 * repeated phrases merged (PHRASES). */
int nlp_sst_items(const struct nlp_sst *s, enum nlp_split split,
                  enum nlp_sst_task task, enum nlp_sst_unit unit,
                  struct nlp_sst_item **out, int32_t *n, int32_t *n_neutral,
                  int32_t *n_repeated);

#endif
