/* Tree reader and preprocessing (lm_and_parsing.md §2): hand-made .mrg
 * trees with every case of §2.2 (word tags, lower-casing, digit runs,
 * -NONE-, unary chains, labels cut at - and =, the empty top bracket, an
 * empty sentence), malformed files with the line they must name, folder
 * layouts, and on the real NLTK treebank.zip the counts of §4, the first
 * tree worked out by hand and the model input through the PTB vocabulary.
 *
 *   test_nlp_treebank TREEBANK_SAMPLE_DIR PTB_DIR  (77 when absent)
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/files.h"
#include "nlp/data/corpus.h"
#include "nlp/data/treebank.h"
#include "tests/test.h"

static int has_span(const struct nlp_sentence *s, int a, int b)
{
    for (int i = 0; i < s->n_gold; i++) {
        if (s->gold[i].start == a && s->gold[i].end == b) {
            return 1;
        }
    }
    return 0;
}

static int has_item(const struct nlp_treebank *tb, const struct nlp_sentence *s,
                    const char *label, int a, int b)
{
    int32_t l = nlp_treebank_label(tb, label);
    for (int i = 0; i < s->n_labeled; i++) {
        if (s->labeled[i].label == l && s->labeled[i].start == a &&
            s->labeled[i].end == b) {
            return 1;
        }
    }
    return 0;
}

static const char *joined(const struct nlp_sentence *s, char *buf, size_t cap)
{
    buf[0] = '\0';
    for (int i = 0; i < s->n_words; i++) {
        if (i > 0) {
            strncat(buf, " ", cap - strlen(buf) - 1);
        }
        strncat(buf, s->words[i], cap - strlen(buf) - 1);
    }
    return buf;
}

static const char hand_mrg[] =
    "( (S \n"
    "    (NP-SBJ-1 (DT The) (JJ|RB odd) (NNP Co.) )\n"
    "    (VP (VBD rose) (NP (CD 1.5) (NN %) )\n"
    "      (PP-TMP=2 (IN in) (NP (DT the) (NNS 1990s) (-NONE- *T*-1) )))\n"
    "    (. .) ))\n"
    "( (S (NP-SBJ (-NONE- *) ) (VP (VB Go) ) (. !) ))\n"
    "( (INTJ (UH Oh) ) (S (NP (PRP$ our) ($ $) (NNS plans) ) ) )\n"
    "((FRAG (, ,) (-NONE- *U*) ))\n"
    "(S (NP (NP (NN a) ) (SBAR (-NONE- 0) ) ) (VP (VBZ is) ))\n";

static void test_hand_trees(void)
{
    struct nlp_treebank tb;
    int rc = nlp_treebank_read_text(&tb, hand_mrg, strlen(hand_mrg),
                                    "wsj_0042.mrg");
    CHECK_MSG(rc == 0, "%s", gr_last_error());
    if (rc < 0) {
        return;
    }
    CHECK(tb.n_sentences == 5 && tb.n_files == 1);
    CHECK(tb.files[0].number == 42 && tb.files[0].section == 0);
    char buf[256];

    /* 1: JJ|RB dropped, digits -> N, lower-cased, % is NN (kept),
     * -NONE- and . dropped. Words: the co. rose N.N % in the Ns */
    const struct nlp_sentence *s = &tb.sentences[0];
    CHECK_MSG(strcmp(joined(s, buf, sizeof buf),
                     "the co. rose N.N % in the Ns") == 0, "%s", buf);
    CHECK(s->n_words == 8);
    /* gold: S(0,8) NP(0,2) VP(2,8) NP(3,5) PP(5,8) NP(6,8), pre-order */
    CHECK(s->n_gold == 6);
    const struct nlp_span want1[6] = {{0, 8}, {0, 2}, {2, 8},
                                      {3, 5}, {5, 8}, {6, 8}};
    CHECK(memcmp(s->gold, want1, sizeof want1) == 0);
    CHECK(has_item(&tb, s, "S", 0, 8) && has_item(&tb, s, "NP", 0, 2));
    CHECK(has_item(&tb, s, "PP", 5, 8)); /* PP-TMP=2 -> PP */
    CHECK(has_item(&tb, s, "VP", 2, 8) && has_item(&tb, s, "NP", 6, 8));
    CHECK(s->n_labeled == 6);
    CHECK(nlp_treebank_label(&tb, "NP-SBJ") < 0);

    /* 2: one word (go): no brackets, no items. */
    s = &tb.sentences[1];
    CHECK(s->n_words == 1 && strcmp(s->words[0], "go") == 0);
    CHECK(s->n_gold == 0 && s->n_labeled == 0);

    /* 3: an empty top bracket with two children is not stripped: the root
     * is the unlabelled bracket; $ dropped; (S (NP ...)) is a unary chain
     * over "our plans": one bracket, two items (S and NP). */
    s = &tb.sentences[2];
    CHECK_MSG(strcmp(joined(s, buf, sizeof buf), "oh our plans") == 0, "%s",
              buf);
    CHECK(s->n_gold == 2 && has_span(s, 0, 3) && has_span(s, 1, 3));
    CHECK(has_item(&tb, s, "", 0, 3));
    CHECK(has_item(&tb, s, "S", 1, 3) && has_item(&tb, s, "NP", 1, 3));
    CHECK(s->n_labeled == 3);

    /* 4: nothing kept: an empty sentence, counted. */
    CHECK(tb.sentences[3].n_words == 0 && tb.n_empty == 1);
    CHECK(!nlp_treebank_selected(&tb, 3, NLP_TREES_ALL, -1));

    /* 5: no empty top bracket; (NP (NP a) (SBAR -NONE-)) keeps one word. */
    s = &tb.sentences[4];
    CHECK(s->n_words == 2 && s->n_gold == 1 && has_span(s, 0, 2));
    CHECK(s->n_labeled == 1 && has_item(&tb, s, "S", 0, 2));

    CHECK(nlp_treebank_selected(&tb, 0, NLP_TREES_ALL, -1));
    CHECK(!nlp_treebank_selected(&tb, 0, NLP_TREES_ALL, 7));
    CHECK(nlp_treebank_selected(&tb, 0, NLP_TREES_ALL, 8));
    CHECK(!nlp_treebank_selected(&tb, 0, NLP_TREES_TEST, -1));
    CHECK(nlp_treebank_coverage(&tb) == 1);
    CHECK(strcmp(nlp_treebank_set_name(&tb, NLP_TREES_ALL, 10, buf,
                                       sizeof buf), "NLTK-sample WSJ10") == 0);
    nlp_treebank_free(&tb);
}

