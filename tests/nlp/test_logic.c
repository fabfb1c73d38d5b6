/* Logical inference (formal_tasks.md §1): the grammar, denotations and the
 * relation table on hand-made formulas (checked against truth tables
 * written out here), gold trees, malformed lines naming file and line, the
 * split patterns, the generator's rules and determinism, and on the
 * released files: the labeller reproduces the label of every one of the
 * 249,069 pairs, the per-k line counts of §1.4, the label counts and the
 * 135,529 / 13,552 / 121,977 protocol of §1.5, the split sizes A/B/C and
 * their per-k test counts of §1.6, and the gold trees against the
 * bracketing of every test expression.
 *
 *   test_nlp_logic LOGIC_DIR   (data checks skipped when absent)
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/random.h"
#include "nlp/data/logic.h"
#include "tests/test.h"
#include "tests/nlp/mutations.h"

/* Tokens of a space-separated expression (test helper, no checks). */
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
            out[n++] = (uint8_t)nlp_logic_token_id(p, (size_t)(q - p));
        }
        p = q;
    }
    return n;
}

static uint64_t den(const char *text)
{
    uint8_t t[256];
    struct nlp_logic_expr e;
    int32_t n = toks(text, t);
    if (nlp_logic_parse(t, n, &e, NULL) < 0) {
        fprintf(stderr, "parse failed: %s: %s\n", text, gr_last_error());
        return 0;
    }
    return e.denotation;
}

static int bit(int w, char v)
{
    return (w >> (v - 'a')) & 1;
}

static void test_denotations(void)
{
    /* truth tables written out per world */
    uint64_t want1 = 0, want2 = 0, want3 = 0;
    for (int w = 0; w < 64; w++) {
        if ((bit(w, 'f') | bit(w, 'd')) & bit(w, 'd')) {
            want1 |= (uint64_t)1 << w;
        }
        if (bit(w, 'e') | !bit(w, 'a')) {
            want2 |= (uint64_t)1 << w;
        }
        if (!bit(w, 'e') && bit(w, 'a')) {
            want3 |= (uint64_t)1 << w;
        }
    }
    CHECK_EQ_U64(den("( ( f ( or d ) ) ( and d ) )"), want1);
    CHECK_EQ_U64(den("( e ( or ( not a ) ) )"), want2);
    CHECK_EQ_U64(den("( ( not e ) ( and a ) )"), want3);
    CHECK_EQ_U64(den("c"), 0xF0F0F0F0F0F0F0F0ull); /* bit 2 of w */
    /* train2 line 2: `^` (x = ¬y here) */
    CHECK(nlp_logic_relation(want2, want3) == NLP_LOGIC_NEGATION);
    /* train2 line 1: e vs (f or d) and d = d  -> independent */
    CHECK(nlp_logic_relation(den("e"), want1) == NLP_LOGIC_INDEPENDENT);

    struct {
        const char *x, *y;
        int rel;
    } cases[] = {
        {"a", "a", NLP_LOGIC_EQUIVALENT},
        {"( a ( and b ) )", "a", NLP_LOGIC_FORWARD},
        {"a", "( a ( and b ) )", NLP_LOGIC_REVERSE},
        {"a", "( not a )", NLP_LOGIC_NEGATION},
        {"( a ( and b ) )", "( not a )", NLP_LOGIC_ALTERNATION},
        {"a", "( not ( a ( and b ) ) )", NLP_LOGIC_COVER},
        {"a", "b", NLP_LOGIC_INDEPENDENT},
        {"( a ( or b ) )", "( not ( a ( or b ) ) )", NLP_LOGIC_NEGATION},
        {"( not ( not a ) )", "a", NLP_LOGIC_EQUIVALENT},
        {"( a ( and ( not a ) ) )", "b", -1}, /* contradiction */
        {"b", "( a ( or ( not a ) ) )", -1},  /* tautology */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int r = nlp_logic_relation(den(cases[i].x), den(cases[i].y));
        CHECK_MSG(r == cases[i].rel, "%s vs %s: %d, want %d", cases[i].x,
                  cases[i].y, r, cases[i].rel);
    }
    for (int r = 0; r < NLP_LOGIC_N_RELATIONS; r++) {
        char sym = nlp_logic_relation_symbol(r);
        CHECK(nlp_logic_relation_id(&sym, 1) == r);
    }
    CHECK(strcmp("<>=^|#v", "<>=^|#v") == 0 &&
          nlp_logic_relation_symbol(0) == '<' &&
          nlp_logic_relation_symbol(6) == 'v');
    CHECK(nlp_logic_k(3, 14) == 12 && nlp_logic_k(4, 2) == 4);
}

