/* Segmentation metrics of ocn.md §9 on hand-made sequences with answers
 * worked out by hand (ties, NaN, an empty prediction, a permuted perfect
 * labelling, independent labellings, a value computed in closed form). */
#include <math.h>
#include <stdint.h>

#include "agents/segment.h"
#include "tests/test.h"

static int same(const int *a, const int *b, int n)
{
    for (int i = 0; i < n; i++) {
        if (a[i] != b[i]) {
            return 0;
        }
    }
    return 1;
}

static void test_boundaries(void)
{
    int out[8];
    /* T = 6; the two largest scores of t = 1..5 are at t = 2 and t = 4 */
    const float e[6] = {99.0f, 0.1f, 0.9f, 0.3f, 0.9f, 0.2f};
    int n = seg_boundaries_top(e, 6, 3, out);
    const int want3[3] = {1, 3, 5};
    CHECK(n == 3 && same(out, want3, 3));
    /* m = 2: one boundary; t = 2 and t = 4 tie, the smaller t wins; the
     * score of t = 0 (99) is never used */
    n = seg_boundaries_top(e, 6, 2, out);
    const int want2[2] = {1, 5};
    CHECK(n == 2 && same(out, want2, 2));
    /* m = 1: only T-1 */
    n = seg_boundaries_top(e, 6, 1, out);
    CHECK(n == 1 && out[0] == 5);
    /* all equal: ties give the earliest steps */
    const float flat[5] = {0, 0.5f, 0.5f, 0.5f, 0.5f};
    n = seg_boundaries_top(flat, 5, 3, out);
    const int wantf[3] = {0, 1, 4};
    CHECK(n == 3 && same(out, wantf, 3));
    /* a later, larger score displaces an earlier pick */
    const float rising[5] = {0, 0.1f, 0.2f, 0.3f, 0.4f};
    n = seg_boundaries_top(rising, 5, 3, out);
    const int wantr[3] = {2, 3, 4};
    CHECK(n == 3 && same(out, wantr, 3));
    /* NaN ranks last */
    const float withnan[4] = {0, NAN, 0.1f, 0.05f};
    n = seg_boundaries_top(withnan, 4, 2, out);
    CHECK(n == 2 && out[0] == 1 && out[1] == 3);
    /* more boundaries asked than steps: every step t >= 1, then T-1 */
    n = seg_boundaries_top(e, 2, 5, out);
    CHECK(n == 2 && out[0] == 0 && out[1] == 1);
    /* threshold variant: e >= 0.5 at t = 2, 4 */
    n = seg_boundaries_threshold(e, 6, 0.5f, out);
    CHECK(n == 3 && same(out, want3, 3));
    n = seg_boundaries_threshold(e, 6, 0.95f, out);
    CHECK(n == 1 && out[0] == 5);
    /* exactly at the threshold counts */
    n = seg_boundaries_threshold(e, 6, 0.9f, out);
    CHECK(n == 3);
}

static void test_f1(void)
{
    const int pred[3] = {1, 3, 5}, truth[2] = {2, 5};
    double p, r;
    /* tol 0: only 5 matches: P = 1/3, R = 1/2, F1 = 0.4 */
    double f = seg_f1(pred, 3, truth, 2, 0, &p, &r);
    CHECK_NEAR(p, 1.0 / 3.0, 1e-12);
    CHECK_NEAR(r, 0.5, 1e-12);
    CHECK_NEAR(f, 0.4, 1e-12);
    /* tol 1: 1 and 3 are next to 2: everything matches */
    f = seg_f1(pred, 3, truth, 2, 1, &p, &r);
    CHECK_NEAR(f, 1.0, 1e-12);
    /* empty prediction: P = R = F1 = 0 */
    f = seg_f1(pred, 0, truth, 2, 1, &p, &r);
    CHECK(f == 0.0 && p == 0.0 && r == 0.0);
    /* nothing near: 0, not NaN */
    const int far[1] = {40};
    f = seg_f1(far, 1, truth, 2, 1, NULL, NULL);
    CHECK(f == 0.0);
    /* perfect */
    f = seg_f1(truth, 2, truth, 2, 0, NULL, NULL);
    CHECK(f == 1.0);
    /* a duplicate prediction near one truth: P = 1, R = 1/2 -> 2/3 */
    const int dup[2] = {2, 2};
    f = seg_f1(dup, 2, truth, 2, 0, &p, &r);
    CHECK_NEAR(f, 2.0 / 3.0, 1e-12);
}

