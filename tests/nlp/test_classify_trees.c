/* The tree steps of `grove nlp classify trees` (nlp/tasks/classify.h:
 * nlp_cls_tree_om, nlp_cls_tree_distances, nlp_cls_tree_gaps) and the
 * F1 it prints (nlp/tasks/parse.h):
 *  - hand-made cases worked out on paper (ordered_memory.md §8's
 *    build_tree with parenthesis leaves deleted, the greedy top-down
 *    parser, StructFormer's split at the largest gap, udgn.md §7), with
 *    the corpus and sentence-mean F1 of the wrong one;
 *  - gold against gold is F1 100 on generated ListOps (formal_tasks.md
 *    §2.3) and logic (§1.2) trees, where the "prediction" goes through
 *    nlp_cls_tree_om from oracle distances (r_t = the gold brackets ending
 *    at t, so d_t = d_{t-1} - 1 + r_t) and must give the gold spans back;
 *    a right-branching prediction must score below 100 (the check can
 *    fail). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "nlp/data/listops.h"
#include "nlp/data/logic.h"
#include "nlp/tasks/classify.h"
#include "nlp/tasks/parse.h"
#include "tests/test.h"

static int span_cmp(const void *a, const void *b)
{
    const struct nlp_span *x = a, *y = b;
    if (x->start != y->start) {
        return x->start < y->start ? -1 : 1;
    }
    return x->end < y->end ? -1 : x->end > y->end;
}

/* 1 if a[n] and b[n] hold the same spans (order free). */
static int same_spans(const struct nlp_span *a, const struct nlp_span *b,
                      int32_t n)
{
    struct nlp_span x[64], y[64];
    if (n > 64) {
        return 0;
    }
    memcpy(x, a, (size_t)n * sizeof *x);
    memcpy(y, b, (size_t)n * sizeof *y);
    qsort(x, (size_t)n, sizeof *x, span_cmp);
    qsort(y, (size_t)n, sizeof *y, span_cmp);
    return memcmp(x, y, (size_t)n * sizeof *x) == 0;
}

/* The OM distances that make build_tree give the tree `gold` over n words. */
static void oracle(const struct nlp_span *gold, int32_t k, int32_t n,
                   int32_t *dist)
{
    dist[0] = n + 3;
    for (int32_t t = 1; t < n; t++) {
        int32_t r = 0;
        for (int32_t i = 0; i < k; i++) {
            r += gold[i].end == t;
        }
        dist[t] = dist[t - 1] - 1 + r;
    }
}

