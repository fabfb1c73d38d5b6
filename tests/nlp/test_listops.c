/* ListOps (formal_tasks.md §2): the semantics on hand-made expressions, the
 * §2.3 gold tree and bracketing, malformed lines naming file and line, the
 * generator (determinism, distinct trees, §2.5's shape, its output read
 * back), the held-out permutation, and on the released test_d20s.tsv: a
 * second evaluator written here (recursive) agrees with every one of the
 * 10,000 answers, the file's bracketing is the §2.3 tree of every line and
 * the writer reproduces the file byte for byte, and the counts of §2.6.
 *
 *   test_nlp_listops LISTOPS_DIR   (data checks skipped when absent)
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "core/random.h"
#include "core/files.h"
#include "nlp/data/listops.h"
#include "tests/test.h"
#include "tests/nlp/mutations.h"

static int32_t toks(const char *text, uint8_t *out)
{
    int32_t n = 0;
    const char *p = text;
    while (*p) {
        while (*p == ' ') {
            p++;
        }
        const char *q = p;
        while (*q && *q != ' ') {
            q++;
        }
        if (q > p) {
            out[n++] = (uint8_t)nlp_listops_token_id(p, (size_t)(q - p));
        }
        p = q;
    }
    return n;
}

static int eval_text(const char *text, int *depth)
{
    uint8_t t[256];
    int v = -1;
    if (nlp_listops_eval(t, toks(text, t), &v, depth) < 0) {
        return -100;
    }
    return v;
}

/* A second evaluator, recursive, written from §2.2 alone. */
static int rec_eval(const uint8_t *t, int32_t n, int32_t *pos)
{
    int tok = t[(*pos)++];
    if (tok >= 1 && tok <= 10) {
        return tok - 1;
    }
    int vals[64], k = 0;
    while (*pos < n && t[*pos] != NLP_LISTOPS_CLOSE) {
        int v = rec_eval(t, n, pos);
        if (k < 64) {
            vals[k++] = v;
        }
    }
    (*pos)++;
    int r = vals[0];
    if (tok == NLP_LISTOPS_MIN || tok == NLP_LISTOPS_MAX) {
        for (int i = 1; i < k; i++) {
            r = tok == NLP_LISTOPS_MIN ? (vals[i] < r ? vals[i] : r)
                                       : (vals[i] > r ? vals[i] : r);
        }
    } else if (tok == NLP_LISTOPS_SM) {
        r = 0;
        for (int i = 0; i < k; i++) {
            r += vals[i];
        }
        r %= 10;
    } else { /* MED: selection by counting */
        int sorted[64];
        for (int i = 0; i < k; i++) {
            int rank = 0;
            for (int j = 0; j < k; j++) {
                rank += vals[j] < vals[i] || (vals[j] == vals[i] && j < i);
            }
            sorted[rank] = vals[i];
        }
        r = k % 2 ? sorted[k / 2] : (sorted[k / 2 - 1] + sorted[k / 2]) / 2;
    }
    return r;
}

static void test_semantics(void)
{
    int depth = -1;
    CHECK(eval_text("[MAX 2 9 [MIN 4 7 ] 0 ]", &depth) == 9 && depth == 2);
    CHECK(eval_text("[MIN 4 7 ]", &depth) == 4 && depth == 1);
    CHECK(eval_text("[SM 6 5 9 0 ]", NULL) == 0);        /* 20 mod 10 */
    CHECK(eval_text("[SM 6 5 9 1 ]", NULL) == 1);
    CHECK(eval_text("[MED 1 2 3 4 ]", NULL) == 2);       /* 2.5 -> 2 */
    CHECK(eval_text("[MED 9 8 ]", NULL) == 8);           /* 8.5 -> 8 */
    CHECK(eval_text("[MED 7 1 3 ]", NULL) == 3);
    CHECK(eval_text("[MED 9 0 9 0 9 ]", NULL) == 9);
    CHECK(eval_text("[MIN [MAX 1 2 ] [SM 9 9 ] 5 ]", NULL) == 2);
    CHECK(eval_text("7", &depth) == 7 && depth == 0);
    static const char *const bad[] = {"[MIN 1 2", "1 2", "[MIN ]", "]",
                                      "[FIRST 1 2 ]", "[MIN 1 ] 3"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_MSG(eval_text(bad[i], NULL) == -100, "'%s' evaluated", bad[i]);
    }
}

