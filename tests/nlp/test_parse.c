/* Parsers and parsing metrics without data: the greedy parser against a
 * literal second implementation of on_lstm.md §10.3 on random distances
 * (ties included), the baselines, the random parser's distribution, tree
 * printing, and every metric of lm_and_parsing.md §3 on hand-computed
 * sentences (epsilons included). */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/random.h"
#include "nlp/tasks/parse.h"
#include "tests/test.h"

#define MAXW 64

/* ---- §10.3 written out literally, recursively (words a..b inclusive) -- */

struct spanset {
    struct nlp_span s[MAXW];
    int n;
};

static int first_argmax(const float *d, int a, int b)
{
    int k = a;
    for (int i = a + 1; i <= b; i++) {
        if (d[i] > d[k]) {
            k = i;
        }
    }
    return k;
}

/* Returns the span of the subtree; records internal nodes. */
static struct nlp_span ref_parse(const float *d, int a, int b,
                                 struct spanset *out)
{
    if (a == b) {
        return (struct nlp_span){a, a + 1};
    }
    int k = first_argmax(d, a, b);
    struct nlp_span right;
    if (k == b) {
        right = (struct nlp_span){k, k + 1};
    } else {
        ref_parse(d, k + 1, b, out);
        right = (struct nlp_span){k, b + 1};
        out->s[out->n++] = right; /* [w_k, parse(k+1..b)] */
    }
    if (k == a) {
        return right;
    }
    ref_parse(d, a, k - 1, out);
    struct nlp_span node = {a, b + 1};
    out->s[out->n++] = node; /* [parse(a..k-1), right] */
    return node;
}

static int cmp_span(const void *pa, const void *pb)
{
    const struct nlp_span *a = pa, *b = pb;
    if (a->start != b->start) {
        return a->start - b->start;
    }
    return a->end - b->end;
}

static int same_set(struct nlp_span *a, int na, struct nlp_span *b, int nb)
{
    if (na != nb) {
        return 0;
    }
    qsort(a, (size_t)na, sizeof *a, cmp_span);
    qsort(b, (size_t)nb, sizeof *b, cmp_span);
    return memcmp(a, b, (size_t)na * sizeof *a) == 0;
}

/* m - 1 distinct brackets of length >= 2 with the root, nesting. */
static int is_binary_tree(const struct nlp_span *s, int n, int m)
{
    if (m < 2) {
        return n == 0;
    }
    if (n != m - 1) {
        return 0;
    }
    int root = 0;
    for (int i = 0; i < n; i++) {
        if (s[i].start < 0 || s[i].end > m || s[i].end - s[i].start < 2) {
            return 0;
        }
        root += s[i].start == 0 && s[i].end == m;
        for (int j = 0; j < n; j++) {
            if (i == j) {
                continue;
            }
            if (s[i].start == s[j].start && s[i].end == s[j].end) {
                return 0;
            }
            int cross = s[i].start < s[j].start && s[j].start < s[i].end &&
                        s[i].end < s[j].end;
            if (cross) {
                return 0;
            }
        }
    }
    return root == 1;
}