static void hand_cases(void)
{
    /* `( a ( or b ) )`: 7 tokens, words a or b; gold [a, [or, b]] */
    const uint8_t paren[7] = {1, 0, 1, 0, 0, 1, 1};
    const struct nlp_span gold[2] = {{0, 3}, {1, 3}};
    struct nlp_span out[8];
    /* decreasing distances: shifts only, then the final reductions:
     * right-branching over the 7 tokens, [i, 7) for i = 0..5; without the
     * parentheses {[0,3), [1,3)} = gold */
    const int32_t right[7] = {7, 6, 5, 4, 3, 2, 1};
    CHECK(nlp_cls_tree_om(right, 7, paren, out) == 2);
    CHECK(same_spans(out, gold, 2));
    /* equal distances: one reduction before every shift: left-branching
     * [0, j) for j = 2..7; without the parentheses ((a or) b) */
    const int32_t left[7] = {7, 7, 7, 7, 7, 7, 7};
    const struct nlp_span lgold[2] = {{0, 2}, {0, 3}};
    CHECK(nlp_cls_tree_om(left, 7, paren, out) == 2);
    CHECK(same_spans(out, lgold, 2));
    /* its scores: corpus 1 of 2 brackets = 50 %; below the root {[0,2)}
     * against {[1,3)}: 0 */
    struct nlp_parse_eval ev;
    nlp_parse_eval_init(&ev);
    CHECK(nlp_parse_eval_add(&ev, 3, out, 2, gold, 2, NULL, 0) == 0);
    struct nlp_parse_scores s;
    nlp_parse_eval_scores(&ev, &s);
    CHECK_NEAR(s.f1_corpus_evalb, 50.0, 1e-9);
    CHECK_NEAR(s.f1_sentence_mean, 0.0, 1e-6);
    nlp_parse_eval_free(&ev);
    /* no leaf dropped: the 6 brackets of build_tree as they are */
    CHECK(nlp_cls_tree_om(left, 7, NULL, out) == 6);
    for (int i = 0; i < 6; i++) {
        CHECK(out[i].start == 0 && out[i].end == i + 2);
    }
    /* an irregular one: d = 5 5 3 3 over 4 tokens: w1 shifted (the stack
     * holds one node), w2 shifted, one reduction (w1 w2) before w3, then
     * the final two: [1,3), [1,4), [0,4) */
    const int32_t mixed[4] = {5, 5, 3, 3};
    const struct nlp_span mgold[3] = {{1, 3}, {1, 4}, {0, 4}};
    CHECK(nlp_cls_tree_om(mixed, 4, NULL, out) == 3);
    CHECK(same_spans(out, mgold, 3));
    CHECK(nlp_cls_tree_om(mixed, 1, NULL, out) == 0);

    /* greedy top-down on d = 0 1 5 2: the split at word 2 (the largest),
     * then [2,4) at max(2, 3) = 3: {[0,4), [0,2), [2,4)}; dropping word 0:
     * {[0,3), [1,3)} */
    const float d[4] = {0, 1, 5, 2};
    const struct nlp_span dgold[3] = {{0, 4}, {0, 2}, {2, 4}};
    CHECK(nlp_cls_tree_distances(d, 4, NULL, out) == 3);
    CHECK(same_spans(out, dgold, 3));
    const uint8_t drop0[4] = {1, 0, 0, 0};
    CHECK(nlp_cls_tree_distances(d, 4, drop0, out) == 2);
    CHECK(same_spans(out, gold, 2));

    /* StructFormer's gaps over `( a ( or b ) )`, g_i after token i (the
     * last, +1e9, not read): 0 3 1 2 0.5 0: the root splits at the gap 3
     * ([0,2) [2,7)), [2,7) at its 2 ([2,4) [4,7)), [4,7) at its 0.5
     * ([4,5) [5,7)); without the parentheses [a, [or, b]] = gold */
    const float g[7] = {0, 3, 1, 2, 0.5f, 0, 1e9f};
    const struct nlp_span ggold[6] = {{0, 7}, {0, 2}, {2, 7},
                                      {2, 4}, {4, 7}, {5, 7}};
    CHECK(nlp_cls_tree_gaps(g, 7, NULL, out) == 6);
    CHECK(same_spans(out, ggold, 6));
    CHECK(nlp_cls_tree_gaps(g, 7, paren, out) == 2);
    CHECK(same_spans(out, gold, 2));
    /* d above read as gaps, 0 1 5 (2 not read): the split after word 2,
     * then [0,3) after word 1: {[0,4), [0,3), [0,2)} (left branching),
     * where the word rule gave {[0,4), [0,2), [2,4)}; dropping word 0:
     * {[0,3), [0,2)} */
    const struct nlp_span g4[3] = {{0, 4}, {0, 3}, {0, 2}};
    const struct nlp_span g4drop[2] = {{0, 3}, {0, 2}};
    CHECK(nlp_cls_tree_gaps(d, 4, NULL, out) == 3);
    CHECK(same_spans(out, g4, 3));
    CHECK(nlp_cls_tree_gaps(d, 4, drop0, out) == 2);
    CHECK(same_spans(out, g4drop, 2));
    CHECK(nlp_cls_tree_gaps(d, 1, NULL, out) == 0);
}