static int has(const struct nlp_span *s, int32_t n, int a, int b)
{
    for (int32_t i = 0; i < n; i++) {
        if (s[i].start == a && s[i].end == b) {
            return 1;
        }
    }
    return 0;
}

static void test_gold_tree(void)
{
    /* ( ( f ( or d ) ) ( and d ) ): words f or d and d ->
     * [[f, [or, d]], [and, d]] */
    uint8_t t[64];
    struct nlp_span sp[16];
    struct nlp_logic_expr e;
    int32_t n = toks("( ( f ( or d ) ) ( and d ) )", t);
    CHECK(nlp_logic_parse(t, n, &e, sp) == 0);
    CHECK(e.n_words == 5 && e.ops == 2);
    CHECK(sp[0].start == 0 && sp[0].end == 5); /* root first */
    CHECK(has(sp, 4, 0, 3) && has(sp, 4, 1, 3) && has(sp, 4, 3, 5));
    n = toks("( not ( e ( or ( not a ) ) ) )", t);
    CHECK(nlp_logic_parse(t, n, &e, sp) == 0);
    /* words: not e or not a -> [not, [e, [or, [not, a]]]] */
    CHECK(e.n_words == 5 && e.ops == 3);
    CHECK(has(sp, 4, 0, 5) && has(sp, 4, 1, 5) && has(sp, 4, 2, 5) &&
          has(sp, 4, 3, 5));
    n = toks("b", t);
    CHECK(nlp_logic_parse(t, n, &e, sp) == 0 && e.n_words == 1 && e.ops == 0);

    /* grammar violations, with the token named */
    static const char *const bad[] = {
        "( a ( and b ) ", "( a and b )", "( not a b )", "a b",
        "( a ( not b ) )", ")", "( ( a ) ( and b ) )"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        n = toks(bad[i], t);
        int rc = nlp_logic_parse(t, n, &e, sp);
        CHECK_MSG(rc == GR_EFORMAT, "'%s' accepted", bad[i]);
        CHECK_STR_CONTAINS(gr_last_error(), "token");
    }
}

/* Reads `text` and expects an error containing `want`. */
static void expect_error(const char *text, const char *want)
{
    struct nlp_logic_set s;
    nlp_logic_set_init(&s);
    int rc = nlp_logic_read_text(&s, text, strlen(text), "pairs.tsv");
    CHECK_MSG(rc == GR_EFORMAT, "accepted: %s", text);
    CHECK_MSG(strstr(gr_last_error(), want) != NULL, "'%s' lacks '%s'",
              gr_last_error(), want);
    CHECK(s.n == 0 && s.n_files == 0 && s.n_tokens == 0);
    nlp_logic_set_free(&s);
}