static void test_distances(void)
{
    struct gr_philox_stream rng = gr_philox_stream_init(5, 0);
    float d[MAXW];
    struct nlp_span got[MAXW];
    int mismatches = 0, trials = 0;
    for (int m = 1; m <= 40; m++) {
        for (int t = 0; t < 60; t++) {
            for (int i = 0; i < m; i++) {
                /* half the trials with many ties */
                d[i] = t % 2 ? (float)(gr_philox_next_u32(&rng) % 3u)
                             : gr_philox_next_uniform(&rng);
            }
            struct spanset ref = {{{0, 0}}, 0};
            ref_parse(d, 0, m - 1, &ref);
            int n = nlp_parse_distances(d, m, got);
            trials++;
            if (!is_binary_tree(got, n, m) ||
                !same_set(got, n, ref.s, ref.n)) {
                mismatches++;
            }
        }
    }
    CHECK_MSG(mismatches == 0, "%d of %d trees differ from §10.3",
              mismatches, trials);

    /* The spec's example shape and its baselines. */
    const float ex[5] = {0.1f, 0.5f, 0.2f, 0.9f, 0.3f};
    int n = nlp_parse_distances(ex, 5, got);
    struct nlp_span want[4] = {{0, 5}, {0, 3}, {1, 3}, {3, 5}};
    CHECK(same_set(got, n, want, 4));
    float dr[30], dl[30];
    struct nlp_span base[30];
    for (int m = 1; m <= 30; m++) {
        for (int i = 0; i < m; i++) {
            dr[i] = (float)(m - i);
            dl[i] = (float)(i + 1);
        }
        n = nlp_parse_distances(dr, m, got);
        int nb = nlp_parse_right_branching(m, base);
        CHECK(same_set(got, n, base, nb));
        n = nlp_parse_distances(dl, m, got);
        nb = nlp_parse_left_branching(m, base);
        CHECK(same_set(got, n, base, nb));
        for (int i = 0; i < nb; i++) {
            CHECK(base[i].start == 0); /* left: every bracket starts at 0 */
        }
        nb = nlp_parse_balanced(m, base);
        CHECK(is_binary_tree(base, nb, m));
    }
    /* right: every bracket ends at m */
    n = nlp_parse_right_branching(6, got);
    for (int i = 0; i < n; i++) {
        CHECK(got[i].end == 6 && got[i].start == i);
    }
    /* all equal distances: ties go to the first word: right branching */
    float flat[7] = {1, 1, 1, 1, 1, 1, 1};
    n = nlp_parse_distances(flat, 7, got);
    int nb = nlp_parse_right_branching(7, base);
    CHECK(same_set(got, n, base, nb));
    /* balanced, m = 5: [[a b] [c [d e]]] */
    n = nlp_parse_balanced(5, got);
    struct nlp_span bal5[4] = {{0, 5}, {0, 2}, {2, 5}, {3, 5}};
    CHECK(same_set(got, n, bal5, 4));
    CHECK(nlp_parse_balanced(1, got) == 0);
    CHECK(nlp_parse_distances(ex, 0, got) == 0);
    n = nlp_parse_balanced(2, got);
    CHECK(n == 1 && got[0].start == 0 && got[0].end == 2);
}

/* The gap rule (StructFormer, udgn.md §7) written recursively: words
 * [a, b) split after their largest inner gap, the first on ties. */
static void ref_gaps(const float *g, int a, int b, struct spanset *out)
{
    if (b - a < 2) {
        return;
    }
    out->s[out->n++] = (struct nlp_span){a, b};
    int k = first_argmax(g, a, b - 2);
    ref_gaps(g, a, k + 1, out);
    ref_gaps(g, k + 1, b, out);
}

static void test_gaps(void)
{
    /* by hand: gaps 0.3 | 0.9 | 0.1 | 0.5 between five words (the last
     * score, StructFormer's +1e9 after the last word, is not read): the
     * root splits at the 0.9 gap, [w2 w3 w4] at its 0.5 gap:
     * ((w0 w1) ((w2 w3) w4)) */
    const float g[5] = {0.3f, 0.9f, 0.1f, 0.5f, 1e9f};
    struct nlp_span got[MAXW], base[MAXW];
    int n = nlp_parse_gaps(g, 5, got);
    struct nlp_span want[4] = {{0, 5}, {0, 2}, {2, 5}, {2, 4}};
    CHECK(n == 4 && same_set(got, n, want, 4));
    /* the word-distance parser reads the same numbers otherwise: there w1
     * (0.9) opens [w1 .. w4] */
    n = nlp_parse_distances(g, 4, got);
    struct nlp_span other[3] = {{0, 4}, {1, 4}, {2, 4}};
    CHECK(same_set(got, n, other, 3));
    /* increasing gaps: left branching; decreasing: right; all equal: the
     * first gap, right branching */
    float up[30], down[30], flat[30];
    for (int m = 1; m <= 30; m++) {
        for (int i = 0; i < m; i++) {
            up[i] = (float)(i + 1);
            down[i] = (float)(m - i);
            flat[i] = 2.0f;
        }
        n = nlp_parse_gaps(up, m, got);
        int nb = nlp_parse_left_branching(m, base);
        CHECK(n == nb && same_set(got, n, base, nb));
        n = nlp_parse_gaps(down, m, got);
        nb = nlp_parse_right_branching(m, base);
        CHECK(n == nb && same_set(got, n, base, nb));
        n = nlp_parse_gaps(flat, m, got);
        CHECK(n == nb && same_set(got, n, base, nb));
    }
    /* random gaps, ties included, against the recursion */
    struct gr_philox_stream rng = gr_philox_stream_init(7, 0);
    int mismatches = 0, trials = 0;
    float d[MAXW];
    for (int m = 1; m <= 40; m++) {
        for (int t = 0; t < 40; t++) {
            for (int i = 0; i < m; i++) {
                d[i] = t % 2 ? (float)(gr_philox_next_u32(&rng) % 3u)
                             : gr_philox_next_uniform(&rng);
            }
            struct spanset ref = {{{0, 0}}, 0};
            ref_gaps(d, 0, m, &ref);
            n = nlp_parse_gaps(d, m, got);
            trials++;
            if (n != (m > 1 ? m - 1 : 0) || !is_binary_tree(got, n, m) ||
                !same_set(got, n, ref.s, ref.n)) {
                mismatches++;
            }
        }
    }
    CHECK_MSG(mismatches == 0, "%d of %d gap trees differ from the rule",
              mismatches, trials);
    CHECK(nlp_parse_gaps(g, 1, got) == 0);
}

