/* Syntactic evaluation (lm_and_parsing.md §5, §6): a fake LM with fixed
 * per-word log-probabilities gives hand-computed accuracies, including
 * ties (wrong under the strict rule), NPI triples, items that collapse
 * after <unk>, pooling of animate/inanimate tasks, the sequences handed to
 * the scorer, malformed files; then the real Marvin & Linzen set with the
 * PTB vocabulary (30 unknown types, 33,940 collapsed items) and a unigram
 * scorer, whose NPI G > I comparisons are all ties (same words in another
 * order) and so all wrong.
 *
 *   test_nlp_syneval SYNEVAL_DIR PTB_DIR   (77 when absent)
 */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/files.h"
#include "core/progress.h"
#include "nlp/data/corpus.h"
#include "nlp/tasks/syneval.h"
#include "tests/test.h"

static const char tsv[] =
    "task\tcondition\tgrammatical\tungrammatical\tungrammatical2\n"
    "simple_agrmt\tsing\tthe cat runs\tthe cat run\t\n"
    "simple_agrmt\tplur\tthe cats run\tthe cats runs\t\n"
    "simple_agrmt\tsing\tthe dog walks\tthe dog walk\t\n" /* tie */
    "prep_anim\tsing\tthe cat near the dog runs\tthe cat near the dog run\t\n"
    "prep_inanim\tplur\tthe cats near the dog run\tthe cats near the dog "
    "runs\t\n"
    "simple_npi_anim\tpast\tno cat ever runs\tthe cat no ever runs\tmost cat "
    "ever runs\n"
    "simple_npi_inanim\tpast\tno cat ever runs\tthe cat no ever runs\tno cat "
    "the ever runs\n" /* I and U tie */
    "simple_reflexives\tsing\tthe cat zzz\tthe cat yyy\t\n" /* collapses */
    "simple_reflexives\tsing\tthe cat runs\tthe cats runs\t\n" /* tie */
    "my_task\tx\tcat\tthe\n"; /* 4 fields, a task not in the thesis */

struct fake_lm {
    const struct nlp_vocab *v;
    double logp[32];
    int32_t eos, dot;
    int calls, sequences, fail;
};

static int fake_score(void *ctx, int32_t n, const int32_t *const *ids,
                      const int32_t *lens, double *logprob)
{
    struct fake_lm *lm = ctx;
    lm->calls++;
    if (lm->fail) {
        return gr_error(GR_EDEVICE, "fake device lost");
    }
    for (int32_t i = 0; i < n; i++) {
        lm->sequences++;
        if (ids[i][0] != lm->eos || ids[i][lens[i] - 1] != lm->dot) {
            return gr_error(GR_EINVAL, "sequence %d is not [<eos> ... .]", i);
        }
        double s = 0;
        for (int32_t t = 1; t < lens[i]; t++) {
            s += lm->logp[ids[i][t]];
        }
        logprob[i] = s;
    }
    return 0;
}

static int32_t add(struct nlp_vocab *v, const char *w)
{
    int32_t id = -1;
    nlp_vocab_add(v, w, strlen(w), &id);
    return id;
}

static const struct nlp_syneval_case *find_case(
    const struct nlp_syneval_results *r, const char *key)
{
    for (int32_t c = 0; c < r->n_cases; c++) {
        if (strcmp(r->cases[c].key, key) == 0) {
            return &r->cases[c];
        }
    }
    return NULL;
}