static void test_reader(void)
{
    const char *good = "#\te\t( ( f ( or d ) ) ( and d ) )\n"
                       "^\t( e ( or ( not a ) ) )\t( ( not e ) ( and a ) )\r\n"
                       "<\t( a ( and b ) )\ta";  /* no final newline */
    struct nlp_logic_set s;
    nlp_logic_set_init(&s);
    CHECK_MSG(nlp_logic_read_text(&s, good, strlen(good), "hand") == 0, "%s",
              gr_last_error());
    CHECK(s.n == 3 && s.n_differ == 0 && s.n_files == 1);
    CHECK(s.pairs[0].label == NLP_LOGIC_INDEPENDENT && s.pairs[0].k == 2);
    CHECK(s.pairs[1].label == NLP_LOGIC_NEGATION && s.pairs[1].k == 2);
    CHECK(s.pairs[2].line == 3 && s.pairs[2].n_left == 7 &&
          s.pairs[2].n_right == 1);
    /* a wrong label is read, and counted */
    const char *wrong = "<\ta\t( a ( and b ) )\n"; /* it is > */
    CHECK(nlp_logic_read_text(&s, wrong, strlen(wrong), "wrong") == 0);
    CHECK(s.n == 4 && s.n_differ == 1 &&
          s.pairs[3].label == NLP_LOGIC_FORWARD &&
          s.pairs[3].computed == NLP_LOGIC_REVERSE);

    /* write and read back */
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    for (int32_t i = 0; i < 3; i++) {
        CHECK(nlp_logic_write_pair(fp, &s, i) == 0);
    }
    fclose(fp);
    CHECK(strncmp(buf, "#\te\t( ( f ( or d ) ) ( and d ) )\n^\t( e ( or ( not "
                  "a ) ) )\t( ( not e ) ( and a ) )\n<\t( a ( and b ) )\ta\n",
                  len) == 0);
    free(buf);
    nlp_logic_set_free(&s);

    expect_error("#\ta\tb\n=\ta\n", "pairs.tsv:2: 2 tab-separated fields");
    expect_error("#\ta\tb\tc\n", "pairs.tsv:1: 4 tab-separated fields");
    expect_error("#\ta\tb\n\n#\ta\tb\n", "pairs.tsv:2: empty line");
    expect_error("x\ta\tb\n", "pairs.tsv:1: unknown relation 'x'");
    expect_error("#\ta\tb\n#\ta\t( g ( and b ) )\n",
                 "pairs.tsv:2: right expression, token 2: unknown token 'g'");
    expect_error("#\t( a ( and b )\tb\n",
                 "pairs.tsv:1: left expression: the expression ends early");
    expect_error("#\t( a ( xor b ) )\tb\n", "unknown token 'xor'");
    expect_error("#\t\tb\n", "pairs.tsv:1: the left expression is empty");
}

static void test_split_patterns(void)
{
    const char *text = "#\t( e ( and ( not a ) ) )\tb\n"  /* A, B, C */
                       "#\tb\t( e ( and ( not b ) ) )\n"  /* B, C */
                       "#\t( e ( or ( not b ) ) )\tb\n"   /* C */
                       "#\t( ( not a ) ( and e ) )\tb\n"  /* none */
                       "#\t( e ( and ( not ( a ( or b ) ) ) ) )\tb\n"; /* B C */
    struct nlp_logic_set s;
    nlp_logic_set_init(&s);
    CHECK(nlp_logic_read_text(&s, text, strlen(text), "p") == 0);
    static const int want[5][4] = {
        {0, 1, 1, 1}, {0, 0, 1, 1}, {0, 0, 0, 1}, {0, 0, 0, 0}, {0, 0, 1, 1}};
    for (int i = 0; i < 5; i++) {
        for (int sp = 0; sp < NLP_LOGIC_N_SPLITS; sp++) {
            CHECK_MSG(nlp_logic_pair_matches(&s, i, sp) == want[i][sp],
                      "pair %d split %s", i, nlp_logic_split_name(sp));
        }
    }
    enum nlp_logic_split sp;
    CHECK(nlp_logic_split_parse("b", &sp) == 0 && sp == NLP_LOGIC_SPLIT_B);
    CHECK(nlp_logic_split_parse("full", &sp) == 0 && sp == NLP_LOGIC_SPLIT_FULL);
    CHECK(nlp_logic_split_parse("D", &sp) == GR_EINVAL);
    nlp_logic_set_free(&s);
}

