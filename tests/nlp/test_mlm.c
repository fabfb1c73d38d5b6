/* The MLM corpus of udgn.md §6 (issue 24 §1): the vocabulary order (count
 * descending, ties in reverse first-seen order, specials 0-2, min count),
 * <unk> mapping and dropped empty lines on a hand-written PTB folder, the
 * masking rule (never <pad>/<unk>, rate, determinism per seed and offset),
 * greedy token-count batches checked rule by rule, and on the real data:
 * Mikolov's PTB (42,068 training sentences, 10,001 ids) and NLTK's sample
 * (split by file).
 *
 *   test_nlp_mlm SHARED_DATA_DIR   (data part skipped, 77, if absent)
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "core/files.h"
#include "nlp/data/mlm.h"
#include "nlp/data/treebank.h"
#include "tests/test.h"

static void write_text(const char *dir, const char *name, const char *text)
{
    char path[GR_PATH_MAX];
    CHECK(gr_path_join(path, sizeof path, dir, name) == 0);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static int sentence_is(const struct nlp_mlm_split *s, int32_t i,
                       const int32_t *want, int32_t n)
{
    if (i >= s->n_sentences || s->offsets[i + 1] - s->offsets[i] != n) {
        return 0;
    }
    return memcmp(s->ids + s->offsets[i], want, (size_t)n * 4) == 0;
}

static void test_hand_ptb(void)
{
    char dir[] = "/tmp/grove_mlm_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    write_text(dir, "ptb.train.txt", " b a c \n a b\n\n d c b\n");
    write_text(dir, "ptb.valid.txt", " a z\n");
    write_text(dir, "ptb.test.txt", " b <unk>\n");
    struct nlp_mlm_corpus c;
    CHECK(nlp_mlm_from_ptb(&c, dir, 2) == 0);
    /* counts b 3, a 2, c 2, d 1; a and c tie: c (seen later) first. */
    CHECK(c.vocab.size == 6);
    if (c.vocab.size == 6) {
        CHECK(strcmp(nlp_vocab_word(&c.vocab, 0), "<unk>") == 0);
        CHECK(strcmp(nlp_vocab_word(&c.vocab, 1), "<pad>") == 0);
        CHECK(strcmp(nlp_vocab_word(&c.vocab, 2), "<mask>") == 0);
        CHECK(strcmp(nlp_vocab_word(&c.vocab, 3), "b") == 0);
        CHECK(strcmp(nlp_vocab_word(&c.vocab, 4), "c") == 0);
        CHECK(strcmp(nlp_vocab_word(&c.vocab, 5), "a") == 0);
    }
    CHECK(c.train.n_sentences == 3 && c.train.n_tokens == 8);
    const int32_t s0[] = {3, 5, 4}, s1[] = {5, 3}, s2[] = {0, 4, 3};
    CHECK(sentence_is(&c.train, 0, s0, 3));
    CHECK(sentence_is(&c.train, 1, s1, 2));
    CHECK(sentence_is(&c.train, 2, s2, 3));
    CHECK(c.n_unk == 1);
    const int32_t v0[] = {5, 0}, t0[] = {3, 0};
    CHECK(c.valid.n_sentences == 1 && sentence_is(&c.valid, 0, v0, 2));
    CHECK(c.test.n_sentences == 1 && sentence_is(&c.test, 0, t0, 2));
    nlp_mlm_free(&c);
    CHECK(nlp_mlm_from_ptb(&c, dir, 1) == 0);
    CHECK(c.vocab.size == 7); /* d too */
    nlp_mlm_free(&c);
    char path[GR_PATH_MAX];
    CHECK(gr_path_join(path, sizeof path, dir, "ptb.test.txt") == 0);
    unlink(path);
    CHECK(nlp_mlm_from_ptb(&c, dir, 1) < 0);
    CHECK_STR_CONTAINS(gr_last_error(), "ptb.test.txt");
    const char *names[] = {"ptb.train.txt", "ptb.valid.txt"};
    for (int i = 0; i < 2; i++) {
        CHECK(gr_path_join(path, sizeof path, dir, names[i]) == 0);
        unlink(path);
    }
    rmdir(dir);
}