static void test_align(void)
{
    /* task AC (wood = 9, iron = 7), true boundaries {2, 5}, T = 6 */
    const int seq[2] = {9, 7};
    const int labels[6] = {9, 9, 9, 7, 7, 7};
    const int truth[2] = {2, 5};
    CHECK(seg_align_matches(truth, 2, seq, labels, 6) == 6);
    /* predicted {1, 5}: step 2 is labelled C instead of A */
    const int pred[2] = {1, 5};
    CHECK(seg_align_matches(pred, 2, seq, labels, 6) == 5);
    /* predicted {4, 5}: steps 3, 4 wrong */
    const int late[2] = {4, 5};
    CHECK(seg_align_matches(late, 2, seq, labels, 6) == 4);
    int lab[6];
    seg_labels_from_boundaries(pred, 2, 6, lab);
    const int want[6] = {0, 0, 1, 1, 1, 1};
    CHECK(same(lab, want, 6));
    /* no boundaries: nothing can match (no segment) */
    CHECK(seg_align_matches(pred, 0, seq, labels, 6) == 0);
}

static void test_nmi(void)
{
    double v = -1.0;
    /* a permuted perfect labelling gives 1 */
    const int a[6] = {0, 0, 1, 1, 2, 2}, b[6] = {2, 2, 0, 0, 1, 1};
    CHECK(seg_nmi(a, b, 6, &v) == 0);
    CHECK_NEAR(v, 1.0, 1e-12);
    /* independent labellings give 0 */
    const int c[4] = {0, 0, 1, 1}, d[4] = {0, 1, 0, 1};
    CHECK(seg_nmi(c, d, 4, &v) == 0);
    CHECK_NEAR(v, 0.0, 1e-12);
    /* both constant: 1 by convention; one constant: 0 */
    const int z[4] = {3, 3, 3, 3}, y[4] = {5, 5, 5, 5};
    CHECK(seg_nmi(z, y, 4, &v) == 0 && v == 1.0);
    CHECK(seg_nmi(z, c, 4, &v) == 0 && v == 0.0);
    /* no pairs: 1 */
    CHECK(seg_nmi(z, y, 0, &v) == 0 && v == 1.0);
    /* closed form: A = {0,0,1,1}, B = {0,0,0,1}:
     * H(A) = ln 2, H(B) = -(3/4 ln 3/4 + 1/4 ln 1/4),
     * H(A,B) = -(1/2 ln 1/2 + 2 · 1/4 ln 1/4), I = H(A)+H(B)-H(A,B) */
    const int e[4] = {0, 0, 0, 1};
    CHECK(seg_nmi(c, e, 4, &v) == 0);
    double ha = log(2.0);
    double hb = -(0.75 * log(0.75) + 0.25 * log(0.25));
    double hab = -(0.5 * log(0.5) + 0.5 * log(0.25));
    CHECK_NEAR(v, 2.0 * (ha + hb - hab) / (ha + hb), 1e-12);
    CHECK_NEAR(v, 0.3437110184854507, 1e-12);
    /* more options than subtasks, one to one on the used ones: 1 */
    const int o[4] = {4, 4, 1, 1}, s[4] = {7, 7, 9, 9};
    CHECK(seg_nmi(o, s, 4, &v) == 0);
    CHECK_NEAR(v, 1.0, 1e-12);
    /* a label out of range is refused */
    const int bad[1] = {SEG_NMI_MAX_LABELS};
    CHECK(seg_nmi(bad, s, 1, &v) < 0);
    /* the accumulator agrees with the array form */
    struct seg_nmi_acc acc;
    seg_nmi_init(&acc);
    for (int i = 0; i < 4; i++) {
        CHECK(seg_nmi_add(&acc, c[i], e[i]) == 0);
    }
    CHECK_NEAR(seg_nmi_value(&acc), 0.3437110184854507, 1e-12);
}

int main(void)
{
    test_boundaries();
    test_f1();
    test_align();
    test_nmi();
    return test_report("agents_segment");
}
