/* SST (data/sst2/README.md, hybrid_and_trees.md §3.3): a hand tree worked
 * out node by node, malformed trees naming file, line and column, the
 * SST-2 / SST-5 label maps and the four item kinds on hand trees, and on
 * the released train/dev/test trees: 8,544 / 1,101 / 2,210 trees with the
 * README's root-label counts, 6,920 / 872 / 1,821 SST-2 sentences, 318,582
 * train nodes (2n - 1 per tree), 98,794 non-neutral train nodes and 77,616
 * distinct non-neutral train phrases (both counted independently by a
 * Python pass over the file while writing this), and the U+00A0 words.
 *
 *   test_nlp_sst SST_DIR   (data checks skipped when absent)
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "core/random.h"
#include "nlp/data/sst.h"
#include "tests/test.h"
#include "tests/nlp/mutations.h"

static const char *word(const struct nlp_sst *s, const struct nlp_sst_tree *t,
                        int32_t i)
{
    return nlp_vocab_word(&s->vocab, t->words[i]);
}

static void test_hand(void)
{
    const char *text = "(3 (2 (2 The) (2 Rock)) (4 (3 is) (4 great)))\n"
                       "(1 (2 The) (0 bad\\/worse))\n"
                       "(2 (2 8\xc2\xa0" "1\\/2) (2 -LRB-))";
    struct nlp_sst s;
    nlp_sst_init(&s);
    CHECK_MSG(nlp_sst_read_text(&s, NLP_TRAIN, text, strlen(text), "t.txt") ==
                  0, "%s", gr_last_error());
    CHECK(s.n_trees[NLP_TRAIN] == 3 && s.vocab.size == 7);
    const struct nlp_sst_tree *t = &s.trees[NLP_TRAIN][0];
    CHECK(t->n_words == 4 && t->n_nodes == 7 && t->line == 1);
    CHECK(strcmp(word(&s, t, 0), "The") == 0 &&
          strcmp(word(&s, t, 3), "great") == 0);
    /* pre-order: 0 root, 1 (The Rock), 2 The, 3 Rock, 4 (is great), 5 is,
     * 6 great */
    static const int want[7][5] = {{0, 4, 1, 4, 3}, {0, 2, 2, 3, 2},
                                   {0, 1, -1, -1, 2}, {1, 2, -1, -1, 2},
                                   {2, 4, 5, 6, 4}, {2, 3, -1, -1, 3},
                                   {3, 4, -1, -1, 4}};
    int ok = 1;
    for (int i = 0; i < 7; i++) {
        const struct nlp_sst_node *nd = &t->nodes[i];
        ok &= nd->start == want[i][0] && nd->end == want[i][1] &&
              nd->left == want[i][2] && nd->right == want[i][3] &&
              nd->label == want[i][4];
    }
    CHECK(ok);
    t = &s.trees[NLP_TRAIN][2];
    CHECK(t->n_words == 2 && strcmp(word(&s, t, 0), "8\xc2\xa0" "1\\/2") == 0 &&
          strcmp(word(&s, t, 1), "-LRB-") == 0);

    /* labels: SST-2 maps 0-1 / 3-4, drops 2 */
    CHECK(nlp_sst_label(NLP_SST2, 0) == 0 && nlp_sst_label(NLP_SST2, 1) == 0 &&
          nlp_sst_label(NLP_SST2, 2) == -1 && nlp_sst_label(NLP_SST2, 3) == 1 &&
          nlp_sst_label(NLP_SST2, 4) == 1 && nlp_sst_label(NLP_SST5, 2) == 2);
    struct nlp_sst_item *it = NULL;
    int32_t n = 0, neutral = -1, rep = -1;
    CHECK(nlp_sst_items(&s, NLP_TRAIN, NLP_SST2, NLP_SST_SENTENCES, &it, &n,
                        &neutral, &rep) == 0);
    CHECK(n == 2 && neutral == 1 && rep == 0 && it[0].label == 1 &&
          it[1].label == 0 && it[1].tree == 1 && it[1].node == 0);
    free(it);
    CHECK(nlp_sst_items(&s, NLP_TRAIN, NLP_SST5, NLP_SST_SENTENCES, &it, &n,
                        &neutral, NULL) == 0);
    CHECK(n == 3 && neutral == 0 && it[2].label == 2);
    free(it);
    /* nodes: 7 + 3 + 3 = 13, non-neutral: 3, 4, 3, 4 (tree 0); 1, 0 (tree
     * 1) = 6 */
    CHECK(nlp_sst_items(&s, NLP_TRAIN, NLP_SST2, NLP_SST_NODES, &it, &n,
                        &neutral, NULL) == 0);
    CHECK(n == 6 && neutral == 7);
    free(it);
    CHECK(nlp_sst_items(&s, NLP_TRAIN, NLP_SST5, NLP_SST_NODES, &it, &n, NULL,
                        NULL) == 0);
    CHECK(n == 13);
    free(it);
    /* phrases: "The" occurs twice (neutral), so SST-5 phrases are 12 */
    CHECK(nlp_sst_items(&s, NLP_TRAIN, NLP_SST5, NLP_SST_PHRASES, &it, &n,
                        NULL, &rep) == 0);
    CHECK(n == 12 && rep == 1);
    free(it);
    nlp_sst_free(&s);
}

