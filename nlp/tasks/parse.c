/* Parsers from distances and baselines, tree printing, parsing metrics:
 * see nlp/tasks/parse.h. */
#include "nlp/tasks/parse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

/* ---- parsers --------------------------------------------------------- */

/* Top-down splitting with out[] as the work queue: each queued span
 * becomes a node; split(a, b) gives the boundary s of its two children
 * [a, s) and [s, b); children of >= 2 words are queued. Every span is a
 * node of a binary tree, so the queue never holds more than m - 1. */
typedef int32_t (*split_fn)(const float *d, int32_t a, int32_t b);

static int32_t top_down(const float *d, int32_t m, split_fn split,
                        struct nlp_span *out)
{
    if (m < 2) {
        return 0;
    }
    int32_t n = 0;
    out[n++] = (struct nlp_span){0, m};
    for (int32_t i = 0; i < n; i++) {
        int32_t a = out[i].start, b = out[i].end;
        int32_t s = split(d, a, b);
        if (s - a >= 2) {
            out[n++] = (struct nlp_span){a, s};
        }
        if (b - s >= 2) {
            out[n++] = (struct nlp_span){s, b};
        }
    }
    return n;
}

/* on_lstm.md §10.3: k = first argmax of d over [a, b). If k > a the node
 * is [parse(a..k-1), right] where right = w_k (k = b-1) or
 * [w_k, parse(k+1..b)]; since d[k] is also the first maximum of [k, b),
 * right is exactly parse(k..b): the split is at k. If k = a the node is
 * [w_a, parse(a+1..b)]: the split is at a + 1. */
static int32_t split_distances(const float *d, int32_t a, int32_t b)
{
    int32_t k = a;
    for (int32_t i = a + 1; i < b; i++) {
        if (d[i] > d[k] || (d[k] != d[k] && d[i] == d[i])) {
            k = i;
        }
    }
    return k > a ? k : a + 1;
}

/* The first argmax k of the inner gaps g[a .. b-2]: the split at k + 1. */
static int32_t split_gaps(const float *g, int32_t a, int32_t b)
{
    int32_t k = a;
    for (int32_t i = a + 1; i < b - 1; i++) {
        if (g[i] > g[k] || (g[k] != g[k] && g[i] == g[i])) {
            k = i;
        }
    }
    return k + 1;
}

static int32_t split_right(const float *d, int32_t a, int32_t b)
{
    (void)d;
    (void)b;
    return a + 1;
}

static int32_t split_left(const float *d, int32_t a, int32_t b)
{
    (void)d;
    (void)a;
    return b - 1;
}

static int32_t split_balanced(const float *d, int32_t a, int32_t b)
{
    (void)d;
    return a + (b - a) / 2;
}

int32_t nlp_parse_distances(const float *d, int32_t m, struct nlp_span *out)
{
    return top_down(d, m, split_distances, out);
}

int32_t nlp_parse_gaps(const float *g, int32_t m, struct nlp_span *out)
{
    return top_down(g, m, split_gaps, out);
}

int32_t nlp_parse_right_branching(int32_t m, struct nlp_span *out)
{
    return top_down(NULL, m, split_right, out);
}

int32_t nlp_parse_left_branching(int32_t m, struct nlp_span *out)
{
    return top_down(NULL, m, split_left, out);
}

int32_t nlp_parse_balanced(int32_t m, struct nlp_span *out)
{
    return top_down(NULL, m, split_balanced, out);
}

/* Uniform integer in [0, n) without modulo bias (Lemire's method). */
static uint32_t uniform_below(struct gr_philox_stream *rng, uint32_t n)
{
    uint64_t prod = (uint64_t)gr_philox_next_u32(rng) * n;
    uint32_t low = (uint32_t)prod;
    if (low < n) {
        uint32_t threshold = (uint32_t)(-n) % n;
        while (low < threshold) {
            prod = (uint64_t)gr_philox_next_u32(rng) * n;
            low = (uint32_t)prod;
        }
    }
    return (uint32_t)(prod >> 32);
}

