/* Segmentation metrics of spec/ocn.md §9 (see agents/segment.h). */
#include "agents/segment.h"

#include <math.h>
#include <string.h>

#include "core/error.h"

/* 1 when score a at step ta ranks before score b at step tb: larger first,
 * NaN last, ties to the smaller step. */
static int ranks_before(float a, int ta, float b, int tb)
{
    int na = isnan(a), nb = isnan(b);
    if (na != nb) {
        return nb;
    }
    if (!na && a != b) {
        return a > b;
    }
    return ta < tb;
}

static void sort_ints(int *v, int n)
{
    for (int i = 1; i < n; i++) {
        int x = v[i], j = i - 1;
        while (j >= 0 && v[j] > x) {
            v[j + 1] = v[j];
            j--;
        }
        v[j + 1] = x;
    }
}

int seg_boundaries_top(const float *score, int T, int m, int *out)
{
    int want = m - 1;
    if (want > T - 1) {
        want = T - 1;
    }
    if (want < 0) {
        want = 0;
    }
    /* Selection of the `want` best steps in rank order: out[0..n) holds the
     * chosen steps t, kept sorted by rank (insertion; m is small). */
    int n = 0;
    for (int t = 1; t < T && want > 0; t++) {
        if (n < want) {
            int j = n++;
            while (j > 0 && ranks_before(score[t], t, score[out[j - 1]],
                                         out[j - 1])) {
                out[j] = out[j - 1];
                j--;
            }
            out[j] = t;
        } else if (ranks_before(score[t], t, score[out[n - 1]], out[n - 1])) {
            int j = n - 1;
            while (j > 0 && ranks_before(score[t], t, score[out[j - 1]],
                                         out[j - 1])) {
                out[j] = out[j - 1];
                j--;
            }
            out[j] = t;
        }
    }
    for (int i = 0; i < n; i++) {
        out[i] -= 1;
    }
    sort_ints(out, n);
    out[n++] = T - 1;
    return n;
}

int seg_boundaries_threshold(const float *score, int T, float threshold,
                             int *out)
{
    int n = 0;
    for (int t = 1; t < T; t++) {
        if (score[t] >= threshold) {
            out[n++] = t - 1;
        }
    }
    out[n++] = T - 1;
    return n;
}

static int near_any(int b, const int *set, int n, int tol)
{
    for (int i = 0; i < n; i++) {
        int d = b - set[i];
        if (d < 0) {
            d = -d;
        }
        if (d <= tol) {
            return 1;
        }
    }
    return 0;
}

double seg_f1(const int *pred, int n_pred, const int *truth, int n_truth,
              int tol, double *precision, double *recall)
{
    int hit_p = 0, hit_t = 0;
    for (int i = 0; i < n_pred; i++) {
        hit_p += near_any(pred[i], truth, n_truth, tol);
    }
    for (int i = 0; i < n_truth; i++) {
        hit_t += near_any(truth[i], pred, n_pred, tol);
    }
    double p = n_pred > 0 ? (double)hit_p / n_pred : 0.0;
    double r = n_truth > 0 ? (double)hit_t / n_truth : 0.0;
    if (precision != NULL) {
        *precision = p;
    }
    if (recall != NULL) {
        *recall = r;
    }
    return p + r > 0.0 ? 2.0 * p * r / (p + r) : 0.0;
}

void seg_labels_from_boundaries(const int *bounds, int n, int T, int *labels)
{
    int j = 0;
    for (int t = 0; t < T; t++) {
        while (j < n && bounds[j] < t) {
            j++;
        }
        labels[t] = j < n ? j : (n > 0 ? n - 1 : 0);
    }
}

int seg_align_matches(const int *bounds, int n, const int *seq,
                      const int *labels, int T)
{
    int matches = 0, j = 0;
    for (int t = 0; t < T; t++) {
        while (j < n && bounds[j] < t) {
            j++;
        }
        int seg = j < n ? j : n - 1;
        if (seg >= 0 && seq[seg] == labels[t]) {
            matches++;
        }
    }
    return matches;
}

void seg_nmi_init(struct seg_nmi_acc *acc)
{
    memset(acc, 0, sizeof *acc);
}

int seg_nmi_add(struct seg_nmi_acc *acc, int a, int b)
{
    if (a < 0 || a >= SEG_NMI_MAX_LABELS || b < 0 ||
        b >= SEG_NMI_MAX_LABELS) {
        return gr_error(GR_EINVAL,
                        "NMI: label pair (%d, %d) outside 0..%d", a, b,
                        SEG_NMI_MAX_LABELS - 1);
    }
    acc->joint[a][b]++;
    acc->n++;
    return 0;
}

double seg_nmi_value(const struct seg_nmi_acc *acc)
{
    if (acc->n == 0) {
        return 1.0;
    }
    double n = (double)acc->n;
    double pa[SEG_NMI_MAX_LABELS], pb[SEG_NMI_MAX_LABELS];
    for (int i = 0; i < SEG_NMI_MAX_LABELS; i++) {
        pa[i] = 0.0;
        pb[i] = 0.0;
    }
    for (int i = 0; i < SEG_NMI_MAX_LABELS; i++) {
        for (int j = 0; j < SEG_NMI_MAX_LABELS; j++) {
            double p = (double)acc->joint[i][j] / n;
            pa[i] += p;
            pb[j] += p;
        }
    }
    double ha = 0.0, hb = 0.0, mi = 0.0;
    for (int i = 0; i < SEG_NMI_MAX_LABELS; i++) {
        if (pa[i] > 0.0) {
            ha -= pa[i] * log(pa[i]);
        }
        if (pb[i] > 0.0) {
            hb -= pb[i] * log(pb[i]);
        }
    }
    for (int i = 0; i < SEG_NMI_MAX_LABELS; i++) {
        for (int j = 0; j < SEG_NMI_MAX_LABELS; j++) {
            if (acc->joint[i][j] > 0) {
                double p = (double)acc->joint[i][j] / n;
                mi += p * log(p / (pa[i] * pb[j]));
            }
        }
    }
    /* Entropies of a single label are exactly 0 here (p = 1, log 1 = 0). */
    if (ha + hb <= 0.0) {
        return 1.0;
    }
    double v = 2.0 * mi / (ha + hb);
    if (v < 0.0) {
        v = 0.0; /* rounding below zero for independent labellings */
    }
    if (v > 1.0) {
        v = 1.0;
    }
    return v;
}

int seg_nmi(const int *a, const int *b, int64_t n, double *out)
{
    static const struct seg_nmi_acc zero;
    struct seg_nmi_acc acc = zero;
    for (int64_t i = 0; i < n; i++) {
        int rc = seg_nmi_add(&acc, a[i], b[i]);
        if (rc < 0) {
            return gr_error_wrap(rc, "pair %lld", (long long)i);
        }
    }
    *out = seg_nmi_value(&acc);
    return 0;
}