static void expect_error(const char *text, const char *want)
{
    struct nlp_sst s;
    nlp_sst_init(&s);
    int rc = nlp_sst_read_text(&s, NLP_TEST, text, strlen(text), "dev.txt");
    CHECK_MSG(rc == GR_EFORMAT, "accepted: %s", text);
    CHECK_MSG(strstr(gr_last_error(), want) != NULL, "'%s' lacks '%s'",
              gr_last_error(), want);
    CHECK(s.n_trees[NLP_TEST] == 0);
    nlp_sst_free(&s);
}

static void test_errors(void)
{
    expect_error("(2 (2 a) (2 b))\n(5 (2 a) (2 b))\n",
                 "dev.txt:2: a node must begin with a label 0-4, got '5' "
                 "(column 1)");
    expect_error("(2 (2 a))\n", "dev.txt:1: a node with one child (SST trees "
                 "are binary) (column 9)");
    expect_error("(2 (2 a) (2 b) (2 c))\n", "dev.txt:1: a node with a third "
                 "child");
    expect_error("(2 (2 a) (2 b)\n", "dev.txt:1: 1 node not closed");
    expect_error("(2 (2 a) (2 b)))\n", "dev.txt:1: text after the end of the "
                 "tree (column 16)");
    expect_error("(2 (2 a) (2 b))\n\n", "dev.txt:2: empty line");
    expect_error("(2 a (2 b))\n", "dev.txt:1: a node holds both a word and a "
                 "child node");
    expect_error("(2 (2 a b) (2 c))\n", "a second word");
    expect_error("(2 ())\n", "a node must begin with a label");
    expect_error("(2)\n", "an empty node");
    expect_error("word\n", "a word outside any node");
    expect_error("(2 (2 a) (2 b)) (2 c)\n", "text after the end of the tree");
}