int32_t nlp_parse_random(int32_t m, struct gr_philox_stream *rng,
                         struct nlp_span *out, struct nlp_span *work)
{
    if (m < 2) {
        return 0;
    }
    int32_t len = m, n = 0;
    for (int32_t i = 0; i < m; i++) {
        work[i] = (struct nlp_span){i, i + 1};
    }
    while (len > 1) {
        /* random.choice(range(len - 1)); the last merge has one choice
         * and the reference still draws, we do not need to. */
        int32_t j = len > 2 ? (int32_t)uniform_below(rng, (uint32_t)(len - 1))
                            : 0;
        struct nlp_span merged = {work[j].start, work[j + 1].end};
        out[n++] = merged;
        work[j] = merged;
        memmove(work + j + 1, work + j + 2,
                (size_t)(len - j - 2) * sizeof *work);
        len--;
    }
    return n;
}

/* Pre-order: start ascending, longer first. */
static int span_preorder(const void *pa, const void *pb)
{
    const struct nlp_span *a = pa, *b = pb;
    if (a->start != b->start) {
        return a->start < b->start ? -1 : 1;
    }
    if (a->end != b->end) {
        return a->end > b->end ? -1 : 1;
    }
    return 0;
}

struct sbuf {
    char *buf;
    size_t cap, len;
};

static void put(struct sbuf *s, const char *text)
{
    size_t n = strlen(text);
    for (size_t i = 0; i < n; i++, s->len++) {
        if (s->len + 1 < s->cap) {
            s->buf[s->len] = text[i];
        }
    }
    if (s->cap > 0) {
        s->buf[s->len < s->cap ? s->len : s->cap - 1] = '\0';
    }
}

int nlp_tree_format(const char *const *words, int32_t m,
                    const struct nlp_span *spans, int32_t n,
                    struct nlp_span *work, char *buf, size_t cap)
{
    struct sbuf s = {buf, cap, 0};
    if (cap > 0) {
        buf[0] = '\0';
    }
    if (n > 0) {
        memcpy(work, spans, (size_t)n * sizeof *work);
        qsort(work, (size_t)n, sizeof *work, span_preorder);
    }
    for (int32_t i = 0; i < n; i++) {
        if (work[i].start < 0 || work[i].end > m ||
            work[i].end - work[i].start < 2 ||
            (i > 0 && work[i].start == work[i - 1].start &&
             work[i].end == work[i - 1].end)) {
            return gr_error(GR_EINVAL, "tree: bracket [%d, %d) over %d words "
                            "is out of range, too short or repeated",
                            work[i].start, work[i].end, m);
        }
    }
    /* Walk the words, opening brackets that start here (outermost first)
     * and closing those that end here; a stack of open ends checks that
     * brackets nest. */
    int32_t next = 0, depth = 0;
    struct nlp_span *open = work + n; /* stack of open brackets */
    char num[32];
    for (int32_t w = 0; w < m; w++) {
        if (w > 0) {
            put(&s, " ");
        }
        while (next < n && work[next].start == w) {
            if (depth > 0 && work[next].end > open[depth - 1].end) {
                return gr_error(GR_EINVAL, "tree: brackets [%d, %d) and "
                                "[%d, %d) cross", work[next].start,
                                work[next].end, open[depth - 1].start,
                                open[depth - 1].end);
            }
            open[depth++] = work[next++];
            put(&s, "(");
        }
        if (words != NULL && words[w] != NULL) {
            put(&s, words[w]);
        } else {
            snprintf(num, sizeof num, "%d", w);
            put(&s, num);
        }
        while (depth > 0 && open[depth - 1].end == w + 1) {
            depth--;
            put(&s, ")");
        }
    }
    if (m == 0) {
        put(&s, "");
    }
    return (int)s.len;
}

/* ---- metrics --------------------------------------------------------- */

void nlp_parse_eval_init(struct nlp_parse_eval *e) { memset(e, 0, sizeof *e); }

void nlp_parse_eval_free(struct nlp_parse_eval *e)
{
    free(e->label_correct);
    free(e->label_total);
    free(e->scratch);
    memset(e, 0, sizeof *e);
}