static void test_random(void)
{
    struct gr_philox_stream rng = gr_philox_stream_init(11, 0);
    struct nlp_span out[MAXW], work[MAXW];
    for (int m = 1; m <= 50; m++) {
        int n = nlp_parse_random(m, &rng, out, work);
        CHECK(is_binary_tree(out, n, m));
    }
    /* m = 4 by merging adjacent pairs: ((ab)(cd)) has 2 of 6 merge
     * orders, each of the other four trees 1. */
    int balanced = 0, left = 0;
    const int draws = 60000;
    for (int t = 0; t < draws; t++) {
        int n = nlp_parse_random(4, &rng, out, work);
        int has02 = 0, has24 = 0, has03 = 0, has02b = 0;
        for (int i = 0; i < n; i++) {
            has02 |= out[i].start == 0 && out[i].end == 2;
            has24 |= out[i].start == 2 && out[i].end == 4;
            has03 |= out[i].start == 0 && out[i].end == 3;
        }
        has02b = has02 && has03;
        balanced += has02 && has24;
        left += has02b;
    }
    double pb = (double)balanced / draws, pl = (double)left / draws;
    /* standard deviations ~0.0019 and ~0.0015: 5 sigma */
    CHECK_MSG(fabs(pb - 1.0 / 3.0) < 0.01, "P(balanced) = %.4f", pb);
    CHECK_MSG(fabs(pl - 1.0 / 6.0) < 0.008, "P(((ab)c)d) = %.4f", pl);
}

static void test_format(void)
{
    const char *words[5] = {"a", "b", "c", "d", "e"};
    struct nlp_span s[4] = {{3, 5}, {0, 5}, {1, 3}, {0, 3}};
    struct nlp_span work[8];
    char buf[128];
    int len = nlp_tree_format(words, 5, s, 4, work, buf, sizeof buf);
    CHECK(len == (int)strlen("((a (b c)) (d e))"));
    CHECK(strcmp(buf, "((a (b c)) (d e))") == 0);
    len = nlp_tree_format(NULL, 5, s, 4, work, buf, sizeof buf);
    CHECK(strcmp(buf, "((0 (1 2)) (3 4))") == 0);
    char small[6];
    len = nlp_tree_format(words, 5, s, 4, work, small, sizeof small);
    CHECK(len == 17 && strcmp(small, "((a (") == 0);
    struct nlp_span crossing[3] = {{0, 5}, {0, 3}, {2, 5}};
    CHECK(nlp_tree_format(words, 5, crossing, 3, work, buf, sizeof buf) ==
          GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "cross");
    struct nlp_span repeated[2] = {{0, 5}, {0, 5}};
    CHECK(nlp_tree_format(words, 5, repeated, 2, work, buf, sizeof buf) ==
          GR_EINVAL);
    CHECK(nlp_tree_format(words, 1, NULL, 0, work, buf, sizeof buf) == 1);
    CHECK(strcmp(buf, "a") == 0);
}

static double f1_of(double both, double np, double ng)
{
    double prec = both / (np + 1e-8), rec = both / (ng + 1e-8);
    if (ng == 0) {
        rec = 1.0;
        if (np == 0) {
            prec = 1.0;
        }
    }
    return 2 * prec * rec / (prec + rec + 1e-8);
}

