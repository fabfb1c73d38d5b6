/* The SNLI JSON-lines reader (nlp/data/snli.h) and its classifier loader
 * (nlp_cls_load_task "snli"), on the hand-written sample of
 * tests/fixtures/snli/: pair counts, the skipped "-" pair, labels, tokens
 * from the binary parse and from a raw sentence, escapes; malformed lines
 * refused naming file and line; 2,000 mutated copies read or refused,
 * never a crash.
 *
 *   test_nlp_snli FIXTURE_DIR
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/files.h"
#include "nlp/data/snli.h"
#include "nlp/tasks/classify_tasks.h"
#include "tests/test.h"

/* The words of a sequence joined by spaces. */
static void words(const struct nlp_snli *s, int64_t off, int32_t n,
                  char *out, size_t cap)
{
    size_t k = 0;
    out[0] = '\0';
    for (int32_t i = 0; i < n; i++) {
        k += (size_t)snprintf(out + k, cap - k, "%s%s", i ? " " : "",
                              nlp_vocab_word(&s->vocab, s->tokens[off + i]));
    }
}

static void test_sample(const char *path)
{
    struct nlp_snli s;
    nlp_snli_init(&s);
    CHECK_MSG(nlp_snli_read_file(&s, NLP_TRAIN, path) == 0, "%s",
              gr_last_error());
    CHECK(s.n_pairs[NLP_TRAIN] == 11);
    CHECK(s.n_skipped[NLP_TRAIN] == 1);
    if (s.n_pairs[NLP_TRAIN] == 11) {
        const int want[11] = {0, 2, 1, 0, 2, 1, 0, 2, 0, 1, 2};
        int same = 1;
        for (int i = 0; i < 11; i++) {
            same &= s.pairs[NLP_TRAIN][i].label == want[i];
        }
        CHECK(same);
        char buf[512];
        const struct nlp_snli_pair *p = &s.pairs[NLP_TRAIN][0];
        words(&s, p->a, p->len_a, buf, sizeof buf);
        CHECK_MSG(strcmp(buf, "a man in a red coat rides a bicycle down the "
                              "street .") == 0, "'%s'", buf);
        words(&s, p->b, p->len_b, buf, sizeof buf);
        CHECK_MSG(strcmp(buf, "a person is riding a bike .") == 0, "'%s'",
                  buf);
        /* no binary parse: the raw sentence, quotes split off */
        p = &s.pairs[NLP_TRAIN][5];
        words(&s, p->a, p->len_a, buf, sizeof buf);
        CHECK_MSG(strcmp(buf, "a woman sings \" happy birthday \" to a "
                              "crowd .") == 0, "'%s'", buf);
        /* \u00e9 as UTF-8 */
        p = &s.pairs[NLP_TRAIN][7];
        words(&s, p->a, p->len_a, buf, sizeof buf);
        CHECK_MSG(strcmp(buf, "an old dog sleeps near the caf\xc3\xa9 door "
                              ".") == 0, "'%s'", buf);
    }
    nlp_snli_free(&s);
}

static void expect_refused(const char *text, const char *pattern)
{
    struct nlp_snli s;
    nlp_snli_init(&s);
    int rc = nlp_snli_read_text(&s, NLP_VALID, text, strlen(text), "t.jsonl");
    CHECK_MSG(rc == GR_EFORMAT && strstr(gr_last_error(), pattern) != NULL,
              "rc %d, '%s' (want '%s')", rc, gr_last_error(), pattern);
    nlp_snli_free(&s);
}

static void test_malformed(void)
{
    const char *ok = "{\"gold_label\": \"neutral\", \"sentence1\": \"A b.\", "
                     "\"sentence2\": \"C d.\"}\n";
    struct nlp_snli s;
    nlp_snli_init(&s);
    char text[512];
    snprintf(text, sizeof text, "\n%s\n  \n%s", ok, ok);
    CHECK(nlp_snli_read_text(&s, NLP_TEST, text, strlen(text), "x") == 0);
    CHECK(s.n_pairs[NLP_TEST] == 2);
    nlp_snli_free(&s);
    snprintf(text, sizeof text, "%s{\"gold_label\": \"maybe\", "
             "\"sentence1\": \"a\", \"sentence2\": \"b\"}\n", ok);
    expect_refused(text, "t.jsonl:2: gold_label 'maybe' is not");
    expect_refused("{\"gold_label\": \"neutral\", \"sentence1\": \"a\"}",
                   "t.jsonl:1: no \"sentence2\"");
    expect_refused("{\"gold_label\": \"neutral\", \"sentence1\": \"a",
                   "t.jsonl:1: unterminated string");
    expect_refused("{\"gold_label\": \"neutral\", \"sentence1\": \"\\q\"}",
                   "t.jsonl:1: unknown escape");
    expect_refused("{\"gold_label\": \"neutral\", \"sentence1\": \"a\", "
                   "\"sentence2\": \"b\"} x",
                   "t.jsonl:1: text after the object");
    expect_refused("{\"gold_label\": \"neutral\", \"sentence1\": \" . \", "
                   "\"sentence2\": \"b\", \"sentence1_binary_parse\": "
                   "\"( ( ) )\"}",
                   "t.jsonl:1: the premise has no word");
    expect_refused("[1, 2]", "t.jsonl:1: expected a JSON object");
    expect_refused("{\"gold_label\": \"neutral\", \"sentence1\": "
                   "\"\\ud800\", \"sentence2\": \"b\"}",
                   "unpaired surrogate");
}