static void expect_bad(const char *text, const char *what)
{
    struct nlp_treebank tb;
    gr_clear_error();
    int rc = nlp_treebank_read_text(&tb, text, strlen(text), "bad.mrg");
    CHECK_MSG(rc == GR_EFORMAT, "'%s' gave %d", what, rc);
    CHECK_STR_CONTAINS(gr_last_error(), what);
}

static void test_malformed(void)
{
    expect_bad("( (S (NN a) ))\n) \n", "bad.mrg:2: unmatched ')'");
    expect_bad("(S (NN a))\nstray (S (NN b))", "bad.mrg:2: text 'stray'");
    expect_bad("\n\n( (S (NN a)\n  (VB b) )", "bad.mrg:3: the tree begun here");
    expect_bad("(S (NN))", "preterminal 'NN' (byte 3) has no word");
    expect_bad("(S (NN (X y)))", "has a subtree");
    expect_bad("(S (NN a b c))", "more than two atoms");
}

/* Every single-character change of a valid file (a bracket, a space, a
 * deletion): read, or refused with a message; never a crash (ASan in CI). */
static void test_mutations(void)
{
    size_t n = strlen(hand_mrg);
    char *buf = malloc(n + 1);
    const char repl[3] = {'(', ')', ' '};
    int ok = 0, refused = 0;
    for (size_t p = 0; p < n; p++) {
        for (int k = 0; k < 4; k++) {
            size_t len = n;
            memcpy(buf, hand_mrg, n + 1);
            if (k < 3) {
                buf[p] = repl[k];
            } else {
                memmove(buf + p, buf + p + 1, n - p);
                len--;
            }
            struct nlp_treebank tb;
            gr_clear_error();
            int rc = nlp_treebank_read_text(&tb, buf, len, "m.mrg");
            if (rc == 0) {
                ok++;
                CHECK(tb.n_sentences >= 1);
                nlp_treebank_free(&tb);
            } else {
                refused++;
                CHECK(rc == GR_EFORMAT);
                CHECK(strncmp(gr_last_error(), "m.mrg:", 6) == 0);
            }
        }
    }
    printf("mutated trees: %d read, %d refused\n", ok, refused);
    free(buf);
}

static void write_file(const char *path, const char *text)
{
    CHECK(gr_write_file_atomic(path, text, strlen(text), 1) == 0);
}