static void test_metrics(void)
{
    struct nlp_parse_eval ev;
    nlp_parse_eval_init(&ev);

    /* m = 3, flat gold (root only) vs right branching. */
    struct nlp_span g3[1] = {{0, 3}}, p3[2] = {{0, 3}, {1, 3}};
    CHECK(nlp_parse_eval_add(&ev, 3, p3, 2, g3, 1, NULL, 0) == 0);
    /* m = 2; m = 1 */
    struct nlp_span r2[1] = {{0, 2}};
    CHECK(nlp_parse_eval_add(&ev, 2, r2, 1, r2, 1, NULL, 0) == 0);
    CHECK(nlp_parse_eval_add(&ev, 1, NULL, 0, NULL, 0, NULL, 0) == 0);
    /* m = 5: gold [[a b] [c [d e]]], right branching predicted; the caller
     * lists the root twice and a one-word span: both ignored. */
    struct nlp_span g5[4] = {{0, 5}, {0, 2}, {2, 5}, {3, 5}};
    struct nlp_span p5[6] = {{0, 5}, {1, 5}, {2, 5}, {3, 5}, {0, 5}, {4, 5}};
    struct nlp_labeled_span lab5[4] = {
        {0, 5, 2}, {0, 2, 0}, {2, 5, 1}, {3, 5, 0}};
    CHECK(nlp_parse_eval_add(&ev, 5, p5, 6, g5, 4, lab5, 4) == 0);

    struct nlp_parse_scores s;
    nlp_parse_eval_scores(&ev, &s);
    CHECK(s.n_sentences == 4);
    double f3 = f1_of(0, 1, 0), f2 = f1_of(0, 0, 0), f1w = f1_of(0, 0, 0);
    double f5 = f1_of(2, 3, 3);
    CHECK_NEAR(f3, 0.0, 1e-15); /* flat gold, >= 3 words: 0 */
    CHECK_NEAR(f2, 2.0 / (2.0 + 1e-8), 1e-15); /* "about 1" (§3.1) */
    CHECK_NEAR(s.f1_sentence_mean, 100.0 * (f3 + f2 + f1w + f5) / 4, 1e-9);
    /* EVALB: +1 bracket per sentence of >= 2 words: 5 of 7 predicted,
     * 5 of 6 gold. Non-trivial: 2 of 4, 2 of 3. */
    double P = 5.0 / 7.0, R = 5.0 / 6.0;
    CHECK_NEAR(s.precision_evalb, 100 * P, 1e-9);
    CHECK_NEAR(s.recall_evalb, 100 * R, 1e-9);
    CHECK_NEAR(s.f1_corpus_evalb, 100 * 2 * P * R / (P + R), 1e-9);
    P = 0.5, R = 2.0 / 3.0;
    CHECK_NEAR(s.f1_corpus_nontrivial, 100 * 2 * P * R / (P + R), 1e-9);
    /* depth: (3+2)/3, 2/2, 0, (5+4+3+2)/5 */
    CHECK_NEAR(s.mean_depth, (5.0 / 3.0 + 1.0 + 0.0 + 14.0 / 5.0) / 4, 1e-12);
    int64_t c, t;
    nlp_parse_eval_label(&ev, 0, &c, &t);
    CHECK(c == 1 && t == 2); /* (3,5) found, (0,2) not */
    nlp_parse_eval_label(&ev, 1, &c, &t);
    CHECK(c == 1 && t == 1);
    nlp_parse_eval_label(&ev, 2, &c, &t);
    CHECK(c == 1 && t == 1); /* the root counts for per-label recall */
    nlp_parse_eval_label(&ev, 7, &c, &t);
    CHECK(c == 0 && t == 0);

    /* Bad input. */
    struct nlp_span bad[1] = {{2, 9}};
    CHECK(nlp_parse_eval_add(&ev, 5, bad, 1, g5, 4, NULL, 0) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "predicted bracket 0 is [2, 9)");
    CHECK(nlp_parse_eval_add(&ev, 0, NULL, 0, NULL, 0, NULL, 0) == GR_EINVAL);
    struct nlp_labeled_span badl[1] = {{0, 2, -1}};
    CHECK(nlp_parse_eval_add(&ev, 5, p5, 4, g5, 4, badl, 1) == GR_EINVAL);
    nlp_parse_eval_scores(&ev, &s);
    CHECK(s.n_sentences == 4); /* refused sentences are not counted */
    nlp_parse_eval_free(&ev);

    /* Gold against gold: 1 per sentence, 100 for the corpus F1s. */
    struct gr_philox_stream rng = gr_philox_stream_init(3, 0);
    struct nlp_span tree[MAXW], work[MAXW];
    nlp_parse_eval_init(&ev);
    for (int m = 1; m < 40; m++) {
        int n = nlp_parse_random(m, &rng, tree, work);
        CHECK(nlp_parse_eval_add(&ev, m, tree, n, tree, n, NULL, 0) == 0);
    }
    nlp_parse_eval_scores(&ev, &s);
    CHECK_NEAR(s.f1_sentence_mean, 100.0, 1e-6);
    CHECK_NEAR(s.f1_corpus_evalb, 100.0, 1e-12);
    CHECK_NEAR(s.f1_corpus_nontrivial, 100.0, 1e-12);
    nlp_parse_eval_free(&ev);

    nlp_parse_eval_init(&ev);
    nlp_parse_eval_scores(&ev, &s);
    CHECK(s.n_sentences == 0 && s.f1_sentence_mean == 0.0);
    nlp_parse_eval_free(&ev);
}

int main(void)
{
    test_distances();
    test_gaps();
    test_random();
    test_format();
    test_metrics();
    return test_report("nlp_parse");
}
