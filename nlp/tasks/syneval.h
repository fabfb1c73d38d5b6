/* nlp/tasks/syneval.h — targeted syntactic evaluation (Marvin & Linzen 2018;
 * lm_and_parsing.md §5): reading the minimal-pair TSV and scoring it with
 * any language model given as a callback.
 *
 * Data: ../data/syneval/marvin_linzen_2018.tsv, a header line
 * "task condition grammatical ungrammatical ungrammatical2" (tab-separated)
 * and one item per line; ungrammatical2 is empty for minimal pairs and set
 * for NPI triples (grammatical, intrusive, ungrammatical).
 *
 * Protocol (the reference's `syneval` branch): each sentence is scored
 * alone, as ids [<eos>, w_1, ..., w_k, "."] (unknown words, and "." when
 * the vocabulary lacks it, map to <unk>), with a fresh zero state in
 * evaluation mode; its score is the sum of log p(ids[t] | ids[<t]) for
 * t = 1 .. k+1 (the words and the final "."; the final <eos> is not
 * scored). A pair is correct iff score(grammatical) > score(ungrammatical),
 * strictly: a tie is wrong. A triple gives three comparisons: G > I, I > U,
 * G > U. Items whose sentences become identical after the <unk> mapping
 * (any two of them, for triples) are skipped and counted: with the PTB
 * vocabulary 30 word types are unknown and 33,940 items collapse.
 * Accuracies are pooled per case: a task's animate and inanimate versions
 * ("prep_anim" + "prep_inanim" -> "prep") together, in the order of the
 * thesis's Table 3.3, whose published numbers (LMs trained on Wikipedia,
 * not comparable to a PTB model) are attached for reference.
 *
 * Scoring calls back `score` with batches of distinct id sequences (each
 * distinct sentence is scored once). Memory: struct nlp_syneval and struct
 * nlp_syneval_results own what they point to. Thread safety: read-only use
 * of a loaded set is safe; a run calls `score` from the calling thread.
 *
 *   static int my_score(void *ctx, int32_t n, const int32_t *const *ids,
 *                       const int32_t *lens, double *logprob) { ... }
 *   struct nlp_syneval set;
 *   nlp_syneval_read(&set, "marvin_linzen_2018.tsv");
 *   struct nlp_syneval_results res;
 *   nlp_syneval_run(&set, &vocab, eos, unk, my_score, model, 256, &res);
 *   for (int32_t c = 0; c < res.n_cases; c++)
 *       printf("%s %.2f\n", res.cases[c].title,
 *              nlp_syneval_accuracy(&res.cases[c], 0));
 *   nlp_syneval_results_free(&res);
 *   nlp_syneval_free(&set);
 */
#ifndef GROVE_NLP_SYNEVAL_H
#define GROVE_NLP_SYNEVAL_H

#include <stddef.h>
#include <stdint.h>

#include "nlp/data/vocab.h"

struct nlp_syneval_item {
    int32_t task;      /* id in tasks */
    int32_t condition; /* id in conditions */
    int32_t n;         /* 2 (pair) or 3 (NPI triple) */
    int32_t sent[3];   /* ids in sentences: grammatical, ungrammatical(s) */
    int64_t line;      /* in the file, 1-based */
};

struct nlp_syneval {
    char source[4096];
    struct nlp_vocab tasks;      /* task names, in file order */
    struct nlp_vocab conditions; /* condition names */
    struct nlp_vocab sentences;  /* distinct sentence texts */
    struct nlp_syneval_item *items;
    int64_t n_items;
};

/* Reads the TSV. GR_EIO if unreadable, GR_EFORMAT naming the line for a
 * wrong header, a wrong number of fields or an empty sentence. On failure
 * the set is left freed. */
int nlp_syneval_read(struct nlp_syneval *s, const char *path);

/* The same from text[0, n); `name` is used in messages. */
int nlp_syneval_parse(struct nlp_syneval *s, const char *text, size_t n,
                      const char *name);

void nlp_syneval_free(struct nlp_syneval *s);

/* The scorer: for i < n, logprob[i] = sum over t = 1 .. lens[i]-1 of
 * log p(ids[i][t] | ids[i][0..t-1]) (natural log), where ids[i][0] is
 * <eos> and the model starts from a fresh zero state. Returns 0, or a
 * negative GR_E* code with a message (the run stops and passes it on). */
typedef int (*nlp_syneval_score_fn)(void *ctx, int32_t n,
                                    const int32_t *const *ids,
                                    const int32_t *lens, double *logprob);

struct nlp_syneval_case {
    const char *key;   /* pooled task name, e.g. "obj_rel_across" */
    const char *title; /* e.g. "SVA across an object relative clause" */
    int is_triple;     /* NPI: three comparisons */
    int64_t items;     /* all items of the case */
    int64_t skipped;   /* collapsed after the <unk> mapping */
    int64_t correct[3]; /* pairs: [0] G > U; triples: G > I, I > U, G > U */
    /* Thesis Table 3.3 (Wikipedia-trained LMs), NaN where none. */
    double published_onlstm[3];
    double published_lstm[3];
};

struct nlp_syneval_results {
    int32_t n_cases;
    struct nlp_syneval_case *cases;
    int64_t n_items, n_skipped;
    int64_t n_scored;          /* distinct sequences given to the scorer */
    struct nlp_vocab oov;      /* word types not in the vocabulary */
    struct nlp_vocab names;    /* keys of cases not in the thesis table */
    int dot_is_unk;            /* "." is not in the vocabulary */
};

/* Maps, deduplicates, scores (batches of at most `batch` sequences) and
 * tallies. `unk` may be -1 only if every word is in the vocabulary.
 * On failure the results are left freed. */
int nlp_syneval_run(const struct nlp_syneval *s, const struct nlp_vocab *v,
                    int32_t eos, int32_t unk, nlp_syneval_score_fn score,
                    void *ctx, int32_t batch,
                    struct nlp_syneval_results *res);

/* As nlp_syneval_run, and when `progress` is not NULL, sets its total to
 * the number of distinct sequences to score before the first call of
 * `score` (the scorer advances it), so that the line shows an ETA. */
struct gr_progress;
int nlp_syneval_run_progress(const struct nlp_syneval *s,
                             const struct nlp_vocab *v, int32_t eos,
                             int32_t unk, nlp_syneval_score_fn score,
                             void *ctx, int32_t batch,
                             struct gr_progress *progress,
                             struct nlp_syneval_results *res);

/* Keeps `n` items of the set spread evenly over the file (items
 * floor(i * n_items / n), i < n: every case keeps its share), for a quick
 * look at the whole table; n <= 0 or n >= n_items keeps them all. */
void nlp_syneval_limit(struct nlp_syneval *s, int64_t n);

void nlp_syneval_results_free(struct nlp_syneval_results *res);

/* correct[k] / (items - skipped), NaN when nothing was scored. */
double nlp_syneval_accuracy(const struct nlp_syneval_case *c, int k);

#endif