static void test_tree(void)
{
    uint8_t t[64];
    struct nlp_span sp[64];
    int32_t n = toks("[MAX 2 9 ]", t);
    CHECK(nlp_listops_tree(t, n, sp) == 3);
    CHECK(sp[0].start == 0 && sp[0].end == 2 && sp[1].end == 3 &&
          sp[2].start == 0 && sp[2].end == 4);
    /* [MAX 2 [MIN 4 7 ] 0 ]: ((((MAX 2) ((((MIN 4) 7) ]))) 0) ]) */
    n = toks("[MAX 2 [MIN 4 7 ] 0 ]", t);
    CHECK(nlp_listops_tree(t, n, sp) == 7);
    static const int order[7][2] = {{0, 2}, {2, 4}, {2, 5}, {2, 6},
                                    {0, 6}, {0, 7}, {0, 8}};
    int ok = 1;
    for (int i = 0; i < 7; i++) {
        ok &= sp[i].start == order[i][0] && sp[i].end == order[i][1];
    }
    CHECK(ok);
    char buf[256];
    CHECK(nlp_listops_bracketed(t, n, buf, sizeof buf) > 0);
    CHECK_MSG(strcmp(buf, "( ( ( ( [MAX 2 ) ( ( ( [MIN 4 ) 7 ) ] ) ) 0 ) "
                          "] )") == 0, "%s", buf);
    n = toks("4", t);
    CHECK(nlp_listops_tree(t, n, sp) == 0);
    CHECK(nlp_listops_bracketed(t, n, buf, sizeof buf) == 1 &&
          strcmp(buf, "4") == 0);
    n = toks("[SM 6 5 9 0 ]", t);
    CHECK(nlp_listops_bracketed(t, n, buf, 10) == -1); /* too small */
}

static void expect_error(const char *text, const char *want)
{
    struct nlp_listops_set s;
    int rc = nlp_listops_read_text(&s, text, strlen(text), "ops.tsv");
    CHECK_MSG(rc == GR_EFORMAT, "accepted: %s", text);
    CHECK_MSG(strstr(gr_last_error(), want) != NULL, "'%s' lacks '%s'",
              gr_last_error(), want);
    CHECK(s.n == 0 && s.examples == NULL);
}

static void test_reader(void)
{
    const char *good = "0\t( ( ( ( ( [SM 6 ) 5 ) 9 ) 0 ) ] )\n"
                       "9\t9\n"
                       "4\t( ( ( [MIN 4 ) 7 ) ] )\r\n";
    struct nlp_listops_set s;
    CHECK(nlp_listops_read_text(&s, good, strlen(good), "g") == 0);
    CHECK(s.n == 3 && s.n_bare == 1 && s.max_tokens == 6);
    CHECK(s.examples[0].answer == 0 && s.examples[0].n_tokens == 6 &&
          s.examples[0].depth == 1 && s.examples[2].line == 3);
    const uint8_t *t = s.tokens + s.examples[0].tokens;
    CHECK(t[0] == NLP_LISTOPS_SM && t[1] == 7 && t[5] == NLP_LISTOPS_CLOSE);
    const struct nlp_span *sp = s.spans + s.examples[0].spans;
    CHECK(sp[0].start == 0 && sp[0].end == 2 && sp[4].end == 6);
    nlp_listops_free(&s);

    expect_error("0\t( ( ( ( ( [SM 6 ) 5 ) 9 ) 0 ) ] )\n3\t( ( [MIN 4 ) ] "
                 ")\n",
                 "ops.tsv:2: the answer is 3 but the expression evaluates "
                 "to 4");
    expect_error("4\t( ( ( [MIN 4 ) 7 ) ] \n", "ops.tsv:1: 1 '(' not closed");
    expect_error("4\t( ( [MIN 4 ) 7 ) ] )\n", "ops.tsv:1: token 9: ')' "
                 "without an open '('");
    expect_error("4\t( ( [MIN 4 7 ) ] )\n", "ops.tsv:1: token 6: a bracket "
                 "of 3 parts");
    expect_error("4\t( ( ( [MIN 4 ) 7 ) ] )\n\n", "ops.tsv:2: empty line");
    expect_error("4 ( ( ( [MIN 4 ) 7 ) ] )\n", "ops.tsv:1: expected 2 "
                 "tab-separated fields");
    expect_error("4\t( ( ( [MIN 4 ) 7 ) ] )\tx\n", "expected 2 "
                 "tab-separated fields");
    expect_error("10\t( ( ( [MIN 4 ) 7 ) ] )\n", "ops.tsv:1: the answer "
                 "'10' is not one digit");
    expect_error("4\t( ( ( [MIN 4 ) x ) ] )\n", "ops.tsv:1: token 7: "
                 "unknown token 'x'");
    expect_error("4\t( ( ( [FIRST 4 ) 7 ) ] )\n", "ops.tsv:1: token 4 "
                 "'[FIRST': operator without defined semantics");
    expect_error("4\t4 5\n", "ops.tsv:1: 2 items at the top level");
}