static void test_mask(void)
{
    enum { N = 100000 };
    int32_t *ids = malloc(N * 4), *in = malloc(N * 4), *tg = malloc(N * 4);
    int32_t *in2 = malloc(N * 4), *tg2 = malloc(N * 4);
    if (!ids || !in || !tg || !in2 || !tg2) {
        CHECK(0);
        return;
    }
    for (int i = 0; i < N; i++) {
        ids[i] = i % 10 == 0 ? NLP_MLM_PAD : i % 10 == 1 ? NLP_MLM_UNK
                                                        : 3 + i % 7;
    }
    CHECK(nlp_mlm_mask(ids, N, 0.0f, 1, 0, in, tg) == 0);
    CHECK(memcmp(in, ids, N * 4) == 0);
    int32_t all = nlp_mlm_mask(ids, N, 1.0f, 1, 0, in, tg);
    CHECK(all == N / 10 * 8);
    int32_t m = nlp_mlm_mask(ids, N, 0.3f, 7, 0, in, tg);
    CHECK_NEAR((double)m / (N / 10 * 8), 0.3, 0.01);
    int bad = 0;
    for (int i = 0; i < N; i++) {
        if (ids[i] == NLP_MLM_PAD || ids[i] == NLP_MLM_UNK) {
            bad += in[i] != ids[i] || tg[i] != -1;
        } else if (in[i] == NLP_MLM_MASK) {
            bad += tg[i] != ids[i];
        } else {
            bad += in[i] != ids[i] || tg[i] != -1;
        }
    }
    CHECK(bad == 0);
    CHECK(nlp_mlm_mask(ids, N, 0.3f, 7, 0, in2, tg2) == m);
    CHECK(memcmp(in, in2, N * 4) == 0 && memcmp(tg, tg2, N * 4) == 0);
    nlp_mlm_mask(ids, N, 0.3f, 7, 99, in2, tg2);
    CHECK(memcmp(in, in2, N * 4) != 0);
    free(ids);
    free(in);
    free(tg);
    free(in2);
    free(tg2);
}

static void test_batches(void)
{
    /* 12 sentences of these lengths; ids = sentence index + 3. */
    const int32_t lens[12] = {3, 7, 2, 7, 5, 1, 9, 4, 4, 12, 2, 6};
    int64_t off[13] = {0};
    int32_t ids[128];
    for (int i = 0; i < 12; i++) {
        off[i + 1] = off[i] + lens[i];
        for (int64_t t = off[i]; t < off[i + 1]; t++) {
            ids[t] = 3 + i;
        }
    }
    struct nlp_mlm_split s = {12, off[12], off, ids};
    struct nlp_mlm_batches b;
    CHECK(nlp_mlm_batches(&b, &s, 10) == 0);
    int seen[12] = {0}, bad = 0;
    int32_t prev = 1 << 30;
    for (int32_t k = 0; k < b.n_batches; k++) {
        const struct nlp_mlm_batch *bt = &b.batches[k];
        int64_t sum = 0;
        for (int32_t r = 0; r < bt->count; r++) {
            int32_t id = b.order[bt->first + r];
            seen[id]++;
            bad += lens[id] > prev; /* longest first */
            prev = lens[id];
            sum += lens[id];
        }
        bad += bt->max_len != lens[b.order[bt->first]];
        bad += bt->count > 1 && sum >= 10; /* stays below */
        /* greedy: the next sentence would not have fitted */
        if (k + 1 < b.n_batches) {
            bad += sum + lens[b.order[bt->first + bt->count]] < 10;
        }
        bad += k > 0 && bt->first != b.batches[k - 1].first +
                                         b.batches[k - 1].count;
    }
    CHECK(bad == 0);
    for (int i = 0; i < 12; i++) {
        CHECK(seen[i] == 1);
    }
    /* Lengths sorted 12 9 7 7 6 5 4 4 3 2 2 1 pack as 12 | 9 | 7 | 7 | 6 |
     * 5 4 | 4 3 2 | 2 1 (7 + 7, 6 + 5, 9 + 4 and 9 + 2 reach 10): 8. */
    CHECK(b.n_batches == 8);
    /* The 6th batch (5 and 4): padded to 5 with <pad>. */
    int32_t out[64], ln[8];
    nlp_mlm_batch_fill(&b, 5, &s, out, ln);
    CHECK(b.batches[5].count == 2 && b.batches[5].max_len == 5);
    CHECK(ln[0] == 5 && ln[1] == 4);
    CHECK(out[0] == 3 + 4 && out[5] == 3 + 7 && out[9] == NLP_MLM_PAD);
    nlp_mlm_batches_free(&b);
    CHECK(nlp_mlm_batches(&b, &s, 0) == GR_EINVAL);

    int32_t p[50], q[50], count[50] = {0};
    nlp_mlm_shuffle(50, 3, p);
    nlp_mlm_shuffle(50, 3, q);
    CHECK(memcmp(p, q, sizeof p) == 0);
    for (int i = 0; i < 50; i++) {
        count[p[i]]++;
    }
    int perm = 1;
    for (int i = 0; i < 50; i++) {
        perm &= count[i] == 1;
    }
    CHECK(perm);
    nlp_mlm_shuffle(50, 4, q);
    CHECK(memcmp(p, q, sizeof p) != 0);
}