static void test_fake_lm(void)
{
    struct nlp_syneval set;
    int rc = nlp_syneval_parse(&set, tsv, strlen(tsv), "mini.tsv");
    CHECK_MSG(rc == 0, "%s", gr_last_error());
    if (rc < 0) {
        return;
    }
    CHECK(set.n_items == 10 && set.tasks.size == 7);
    CHECK(set.items[5].n == 3 && set.items[0].n == 2 && set.items[9].n == 2);
    CHECK(set.items[9].line == 11);

    struct nlp_vocab v;
    nlp_vocab_init(&v);
    struct fake_lm lm;
    memset(&lm, 0, sizeof lm);
    lm.v = &v;
    lm.eos = add(&v, "<eos>");
    int32_t unk = add(&v, "<unk>");
    lm.dot = add(&v, ".");
    const struct {
        const char *w;
        double lp;
    } words[] = {{"the", -1},  {"cat", -2},   {"cats", -2}, {"dog", -2},
                 {"runs", -3}, {"run", -4},   {"walks", -5}, {"walk", -5},
                 {"near", -1}, {"no", -1},    {"ever", -1}, {"most", -3}};
    lm.logp[lm.eos] = -100;
    lm.logp[unk] = -7;
    lm.logp[lm.dot] = -0.5;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        lm.logp[add(&v, words[i].w)] = words[i].lp;
    }

    struct nlp_syneval_results r;
    rc = nlp_syneval_run(&set, &v, lm.eos, unk, fake_score, &lm, 3, &r);
    CHECK_MSG(rc == 0, "%s", gr_last_error());
    if (rc == 0) {
        CHECK(r.n_items == 10 && r.n_skipped == 1);
        CHECK(r.oov.size == 2 && !r.dot_is_unk);
        /* thesis order first, then my_task */
        CHECK(r.n_cases == 5);
        CHECK(strcmp(r.cases[0].key, "simple_agrmt") == 0);
        CHECK(strcmp(r.cases[r.n_cases - 1].key, "my_task") == 0);
        const struct nlp_syneval_case *c = find_case(&r, "simple_agrmt");
        /* runs > run: right; runs > run again for the plural: wrong;
         * walks = walk: a tie, wrong */
        CHECK(c && c->items == 3 && c->skipped == 0 && c->correct[0] == 1);
        CHECK(c && fabs(nlp_syneval_accuracy(c, 0) - 1.0 / 3.0) < 1e-12);
        CHECK(c && strcmp(c->title, "SVA simple") == 0);
        c = find_case(&r, "prep");
        CHECK(c && c->items == 2 && c->correct[0] == 1 && !c->is_triple);
        CHECK(c && strcmp(c->title, "SVA across a prepositional phrase") == 0);
        c = find_case(&r, "simple_npi");
        /* G -7.5, I -8.5, U -9.5 / U' -8.5 (a tie with I) */
        CHECK(c && c->is_triple && c->items == 2);
        CHECK(c && c->correct[0] == 2 && c->correct[1] == 1 &&
              c->correct[2] == 2);
        CHECK(c && fabs(c->published_onlstm[1] - 0.50) < 1e-12);
        c = find_case(&r, "simple_reflexives");
        CHECK(c && c->items == 2 && c->skipped == 1 && c->correct[0] == 0);
        CHECK(c && nlp_syneval_accuracy(c, 0) == 0.0);
        c = find_case(&r, "my_task");
        CHECK(c && c->items == 1 && c->correct[0] == 0);
        CHECK(c && isnan(c->published_lstm[0]));
        /* Distinct sequences, each scored once, in batches of <= 3: 22
         * sentences, 18 distinct ("the cat runs", "the cats runs", "no cat
         * ever runs", "the cat no ever runs" repeat), minus the collapsed
         * item's 2: 16, in 6 calls. */
        CHECK_MSG(r.n_scored == 16 && lm.sequences == 16, "%lld scored",
                  (long long)r.n_scored);
        CHECK(lm.calls == 6);
        nlp_syneval_results_free(&r);
    }

    /* The scorer's failure stops the run and is passed on. */
    lm.fail = 1;
    rc = nlp_syneval_run(&set, &v, lm.eos, unk, fake_score, &lm, 3, &r);
    CHECK(rc == GR_EDEVICE);
    CHECK_STR_CONTAINS(gr_last_error(), "the language model failed");
    CHECK_STR_CONTAINS(gr_last_error(), "fake device lost");
    lm.fail = 0;
    CHECK(nlp_syneval_run(&set, &v, lm.eos, unk, fake_score, &lm, 0, &r) ==
          GR_EINVAL);
    /* Without <unk>, an unknown word is an error. */
    CHECK(nlp_syneval_run(&set, &v, lm.eos, -1, fake_score, &lm, 3, &r) ==
          GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "no <unk>");
    nlp_vocab_free(&v);

    /* A vocabulary without ".": it maps to <unk> and is reported. */
    nlp_vocab_init(&v);
    lm.eos = add(&v, "<eos>");
    unk = add(&v, "<unk>");
    lm.dot = unk;
    rc = nlp_syneval_run(&set, &v, lm.eos, unk, fake_score, &lm, 100, &r);
    CHECK(rc == 0 && r.dot_is_unk);
    if (rc == 0) {
        /* every word is <unk> now: items of equal lengths collapse, and
         * here every item has two sentences of one length */
        CHECK(r.n_skipped == 10 && r.n_scored == 0);
        nlp_syneval_results_free(&r);
    }
    nlp_vocab_free(&v);
    nlp_syneval_free(&set);
}