static void test_released(const char *dir)
{
    struct nlp_sst s;
    int rc = nlp_sst_load(&s, dir);
    CHECK_MSG(rc == 0, "%s", gr_last_error());
    if (rc < 0) {
        return;
    }
    static const int32_t trees[3] = {8544, 1101, 2210};
    static const int32_t roots[3][5] = {{1092, 2218, 1624, 2322, 1288},
                                        {139, 289, 229, 279, 165},
                                        {279, 633, 389, 510, 399}};
    static const int32_t sst2[3] = {6920, 872, 1821};
    int64_t train_nodes = 0;
    for (int sp = 0; sp < NLP_N_SPLITS; sp++) {
        CHECK(s.n_trees[sp] == trees[sp]);
        int32_t r[5] = {0};
        int shape = 1;
        for (int32_t i = 0; i < s.n_trees[sp]; i++) {
            const struct nlp_sst_tree *t = &s.trees[sp][i];
            r[t->nodes[0].label]++;
            shape &= t->n_nodes == 2 * t->n_words - 1 &&
                     t->nodes[0].start == 0 && t->nodes[0].end == t->n_words &&
                     t->line == i + 1;
            if (sp == NLP_TRAIN) {
                train_nodes += t->n_nodes;
            }
        }
        CHECK(shape);
        for (int l = 0; l < 5; l++) {
            CHECK_MSG(r[l] == roots[sp][l], "split %d label %d: %d", sp, l,
                      r[l]);
        }
        struct nlp_sst_item *it = NULL;
        int32_t n = 0, neutral = 0;
        CHECK(nlp_sst_items(&s, sp, NLP_SST2, NLP_SST_SENTENCES, &it, &n,
                            &neutral, NULL) == 0);
        CHECK_MSG(n == sst2[sp] && neutral == roots[sp][2], "SST-2 %d: %d", sp,
                  n);
        free(it);
        CHECK(nlp_sst_items(&s, sp, NLP_SST5, NLP_SST_SENTENCES, &it, &n, NULL,
                            NULL) == 0);
        CHECK(n == trees[sp]);
        free(it);
    }
    CHECK(train_nodes == 318582);
    struct nlp_sst_item *it = NULL;
    int32_t n = 0, rep = 0;
    CHECK(nlp_sst_items(&s, NLP_TRAIN, NLP_SST2, NLP_SST_NODES, &it, &n, NULL,
                        NULL) == 0);
    CHECK_MSG(n == 98794, "%d nodes", n);
    free(it);
    CHECK(nlp_sst_items(&s, NLP_TRAIN, NLP_SST2, NLP_SST_PHRASES, &it, &n,
                        NULL, &rep) == 0);
    CHECK_MSG(n == 77616 && rep == 98794 - 77616, "%d phrases", n);
    free(it);
    /* the first train tree: "The Rock is destined ..." */
    const struct nlp_sst_tree *t = &s.trees[NLP_TRAIN][0];
    CHECK(strcmp(nlp_vocab_word(&s.vocab, t->words[0]), "The") == 0 &&
          strcmp(nlp_vocab_word(&s.vocab, t->words[1]), "Rock") == 0 &&
          t->nodes[0].label == 3 && t->nodes[1].label == 2 &&
          t->nodes[1].end == 2);
    int32_t nbsp = 0;
    for (int32_t i = 0; i < s.n_types_train; i++) {
        nbsp += strstr(nlp_vocab_word(&s.vocab, i), "\xc2\xa0") != NULL;
    }
    CHECK_MSG(nbsp >= 1 && nbsp <= 3, "%d words with U+00A0", nbsp);
    CHECK(s.n_types_train > 0 && s.n_types_train < s.vocab.size);
    nlp_sst_free(&s);

    CHECK(nlp_sst_load(&s, "/nonexistent/sst") == GR_EIO);
    CHECK_STR_CONTAINS(gr_last_error(), "/nonexistent/sst/train.txt");
}

static int read_mutated(const char *text, size_t n, const char *name,
                        int *bad)
{
    struct nlp_sst s;
    nlp_sst_init(&s);
    int rc = nlp_sst_read_text(&s, NLP_TRAIN, text, n, name);
    if (rc == 0) {
        for (int32_t i = 0; i < s.n_trees[NLP_TRAIN]; i++) {
            const struct nlp_sst_tree *t = &s.trees[NLP_TRAIN][i];
            *bad += t->n_nodes != 2 * t->n_words - 1 ||
                    t->nodes[0].end != t->n_words;
        }
    }
    nlp_sst_free(&s);
    return rc;
}

/* Mutated copies of a valid text, read or refused with the file and the
 * line named (tests/nlp/mutations.h). */
static void test_mutations(void)
{
    static const char base[] = "(3 (2 (2 The) (2 Rock)) (4 (3 is) (4 great)))\n"
        "(1 (2 The) (0 bad))\n";
    static const char alphabet[] = "( )\n01234ab ";
    mut_check(base, alphabet, "m.txt", read_mutated);
}

int main(int argc, char **argv)
{
    test_hand();
    test_errors();
    test_mutations();
    struct stat st;
    if (argc > 1 && stat(argv[1], &st) == 0) {
        test_released(argv[1]);
    } else {
        printf("nlp_sst: data absent (%s): released-file checks skipped\n",
               argc > 1 ? argv[1] : "no path");
    }
    return test_report("nlp_sst");
}