static int span_cmp(const void *pa, const void *pb)
{
    const struct nlp_span *a = pa, *b = pb;
    if (a->start != b->start) {
        return a->start < b->start ? -1 : 1;
    }
    if (a->end != b->end) {
        return a->end < b->end ? -1 : 1;
    }
    return 0;
}

/* Sorted, deduplicated spans of length >= 2; the root (0, m) kept only if
 * keep_root. Returns the count written to dst. */
static int32_t clean_spans(const struct nlp_span *src, int32_t n, int32_t m,
                           int keep_root, struct nlp_span *dst)
{
    int32_t k = 0;
    for (int32_t i = 0; i < n; i++) {
        if (src[i].end - src[i].start < 2) {
            continue;
        }
        if (!keep_root && src[i].start == 0 && src[i].end == m) {
            continue;
        }
        dst[k++] = src[i];
    }
    if (k > 1) {
        qsort(dst, (size_t)k, sizeof *dst, span_cmp);
    }
    int32_t u = 0;
    for (int32_t i = 0; i < k; i++) {
        if (u == 0 || span_cmp(&dst[u - 1], &dst[i]) != 0) {
            dst[u++] = dst[i];
        }
    }
    return u;
}

static int32_t intersect(const struct nlp_span *a, int32_t na,
                         const struct nlp_span *b, int32_t nb)
{
    int32_t i = 0, j = 0, k = 0;
    while (i < na && j < nb) {
        int c = span_cmp(&a[i], &b[j]);
        if (c == 0) {
            k++, i++, j++;
        } else if (c < 0) {
            i++;
        } else {
            j++;
        }
    }
    return k;
}

static int contains(const struct nlp_span *a, int32_t n, int32_t start,
                    int32_t end)
{
    struct nlp_span key = {start, end};
    if (n == 0) {
        return 0;
    }
    return bsearch(&key, a, (size_t)n, sizeof *a, span_cmp) != NULL;
}

static int check_spans(const struct nlp_span *s, int32_t n, int32_t m,
                       const char *what)
{
    for (int32_t i = 0; i < n; i++) {
        if (s[i].start < 0 || s[i].end > m || s[i].start > s[i].end) {
            return gr_error(GR_EINVAL, "parse eval: %s bracket %d is [%d, %d), "
                            "outside a sentence of %d words", what, i,
                            s[i].start, s[i].end, m);
        }
    }
    return 0;
}

