/* The task loaders of the classifier harness (nlp/tasks/classify_tasks.h):
 * ListOps without data (generated train, 1,000 held out, the length bound),
 * logic and SST from hand-made files (explicit --train/--valid/--test),
 * errors, and on the shared data the sizes a trainer's data summary shows:
 * logic 121,977 / 13,552 / 37,367 (full) and 46,707 / 5,189 / 27,232
 * (split C), groups = k, tokens as the files; SST-2 6,920 / 872 / 1,821
 * (98,794 train nodes), SST-5 8,544 / 1,101 / 2,210; ListOps test 10,000.
 *
 *   test_nlp_classify_tasks SHARED_DATA_DIR  (data checks skipped when absent)
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "nlp/data/listops.h"
#include "nlp/tasks/classify_tasks.h"
#include "tests/test.h"

static void write_file(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");
    if (fp != NULL) {
        fputs(text, fp);
        fclose(fp);
    }
}

static void test_listops_generated(void)
{
    struct nlp_cls_task_options o;
    nlp_cls_task_options_default(&o);
    o.listops_generate = 3000;
    o.seed = 4;
    struct nlp_cls_data d;
    int rc = nlp_cls_load_task(&d, "listops", &o);
    CHECK_MSG(rc == 0, "%s", gr_last_error());
    if (rc < 0) {
        return;
    }
    CHECK(d.pair == 0 && d.n_classes == 10 && d.bucket == 1 &&
          d.vocab_size == 20 && d.pad_id == 0);
    CHECK(d.split[NLP_CLS_VALID].n == 1000 && d.split[NLP_CLS_TEST].n == 0);
    /* the same trees as the generator's; the train part <= 50 tokens */
    struct nlp_listops_set s;
    CHECK(nlp_listops_generate(&s, 3000, 4, NLP_LISTOPS_MAX_DEPTH, NULL) == 0);
    int64_t tokens = 0;
    for (int32_t i = 0; i < s.n; i++) {
        tokens += s.examples[i].n_tokens;
    }
    int ok = 1, long_valid = 0;
    for (int64_t i = 0; i < d.split[NLP_CLS_TRAIN].n; i++) {
        ok &= d.split[NLP_CLS_TRAIN].ex[i].len_a <= 50;
    }
    for (int64_t i = 0; i < d.split[NLP_CLS_VALID].n; i++) {
        long_valid += d.split[NLP_CLS_VALID].ex[i].len_a > 50;
    }
    CHECK(ok && long_valid > 0); /* validation keeps every length */
    int64_t pooled = 0;
    for (int sp = 0; sp < 2; sp++) {
        for (int64_t i = 0; i < d.split[sp].n; i++) {
            pooled += d.split[sp].ex[i].len_a;
        }
    }
    CHECK(pooled <= tokens && d.n_tokens == pooled);
    CHECK_STR_CONTAINS(d.summary, "generated (seed 4");
    CHECK_STR_CONTAINS(d.summary, "test none");
    /* another seed, another hold-out */
    struct nlp_cls_data e;
    o.seed = 5;
    CHECK(nlp_cls_load_task(&e, "listops", &o) == 0);
    CHECK(e.split[NLP_CLS_VALID].n == 1000 &&
          (e.n_tokens != d.n_tokens ||
           memcmp(e.tokens, d.tokens, (size_t)d.n_tokens * 4) != 0));
    nlp_cls_data_free(&e);
    nlp_listops_free(&s);
    nlp_cls_data_free(&d);
}