static void test_generator(void)
{
    struct nlp_listops_set a, b, c;
    struct nlp_listops_gen_stats st;
    CHECK(nlp_listops_generate(&a, 5000, 11, NLP_LISTOPS_MAX_DEPTH, &st) == 0);
    CHECK(nlp_listops_generate(&b, 5000, 11, NLP_LISTOPS_MAX_DEPTH, NULL) == 0);
    CHECK(nlp_listops_generate(&c, 5000, 12, NLP_LISTOPS_MAX_DEPTH, NULL) == 0);
    CHECK(a.n == 5000 && st.draws == 5000 + st.duplicates);
    /* a bare digit is drawn 3/4 of the time, only 10 are distinct */
    CHECK(st.duplicates > 5000 && a.n_bare <= 10);
    CHECK(a.n_tokens == b.n_tokens &&
          memcmp(a.tokens, b.tokens, a.n_tokens) == 0);
    CHECK(a.n_tokens != c.n_tokens ||
          memcmp(a.tokens, c.tokens, a.n_tokens) != 0);
    /* §2.5's shape: 2-5 arguments per list, depth <= 19, operators about
     * uniform, the recursive evaluator agrees */
    int64_t ops[NLP_LISTOPS_VOCAB] = {0}, total = 0;
    int shape = 1, agree = 1, max_depth = 0;
    for (int32_t i = 0; i < a.n; i++) {
        const struct nlp_listops_example *e = &a.examples[i];
        const uint8_t *t = a.tokens + e->tokens;
        int32_t args[32] = {0}, ns = 0, pos = 0;
        for (int32_t j = 0; j < e->n_tokens; j++) {
            ops[t[j]]++;
            if (t[j] >= NLP_LISTOPS_MIN && t[j] <= NLP_LISTOPS_FLSUM) {
                args[ns++] = 0;
                continue;
            }
            if (t[j] == NLP_LISTOPS_CLOSE) {
                shape &= args[--ns] >= 2 && args[ns] <= 5;
            }
            if (ns > 0) {
                args[ns - 1]++;
            }
        }
        total += e->n_tokens;
        max_depth = e->depth > max_depth ? e->depth : max_depth;
        agree &= rec_eval(t, e->n_tokens, &pos) == e->answer;
    }
    CHECK(shape && agree && max_depth <= 19 && max_depth >= 5);
    int64_t lists = ops[NLP_LISTOPS_MIN] + ops[NLP_LISTOPS_MAX] +
                    ops[NLP_LISTOPS_MED] + ops[NLP_LISTOPS_SM];
    CHECK(ops[NLP_LISTOPS_FIRST] == 0 && lists == ops[NLP_LISTOPS_CLOSE]);
    for (int op = NLP_LISTOPS_MIN; op <= NLP_LISTOPS_SM; op++) {
        if (op == NLP_LISTOPS_FIRST || op == NLP_LISTOPS_LAST) {
            continue;
        }
        CHECK_MSG(ops[op] > lists / 5 && ops[op] < lists * 3 / 10, "%s %lld",
                  nlp_listops_token_name(op), (long long)ops[op]);
    }
    /* §2.5: the reference's trees average 39.9 tokens (its 20,000 draws),
     * 10.0 % of them longer than 100; the released test file 42.8 and
     * 10.7 %, and its answers 0:1127 .. 9:1141 of 10,000 */
    double mean = (double)total / a.n;
    CHECK_MSG(mean > 30.0 && mean < 52.0, "mean length %.1f", mean);
    static const int32_t released[10] = {1127, 1038, 967, 978, 991,
                                         969,  895,  930, 964, 1141};
    int32_t ans[10] = {0}, over100 = 0;
    for (int32_t i = 0; i < a.n; i++) {
        ans[a.examples[i].answer]++;
        over100 += a.examples[i].n_tokens > 100;
    }
    for (int d = 0; d < 10; d++) {
        double p = (double)ans[d] / a.n, q = released[d] / 10000.0;
        CHECK_MSG(fabs(p - q) < 0.025, "answer %d: %.3f generated, %.3f "
                  "released", d, p, q);
    }
    CHECK_MSG(over100 > a.n * 7 / 100 && over100 < a.n * 14 / 100,
              "%d of %d longer than 100 tokens", over100, a.n);

    /* written, then read back: the same tokens, answers and trees */
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    for (int32_t i = 0; i < a.n; i++) {
        nlp_listops_write(fp, &a, i);
    }
    fclose(fp);
    struct nlp_listops_set r;
    CHECK_MSG(nlp_listops_read_text(&r, buf, len, "gen.tsv") == 0, "%s",
              gr_last_error());
    CHECK(r.n == a.n && r.n_tokens == a.n_tokens && r.n_spans == a.n_spans &&
          memcmp(r.tokens, a.tokens, a.n_tokens) == 0 &&
          memcmp(r.spans, a.spans, a.n_spans * sizeof *a.spans) == 0);
    int answers = 1;
    for (int32_t i = 0; i < r.n; i++) {
        answers &= r.examples[i].answer == a.examples[i].answer;
    }
    CHECK(answers);
    free(buf);
    nlp_listops_free(&r);
    nlp_listops_free(&a);
    nlp_listops_free(&b);
    nlp_listops_free(&c);

    /* depth 1 allows only bare digits: 10 distinct, an 11th is an error */
    CHECK(nlp_listops_generate(&a, 10, 1, 1, NULL) == 0 && a.n_bare == 10);
    nlp_listops_free(&a);
    CHECK(nlp_listops_generate(&a, 11, 1, 1, NULL) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "only 10 distinct trees");

    /* the hold-out: a permutation, fixed by its seed */
    int32_t p1[1000], p2[1000], p3[1000], seen[1000] = {0};
    nlp_listops_holdout(1000, 5, p1);
    nlp_listops_holdout(1000, 5, p2);
    nlp_listops_holdout(1000, 6, p3);
    int perm = 1;
    for (int i = 0; i < 1000; i++) {
        perm &= p1[i] >= 0 && p1[i] < 1000 && !seen[p1[i]];
        seen[p1[i]] = 1;
    }
    CHECK(perm && memcmp(p1, p2, sizeof p1) == 0 &&
          memcmp(p1, p3, sizeof p1) != 0);
}