static void test_generator(void)
{
    struct nlp_logic_set a, b;
    nlp_logic_set_init(&a);
    nlp_logic_set_init(&b);
    struct nlp_logic_gen_stats st;
    CHECK(nlp_logic_generate(&a, 3000, 1, 12, 7, &st) == 0);
    CHECK(nlp_logic_generate(&b, 3000, 1, 12, 7, NULL) == 0);
    CHECK(a.n == 3000 && b.n == 3000 && a.n_tokens == b.n_tokens);
    CHECK(memcmp(a.tokens, b.tokens, a.n_tokens) == 0);
    CHECK(st.draws == 3000 + st.degenerate + st.out_of_range + st.duplicates);
    CHECK(st.degenerate > 0 && st.out_of_range > 0);
    int same_labels = 1;
    for (int32_t i = 0; i < a.n; i++) {
        same_labels &= a.pairs[i].label == b.pairs[i].label;
    }
    CHECK(same_labels);

    /* other seed, other pairs */
    struct nlp_logic_set c;
    nlp_logic_set_init(&c);
    CHECK(nlp_logic_generate(&c, 3000, 1, 12, 8, NULL) == 0);
    CHECK(c.n_tokens != a.n_tokens ||
          memcmp(a.tokens, c.tokens, a.n_tokens) != 0);
    nlp_logic_set_free(&c);

    /* §1.7's rules on every pair: at most 4 variables in a pair; at most
     * three nested binary levels; k in range; no degenerate side */
    int32_t rel_count[NLP_LOGIC_N_RELATIONS] = {0}, k_count[NLP_LOGIC_N_K] = {0};
    int rules = 1;
    for (int32_t i = 0; i < a.n; i++) {
        const struct nlp_logic_pair *p = &a.pairs[i];
        unsigned vars = 0;
        for (int side = 0; side < 2; side++) {
            const uint8_t *t = a.tokens + (side ? p->right : p->left);
            int32_t n = side ? p->n_right : p->n_left, leaves = 0, bin = 0;
            int32_t nots = 0;
            for (int32_t j = 0; j < n; j++) {
                if (t[j] >= NLP_LOGIC_VAR_A && t[j] < NLP_LOGIC_VAR_A + 6) {
                    vars |= 1u << (t[j] - NLP_LOGIC_VAR_A);
                    leaves++;
                }
                bin += t[j] == NLP_LOGIC_AND || t[j] == NLP_LOGIC_OR;
                nots += t[j] == NLP_LOGIC_NOT;
            }
            /* budgets 12 -> 6 -> 3 -> 1: at most 1 + 2 + 4 binary nodes,
             * 8 leaves, one negation per node */
            rules &= bin <= 7 && leaves == bin + 1 && nots <= 2 * bin + 1;
        }
        rules &= __builtin_popcount(vars) <= 4;
        rules &= p->k >= 1 && p->k <= 12;
        rules &= p->computed == p->label && p->label >= 0;
        rules &= p->ops_left <= 22 && p->ops_right <= 22;
        rel_count[p->label]++;
        k_count[p->k]++;
    }
    CHECK(rules);
    for (int r = 0; r < NLP_LOGIC_N_RELATIONS; r++) {
        CHECK_MSG(rel_count[r] > 0, "no relation %c", nlp_logic_relation_symbol(r));
    }
    /* independence dominates as in the files (§1.5: 54 %) */
    CHECK(rel_count[NLP_LOGIC_INDEPENDENT] > a.n / 3);
    CHECK(k_count[0] == 0 && k_count[12] > 0);

    /* the written file is accepted by the reader, every label the
     * labeller's, line for line the same pairs */
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    for (int32_t i = 0; i < a.n; i++) {
        nlp_logic_write_pair(fp, &a, i);
    }
    fclose(fp);
    struct nlp_logic_set r;
    nlp_logic_set_init(&r);
    CHECK_MSG(nlp_logic_read_text(&r, buf, len, "gen.tsv") == 0, "%s",
              gr_last_error());
    CHECK(r.n == a.n && r.n_differ == 0 && r.n_tokens == a.n_tokens &&
          memcmp(r.tokens, a.tokens, a.n_tokens) == 0);
    /* no line twice */
    int dup = 0;
    for (int32_t i = 0; i + 1 < r.n && !dup; i++) {
        for (int32_t j = i + 1; j < r.n; j++) {
            const struct nlp_logic_pair *p = &r.pairs[i], *q = &r.pairs[j];
            if (p->n_left == q->n_left && p->n_right == q->n_right &&
                memcmp(r.tokens + p->left, r.tokens + q->left, p->n_left) == 0 &&
                memcmp(r.tokens + p->right, r.tokens + q->right, p->n_right) ==
                    0) {
                dup = 1;
                break;
            }
        }
    }
    CHECK(!dup);
    free(buf);
    nlp_logic_set_free(&r);
    nlp_logic_set_free(&a);
    nlp_logic_set_free(&b);

    /* k = 0 pairs are two bare variables: exactly 36 distinct ones exist */
    struct nlp_logic_set z;
    nlp_logic_set_init(&z);
    CHECK(nlp_logic_generate(&z, 36, 0, 0, 3, NULL) == 0 && z.n == 36);
    CHECK(nlp_logic_generate(&z, 1, 0, 0, 3, NULL) == 0 && z.n == 37);
    nlp_logic_set_free(&z);
    nlp_logic_set_init(&z);
    CHECK(nlp_logic_generate(&z, 37, 0, 0, 3, NULL) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "only 36 distinct pairs");
    CHECK(z.n == 0 && z.n_files == 0);
    CHECK(nlp_logic_generate(&z, 5, 4, 3, 3, NULL) == GR_EINVAL);
    /* a narrow range: every pair has k = 12 */
    CHECK(nlp_logic_generate(&z, 50, 12, 12, 5, NULL) == 0 && z.n == 50);
    int all12 = 1;
    for (int32_t i = 0; i < z.n; i++) {
        all12 &= z.pairs[i].k == 12;
    }
    CHECK(all12);
    nlp_logic_set_free(&z);
}