static void test_files(void)
{
    char dir[] = "/tmp/grove_cls_XXXXXX";
    if (mkdtemp(dir) == NULL) {
        CHECK(0);
        return;
    }
    char tr[128], te[128], va[128], bad[128], bad_path_missing[128];
    snprintf(bad_path_missing, sizeof bad_path_missing, "%s/missing.txt",
             dir);
    snprintf(tr, sizeof tr, "%s/train.tsv", dir);
    snprintf(te, sizeof te, "%s/test.tsv", dir);
    snprintf(va, sizeof va, "%s/dev.txt", dir);
    snprintf(bad, sizeof bad, "%s/bad.tsv", dir);
    /* 20 logic pairs, 2 with the A pattern */
    char text[4096] = "";
    for (int i = 0; i < 18; i++) {
        strcat(text, i % 2 ? "#\ta\tb\n" : "<\t( a ( and b ) )\ta\n");
    }
    strcat(text, "|\t( e ( and ( not a ) ) )\ta\n#\tb\t( c ( and ( not a ) ) )\n");
    write_file(tr, text);
    write_file(te, "=\ta\ta\n|\t( e ( and ( not a ) ) )\ta\n");
    struct nlp_cls_task_options o;
    nlp_cls_task_options_default(&o);
    o.train = tr;
    o.test = te;
    struct nlp_cls_data d;
    int rc = nlp_cls_load_task(&d, "logic", &o);
    CHECK_MSG(rc == 0, "%s", gr_last_error());
    if (rc == 0) {
        CHECK(d.pair && d.n_classes == 7 && d.n_groups == 13 &&
              d.vocab_size == 12 && d.pad_id == 11);
        CHECK(d.split[0].n == 18 && d.split[1].n == 2 && d.split[2].n == 2);
        CHECK(strcmp(d.class_names[5], "#") == 0);
        const struct nlp_cls_example *x = &d.split[2].ex[1];
        CHECK(x->label == 4 && x->group == 2 && x->len_a == 10 &&
              x->len_b == 1 && d.tokens[x->b] == 2);
        nlp_cls_data_free(&d);
    }
    o.logic_split = NLP_LOGIC_SPLIT_A;
    CHECK(nlp_cls_load_task(&d, "logic", &o) == 0);
    CHECK(d.split[0].n + d.split[1].n == 18 && d.split[2].n == 1);
    CHECK_STR_CONTAINS(d.summary, "split A keeps 18");
    nlp_cls_data_free(&d);

    write_file(bad, "#\ta\tb\n#\ta\n");
    o.train = bad;
    CHECK(nlp_cls_load_task(&d, "logic", &o) == GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "bad.tsv:2: 2 tab-separated fields");
    CHECK(d.tokens == NULL && d.split[0].n == 0);

    /* SST from three files; the vocabulary travels as text */
    write_file(tr, "(3 (2 a) (4 b))\n(2 (2 a) (2 c))\n(1 (0 d) (2 a))\n");
    write_file(va, "(4 (4 b) (2 e))\n");
    write_file(te, "(0 (0 d) (2 f))\n");
    nlp_cls_task_options_default(&o);
    o.train = tr;
    o.valid = va;
    o.test = te;
    rc = nlp_cls_load_task(&d, "sst2", &o);
    CHECK_MSG(rc == 0, "%s", gr_last_error());
    if (rc == 0) {
        CHECK(d.n_classes == 2 && d.split[0].n == 2 && d.split[1].n == 1 &&
              d.split[2].n == 1 && d.vocab_size == 7 && d.pad_id == 6);
        CHECK(d.vocab_text != NULL && strcmp(d.vocab_text, "a\nb\nc\nd\ne\nf\n") == 0);
        CHECK(d.split[0].ex[0].label == 1 && d.split[0].ex[1].label == 0 &&
              d.split[0].ex[1].len_a == 2 && d.tokens[d.split[0].ex[1].a] == 3);
        nlp_cls_data_free(&d);
    }
    o.sst_train_unit = NLP_SST_NODES;
    CHECK(nlp_cls_load_task(&d, "sst5", &o) == 0);
    CHECK(d.n_classes == 5 && d.split[0].n == 9 && d.split[1].n == 1);
    nlp_cls_data_free(&d);
    /* an evaluation of the test split reads the test file alone (the
     * others need not exist); mapped onto the training vocabulary, its
     * tokens are the full load's */
    struct nlp_cls_data full;
    o.sst_train_unit = NLP_SST_SENTENCES;
    CHECK(nlp_cls_load_task(&full, "sst2", &o) == 0);
    o.train = bad_path_missing;
    o.valid = bad_path_missing;
    o.only_split = NLP_CLS_TEST;
    rc = nlp_cls_load_task(&d, "sst2", &o);
    CHECK_MSG(rc == 0, "%s", gr_last_error());
    if (rc == 0) {
        CHECK(d.split[0].n == 0 && d.split[1].n == 0 && d.split[2].n == 1);
        CHECK(strcmp(d.vocab_text, "d\nf\n") == 0);
        CHECK_STR_CONTAINS(d.summary, "test 1 sentences");
        int32_t unknown = -1;
        CHECK(nlp_cls_use_vocab(&d, full.vocab_text, &unknown) == 0 &&
              unknown == 0);
        const struct nlp_cls_example *a = &d.split[2].ex[0],
                                     *b = &full.split[2].ex[0];
        CHECK(a->len_a == 2 && b->len_a == 2 && a->label == b->label &&
              memcmp(d.tokens + a->a, full.tokens + b->a,
                     2 * sizeof *d.tokens) == 0);
        nlp_cls_data_free(&d);
    }
    nlp_cls_data_free(&full);
    o.only_split = -1;
    o.train = tr;
    o.valid = NULL;
    CHECK(nlp_cls_load_task(&d, "sst2", &o) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "valid file");
    CHECK(nlp_cls_load_task(&d, "nli", &o) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "unknown task 'nli'");
    nlp_cls_task_options_default(&o);
    CHECK(nlp_cls_load_task(&d, "logic", &o) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "--data DIR");
    CHECK(nlp_cls_task_known("sst5") && !nlp_cls_task_known("sst3"));
    unlink(tr);
    unlink(te);
    unlink(va);
    unlink(bad);
    rmdir(dir);
}

