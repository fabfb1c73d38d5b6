/* agents/segment.h — the segmentation metrics of spec/ocn.md §9: predicted
 * boundaries from end scores, F1 with a tolerance, alignment accuracy and
 * the normalised mutual information between options and subtasks.
 *
 * Conventions (ocn.md §9, craft.md §10). A demonstration has T steps
 * t = 0 .. T-1 and m subtasks; its true boundaries G are the steps whose USE
 * completed a subtask (m of them, strictly increasing, the last is T-1).
 * A boundary b means "the segment ends after step b". The model's end score
 * of step t (t = 1 .. T-1) is b_t = e_t: a high e_t puts a boundary at t-1.
 * Boundary lists are sorted, strictly increasing step indices.
 *
 * Pure functions on caller-owned arrays; no allocation; thread-safe
 * (a struct seg_nmi_acc is the caller's, ~8 KB). Functions that
 * can fail on input return a negative GR_E* code with a message
 * (core/error.h); the others cannot fail.
 *
 *   int pred[SEG_MAX_BOUNDARIES];
 *   int np = seg_boundaries_top(e, T, m, pred);    // P_top
 *   double f1 = seg_f1(pred, np, truth, m, 1);     // F1 tol 1
 *   struct seg_nmi_acc acc; seg_nmi_init(&acc);
 *   seg_nmi_add(&acc, option, subtask) per step;  nmi = seg_nmi_value(&acc);
 */
#ifndef GROVE_AGENTS_SEGMENT_H
#define GROVE_AGENTS_SEGMENT_H

#include <stdint.h>

/* P_top (ocn.md §9): the m-1 steps t in 1..T-1 with the largest score[t]
 * (ties go to the smaller t) give boundaries t-1, plus T-1. score[T]:
 * score[0] is ignored. Writes the sorted boundaries into out[m] and returns
 * their count (m, or fewer when T-1 < m-1). T >= 1, m >= 1. A NaN score
 * ranks below every number. */
int seg_boundaries_top(const float *score, int T, int m, int *out);

/* P_thr: {t-1 : score[t] >= threshold, t in 1..T-1} ∪ {T-1}, sorted, into
 * out[T]; returns the count (>= 1). */
int seg_boundaries_threshold(const float *score, int T, float threshold,
                             int *out);

/* Precision, recall and F1 with tolerance `tol` steps (OMPN's f1):
 * precision = share of predicted boundaries within tol of a true one,
 * recall = share of true boundaries within tol of a predicted one,
 * F1 = 2PR / (P + R), 0 when P + R = 0. An empty list has precision (for
 * pred) or recall (for truth) 0. precision/recall outputs may be NULL. */
double seg_f1(const int *pred, int n_pred, const int *truth, int n_truth,
              int tol, double *precision, double *recall);

/* Alignment (ocn.md §9): step t of a T-step demonstration gets segment
 * index j = number of boundaries in bounds[n] strictly below t (capped at
 * n-1). Compares the subtask of segment j, seq[j], with the true label
 * labels[t] for every t; returns how many steps match (0..T). seq[n],
 * labels[T] are subtask identities (any integers). */
int seg_align_matches(const int *bounds, int n, const int *seq,
                      const int *labels, int T);

/* The step labels implied by boundaries: labels[t] = j as above (the
 * segment index of t), into labels[T]. */
void seg_labels_from_boundaries(const int *bounds, int n, int T, int *labels);

/* Normalised mutual information between two labellings, accumulated pair
 * by pair. Labels are small non-negative integers (< SEG_NMI_MAX_LABELS).
 * NMI = 2 I(A;B) / (H(A) + H(B)) on the empirical joint distribution,
 * natural logarithms; 1 when both entropies are 0 (including no pairs);
 * 0 when exactly one entropy is 0. */
#define SEG_NMI_MAX_LABELS 32
struct seg_nmi_acc {
    uint64_t n;
    uint64_t joint[SEG_NMI_MAX_LABELS][SEG_NMI_MAX_LABELS];
};

void seg_nmi_init(struct seg_nmi_acc *acc);

/* Adds one pair; GR_EINVAL naming the label when one is out of range. */
int seg_nmi_add(struct seg_nmi_acc *acc, int a, int b);

double seg_nmi_value(const struct seg_nmi_acc *acc);

/* NMI of two label arrays of length n (a convenience over the above). */
int seg_nmi(const int *a, const int *b, int64_t n, double *out);

#endif