/* ---- the generator against the released files' statistics ------------- */

static const int32_t train_lines[13];
static const int32_t test_lines[13];

/* The reference drew 500,000 non-degenerate pairs and kept 249,069 distinct
 * ones (§1.7, §1.4). Drawing with grove's generator until 249,069 distinct
 * pairs must take about 500,000 non-degenerate draws, and give each k about
 * the released count (two realisations of one process: a difference of
 * a few sqrt(2 n_k) at most). A generator with another P(binary), negation
 * rate, budget halving or variable choice misses both by far. */
static void test_generator_fidelity(void)
{
    struct nlp_logic_set s;
    nlp_logic_set_init(&s);
    struct nlp_logic_gen_stats st;
    int rc = nlp_logic_generate(&s, 249069, 0, 12, 1, &st);
    CHECK_MSG(rc == 0, "%s", gr_last_error());
    if (rc < 0) {
        return;
    }
    int64_t kept = st.draws - st.degenerate;
    CHECK_MSG(kept > 495000 && kept < 505000, "%lld non-degenerate draws "
              "for 249,069 distinct pairs (the reference: 500,000)",
              (long long)kept);
    int32_t per_k[13] = {0};
    for (int32_t i = 0; i < s.n; i++) {
        per_k[s.pairs[i].k]++;
    }
    for (int k = 0; k < 13; k++) {
        double want = train_lines[k] + test_lines[k];
        double tol = 6.0 * sqrt(2.0 * want) + 2.0;
        CHECK_MSG(fabs(per_k[k] - want) <= tol, "k = %d: %d pairs, the "
                  "released files %.0f (tolerance %.0f)", k, per_k[k], want,
                  tol);
    }
    nlp_logic_set_free(&s);
}

/* ---- the released files ---------------------------------------------- */

static const int32_t train_lines[13] = {30,    2319,  12451, 23252, 30373,
                                        34152, 32952, 26671, 18962, 12634,
                                        8181,  4894,  4831};
static const int32_t test_lines[13] = {6,    410,  2198, 4104, 5361,
                                       6027, 5816, 4707, 3347, 2230,
                                       1444, 864,  853};
/* §1.6: test pairs containing each split's pattern, k = 0..12 */
static const int32_t split_test[4][13] = {
    {0},
    {0, 0, 26, 132, 209, 313, 423, 373, 319, 232, 196, 114, 135},
    {0, 0, 193, 839, 1673, 2549, 3033, 2851, 2275, 1593, 1118, 681, 739},
    {0, 0, 349, 1629, 3156, 4387, 4954, 4293, 3170, 2163, 1425, 857, 849}};
static const int32_t split_pool[4] = {135529, 128969, 87948, 51896};

/* The spans of every paren group over the non-paren tokens: an independent
 * reading of §1.2's gold tree. Returns the count. */
static int32_t group_spans(const uint8_t *t, int32_t n, struct nlp_span *out)
{
    int32_t stack[NLP_LOGIC_MAX_TOKENS], ns = 0, w = 0, k = 0;
    for (int32_t i = 0; i < n; i++) {
        if (t[i] == NLP_LOGIC_LPAREN) {
            stack[ns++] = w;
        } else if (t[i] == NLP_LOGIC_RPAREN) {
            out[k].start = stack[--ns];
            out[k++].end = w;
        } else {
            w++;
        }
    }
    return k;
}