static void test_mutations(const char *path)
{
    char *text = NULL;
    size_t size = 0;
    if (gr_read_file(path, 1 << 20, &text, &size) < 0) {
        CHECK(0);
        return;
    }
    char *m = malloc(size + 1);
    uint64_t st = 12345;
    int read = 0, refused = 0;
    const char alphabet[] = "{}[]\":,\\u \n-aZ09(";
    for (int k = 0; k < 2000; k++) {
        memcpy(m, text, size);
        size_t n = size;
        for (int e = 0; e < 1 + k % 4; e++) {
            st = st * 6364136223846793005ULL + 1442695040888963407ULL;
            size_t pos = (size_t)(st >> 33) % n;
            int op = (int)((st >> 20) % 3);
            if (op == 0) {
                m[pos] = alphabet[(st >> 8) % (sizeof alphabet - 1)];
            } else if (op == 1 && n > 1) {
                memmove(m + pos, m + pos + 1, n - pos - 1);
                n--;
            } else {
                n = pos; /* truncate */
            }
        }
        struct nlp_snli s;
        nlp_snli_init(&s);
        int rc = nlp_snli_read_text(&s, NLP_TRAIN, m, n, "m");
        if (rc == 0) {
            read++;
        } else {
            refused++;
            CHECK_MSG(rc == GR_EFORMAT && strncmp(gr_last_error(), "m:", 2)
                          == 0, "mutation %d: %d '%s'", k, rc,
                      gr_last_error());
        }
        nlp_snli_free(&s);
    }
    printf("mutated copies: %d read, %d refused with a line\n", read,
           refused);
    CHECK(read > 0 && refused > 0);
    free(m);
    free(text);
}

static void test_loader(const char *path)
{
    struct nlp_cls_task_options o;
    nlp_cls_task_options_default(&o);
    o.train = o.valid = o.test = path;
    struct nlp_cls_data d;
    CHECK_MSG(nlp_cls_load_task(&d, "snli", &o) == 0, "%s", gr_last_error());
    CHECK(d.pair == 1 && d.n_classes == 3);
    CHECK(d.split[NLP_CLS_TRAIN].n == 11 && d.split[NLP_CLS_TEST].n == 11);
    CHECK(d.pad_id == d.vocab_size - 1);
    CHECK(strstr(d.summary, "3 without a gold label skipped") != NULL);
    CHECK(nlp_cls_task_known("snli"));
    nlp_cls_data_free(&d);
    o.train = NULL;
    CHECK(nlp_cls_load_task(&d, "snli", &o) < 0);
    CHECK(strstr(gr_last_error(), "snli_1.0_train.jsonl") != NULL);
    /* an evaluation of the test split reads the test file alone: the
     * missing training file is not asked for */
    o.valid = NULL;
    o.only_split = NLP_CLS_TEST;
    CHECK_MSG(nlp_cls_load_task(&d, "snli", &o) == 0, "%s", gr_last_error());
    CHECK(d.split[NLP_CLS_TRAIN].n == 0 && d.split[NLP_CLS_VALID].n == 0 &&
          d.split[NLP_CLS_TEST].n == 11);
    CHECK_MSG(strstr(d.summary, "test 11 pairs (1 without a gold label") != NULL, "%s", d.summary);
    nlp_cls_data_free(&d);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_nlp_snli FIXTURE_DIR\n");
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/snli_sample.jsonl", argv[1]);
    test_sample(path);
    test_malformed();
    test_mutations(path);
    test_loader(path);
    return test_report("nlp_snli");
}
