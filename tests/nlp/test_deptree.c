/* Dependency trees (dependency_parsing.md §2-§3, issue 24 §1): the CoNLL
 * reader (columns, comments, CoNLL-U ranges, tag-column defaults, every
 * malformed line named by file and line), the Collins-rule converter on
 * hand-checked trees (NP with POS, coordination off and on, auxiliaries
 * heading VPs, -NONE- and emptied constituents, function tags), the §3
 * filtering with head climbing (a removed root included), and on NLTK's
 * treebank.zip: one tree per treebank sentence, every tree one root and
 * acyclic, kept tokens = the treebank's words, the first sentence worked
 * out by hand.
 *
 *   test_nlp_deptree TREEBANK_SAMPLE_DIR   (data part skipped, 77, if absent)
 */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/files.h"
#include "nlp/data/deptree.h"
#include "nlp/data/treebank.h"
#include "tests/test.h"

static int heads_are(const struct nlp_dep_sentence *s, const int32_t *want,
                     int32_t n)
{
    if (s->n != n) {
        fprintf(stderr, "  %d tokens, expected %d\n", s->n, n);
        return 0;
    }
    for (int32_t i = 0; i < n; i++) {
        if (s->heads[i] != want[i]) {
            fprintf(stderr, "  token %d '%s': head %d, expected %d\n", i,
                    s->forms[i], s->heads[i], want[i]);
            return 0;
        }
    }
    return 1;
}

static int convert1(struct nlp_deptrees *d, const char *tree, int coord)
{
    int rc = nlp_deps_from_text(d, tree, strlen(tree), "hand.mrg", coord);
    if (rc < 0) {
        fprintf(stderr, "  %s\n", gr_last_error());
    }
    return rc;
}

static void test_converter(void)
{
    struct nlp_deptrees d;
    /* Auxiliary heads the VP (MD before VB in the VP list); S takes VP. */
    CHECK(convert1(&d, "( (S (NP-SBJ (NNP John)) (VP (MD will) (VP (VB see)"
                       " (NP (NNP Mary)))) (. .)) )", 0) == 0);
    CHECK(d.n_sentences == 1);
    {
        const int32_t want[] = {1, 1, 1, 2, 1};
        CHECK(heads_are(&d.sentences[0], want, 5));
        CHECK(strcmp(d.sentences[0].labels[0], "S/NP") == 0);
        CHECK(strcmp(d.sentences[0].labels[1], "ROOT") == 0);
        CHECK(strcmp(d.sentences[0].labels[2], "VP/VP") == 0);
        CHECK(strcmp(d.sentences[0].labels[3], "VP/NP") == 0);
        CHECK(strcmp(d.sentences[0].labels[4], "S/.") == 0);
        CHECK(strcmp(d.sentences[0].tags[4], ".") == 0);
        CHECK(strcmp(d.sentences[0].forms[3], "Mary") == 0);
    }
    nlp_deptrees_free(&d);

    /* NP with a final POS: the POS heads the possessor NP, the noun the
     * outer NP. */
    CHECK(convert1(&d, "(NP (NP (NNP John) (POS 's)) (NN dog))", 0) == 0);
    {
        const int32_t want[] = {1, 2, 2};
        CHECK(heads_are(&d.sentences[0], want, 3));
    }
    nlp_deptrees_free(&d);

    /* Coordination: off, the rightmost noun heads; on, the head child
     * preceded by CC moves two children left. */
    const char *coord = "(NP (NNS cats) (CC and) (NNS dogs))";
    CHECK(convert1(&d, coord, 0) == 0);
    {
        const int32_t want[] = {2, 2, 2};
        CHECK(heads_are(&d.sentences[0], want, 3));
    }
    nlp_deptrees_free(&d);
    CHECK(convert1(&d, coord, 1) == 0);
    {
        const int32_t want[] = {0, 0, 0};
        CHECK(heads_are(&d.sentences[0], want, 3));
    }
    nlp_deptrees_free(&d);

    /* -NONE- deleted, the emptied NP-SBJ with it; ADVP-TMP cut to ADVP. */
    CHECK(convert1(&d, "( (S (NP-SBJ-1 (-NONE- *-1)) (VP (VBZ runs) "
                       "(ADVP-TMP (RB today)))) )", 0) == 0);
    {
        const int32_t want[] = {0, 0};
        CHECK(heads_are(&d.sentences[0], want, 2));
        CHECK(strcmp(d.sentences[0].labels[1], "VP/ADVP") == 0);
    }
    nlp_deptrees_free(&d);

    /* PP scans right to left for IN; two trees in one text. */
    CHECK(convert1(&d, "(PP (IN in) (NP (DT the) (NN house)))\n"
                       "(ADJP (NP (CD 61) (NNS years)) (JJ old))", 0) == 0);
    CHECK(d.n_sentences == 2);
    {
        const int32_t want[] = {0, 2, 0};
        CHECK(heads_are(&d.sentences[0], want, 3));
        /* ADJP: no NNS/QP/NN/$/ADVP child; JJ is next in the list. */
        const int32_t want2[] = {1, 2, 2};
        CHECK(heads_are(&d.sentences[1], want2, 3));
        CHECK(d.sentences[1].line == 2);
    }
    nlp_deptrees_free(&d);

    /* Malformed trees: a word beside subtrees, an unclosed tree. */
    const char *bad = "(S (NP (NN a)))\n\n(S (NP John\n (NN x)))";
    CHECK(nlp_deps_from_text(&d, bad, strlen(bad), "bad.mrg", 0) ==
          GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "bad.mrg:3:");
    CHECK_STR_CONTAINS(gr_last_error(), "beside subtrees");
    const char *open = "(S (NP (NN a))\n";
    CHECK(nlp_deps_from_text(&d, open, strlen(open), "open.mrg", 0) ==
          GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "open.mrg:1:");
    CHECK_STR_CONTAINS(gr_last_error(), "not closed");
}