static void test_released(const char *dir)
{
    struct nlp_logic_data d;
    int rc = nlp_logic_load(&d, dir, NLP_LOGIC_SPLIT_FULL, 12);
    CHECK_MSG(rc == 0, "%s", gr_last_error());
    if (rc < 0) {
        return;
    }
    /* every pair of the 26 files: the labeller gives the file's label */
    CHECK(d.train.n == 211702 && d.test.n == 37367);
    CHECK_MSG(d.train.n_differ == 0 && d.test.n_differ == 0,
              "%d train and %d test labels differ", d.train.n_differ,
              d.test.n_differ);
    int32_t per_k[2][13] = {{0}};
    int32_t train_labels[7] = {0};
    int maxlen = 0;
    for (int32_t i = 0; i < d.train.n; i++) {
        const struct nlp_logic_pair *p = &d.train.pairs[i];
        maxlen = p->n_left > maxlen ? p->n_left : maxlen;
        maxlen = p->n_right > maxlen ? p->n_right : maxlen;
        per_k[0][d.train.pairs[i].k]++;
        if (d.train.pairs[i].k <= 6) {
            train_labels[d.train.pairs[i].label]++;
        }
    }
    for (int32_t i = 0; i < d.test.n; i++) {
        const struct nlp_logic_pair *p = &d.test.pairs[i];
        per_k[1][p->k]++;
        maxlen = p->n_left > maxlen ? p->n_left : maxlen;
        maxlen = p->n_right > maxlen ? p->n_right : maxlen;
    }
    for (int k = 0; k < 13; k++) {
        CHECK_MSG(per_k[0][k] == train_lines[k], "train%d: %d", k, per_k[0][k]);
        CHECK_MSG(per_k[1][k] == test_lines[k], "test%d: %d", k, per_k[1][k]);
        CHECK(d.n_test[k] == test_lines[k]);
    }
    /* §1.5 labels of train0-6: # 73,514 < 14,382 > 14,512 v 13,875
     * | 13,835 = 2,817 ^ 2,594 */
    CHECK(train_labels[NLP_LOGIC_INDEPENDENT] == 73514);
    CHECK(train_labels[NLP_LOGIC_FORWARD] == 14382);
    CHECK(train_labels[NLP_LOGIC_REVERSE] == 14512);
    CHECK(train_labels[NLP_LOGIC_COVER] == 13875);
    CHECK(train_labels[NLP_LOGIC_ALTERNATION] == 13835);
    CHECK(train_labels[NLP_LOGIC_EQUIVALENT] == 2817);
    CHECK(train_labels[NLP_LOGIC_NEGATION] == 2594);

    /* gold trees of every test expression against its bracketing */
    struct nlp_span a[NLP_LOGIC_MAX_TOKENS], b[NLP_LOGIC_MAX_TOKENS];
    int32_t trees_ok = 0;
    for (int32_t i = 0; i < d.test.n; i++) {
        const struct nlp_logic_pair *p = &d.test.pairs[i];
        for (int side = 0; side < 2; side++) {
            const uint8_t *t = d.test.tokens + (side ? p->right : p->left);
            int32_t n = side ? p->n_right : p->n_left;
            struct nlp_logic_expr e;
            if (nlp_logic_parse(t, n, &e, a) < 0) {
                continue;
            }
            int32_t m = group_spans(t, n, b), ok = m == e.n_words - 1;
            for (int32_t j = 0; ok && j < m; j++) {
                ok = has(a, m, b[j].start, b[j].end);
            }
            ok &= m == 0 || (a[0].start == 0 && a[0].end == e.n_words);
            trees_ok += ok;
        }
    }
    CHECK_MSG(trees_ok == 2 * d.test.n, "%d of %d trees", trees_ok,
              2 * d.test.n);
    CHECK_MSG(maxlen == 79, "longest %d", maxlen); /* §1.4 */
    nlp_logic_data_free(&d);

    /* the protocol and the splits (train0-6) */
    for (int sp = 0; sp < NLP_LOGIC_N_SPLITS; sp++) {
        rc = nlp_logic_load(&d, dir, (enum nlp_logic_split)sp, 6);
        CHECK_MSG(rc == 0, "%s", gr_last_error());
        if (rc < 0) {
            continue;
        }
        CHECK(d.train.n == 135529);
        CHECK_MSG(d.n_pool == split_pool[sp], "split %s keeps %d",
                  nlp_logic_split_name(sp), d.n_pool);
        CHECK(d.n_pool + d.n_removed == 135529);
        CHECK(d.n_valid == d.n_pool / 10 &&
              d.n_train + d.n_valid == d.n_pool);
        int32_t all = 0;
        for (int k = 0; k < 13; k++) {
            int32_t want = sp == 0 ? test_lines[k] : split_test[sp][k];
            CHECK_MSG(d.n_test[k] == want, "split %s test%d: %d, want %d",
                      nlp_logic_split_name(sp), k, d.n_test[k], want);
            all += d.n_test[k];
        }
        if (sp == 0) {
            /* §1.5: validation = pool positions 10, 20, ... */
            CHECK(d.n_valid == 13552 && d.n_train == 121977);
            CHECK(d.valid_idx[0] == 9 && d.valid_idx[1] == 19 &&
                  d.train_idx[9] == 10);
            CHECK(all == 37367);
        } else {
            static const int32_t totals[4] = {0, 2472, 17544, 27232};
            CHECK(all == totals[sp]);
            /* no kept pair contains the pattern; every removed one does */
            int ok = 1;
            for (int32_t i = 0; i < d.n_train; i++) {
                ok &= !nlp_logic_pair_matches(&d.train, d.train_idx[i], sp);
            }
            CHECK(ok);
        }
        nlp_logic_data_free(&d);
    }
}