/* An evaluation's load (only_split): only the split scored, equal to the
 * full load's; no training trees generated or files read for a test
 * split; the validation part held out as in training. */
static void test_only_split(void)
{
    char dir[] = "/tmp/grove_cls_XXXXXX";
    if (mkdtemp(dir) == NULL) {
        CHECK(0);
        return;
    }
    char te[128], ltr[128], lte[128], missing[128];
    snprintf(te, sizeof te, "%s/test.tsv", dir);
    snprintf(ltr, sizeof ltr, "%s/ltrain.tsv", dir);
    snprintf(lte, sizeof lte, "%s/ltest.tsv", dir);
    snprintf(missing, sizeof missing, "%s/missing.tsv", dir);
    write_file(te, "0\t( ( ( ( ( [SM 6 ) 5 ) 9 ) 0 ) ] )\n"
                   "3\t( ( ( [MIN 6 ) 3 ) ] )\n7\t7\n");
    struct nlp_cls_task_options o;
    nlp_cls_task_options_default(&o);
    o.test = te;
    o.seed = 4;
    o.listops_generate = 1500;
    struct nlp_cls_data full, d;
    int rc = nlp_cls_load_task(&full, "listops", &o);
    CHECK_MSG(rc == 0, "%s", gr_last_error());
    if (rc < 0) {
        return;
    }
    CHECK(full.listops_generated == 1500 && full.split[NLP_CLS_TRAIN].n > 0);
    /* the test split: the file alone, nothing generated */
    o.only_split = NLP_CLS_TEST;
    rc = nlp_cls_load_task(&d, "listops", &o);
    CHECK_MSG(rc == 0, "%s", gr_last_error());
    if (rc == 0) {
        CHECK(d.listops_generated == 0 && d.split[NLP_CLS_TRAIN].n == 0 &&
              d.split[NLP_CLS_VALID].n == 0 && d.split[NLP_CLS_TEST].n == 3);
        /* the tokens a model reads: [SM 6 5 9 0 ], [MIN 6 3 ], 7 */
        CHECK(d.n_tokens == 6 + 4 + 1 &&
              memcmp(d.tokens,
                     full.tokens + full.split[NLP_CLS_TEST].ex[0].a,
                     (size_t)d.n_tokens * sizeof *d.tokens) == 0);
        CHECK_STR_CONTAINS(d.summary, "3 examples (all lengths, 1 bare digit)");
        CHECK_STR_CONTAINS(d.summary, "no training data read or generated");
        nlp_cls_data_free(&d);
    }
    /* the validation split: the same 1,000 trees held out of the same
     * generated ones; the test file is not read */
    o.only_split = NLP_CLS_VALID;
    o.test = missing;
    rc = nlp_cls_load_task(&d, "listops", &o);
    CHECK_MSG(rc == 0, "%s", gr_last_error());
    if (rc == 0) {
        const struct nlp_cls_split *a = &d.split[NLP_CLS_VALID],
                                   *b = &full.split[NLP_CLS_VALID];
        int same = a->n == b->n && a->n == 1000;
        for (int64_t i = 0; same && i < a->n; i++) {
            same = a->ex[i].len_a == b->ex[i].len_a &&
                   a->ex[i].label == b->ex[i].label &&
                   memcmp(d.tokens + a->ex[i].a, full.tokens + b->ex[i].a,
                          (size_t)a->ex[i].len_a * sizeof *d.tokens) == 0;
        }
        CHECK(same && d.split[NLP_CLS_TRAIN].n == 0 &&
              d.split[NLP_CLS_TEST].n == 0);
        CHECK_STR_CONTAINS(d.summary,
                           "1,500 examples, seed 4): 1,000 examples");
        nlp_cls_data_free(&d);
    }
    nlp_cls_data_free(&full);
    /* no test data for a test split: an error, before any generation */
    nlp_cls_task_options_default(&o);
    o.only_split = NLP_CLS_TEST;
    CHECK(nlp_cls_load_task(&d, "listops", &o) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "no test data");

    /* logic from files: a test split never reads --train (a path that does
     * not exist is not opened), a validation split the pairs held out */
    write_file(ltr, "#\ta\tb\n<\t( a ( and b ) )\ta\n#\ta\tc\n"
                    "#\ta\td\n#\ta\te\n#\ta\tf\n#\tb\tc\n#\tb\td\n"
                    "#\tb\te\n<\t( a ( or ( not b ) ) )\ta\n");
    write_file(lte, "=\ta\ta\n|\t( e ( and ( not a ) ) )\ta\n");
    nlp_cls_task_options_default(&o);
    o.train = missing;
    o.test = lte;
    o.only_split = NLP_CLS_TEST;
    rc = nlp_cls_load_task(&d, "logic", &o);
    CHECK_MSG(rc == 0, "%s", gr_last_error());
    if (rc == 0) {
        CHECK(d.split[NLP_CLS_TRAIN].n == 0 && d.split[NLP_CLS_VALID].n == 0 &&
              d.split[NLP_CLS_TEST].n == 2);
        CHECK_STR_CONTAINS(d.summary, "test 2 pairs (k = 0-2) of the file's 2");
        CHECK_STR_CONTAINS(d.summary, "no training data read");
        nlp_cls_data_free(&d);
    }
    o.train = ltr;
    o.test = missing;
    o.only_split = NLP_CLS_VALID;
    rc = nlp_cls_load_task(&d, "logic", &o);
    CHECK_MSG(rc == 0, "%s", gr_last_error());
    if (rc == 0) {
        /* the 10th pair of the pool: k = 2 */
        CHECK(d.split[NLP_CLS_TRAIN].n == 0 && d.split[NLP_CLS_VALID].n == 1 &&
              d.split[NLP_CLS_TEST].n == 0 &&
              d.split[NLP_CLS_VALID].ex[0].group == 2 &&
              d.split[NLP_CLS_VALID].ex[0].line == 10);
        CHECK_STR_CONTAINS(d.summary, "validation 1 pairs (k = 2)");
        nlp_cls_data_free(&d);
    }
    unlink(te);
    unlink(ltr);
    unlink(lte);
    rmdir(dir);
}

