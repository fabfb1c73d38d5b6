/* nlp/data/listops.h — ListOps (Nangia & Bowman 2018; formal_tasks.md §2):
 * reader of the released TSV files (test_d20s.tsv), the evaluator of every
 * expression, the gold binarised trees (§2.3), a generator of new sets
 * (§2.5) that writes the same format, and the held-out validation part.
 *
 * Format (§2.1): `ANSWER <TAB> SEQUENCE`, ANSWER one digit, SEQUENCE
 * space-separated tokens `(` `)` `[MIN` `[MAX` `[MED` `[SM` `0`-`9` `]`.
 * The parentheses are the gold tree; the model input is the other tokens,
 * stored as the reference's ids (§2.4: padding 0, digits 1-10, operators
 * and `]` 11-19). The reader checks that the parentheses balance, that
 * every bracket has exactly two parts (the trees are binary), that the
 * list structure is well formed, and that ANSWER is the expression's value
 * (§2.2); anything else is GR_EFORMAT "FILE:LINE: what". `[FIRST` `[LAST`
 * `[PM` `[FLSUM` have ids but no semantics in the spec: rejected. A bare
 * digit ("9\t9", one line of the test file) is kept and counted in
 * n_bare (the reference loader drops it).
 *
 * Gold tree (§2.3): `[OP a1 .. an ]` is (((OP a1) a2) .. an) ]), given as
 * the spans of its internal nodes over the model tokens (n_tokens - 1 per
 * example). The reader stores the file's bracketing; nlp_listops_tree
 * computes the §2.3 tree from the tokens alone (equal on the released file,
 * tests/nlp/test_listops.c).
 *
 * Memory: a set owns its examples, tokens and spans (nlp_listops_free).
 * Read-only use is thread-safe. Errors: negative GR_E* codes, message in
 * gr_last_error().
 *
 *   struct nlp_listops_set s;
 *   if (nlp_listops_read_file(&s, "data/listops/test_d20s.tsv") < 0) ...
 *   const struct nlp_listops_example *e = &s.examples[0];
 *   const uint8_t *ids = s.tokens + e->tokens;     // e->n_tokens ids
 *   const struct nlp_span *gold = s.spans + e->spans; // e->n_tokens - 1
 *   ... e->answer ...
 *   nlp_listops_free(&s);
 */
#ifndef GROVE_NLP_LISTOPS_H
#define GROVE_NLP_LISTOPS_H

#include <stdint.h>
#include <stdio.h>

#include "nlp/tasks/parse.h"

enum nlp_listops_token {
    NLP_LISTOPS_PAD = 0,
    NLP_LISTOPS_DIGIT0 = 1, /* digit d = 1 + d */
    NLP_LISTOPS_MIN = 11,
    NLP_LISTOPS_MAX = 12,
    NLP_LISTOPS_FIRST = 13, /* in the vocabulary, never in the data */
    NLP_LISTOPS_LAST = 14,
    NLP_LISTOPS_MED = 15,
    NLP_LISTOPS_SM = 16,
    NLP_LISTOPS_PM = 17,
    NLP_LISTOPS_FLSUM = 18,
    NLP_LISTOPS_CLOSE = 19, /* "]" */
    NLP_LISTOPS_VOCAB = 20,
};

#define NLP_LISTOPS_MAX_DEPTH 20 /* the generator's depth bound (d20) */

/* "_PAD", "0".."9", "[MIN", ..., "]"; "?" out of range. */
const char *nlp_listops_token_name(int id);
/* Id of s[0, n) (padding excluded), or -1. */
int nlp_listops_token_id(const char *s, size_t n);

/* Evaluates model tokens tok[0, n) (§2.2): *value 0-9, *depth the list
 * nesting depth (0 for a bare digit; may be NULL). GR_EFORMAT naming the
 * token (1-based) for a malformed expression. */
int nlp_listops_eval(const uint8_t *tok, int32_t n, int *value, int *depth);

/* The §2.3 gold tree of a well-formed expression: writes its n - 1 spans
 * into out[n - 1] (children before parents, in the order the file's
 * closing parentheses appear) and returns n - 1, or -1 if malformed. */
int32_t nlp_listops_tree(const uint8_t *tok, int32_t n, struct nlp_span *out);

/* The file form of an expression: the tokens with the §2.3 parentheses,
 * space-separated, into buf[cap]. Returns the length, -1 if it does not
 * fit or the expression is malformed. */
int64_t nlp_listops_bracketed(const uint8_t *tok, int32_t n, char *buf,
                              size_t cap);

struct nlp_listops_example {
    uint32_t tokens;  /* offset of the model tokens in set->tokens */
    int32_t n_tokens; /* without parentheses */
    uint32_t spans;   /* offset of the n_tokens - 1 gold spans */
    int8_t answer;    /* 0-9 */
    int8_t depth;     /* list nesting (0: a bare digit) */
    int32_t line;     /* 1-based (generated: the index + 1) */
};

struct nlp_listops_set {
    int32_t n;
    struct nlp_listops_example *examples;
    uint8_t *tokens;
    size_t n_tokens;
    struct nlp_span *spans;
    size_t n_spans;
    int32_t n_bare;      /* examples that are one digit */
    int32_t max_tokens;  /* longest example */
    char name[4096];     /* the file read, or "generated" */
    size_t cap_examples, cap_tokens, cap_spans; /* internal */
};

/* Reads text[0, n) into a new set (name for messages). On failure the set
 * is left freed. */
int nlp_listops_read_text(struct nlp_listops_set *s, const char *text,
                          size_t n, const char *name);
int nlp_listops_read_file(struct nlp_listops_set *s, const char *path);
void nlp_listops_free(struct nlp_listops_set *s);

/* Writes example i as one line of the released format (answer, TAB, the
 * §2.3 bracketing). 0 or GR_EIO. */
int nlp_listops_write(FILE *fp, const struct nlp_listops_set *s, int32_t i);

struct nlp_listops_gen_stats {
    int64_t draws;      /* trees drawn */
    int64_t duplicates; /* rejected: drawn before */
};

/* A new set of n distinct trees drawn by gen of §2.5 (leaf with
 * probability 3/4 below depth max_depth, always at it; 2-5 arguments;
 * MIN, MAX, MED, SM uniform; digits uniform), in order of first draw,
 * deterministic from `seed` (Philox). max_depth 20 is the released files'
 * (d20). GR_EINVAL (and s freed) when 200,000 draws in a row bring no new
 * tree (e.g. more than 10 trees with max_depth 1). `stats` may be NULL. */
int nlp_listops_generate(struct nlp_listops_set *s, int32_t n, uint64_t seed,
                         int max_depth, struct nlp_listops_gen_stats *stats);

/* A seeded permutation of 0..n-1 into perm[n] (Fisher-Yates on Philox):
 * a trainer takes its first entries as the held-out validation examples
 * (§2.6: 1,000 of the training set) and the rest as train. */
void nlp_listops_holdout(int32_t n, uint64_t seed, int32_t *perm);

#endif