static void expect_bad(const char *text, const char *what)
{
    struct nlp_syneval s;
    gr_clear_error();
    int rc = nlp_syneval_parse(&s, text, strlen(text), "bad.tsv");
    CHECK_MSG(rc == GR_EFORMAT, "'%s': rc %d", what, rc);
    CHECK_STR_CONTAINS(gr_last_error(), what);
}

static void test_malformed(void)
{
    expect_bad("", "empty file");
    expect_bad("task\tcond\tgrammatical\tungrammatical\n", "bad.tsv:1: header");
    const char *h = "task\tcondition\tgrammatical\tungrammatical\t"
                    "ungrammatical2\n";
    char buf[512];
    snprintf(buf, sizeof buf, "%sa\tb\tc d\te f\t\nx\ty\tz\n", h);
    expect_bad(buf, "bad.tsv:3: 3 tab-separated fields");
    snprintf(buf, sizeof buf, "%sa\tb\t\te f\t\n", h);
    expect_bad(buf, "bad.tsv:2: field 3 is empty");
    /* A case mixing pairs and triples cannot be scored. */
    snprintf(buf, sizeof buf, "%sa\tb\tc\td\t\na\tb\tc\td\te\n", h);
    struct nlp_syneval s;
    CHECK(nlp_syneval_parse(&s, buf, strlen(buf), "mixed.tsv") == 0);
    struct nlp_vocab v;
    nlp_vocab_init(&v);
    int32_t eos = add(&v, "<eos>"), unk = add(&v, "<unk>");
    struct fake_lm lm;
    memset(&lm, 0, sizeof lm);
    struct nlp_syneval_results r;
    CHECK(nlp_syneval_run(&s, &v, eos, unk, fake_score, &lm, 8, &r) ==
          GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "mixed.tsv:3: case 'a' mixes");
    nlp_vocab_free(&v);
    nlp_syneval_free(&s);
    CHECK(nlp_syneval_read(&s, "/nonexistent/x.tsv") == GR_EIO);
}

struct unigram_ctx {
    const struct nlp_unigram *u;
};

static int unigram_score(void *ctx, int32_t n, const int32_t *const *ids,
                         const int32_t *lens, double *logprob)
{
    const struct unigram_ctx *c = ctx;
    for (int32_t i = 0; i < n; i++) {
        double s = 0;
        for (int32_t t = 1; t < lens[i]; t++) {
            s += c->u->logp[ids[i][t]];
        }
        logprob[i] = s;
    }
    return 0;
}

static void test_real(const char *dir, const char *ptb)
{
    char path[4096];
    gr_path_join(path, sizeof path, dir, "marvin_linzen_2018.tsv");
    struct nlp_syneval set;
    int rc = nlp_syneval_read(&set, path);
    CHECK_MSG(rc == 0, "%s", gr_last_error());
    if (rc < 0) {
        return;
    }
    CHECK(set.n_items == 163124);
    CHECK(set.tasks.size == 22);
    struct nlp_corpus c;
    if (ptb == NULL) {
        test_absent(TEST_NEED_DATA, "PTB absent: vocabulary checks skipped");
        nlp_syneval_free(&set);
        return;
    }
    if (nlp_corpus_load(&c, ptb) < 0) {
        CHECK_MSG(0, "PTB %s: %s", ptb, gr_last_error());
        nlp_syneval_free(&set);
        return;
    }
    struct nlp_unigram u;
    CHECK(nlp_unigram_fit(&u, c.ids[NLP_TRAIN], c.n_tokens[NLP_TRAIN],
                          c.vocab.size) == 0);
    struct unigram_ctx ctx = {&u};
    struct nlp_syneval_results r;
    rc = nlp_syneval_run(&set, &c.vocab, c.eos, c.unk, unigram_score, &ctx,
                         1024, &r);
    CHECK_MSG(rc == 0, "%s", gr_last_error());
    if (rc == 0) {
        /* §5 and the data README */
        CHECK_MSG(r.oov.size == 30, "%d unknown types", r.oov.size);
        CHECK_MSG(r.n_skipped == 33940, "%lld collapsed",
                  (long long)r.n_skipped);
        CHECK(r.dot_is_unk);
        CHECK(r.n_cases == 15);
        int64_t items = 0;
        static const char *const collapsing[] = {
            "simple_agrmt", "sent_comp", "vp_coord", "prep", "subj_rel",
            "obj_rel_within", "obj_rel_no_comp_within", "obj_rel_across",
            "obj_rel_no_comp_across"};
        for (int32_t k = 0; k < r.n_cases; k++) {
            const struct nlp_syneval_case *cs = &r.cases[k];
            items += cs->items;
            int may = 0;
            for (size_t j = 0; j < sizeof collapsing / sizeof *collapsing; j++) {
                may |= strcmp(cs->key, collapsing[j]) == 0;
            }
            if (!may) {
                CHECK_MSG(cs->skipped == 0, "%s: %lld skipped", cs->key,
                          (long long)cs->skipped);
            }
        }
        CHECK(items == 163124);
        const struct nlp_syneval_case *npi = find_case(&r, "npi_across");
        /* G and I hold the same words in another order: a unigram LM ties,
         * and a tie is wrong. */
        CHECK(npi && npi->is_triple && npi->items == 10560);
        CHECK(npi && npi->correct[0] == 0);
        nlp_syneval_results_free(&r);
    }
    nlp_unigram_free(&u);
    nlp_corpus_free(&c);
    nlp_syneval_free(&set);
}