static void test_loader_errors(void)
{
    char dir[] = "/tmp/grove_logic_XXXXXX";
    if (mkdtemp(dir) == NULL) {
        CHECK(0);
        return;
    }
    char path[256];
    snprintf(path, sizeof path, "%s/train0", dir);
    FILE *fp = fopen(path, "w");
    fputs("=\ta\ta\n#\t( not a )\tb\n", fp); /* line 2 has k = 1 */
    fclose(fp);
    struct nlp_logic_data d;
    CHECK(nlp_logic_load(&d, dir, NLP_LOGIC_SPLIT_FULL, 6) == GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "train0:2: the pair has 1 and 0 "
                                        "operators (k = 1) but the file is "
                                        "train0");
    fp = fopen(path, "w");
    fputs("=\ta\ta\n", fp);
    fclose(fp);
    CHECK(nlp_logic_load(&d, dir, NLP_LOGIC_SPLIT_FULL, 6) == GR_EIO);
    CHECK_STR_CONTAINS(gr_last_error(), "train1");
    CHECK(nlp_logic_load(&d, dir, NLP_LOGIC_SPLIT_FULL, 13) == GR_EINVAL);
    unlink(path);
    rmdir(dir);
}

static int read_mutated(const char *text, size_t n, const char *name,
                        int *bad)
{
    struct nlp_logic_set s;
    nlp_logic_set_init(&s);
    int rc = nlp_logic_read_text(&s, text, n, name);
    if (rc == 0) {
        for (int32_t i = 0; i < s.n; i++) {
            *bad += s.pairs[i].k < 0 || s.pairs[i].k > 12 ||
                    s.pairs[i].computed < -1 || s.pairs[i].computed > 6;
        }
    }
    nlp_logic_set_free(&s);
    return rc;
}

/* Mutated copies of a valid text, read or refused with the file and the
 * line named (tests/nlp/mutations.h). */
static void test_mutations(void)
{
    static const char base[] = "#\te\t( ( f ( or d ) ) ( and d ) )\n"
        "^\t( e ( or ( not a ) ) )\t( ( not e ) ( and a ) )\n"
        "<\t( a ( and b ) )\ta\n";
    static const char alphabet[] = "( )\t\nabfnotrd<>=^|#v ";
    mut_check(base, alphabet, "m.tsv", read_mutated);
}

int main(int argc, char **argv)
{
    test_denotations();
    test_gold_tree();
    test_reader();
    test_split_patterns();
    test_generator();
    test_generator_fidelity();
    test_loader_errors();
    test_mutations();
    struct stat st;
    if (argc > 1 && stat(argv[1], &st) == 0) {
        test_released(argv[1]);
    } else {
        printf("nlp_logic: logic data absent (%s): released-file checks "
               "skipped\n", argc > 1 ? argv[1] : "no path");
    }
    return test_report("nlp_logic");
}