static void test_folder(void)
{
    char root[] = "/tmp/grove_test_treebank_XXXXXX";
    CHECK(mkdtemp(root) != NULL);
    char p[1024];
    snprintf(p, sizeof p, "%s/WSJ/23", root);
    CHECK(gr_mkdir_p(p) == 0);
    snprintf(p, sizeof p, "%s/WSJ/02", root);
    CHECK(gr_mkdir_p(p) == 0);
    snprintf(p, sizeof p, "%s/WSJ/23/WSJ_2301.MRG", root);
    write_file(p, "( (S (NN b) (VB c) (NN d)) )\n");
    snprintf(p, sizeof p, "%s/WSJ/02/WSJ_0200.MRG", root);
    write_file(p, "( (S (NN a) (VB z)) )\n( (S (NN e)) )\n");
    snprintf(p, sizeof p, "%s/README.mrg", root);
    write_file(p, "not a tree");
    struct nlp_treebank tb;
    int rc = nlp_treebank_read(&tb, root);
    CHECK_MSG(rc == 0, "%s", gr_last_error());
    if (rc == 0) {
        CHECK(tb.kind == NLP_TREEBANK_FOLDER);
        CHECK(tb.n_files == 2 && tb.n_skipped_files == 1);
        /* sorted by number: 0200 before 2301 */
        CHECK(tb.files[0].number == 200 && tb.files[0].section == 2);
        CHECK(tb.files[1].number == 2301 && tb.files[1].section == 23);
        CHECK(strcmp(tb.files[1].name, "WSJ/23/WSJ_2301.MRG") == 0);
        CHECK(tb.n_sentences == 3);
        CHECK(nlp_treebank_selected(&tb, 2, NLP_TREES_TEST, -1));
        CHECK(!nlp_treebank_selected(&tb, 0, NLP_TREES_TEST, -1));
        CHECK(nlp_treebank_coverage(&tb) == 0);
        char buf[256];
        nlp_treebank_set_name(&tb, NLP_TREES_ALL, 10, buf, sizeof buf);
        CHECK_MSG(strstr(buf, "WSJ10") == NULL, "partial WSJ named '%s'", buf);
        CHECK_STR_CONTAINS(buf, "2 files, sections 02-23");
        nlp_treebank_free(&tb);
    }
    /* A malformed file names its path and line. */
    snprintf(p, sizeof p, "%s/WSJ/02/WSJ_0200.MRG", root);
    write_file(p, "( (S (NN a) (VB z)) )\n))\n");
    CHECK(nlp_treebank_read(&tb, root) == GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "WSJ_0200.MRG:2: unmatched ')'");
    /* The same file twice (another layout): refused. */
    snprintf(p, sizeof p, "%s/wsj", root);
    CHECK(gr_mkdir_p(p) == 0);
    snprintf(p, sizeof p, "%s/wsj/wsj_2301.mrg", root);
    write_file(p, "( (S (NN b)) )\n");
    CHECK(nlp_treebank_read(&tb, root) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "same WSJ file (2301)");
    /* No trees at all; a missing path. */
    char empty[] = "/tmp/grove_test_treebank_empty_XXXXXX";
    CHECK(mkdtemp(empty) != NULL);
    CHECK(nlp_treebank_read(&tb, empty) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "no wsj_NNNN.mrg file");
    rmdir(empty);
    CHECK(nlp_treebank_read(&tb, "/nonexistent/trees") == GR_EIO);
    /* clean up */
    const char *files[] = {"WSJ/23/WSJ_2301.MRG", "WSJ/02/WSJ_0200.MRG",
                           "README.mrg", "wsj/wsj_2301.mrg"};
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s/%s", root, files[i]);
        unlink(p);
    }
    const char *dirs[] = {"WSJ/23", "WSJ/02", "WSJ", "wsj", ""};
    for (int i = 0; i < 5; i++) {
        snprintf(p, sizeof p, "%s/%s", root, dirs[i]);
        rmdir(p);
    }
}

