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
    char tr[128], te[128], va[128], bad[128];
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
    struct stat st;
    if (argc > 1 && stat(argv[1], &st) == 0) {
        test_shared(argv[1]);
    } else {
        printf("nlp_classify_tasks: shared data absent: those checks "
               "skipped\n");
    }
    return test_report("nlp_classify_tasks");
}