/* Gold trees as predictions: F1 100 both ways; right-branching below. */
static void gold_vs_gold(void)
{
    struct nlp_listops_set s;
    CHECK(nlp_listops_generate(&s, 300, 5, NLP_LISTOPS_MAX_DEPTH, NULL) == 0);
    struct nlp_parse_eval ev, rb;
    nlp_parse_eval_init(&ev);
    nlp_parse_eval_init(&rb);
    int32_t cap = s.max_tokens + 1;
    struct nlp_span *gold = malloc((size_t)cap * sizeof *gold);
    struct nlp_span *pred = malloc((size_t)cap * sizeof *pred);
    int32_t *dist = malloc((size_t)cap * sizeof *dist);
    CHECK(gold && pred && dist);
    int64_t scored = 0;
    for (int32_t i = 0; i < s.n; i++) {
        const struct nlp_listops_example *e = &s.examples[i];
        int32_t n = e->n_tokens;
        if (n < 2) {
            continue;
        }
        int32_t k = nlp_listops_tree(s.tokens + e->tokens, n, gold);
        CHECK(k == n - 1);
        oracle(gold, k, n, dist);
        CHECK(nlp_cls_tree_om(dist, n, NULL, pred) == k);
        if (n <= 64) {
            CHECK(same_spans(pred, gold, k));
        }
        CHECK(nlp_parse_eval_add(&ev, n, pred, k, gold, k, NULL, 0) == 0);
        int32_t kr = nlp_parse_right_branching(n, pred);
        CHECK(nlp_parse_eval_add(&rb, n, pred, kr, gold, k, NULL, 0) == 0);
        scored++;
    }
    CHECK(scored > 50);
    struct nlp_parse_scores sc, sr;
    nlp_parse_eval_scores(&ev, &sc);
    nlp_parse_eval_scores(&rb, &sr);
    CHECK_NEAR(sc.f1_corpus_evalb, 100.0, 1e-9);
    CHECK_NEAR(sc.f1_sentence_mean, 100.0, 1e-4);
    CHECK(sr.f1_corpus_evalb < 90.0 && sr.f1_sentence_mean < 90.0);
    nlp_parse_eval_free(&ev);
    nlp_parse_eval_free(&rb);
    nlp_listops_free(&s);

    /* logic: the gold bracketing of every generated expression */
    struct nlp_logic_set ls;
    nlp_logic_set_init(&ls);
    CHECK(nlp_logic_generate(&ls, 200, 1, 12, 7, NULL) == 0);
    nlp_parse_eval_init(&ev);
    struct nlp_span lg[NLP_LOGIC_MAX_TOKENS], lp[NLP_LOGIC_MAX_TOKENS];
    int32_t ld[NLP_LOGIC_MAX_TOKENS];
    for (int32_t i = 0; i < ls.n; i++) {
        const struct nlp_logic_pair *p = &ls.pairs[i];
        const uint32_t off[2] = {p->left, p->right};
        const int32_t len[2] = {p->n_left, p->n_right};
        for (int j = 0; j < 2; j++) {
            struct nlp_logic_expr x;
            CHECK(nlp_logic_parse(ls.tokens + off[j], len[j], &x, lg) == 0);
            int32_t n = x.n_words;
            if (n < 2) {
                continue;
            }
            oracle(lg, n - 1, n, ld);
            CHECK(nlp_cls_tree_om(ld, n, NULL, lp) == n - 1);
            CHECK(nlp_parse_eval_add(&ev, n, lp, n - 1, lg, n - 1, NULL, 0) ==
                  0);
        }
    }
    nlp_parse_eval_scores(&ev, &sc);
    CHECK(sc.n_sentences > 200);
    CHECK_NEAR(sc.f1_corpus_evalb, 100.0, 1e-9);
    CHECK_NEAR(sc.f1_sentence_mean, 100.0, 1e-4);
    nlp_parse_eval_free(&ev);
    nlp_logic_set_free(&ls);
    free(gold);
    free(pred);
    free(dist);
}

int main(void)
{
    hand_cases();
    gold_vs_gold();
    printf("ok\n");
    return 0;
}
