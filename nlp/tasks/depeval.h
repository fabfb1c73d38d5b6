/* nlp/tasks/depeval.h — decoding a head matrix into dependency trees and
 * scoring them (dependency_parsing.md §4-§5).
 *
 * H is row-major n x n: H[i*n + j] = probability that token j is the head
 * of token i, diagonal ignored (treated as 0). Predictions are 0-based
 * heads with the root pointing to itself, as the gold of
 * nlp/data/deptree.h.
 *
 *   argmax   pred_i = argmax_{j != i} H_ij, ties to the smallest j; for
 *            n >= 2 no token is a root (so the root is always wrong, as the
 *            reference); n = 1 gives pred_0 = 0.
 *   chuliu   for each r: the maximum spanning arborescence of the token
 *            graph rooted at r under S_ij = log(H_ij + 1e-9) (Chu-Liu/
 *            Edmonds with cycle contraction, O(n^3)); the best r wins, the
 *            first on ties (strictly greater replaces). One root.
 *   eisner   the best projective tree with one root under the same scores
 *            (Eisner's O(n^3) algorithm; the root r heads a complete span
 *            to each side), first r on ties. An option, not the reference.
 * The score of a tree is the sum of S over its non-root tokens
 * (nlp_deps_tree_score). Decoders allocate scratch (GR_ENOMEM possible),
 * are pure and thread-safe. struct nlp_dep_eval owns its label table and
 * scratch (nlp_dep_eval_free); one accumulator per thread.
 *
 * Metrics (§5), accumulated over sentences (struct nlp_dep_eval):
 *   UAS   tokens whose predicted head is the gold head (the root: iff it
 *         is predicted as a root), over all tokens;
 *   UUAS  |U(pred) ∩ U(gold)| over all tokens, U(h) the SET of unordered
 *         pairs {i, h_i} (a root gives {r}); a 2-cycle counts once;
 *   root  gold roots predicted as roots, over gold roots (root recall);
 *   per-label attachment recall: for each gold DEPREL, tokens with that
 *         label whose head is right, over tokens with that label.
 *
 *   struct nlp_dep_eval ev;
 *   nlp_dep_eval_init(&ev);
 *   nlp_deps_chuliu(H, n, pred);
 *   nlp_dep_eval_add(&ev, n, pred, gold_heads, gold_labels);
 *   struct nlp_dep_scores s; nlp_dep_eval_scores(&ev, &s);
 *   nlp_dep_eval_free(&ev);
 */
#ifndef GROVE_NLP_DEPEVAL_H
#define GROVE_NLP_DEPEVAL_H

#include <stdint.h>

enum nlp_dep_decoder {
    NLP_DEP_ARGMAX,
    NLP_DEP_CHULIU,
    NLP_DEP_EISNER,
    NLP_DEP_STRUCTFORMER, /* StructFormer's own decoding (udgn.md §7): the
                             highest token the root, every other token its
                             argmax parent; needs the model's heights, so
                             nlp_deps_decode refuses it (nlp_mlm_depparse
                             does it for structformer models) */
};

/* "argmax" | "chuliu" | "eisner" | "structformer" -> decoder; -1 if
 * unknown. */
int nlp_dep_decoder_parse(const char *name);
const char *nlp_dep_decoder_name(enum nlp_dep_decoder d);

int nlp_deps_argmax(const float *H, int32_t n, int32_t *pred);
int nlp_deps_chuliu(const float *H, int32_t n, int32_t *pred);
int nlp_deps_eisner(const float *H, int32_t n, int32_t *pred);
int nlp_deps_decode(enum nlp_dep_decoder d, const float *H, int32_t n,
                    int32_t *pred);

/* Sum over non-root tokens i of log(H[i][pred_i] + 1e-9) (double). */
double nlp_deps_tree_score(const float *H, int32_t n, const int32_t *pred);

/* The maximum spanning arborescence of a dense graph rooted at `root`:
 * S[i*n + j] = score of the arc j -> i (-INFINITY = no arc; the diagonal
 * and the root's row are ignored). head[root] = root. For tests and for
 * callers with their own scores. */
int nlp_deps_msa(const double *S, int32_t n, int32_t root, int32_t *head);

struct nlp_dep_eval {
    int64_t n_sentences, n_tokens, correct, undirected;
    int64_t gold_roots, roots_correct;
    int32_t n_labels, labels_cap;
    char **labels;
    int64_t *label_total, *label_correct;
    uint8_t *mark; /* scratch */
    int64_t mark_cap;
};

struct nlp_dep_scores {
    int64_t n_sentences, n_tokens;
    double uas, uuas, root; /* percent */
};

void nlp_dep_eval_init(struct nlp_dep_eval *ev);
/* gold_labels may be NULL (no per-label counts). GR_EINVAL for a head out
 * of range, GR_ENOMEM. */
int nlp_dep_eval_add(struct nlp_dep_eval *ev, int32_t n, const int32_t *pred,
                     const int32_t *gold, const char *const *gold_labels);
void nlp_dep_eval_scores(const struct nlp_dep_eval *ev,
                         struct nlp_dep_scores *s);
/* Per-label recall in percent of label i (NAN if it never occurred). */
double nlp_dep_eval_label_recall(const struct nlp_dep_eval *ev, int32_t i);
void nlp_dep_eval_free(struct nlp_dep_eval *ev);

#endif