/* --limit: items spread evenly over the file; the progress total is the
 * number of distinct sequences the scorer then receives. */
static void test_limit_progress(void)
{
    struct nlp_syneval set;
    int rc = nlp_syneval_parse(&set, tsv, strlen(tsv), "mini.tsv");
    CHECK_MSG(rc == 0, "%s", gr_last_error());
    if (rc < 0) {
        return;
    }
    nlp_syneval_limit(&set, 0); /* all */
    nlp_syneval_limit(&set, 10);
    CHECK(set.n_items == 10);
    nlp_syneval_limit(&set, 4); /* items 0, 2, 5, 7: file lines 2, 4, 7, 9 */
    CHECK(set.n_items == 4);
    CHECK(set.items[0].line == 2 && set.items[1].line == 4 &&
          set.items[2].line == 7 && set.items[3].line == 9);

    struct nlp_vocab v;
    nlp_vocab_init(&v);
    struct fake_lm lm;
    memset(&lm, 0, sizeof lm);
    lm.v = &v;
    lm.eos = add(&v, "<eos>");
    int32_t unk = add(&v, "<unk>");
    lm.dot = add(&v, ".");
    const char *known[] = {"the", "cat", "dog", "runs", "run", "walks",
                           "walk", "no", "ever", "most"};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        lm.logp[add(&v, known[i])] = -1.0 - (double)i;
    }
    struct gr_progress p;
    gr_progress_start(&p, "scoring", 0, "sentences", 1);
    struct nlp_syneval_results r;
    rc = nlp_syneval_run_progress(&set, &v, lm.eos, unk, fake_score, &lm, 2,
                                  &p, &r);
    gr_progress_finish(&p);
    CHECK_MSG(rc == 0, "%s", gr_last_error());
    if (rc == 0) {
        /* lines 2 (2 sentences), 4 (2), 7 (an NPI triple: 3), 9 (zzz and
         * yyy are both <unk>: collapsed, skipped) */
        CHECK(r.n_items == 4 && r.n_skipped == 1);
        CHECK_MSG(p.total == 7 && (int64_t)p.total == r.n_scored &&
                      lm.sequences == 7,
                  "total %llu, scored %lld, sequences %d",
                  (unsigned long long)p.total, (long long)r.n_scored,
                  lm.sequences);
        nlp_syneval_results_free(&r);
    }
    nlp_vocab_free(&v);
    nlp_syneval_free(&set);
}

int main(int argc, char **argv)
{
    test_fake_lm();
    test_limit_progress();
    test_malformed();
    if (argc < 2 || !gr_path_exists(argv[1])) {
        return test_skip("nlp_syneval", TEST_NEED_DATA,
                         "syneval folder %s is absent: data checks skipped",
                         argc < 2 ? "(none given)" : argv[1]);
    }
    test_real(argv[1], argc > 2 && gr_path_exists(argv[2]) ? argv[2] : NULL);
    return test_report("nlp_syneval");
}