static void test_sample(const char *dir, const char *ptb)
{
    char path[4096];
    gr_path_join(path, sizeof path, dir, "treebank.zip");
    struct nlp_treebank tb;
    int rc = nlp_treebank_read(&tb, path);
    CHECK_MSG(rc == 0, "%s", gr_last_error());
    if (rc < 0) {
        return;
    }
    /* §4: 3,914 trees, none empty, 13 one-word, 21 two-word, mean 21.0,
     * longest 171, 555 with <= 10 words. */
    CHECK(tb.kind == NLP_TREEBANK_ZIP);
    CHECK(tb.n_files == 199);
    CHECK(tb.n_sentences == 3914);
    CHECK(tb.n_empty == 0);
    int one = 0, two = 0, longest = 0, short10 = 0, selected10 = 0;
    double words = 0;
    for (int32_t i = 0; i < tb.n_sentences; i++) {
        int m = tb.sentences[i].n_words;
        one += m == 1;
        two += m == 2;
        longest = m > longest ? m : longest;
        short10 += m >= 1 && m <= 10;
        words += m;
        selected10 += nlp_treebank_selected(&tb, i, NLP_TREES_ALL, 10);
        CHECK(tb.sentences[i].n_gold <= (m > 1 ? m - 1 : 0));
    }
    CHECK(one == 13 && two == 21 && longest == 171);
    CHECK(short10 == 555 && selected10 == 555);
    CHECK_MSG(fabs(words / tb.n_sentences - 21.0) < 0.05, "mean %.3f",
              words / tb.n_sentences);
    CHECK(nlp_treebank_coverage(&tb) == 1);
    char buf[256];
    CHECK(strcmp(nlp_treebank_set_name(&tb, NLP_TREES_ALL, 10, buf, sizeof buf),
                 "NLTK-sample WSJ10") == 0);
    CHECK(strcmp(nlp_treebank_set_name(&tb, NLP_TREES_ALL, -1, buf, sizeof buf),
                 "NLTK-sample WSJ, all lengths") == 0);

    /* The first tree, worked out by hand from wsj_0001.mrg. */
    const struct nlp_sentence *s = &tb.sentences[0];
    CHECK(strcmp(joined(s, buf, sizeof buf),
                 "pierre vinken N years old will join the board as a "
                 "nonexecutive director nov. N") == 0);
    const struct nlp_span want[11] = {{0, 15}, {0, 5},  {0, 2}, {2, 5},
                                      {2, 4},  {5, 15}, {6, 15}, {7, 9},
                                      {9, 13}, {10, 13}, {13, 15}};
    CHECK(s->n_gold == 11 && memcmp(s->gold, want, sizeof want) == 0);
    CHECK(has_item(&tb, s, "NP", 13, 15)); /* NP-TMP */
    CHECK(has_item(&tb, s, "VP", 5, 15) && has_item(&tb, s, "VP", 6, 15));
    CHECK(s->n_labeled == 11);

    /* §2.2.5: the model input through the PTB vocabulary. */
    struct nlp_corpus c;
    int have_ptb = ptb != NULL && nlp_corpus_load(&c, ptb) == 0;
    CHECK_MSG(ptb == NULL || have_ptb, "PTB %s: %s", ptb ? ptb : "",
              gr_last_error());
    if (have_ptb) {
        int32_t ids[17];
        int32_t unknown = nlp_sentence_ids(s, &c.vocab, c.eos, c.unk, ids);
        CHECK(unknown == 1); /* vinken */
        CHECK(ids[0] == c.eos && ids[16] == c.eos && ids[2] == c.unk);
        CHECK(ids[1] == nlp_vocab_find(&c.vocab, "pierre", 6));
        CHECK(ids[3] == nlp_vocab_find(&c.vocab, "N", 1));
        CHECK(ids[14] == nlp_vocab_find(&c.vocab, "nov.", 4));
        nlp_corpus_free(&c);
    } else if (ptb == NULL) {
        test_absent(TEST_NEED_DATA,
                    "PTB folder absent: model-input check skipped");
    }
    nlp_treebank_free(&tb);

    /* The zip's own damage is reported with the entry (a truncated copy). */
    char *data = NULL;
    size_t size = 0;
    if (gr_read_file(path, (size_t)1 << 24, &data, &size) == 0) {
        char cut[] = "/tmp/grove_test_cut_XXXXXX";
        int fd = mkstemp(cut);
        CHECK(fd >= 0);
        if (fd >= 0) {
            close(fd);
            /* keep the end record, drop the middle: entries point past it */
            size_t keep = size / 2;
            FILE *fp = fopen(cut, "wb");
            fwrite(data, 1, keep, fp);
            fclose(fp);
            CHECK(nlp_treebank_read(&tb, cut) == GR_EFORMAT);
            CHECK_STR_CONTAINS(gr_last_error(), "not a zip archive");
            unlink(cut);
        }
        free(data);
    }
}

int main(int argc, char **argv)
{
    test_hand_trees();
    test_malformed();
    test_mutations();
    test_folder();
    if (argc < 2 || !gr_path_exists(argv[1])) {
        return test_skip("nlp_treebank", TEST_NEED_DATA,
                         "treebank folder %s is absent: data checks skipped",
                         argc < 2 ? "(none given)" : argv[1]);
    }
    test_sample(argv[1], argc > 2 && gr_path_exists(argv[2]) ? argv[2] : NULL);
    return test_report("nlp_treebank");
}