static void test_data(const char *data)
{
    char dir[GR_PATH_MAX];
    struct nlp_mlm_corpus c;
    CHECK(gr_path_join(dir, sizeof dir, data, "ptb") == 0);
    if (gr_path_exists(dir)) {
        CHECK(nlp_mlm_from_ptb(&c, dir, 1) == 0);
        CHECK(c.train.n_sentences == 42068);
        CHECK(c.valid.n_sentences == 3370 && c.test.n_sentences == 3761);
        /* 9,999 types with <unk> (Mikolov's 10k counts <eos>) + 2. */
        CHECK(c.vocab.size == 10001);
        CHECK(c.train.n_tokens == 887521);
        nlp_mlm_free(&c);
    }
    CHECK(gr_path_join(dir, sizeof dir, data,
                       "treebank_sample/treebank.zip") == 0);
    if (gr_path_exists(dir)) {
        struct nlp_treebank tb;
        CHECK(nlp_treebank_read(&tb, dir) == 0);
        CHECK(nlp_mlm_from_treebank(&c, &tb, 1) == 0);
        CHECK(c.by_file == 1);
        CHECK(c.train.n_sentences + c.valid.n_sentences +
                  c.test.n_sentences == tb.n_sentences - tb.n_empty);
        CHECK(c.valid.n_sentences > 0 && c.test.n_sentences > 0);
        int64_t words = 0;
        for (int32_t i = 0; i < tb.n_sentences; i++) {
            words += tb.sentences[i].n_words;
        }
        CHECK(c.train.n_tokens + c.valid.n_tokens + c.test.n_tokens ==
              words);
        printf("sample: train %d, valid %d, test %d sentences, %d ids\n",
               c.train.n_sentences, c.valid.n_sentences,
               c.test.n_sentences, c.vocab.size);
        nlp_mlm_free(&c);
        nlp_treebank_free(&tb);
    }
}

int main(int argc, char **argv)
{
    test_hand_ptb();
    test_mask();
    test_batches();
    if (argc < 2 || !gr_path_exists(argv[1])) {
        test_report("nlp_mlm");
        if (test_failures) {
            return 1;
        }
        return test_skip("nlp_mlm", TEST_NEED_DATA,
                         "data folder %s is absent: data checks skipped",
                         argc < 2 ? "(none given)" : argv[1]);
    }
    test_data(argv[1]);
    return test_report("nlp_mlm");
}