static void test_conll(void)
{
    const char *x =
        "# a comment\n"
        "1\tThe\tthe\tDT\tDT\t_\t2\tdet\t_\t_\n"
        "2\tdog\tdog\tNN\tNN\t_\t3\tnsubj\t_\t_\n"
        "3\tbarks\tbark\tVBZ\tVBZ\t_\t0\troot\t_\t_\n"
        "4\t.\t.\t.\t.\t_\t3\tpunct\t_\t_\n"
        "\n"
        "1 Hi hi UH UH _ 0 root _ _\r\n";
    struct nlp_deptrees d;
    CHECK(nlp_conll_read_text(&d, x, strlen(x), "x.conll", 0) == 0);
    CHECK(d.n_sentences == 2);
    if (d.n_sentences == 2) {
        const int32_t want[] = {1, 2, 2, 2};
        CHECK(heads_are(&d.sentences[0], want, 4));
        CHECK(strcmp(d.sentences[0].labels[1], "nsubj") == 0);
        CHECK(strcmp(d.sentences[0].tags[2], "VBZ") == 0);
        CHECK(d.sentences[0].line == 2);
        CHECK(d.sentences[1].n == 1 && d.sentences[1].heads[0] == 0);
        CHECK(strcmp(d.sentences[1].tags[0], "UH") == 0);
    }
    nlp_deptrees_free(&d);

    /* CoNLL-U: a range line skipped, XPOS (column 5) by default, UPOS with
     * --tag-column 4. */
    const char *u =
        "# sent_id = 1\n"
        "# text = Don't go\n"
        "1-2\tDon't\t_\t_\t_\t_\t_\t_\t_\t_\n"
        "1\tDo\tdo\tAUX\tVBP\t_\t3\taux\t_\t_\n"
        "2\tn't\tnot\tPART\tRB\t_\t3\tadvmod\t_\t_\n"
        "3\tgo\tgo\tVERB\tVB\t_\t0\troot\t_\t_\n"
        "3.1\tgone\tgo\tVERB\tVB\t_\t_\t_\t_\t_\n";
    CHECK(nlp_conll_read_text(&d, u, strlen(u), "u.txt", 0) == 0);
    CHECK(d.n_sentences == 1 && d.sentences[0].n == 3);
    if (d.n_sentences == 1) {
        CHECK(strcmp(d.sentences[0].tags[0], "VBP") == 0);
        const int32_t want[] = {2, 2, 2};
        CHECK(heads_are(&d.sentences[0], want, 3));
    }
    nlp_deptrees_free(&d);
    CHECK(nlp_conll_read_text(&d, u, strlen(u), "u.txt", 4) == 0);
    CHECK(d.n_sentences == 1 && strcmp(d.sentences[0].tags[0], "AUX") == 0);
    nlp_deptrees_free(&d);
    CHECK(nlp_conll_read_text(&d, u, strlen(u), "u.txt", 11) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "--tag-column 11");

    /* Malformed lines, each named by file and line. */
    struct {
        const char *text, *where, *what;
    } bad[] = {
        {"1\ta\ta\tDT\tDT\t_\t0\troot\t_\n", "b.conll:1:", "9 columns"},
        {"1\ta\ta\tDT\tDT\t_\t0\troot\t_\t_\t_\n", "b.conll:1:",
         "more than 10 columns"},
        {"1\ta\ta\tDT\tDT\t_\t0\troot\t_\t_\n"
         "2\tb\tb\tNN\tNN\t_\tx\tdep\t_\t_\n", "b.conll:2:",
         "HEAD 'x' is not a number"},
        {"1\ta\ta\tDT\tDT\t_\t0\troot\t_\t_\n"
         "3\tb\tb\tNN\tNN\t_\t1\tdep\t_\t_\n", "b.conll:2:", "expected 2"},
        {"# c\n1\ta\ta\tDT\tDT\t_\t0\troot\t_\t_\n"
         "2\tb\tb\tNN\tNN\t_\t7\tdep\t_\t_\n", "b.conll:3:",
         "HEAD 7 is beyond"},
        {"1\ta\ta\tDT\tDT\t_\t1\troot\t_\t_\n", "b.conll:1:",
         "its own HEAD"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int rc = nlp_conll_read_text(&d, bad[i].text, strlen(bad[i].text),
                                     "b.conll", 0);
        CHECK_MSG(rc == GR_EFORMAT, "case %zu", i);
        CHECK_STR_CONTAINS(gr_last_error(), bad[i].where);
        CHECK_STR_CONTAINS(gr_last_error(), bad[i].what);
    }
    CHECK(nlp_conll_read(&d, "/nonexistent/x.conll", 0) < 0);
    CHECK_STR_CONTAINS(gr_last_error(), "/nonexistent/x.conll");
}

static void test_filter(void)
{
    /* 0 a/DT -> 2 c; 1 b/, is the root; 2 c/NN -> 1 b; 3 x/NN -> 4 y/: ->
     * 2 c; 4 y -> 2. After filtering: a -> c, c a root (its head, the
     * root, was removed), x climbs over y to c. */
    const char *x = "1\ta\t_\tDT\tDT\t_\t3\tdet\t_\t_\n"
                    "2\tb\t_\t,\t,\t_\t0\troot\t_\t_\n"
                    "3\tc\t_\tNN\tNN\t_\t2\tdep\t_\t_\n"
                    "4\tx\t_\tNN\tNN\t_\t5\tdep\t_\t_\n"
                    "5\ty\t_\t:\t:\t_\t3\tpunct\t_\t_\n"
                    "\n"
                    "1\t.\t_\t.\t.\t_\t0\troot\t_\t_\n"
                    "\n"
                    "1\ta\t_\tDT\tDT\t_\t2\tdet\t_\t_\n"
                    "2\tz\t_\tNN\tNN\t_\t0\troot\t_\t_\n"
                    "3\t.\t_\t.\t.\t_\t2\tpunct\t_\t_\n";
    struct nlp_deptrees d, k;
    CHECK(nlp_conll_read_text(&d, x, strlen(x), "f.conll", 0) == 0);
    CHECK(nlp_deps_filter(&k, &d) == 0);
    CHECK(k.n_sentences == 2 && k.n_skipped == 1);
    if (k.n_sentences == 2) {
        const int32_t want[] = {1, 1, 1};
        CHECK(heads_are(&k.sentences[0], want, 3));
        CHECK(strcmp(k.sentences[0].forms[2], "x") == 0);
        CHECK(k.sentences[0].orig[2] == 3);
        const int32_t want2[] = {1, 1};
        CHECK(heads_are(&k.sentences[1], want2, 2));
        CHECK(k.sentences[1].source == 2);
    }
    nlp_deptrees_free(&k);
    nlp_deptrees_free(&d);

    /* A removed root with two kept children: both become roots. */
    const char *y = "1\ta\t_\tNN\tNN\t_\t2\tdep\t_\t_\n"
                    "2\t:\t_\t:\t:\t_\t0\troot\t_\t_\n"
                    "3\tb\t_\tNN\tNN\t_\t2\tdep\t_\t_\n";
    CHECK(nlp_conll_read_text(&d, y, strlen(y), "y.conll", 0) == 0);
    CHECK(nlp_deps_filter(&k, &d) == 0);
    {
        const int32_t want[] = {0, 1};
        CHECK(k.n_sentences == 1 && heads_are(&k.sentences[0], want, 2));
        CHECK(k.n_multi_root == 1);
    }
    nlp_deptrees_free(&k);
    nlp_deptrees_free(&d);
}

/* Every token reaches the single root without a cycle. */
static int one_rooted_tree(const struct nlp_dep_sentence *s)
{
    int32_t roots = 0;
    for (int32_t i = 0; i < s->n; i++) {
        roots += s->heads[i] == i;
        int32_t v = i, steps = 0;
        while (s->heads[v] != v && steps++ <= s->n) {
            v = s->heads[v];
        }
        if (steps > s->n) {
            return 0;
        }
    }
    return roots == 1;
}

static void test_sample(const char *dir)
{
    char path[GR_PATH_MAX];
    CHECK(gr_path_join(path, sizeof path, dir, "treebank.zip") == 0);
    struct nlp_treebank tb;
    if (nlp_treebank_read(&tb, path) < 0) {
        CHECK_MSG(0, "%s", gr_last_error());
        return;
    }
    struct nlp_deptrees d, k;
    CHECK(nlp_deps_from_treebank(&d, &tb, 0) == 0);
    CHECK(d.n_sentences == tb.n_sentences);
    CHECK(d.n_sentences == 3914);
    int bad_tree = 0;
    for (int32_t i = 0; i < d.n_sentences; i++) {
        bad_tree += d.sentences[i].n > 0 && !one_rooted_tree(&d.sentences[i]);
    }
    CHECK_MSG(bad_tree == 0, "%d trees without exactly one root", bad_tree);
    /* The first sentence, converted by hand with the §2 table. */
    {
        const int32_t want[] = {1, 7, 1, 4, 5, 1, 1, 7, 7,
                                10, 8, 8, 14, 14, 11, 8, 15, 7};
        CHECK(heads_are(&d.sentences[0], want, 18));
        CHECK(strcmp(d.sentences[0].forms[0], "Pierre") == 0);
    }
    CHECK(nlp_deps_filter(&k, &d) == 0);
    CHECK(k.n_sentences + k.n_skipped == d.n_sentences);
    CHECK(k.n_skipped == tb.n_empty);
    /* Kept tokens are the treebank's words (which are lower-cased and have
     * digit runs as N). */
    int mismatch = 0;
    for (int32_t i = 0; i < k.n_sentences && mismatch < 3; i++) {
        const struct nlp_dep_sentence *s = &k.sentences[i];
        const struct nlp_sentence *t = &tb.sentences[s->source];
        if (s->n != t->n_words) {
            mismatch++;
            fprintf(stderr, "  sentence %d: %d kept, %d words\n", s->source,
                    s->n, t->n_words);
            continue;
        }
        for (int32_t j = 0; j < s->n; j++) {
            char norm[512];
            size_t m = 0;
            for (const char *c = s->forms[j]; *c && m + 2 < sizeof norm; c++) {
                if (isdigit((unsigned char)*c)) {
                    if (m == 0 || norm[m - 1] != 'N' ||
                        !isdigit((unsigned char)c[-1])) {
                        norm[m++] = 'N';
                    }
                } else {
                    norm[m++] = (char)tolower((unsigned char)*c);
                }
            }
            norm[m] = '\0';
            if (strcmp(norm, t->words[j]) != 0) {
                mismatch++;
                fprintf(stderr, "  sentence %d word %d: '%s' vs '%s'\n",
                        s->source, j, norm, t->words[j]);
                break;
            }
        }
    }
    CHECK(mismatch == 0);
    /* After filtering, most sentences keep one root (the original root is
     * rarely punctuation), and every one is acyclic. */
    int cyc = 0;
    for (int32_t i = 0; i < k.n_sentences; i++) {
        const struct nlp_dep_sentence *s = &k.sentences[i];
        for (int32_t j = 0; j < s->n; j++) {
            int32_t v = j, steps = 0;
            while (s->heads[v] != v && steps++ <= s->n) {
                v = s->heads[v];
            }
            cyc += steps > s->n;
        }
    }
    CHECK(cyc == 0);
    CHECK(k.n_multi_root < k.n_sentences / 100);
    printf("sample: %d trees, %d kept sentences, %d skipped, %d with "
           "several roots after filtering\n", d.n_sentences, k.n_sentences,
           k.n_skipped, k.n_multi_root);
    nlp_deptrees_free(&k);
    nlp_deptrees_free(&d);
    nlp_treebank_free(&tb);
}

int main(int argc, char **argv)
{
    test_converter();
    test_conll();
    test_filter();
    if (argc < 2 || !gr_path_exists(argv[1])) {
        test_report("nlp_deptree");
        if (test_failures) {
            return 1;
        }
        return test_skip("nlp_deptree", TEST_NEED_DATA,
                         "treebank folder %s is absent: data checks skipped",
                         argc < 2 ? "(none given)" : argv[1]);
    }
    test_sample(argv[1]);
    return test_report("nlp_deptree");
}