static void test_shared(const char *root)
{
    char path[1024];
    struct nlp_cls_task_options o;
    struct nlp_cls_data d;
    nlp_cls_task_options_default(&o);
    snprintf(path, sizeof path, "%s/logic_inference", root);
    o.data = path;
    int rc = nlp_cls_load_task(&d, "logic", &o);
    CHECK_MSG(rc == 0, "%s", gr_last_error());
    if (rc == 0) {
        CHECK(d.split[0].n == 121977 && d.split[1].n == 13552 &&
              d.split[2].n == 37367);
        int32_t per_k[13] = {0};
        for (int64_t i = 0; i < d.split[2].n; i++) {
            per_k[d.split[2].ex[i].group]++;
        }
        CHECK(per_k[7] == 4707 && per_k[12] == 853 && per_k[0] == 6);
        /* the first train pair is train0's first line */
        const struct nlp_cls_example *x = &d.split[0].ex[0];
        CHECK(x->len_a == 1 && x->len_b == 1 && x->group == 0);
        CHECK_STR_CONTAINS(d.summary, "train 121,977 / validation 13,552");
        CHECK_STR_CONTAINS(d.summary, "differ from the truth-table labeller: 0");
        /* an evaluation of the tests: no training file read, the same
         * test pairs */
        struct nlp_cls_data t;
        o.only_split = NLP_CLS_TEST;
        rc = nlp_cls_load_task(&t, "logic", &o);
        CHECK_MSG(rc == 0, "%s", gr_last_error());
        if (rc == 0) {
            const struct nlp_cls_split *a = &t.split[2], *b = &d.split[2];
            int same = a->n == b->n && t.split[0].n == 0 && t.split[1].n == 0;
            for (int64_t i = 0; same && i < a->n; i++) {
                same = a->ex[i].group == b->ex[i].group &&
                       a->ex[i].label == b->ex[i].label &&
                       a->ex[i].len_a == b->ex[i].len_a &&
                       memcmp(t.tokens + a->ex[i].a, d.tokens + b->ex[i].a,
                              (size_t)a->ex[i].len_a * sizeof *t.tokens) == 0;
            }
            CHECK(same);
            CHECK_STR_CONTAINS(t.summary, "test 37,367 pairs in test0-12 "
                                          "(k = 0-12; ");
            CHECK_STR_CONTAINS(t.summary, "no training data read");
            nlp_cls_data_free(&t);
        }
        o.only_split = -1;
        nlp_cls_data_free(&d);
    }
    o.logic_split = NLP_LOGIC_SPLIT_C;
    rc = nlp_cls_load_task(&d, "logic", &o);
    CHECK(rc == 0 && d.split[0].n == 46707 && d.split[1].n == 5189 &&
          d.split[2].n == 27232);
    CHECK_STR_CONTAINS(d.summary, "split C keeps 51,896");
    nlp_cls_data_free(&d);

    nlp_cls_task_options_default(&o);
    snprintf(path, sizeof path, "%s/sst2", root);
    o.data = path;
    rc = nlp_cls_load_task(&d, "sst2", &o);
    CHECK(rc == 0 && d.split[0].n == 6920 && d.split[1].n == 872 &&
          d.split[2].n == 1821);
    nlp_cls_data_free(&d);
    o.sst_train_unit = NLP_SST_NODES;
    rc = nlp_cls_load_task(&d, "sst2", &o);
    CHECK(rc == 0 && d.split[0].n == 98794 && d.split[1].n == 872);
    nlp_cls_data_free(&d);
    o.sst_train_unit = NLP_SST_SENTENCES;
    rc = nlp_cls_load_task(&d, "sst5", &o);
    CHECK(rc == 0 && d.split[0].n == 8544 && d.split[1].n == 1101 &&
          d.split[2].n == 2210);
    nlp_cls_data_free(&d);

    nlp_cls_task_options_default(&o);
    snprintf(path, sizeof path, "%s/listops", root);
    o.data = path;
    o.listops_generate = 2000;
    rc = nlp_cls_load_task(&d, "listops", &o);
    CHECK(rc == 0 && d.split[2].n == 10000 && d.split[1].n == 1000);
    CHECK_STR_CONTAINS(d.summary, "test 10,000 examples of");
    nlp_cls_data_free(&d);
}

int main(int argc, char **argv)
{
    test_listops_generated();
    test_files();
    test_only_split();
    struct stat st;
    if (argc > 1 && stat(argv[1], &st) == 0) {
        test_shared(argv[1]);
    } else {
        printf("nlp_classify_tasks: shared data absent: those checks "
               "skipped\n");
    }
    return test_report("nlp_classify_tasks");
}