static void test_released(const char *dir)
{
    char path[GR_PATH_MAX];
    snprintf(path, sizeof path, "%s/test_d20s.tsv", dir);
    struct nlp_listops_set s;
    int rc = nlp_listops_read_file(&s, path);
    CHECK_MSG(rc == 0, "%s", gr_last_error());
    if (rc < 0) {
        return;
    }
    CHECK(s.n == 10000 && s.n_bare == 1 && s.max_tokens == 939);
    static const int32_t want_answers[10] = {1127, 1038, 967, 978, 991,
                                             969,  895,  930, 964, 1141};
    int32_t answers[10] = {0}, over50 = 0, over100 = 0, deepest = 0;
    int64_t ops[NLP_LISTOPS_VOCAB] = {0}, total = 0;
    int32_t agree = 0, trees = 0;
    struct nlp_span *sp = malloc(1000 * sizeof *sp);
    for (int32_t i = 0; i < s.n; i++) {
        const struct nlp_listops_example *e = &s.examples[i];
        const uint8_t *t = s.tokens + e->tokens;
        int32_t pos = 0;
        agree += rec_eval(t, e->n_tokens, &pos) == e->answer;
        answers[e->answer]++;
        over50 += e->n_tokens > 50;
        over100 += e->n_tokens > 100;
        deepest += e->depth == 19;
        total += e->n_tokens;
        for (int32_t j = 0; j < e->n_tokens; j++) {
            ops[t[j]]++;
        }
        int32_t m = nlp_listops_tree(t, e->n_tokens, sp);
        trees += m == e->n_tokens - 1 &&
                 memcmp(sp, s.spans + e->spans, (size_t)m * sizeof *sp) == 0;
    }
    free(sp);
    CHECK_MSG(agree == 10000, "%d answers agree", agree);
    CHECK_MSG(trees == 10000, "%d bracketings are the §2.3 tree", trees);
    for (int d = 0; d < 10; d++) {
        CHECK(answers[d] == want_answers[d]);
    }
    CHECK(over50 == 2034 && over100 == 1067 && deepest == 324);
    CHECK(ops[NLP_LISTOPS_MIN] == 23258 && ops[NLP_LISTOPS_MAX] == 22972 &&
          ops[NLP_LISTOPS_MED] == 22957 && ops[NLP_LISTOPS_SM] == 22956);
    CHECK_MSG(total * 10 / 10000 == 428, "mean %.2f", total / 10000.0);

    /* the writer gives the file back byte for byte */
    char *text = NULL, *buf = NULL;
    size_t size = 0, len = 0;
    CHECK(gr_read_file(path, (size_t)1 << 30, &text, &size) == 0);
    FILE *fp = open_memstream(&buf, &len);
    for (int32_t i = 0; i < s.n; i++) {
        nlp_listops_write(fp, &s, i);
    }
    fclose(fp);
    CHECK_MSG(len == size && memcmp(text, buf, len) == 0,
              "written %zu bytes, file %zu", len, size);
    free(text);
    free(buf);
    nlp_listops_free(&s);
}

