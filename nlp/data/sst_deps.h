/* nlp/data/sst_deps.h — SST's binary constituency trees as word-level
 * dependency trees, for the Child-Sum (dependency) Tree-LSTM of
 * hybrid_and_trees.md §3.1 (issue 25; docs/nlp/trees.md).
 *
 * SST ships constituency trees only, and their nodes carry sentiment labels,
 * not categories, so no head-percolation table (Collins', or the one of
 * nlp/data/deptree.h) applies. grove's deterministic, label-free head rule:
 *
 *   head(leaf)  = its word;
 *   head(L R)   = head(L) if R's words are all punctuation and L's are not,
 *                 head(R) otherwise (right-headed);
 *   the head of the non-head child depends on the head of the node.
 *
 * A word is punctuation (nlp_sst_punct) when it is a PTB bracket escape
 * (-LRB- -RRB- -LSB- -RSB- -LCB- -RCB-) or made of ASCII punctuation only
 * (. , : ; ! ? ` ' " -- ... \/ & $ % # * and the like); "'s", "n't" and
 * "1\/2" are words.
 *
 * This is an APPROXIMATION of the Stanford dependency parses Tai et al.
 * (2015) used: right-headedness gets noun phrases (det, adjectives ->
 * noun), auxiliaries and copulas (-> the predicate), adverbs -> adjectives
 * and the subject -> the predicate phrase roughly as Stanford basic
 * dependencies do, but makes a verb's object (and a preposition's object)
 * the head over the verb (preposition).
 *
 * Labels: in a head-percolation conversion the dependents of word w are
 * the heads of the non-head children of the constituents headed by w, so
 * w's dependency subtree covers exactly the words of its maximal
 * projection (the highest constituent w heads). Each word's node takes
 * that constituent's sentiment label: every dependency node is labelled,
 * and the root (whose subtree is the whole span) has the root's label.
 *
 * Memory: the caller's arrays; scratch is malloc'd and freed here.
 * Thread-safe. Errors: GR_EINVAL (a node index out of the tree),
 * GR_ENOMEM.
 *
 *   int32_t head[n]; int8_t label[n];          // n = span of node k
 *   nlp_sst_dependency(&s.trees[NLP_TRAIN][i], 0, &s.vocab, head, label);
 *   // head[j]: 0-based within the span, -1 for the root
 */
#ifndef GROVE_NLP_DATA_SST_DEPS_H
#define GROVE_NLP_DATA_SST_DEPS_H

#include <stdint.h>

#include "nlp/data/sst.h"
#include "nlp/data/vocab.h"

/* 1 if `word` counts as punctuation for the head rule (above). */
int nlp_sst_punct(const char *word);

/* The dependency tree of the subtree of t rooted at node k (k = 0: the
 * sentence) over its n = end - start words: head[j] in [0, n) or -1 for
 * the one root, label[j] the 0-4 label of word j's maximal projection.
 * v gives the words' text (the punctuation test). */
int nlp_sst_dependency(const struct nlp_sst_tree *t, int32_t k,
                       const struct nlp_vocab *v, int32_t *head,
                       int8_t *label);

#endif