int nlp_parse_eval_add(struct nlp_parse_eval *e, int32_t m,
                       const struct nlp_span *pred, int32_t n_pred,
                       const struct nlp_span *gold, int32_t n_gold,
                       const struct nlp_labeled_span *labeled,
                       int32_t n_labeled)
{
    if (m < 1) {
        return gr_error(GR_EINVAL, "parse eval: a sentence of %d words "
                        "(skip empty sentences)", m);
    }
    int rc = check_spans(pred, n_pred, m, "predicted");
    if (rc == 0) {
        rc = check_spans(gold, n_gold, m, "gold");
    }
    for (int32_t i = 0; rc == 0 && i < n_labeled; i++) {
        const struct nlp_labeled_span *l = &labeled[i];
        if (l->start < 0 || l->end > m || l->start > l->end || l->label < 0) {
            rc = gr_error(GR_EINVAL, "parse eval: labelled item %d is [%d, %d) "
                          "label %d, invalid for %d words", i, l->start,
                          l->end, l->label, m);
        }
    }
    if (rc < 0) {
        return rc;
    }
    size_t need = 2 * (size_t)n_pred + (size_t)n_gold;
    if (need > e->scratch_cap) {
        size_t cap = need > 2 * e->scratch_cap ? need : 2 * e->scratch_cap;
        struct nlp_span *s = realloc(e->scratch, cap * sizeof *s);
        if (s == NULL) {
            return gr_error(GR_ENOMEM, "parse eval: out of memory");
        }
        e->scratch = s;
        e->scratch_cap = cap;
    }
    for (int32_t i = 0; i < n_labeled; i++) {
        if (labeled[i].label >= e->n_labels) {
            int32_t n = labeled[i].label + 1;
            if (n < 2 * e->n_labels) {
                n = 2 * e->n_labels;
            }
            int64_t *c = realloc(e->label_correct, (size_t)n * sizeof *c);
            if (c != NULL) {
                e->label_correct = c;
            }
            int64_t *t = realloc(e->label_total, (size_t)n * sizeof *t);
            if (t != NULL) {
                e->label_total = t;
            }
            if (c == NULL || t == NULL) {
                return gr_error(GR_ENOMEM, "parse eval: out of memory");
            }
            for (int32_t k = e->n_labels; k < n; k++) {
                e->label_correct[k] = e->label_total[k] = 0;
            }
            e->n_labels = n;
        }
    }

    /* Below-root sets for the sentence F1 and the corpus "non-trivial" F1;
     * with-root sets for EVALB and the per-label recall. */
    struct nlp_span *p = e->scratch, *g = p + n_pred;
    struct nlp_span *pr = g + n_gold;
    int32_t np = clean_spans(pred, n_pred, m, 0, p);
    int32_t ng = clean_spans(gold, n_gold, m, 0, g);
    int32_t npr = clean_spans(pred, n_pred, m, 1, pr);
    int32_t both = intersect(p, np, g, ng);

    double prec = both / (np + 1e-8);
    double rec = both / (ng + 1e-8);
    if (ng == 0) {
        rec = 1.0;
        if (np == 0) {
            prec = 1.0;
        }
    }
    e->sum_f1 += 2.0 * prec * rec / (prec + rec + 1e-8);
    e->sum_prec += prec;
    e->sum_rec += rec;

    if (m >= 2) {
        /* EVALB: the whole-sentence bracket counts on both sides, whether
         * or not the caller listed it. */
        e->evalb_match += both + 1;
        e->evalb_pred += np + 1;
        e->evalb_gold += ng + 1;
        e->nt_match += both;
        e->nt_pred += np;
        e->nt_gold += ng;
    }

    /* Depth: brackets around each word = sum of bracket lengths / m, over
     * the distinct predicted brackets, root included. */
    double depth = 0.0;
    for (int32_t i = 0; i < npr; i++) {
        depth += pr[i].end - pr[i].start;
    }
    e->sum_depth += depth / m;

    /* Per-label recall against the predicted brackets with the root. */
    for (int32_t i = 0; i < n_labeled; i++) {
        const struct nlp_labeled_span *l = &labeled[i];
        if (l->end - l->start < 2) {
            continue;
        }
        e->label_total[l->label]++;
        if (contains(pr, npr, l->start, l->end)) {
            e->label_correct[l->label]++;
        }
    }
    e->n_sentences++;
    return 0;
}

void nlp_parse_eval_scores(const struct nlp_parse_eval *e,
                           struct nlp_parse_scores *s)
{
    memset(s, 0, sizeof *s);
    s->n_sentences = e->n_sentences;
    if (e->n_sentences == 0) {
        return;
    }
    double n = (double)e->n_sentences;
    s->f1_sentence_mean = 100.0 * e->sum_f1 / n;
    s->precision_sentence_mean = 100.0 * e->sum_prec / n;
    s->recall_sentence_mean = 100.0 * e->sum_rec / n;
    if (e->evalb_pred > 0 && e->evalb_gold > 0) {
        double p = (double)e->evalb_match / (double)e->evalb_pred;
        double r = (double)e->evalb_match / (double)e->evalb_gold;
        s->precision_evalb = 100.0 * p;
        s->recall_evalb = 100.0 * r;
        s->f1_corpus_evalb = p + r > 0 ? 100.0 * 2 * p * r / (p + r) : 0.0;
    }
    if (e->nt_pred > 0 && e->nt_gold > 0) {
        double p = (double)e->nt_match / (double)e->nt_pred;
        double r = (double)e->nt_match / (double)e->nt_gold;
        s->f1_corpus_nontrivial = p + r > 0 ? 100.0 * 2 * p * r / (p + r) : 0.0;
    }
    s->mean_depth = e->sum_depth / n;
}

void nlp_parse_eval_label(const struct nlp_parse_eval *e, int32_t label,
                          int64_t *correct, int64_t *total)
{
    if (label < 0 || label >= e->n_labels) {
        *correct = *total = 0;
        return;
    }
    *correct = e->label_correct[label];
    *total = e->label_total[label];
}