static int read_mutated(const char *text, size_t n, const char *name,
                        int *bad)
{
    struct nlp_listops_set s;
    int rc = nlp_listops_read_text(&s, text, n, name);
    if (rc == 0) {
        for (int32_t i = 0; i < s.n; i++) {
            int v = -1;
            const struct nlp_listops_example *x = &s.examples[i];
            *bad += nlp_listops_eval(s.tokens + x->tokens, x->n_tokens, &v,
                                     NULL) != 0 || v != x->answer;
        }
        nlp_listops_free(&s);
    }
    return rc;
}

/* Mutated copies of a valid text, read or refused with the file and the
 * line named (tests/nlp/mutations.h). */
static void test_mutations(void)
{
    static const char base[] = "0\t( ( ( ( ( [SM 6 ) 5 ) 9 ) 0 ) ] )\n"
        "9\t( ( ( ( [MAX 2 ) ( ( ( [MIN 4 ) 7 ) ] ) ) 9 ) ] )\n"
        "4\t4\n";
    static const char alphabet[] = "( )\t\n[MINAXSED]0123456789 ";
    mut_check(base, alphabet, "m.tsv", read_mutated);
}

int main(int argc, char **argv)
{
    test_semantics();
    test_tree();
    test_reader();
    test_generator();
    test_mutations();
    struct stat st;
    if (argc > 1 && stat(argv[1], &st) == 0) {
        test_released(argv[1]);
    } else {
        printf("nlp_listops: data absent (%s): released-file checks "
               "skipped\n", argc > 1 ? argv[1] : "no path");
    }
    return test_report("nlp_listops");
}
