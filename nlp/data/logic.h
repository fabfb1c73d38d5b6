/* nlp/data/logic.h — the logical-inference task of Bowman, Manning & Potts
 * (2015) (formal_tasks.md §1): reader of the released train0-12 / test0-12
 * files, the relation labeller, the OM protocol's splits (the 9/10 train /
 * 1/10 validation hold-out of ordered_memory.md §9, per-length test sets,
 * the systematic-generalisation splits A, B, C of §1.6), gold trees, and a
 * generator of new pairs (§1.7) that writes the released format.
 *
 * Format (§1.1): one pair per line, `REL <TAB> LEFT <TAB> RIGHT`, tokens
 * separated by single spaces, grammar (§1.2)
 *     E := VAR | ( not E ) | ( E ( OP E ) )     VAR a-f, OP and|or.
 * Expressions are stored as token ids (NLP_LOGIC_*, parentheses included,
 * the ids of ordered_memory.md §6). A trailing "\r" is accepted; an empty
 * line, a wrong field count, an unknown relation or token, or a parse error
 * is GR_EFORMAT "FILE:LINE: what (field, token position)".
 *
 * Labeller (§1.3): an expression's denotation is the set of the 64 truth
 * assignments of a-f that satisfy it, a 64-bit mask (world w sets variable
 * i iff bit i of w is 1); the relation of two denotations follows the
 * table of §1.3. All 249,069 released pairs carry the label it computes
 * (tests/nlp/test_logic.c). Length index k = min(12, max(ops(L), ops(R))),
 * ops counting and/or/not.
 *
 * Gold tree (§1.2): over the expression's non-parenthesis tokens,
 * `( L ( op R ) )` -> [L, [op, R]], `( not X )` -> [not, X]; returned as the
 * spans of its internal nodes (struct nlp_span, root included).
 *
 * Memory: a set owns its pairs, tokens and file names (nlp_logic_set_free);
 * struct nlp_logic_data owns two sets and its index arrays. Read-only use is
 * thread-safe. Errors: negative GR_E* codes, message in gr_last_error().
 *
 *   struct nlp_logic_data d;
 *   if (nlp_logic_load(&d, "data/logic_inference", NLP_LOGIC_SPLIT_A, 6) < 0)
 *       ... gr_last_error();
 *   // d.n_pool = 128,969; d.n_train + d.n_valid == d.n_pool
 *   const struct nlp_logic_pair *p = &d.train.pairs[d.train_idx[0]];
 *   const uint8_t *left = d.train.tokens + p->left;   // p->n_left ids
 *   for (int k = 7; k <= 12; k++) ... d.test_idx[k][0 .. d.n_test[k]) ...
 *   nlp_logic_data_free(&d);
 */
#ifndef GROVE_NLP_LOGIC_H
#define GROVE_NLP_LOGIC_H

#include <stdint.h>
#include <stdio.h>

#include "nlp/tasks/parse.h"

/* Token ids (ordered_memory.md §6): `( ) a b c d e f or and not`, padding. */
enum nlp_logic_token {
    NLP_LOGIC_LPAREN = 0,
    NLP_LOGIC_RPAREN = 1,
    NLP_LOGIC_VAR_A = 2, /* a..f = 2..7 */
    NLP_LOGIC_OR = 8,
    NLP_LOGIC_AND = 9,
    NLP_LOGIC_NOT = 10,
    NLP_LOGIC_PAD = 11,
    NLP_LOGIC_VOCAB = 12,
};

/* Relation ids in the reference's class order `< > = ^ | # v` (§1.3). */
enum nlp_logic_relation {
    NLP_LOGIC_FORWARD = 0,     /* <  x ⊊ y */
    NLP_LOGIC_REVERSE = 1,     /* >  x ⊋ y */
    NLP_LOGIC_EQUIVALENT = 2,  /* =  */
    NLP_LOGIC_NEGATION = 3,    /* ^  disjoint, union W */
    NLP_LOGIC_ALTERNATION = 4, /* |  disjoint, union not W */
    NLP_LOGIC_INDEPENDENT = 5, /* #  */
    NLP_LOGIC_COVER = 6,       /* v  overlapping, union W, no containment */
    NLP_LOGIC_N_RELATIONS = 7,
};

#define NLP_LOGIC_MAX_K 12      /* files 12 hold k >= 12 */
#define NLP_LOGIC_N_K 13        /* k = 0 .. 12 */
#define NLP_LOGIC_MAX_TOKENS 4096 /* per expression, parentheses included */

/* "(", ")", "a", ..., "not", "<pad>"; "?" out of range. */
const char *nlp_logic_token_name(int id);
/* Id of the token s[0, n), or -1. */
int nlp_logic_token_id(const char *s, size_t n);
/* '<' ... 'v'; '?' out of range. */
char nlp_logic_relation_symbol(int rel);
/* Id of the symbol s[0, n) ("<", ...), or -1. */
int nlp_logic_relation_id(const char *s, size_t n);
/* "forward entailment", ... */
const char *nlp_logic_relation_name(int rel);

/* What nlp_logic_parse finds in one expression. */
struct nlp_logic_expr {
    uint64_t denotation; /* bit w set iff world w satisfies it */
    int32_t ops;         /* and + or + not tokens */
    int32_t n_words;     /* non-parenthesis tokens */
};

/* Parses tok[0, n) under §1.2. Fills *e and, when spans is not NULL, the
 * n_words - 1 spans of the gold tree (over the non-parenthesis tokens,
 * root first, parents before children) into spans[n_words - 1].
 * GR_EFORMAT naming the token position (1-based) when it does not parse. */
int nlp_logic_parse(const uint8_t *tok, int32_t n, struct nlp_logic_expr *e,
                    struct nlp_span *spans);

/* The §1.3 relation of denotations x and y, or -1 when either is empty or
 * all 64 worlds (a contradiction or tautology: the relations are defined
 * for contingent formulas only, and the files have none). */
int nlp_logic_relation(uint64_t x, uint64_t y);

/* min(12, max(ops_left, ops_right)) */
int nlp_logic_k(int32_t ops_left, int32_t ops_right);

struct nlp_logic_pair {
    uint32_t left, right;     /* offsets of the expressions in set->tokens */
    uint16_t n_left, n_right; /* tokens, parentheses included */
    int8_t label;             /* relation id as written in the file */
    int8_t computed;          /* the labeller's relation (-1: degenerate) */
    int8_t k;                 /* length index, 0..12 */
    uint8_t ops_left, ops_right; /* operator counts (saturated at 255) */
    int32_t file;             /* index into set->files */
    int32_t line;             /* 1-based line in that file */
    uint64_t den_left, den_right; /* denotations */
};

struct nlp_logic_set {
    int32_t n;                       /* pairs */
    struct nlp_logic_pair *pairs;    /* [n] in reading order */
    uint8_t *tokens;                 /* all expressions' token ids */
    size_t n_tokens;
    int32_t n_files;
    char **files;                    /* [n_files] names used in messages */
    int32_t n_differ;                /* pairs with label != computed */
    size_t cap_pairs, cap_tokens;    /* internal */
    int32_t cap_files;
};

void nlp_logic_set_init(struct nlp_logic_set *s);
void nlp_logic_set_free(struct nlp_logic_set *s);

/* Appends the pairs of text[0, n); `name` is used in messages and stored
 * as the pair's file. On error the set keeps the pairs of earlier calls
 * (none of this text). */
int nlp_logic_read_text(struct nlp_logic_set *s, const char *text, size_t n,
                        const char *name);
/* Reads a file (GR_EIO if unreadable) and appends its pairs. */
int nlp_logic_read_file(struct nlp_logic_set *s, const char *path);

/* Writes pair i as one line of the released format (with "\n"); the
 * label written is the file's (`label`). Returns 0 or GR_EIO. */
int nlp_logic_write_pair(FILE *fp, const struct nlp_logic_set *s, int32_t i);

/* Writes expression tok[0, n) as space-separated text into buf[cap]
 * (NUL-terminated); returns its length, or -1 if it does not fit. */
int nlp_logic_expr_text(const uint8_t *tok, int32_t n, char *buf, size_t cap);

/* ---- the OM protocol -------------------------------------------------- */

enum nlp_logic_split {
    NLP_LOGIC_SPLIT_FULL = 0,
    NLP_LOGIC_SPLIT_A = 1, /* `( and ( not a ) )` */
    NLP_LOGIC_SPLIT_B = 2, /* `( and ( not ` */
    NLP_LOGIC_SPLIT_C = 3, /* `( and ( not ` and `( or ( not ` */
    NLP_LOGIC_N_SPLITS = 4,
};

/* "full", "A", "B", "C"; parse accepts those (and a, b, c). */
const char *nlp_logic_split_name(enum nlp_logic_split split);
int nlp_logic_split_parse(const char *name, enum nlp_logic_split *out);

/* 1 if either expression of pair i contains one of the split's patterns
 * (§1.6: as a substring of its space-separated text; FULL: never). */
int nlp_logic_pair_matches(const struct nlp_logic_set *s, int32_t i,
                           enum nlp_logic_split split);

struct nlp_logic_data {
    struct nlp_logic_set train; /* train0 .. train{max_train_ops}, in order */
    struct nlp_logic_set test;  /* test0 .. test12, in order */
    enum nlp_logic_split split;
    int32_t max_train_ops;
    int32_t n_pool;     /* train pairs the split keeps (full: 135,529) */
    int32_t n_removed;  /* train pairs the split removes */
    int32_t *train_idx; /* [n_train] into .train: the pool minus valid */
    int32_t n_train;
    int32_t *valid_idx; /* [n_valid]: pool positions 10, 20, ... (1-based) */
    int32_t n_valid;
    /* Per k = 0..12: indices into .test of file testk (FULL: every pair;
     * A/B/C: the pairs containing the split's pattern). */
    int32_t *test_idx[NLP_LOGIC_N_K];
    int32_t n_test[NLP_LOGIC_N_K];
};

/* Reads DIR/train0..train{max_train_ops} and DIR/test0..test12, checks
 * that every pair of file trainK/testK has k = K (GR_EFORMAT naming the
 * line otherwise), removes the split's pairs from the pool, holds out every
 * 10th pair of the pool for validation and selects the split's test pairs.
 * max_train_ops in 0..12 (the reference: 6), or -1: no training file is
 * read (the tests alone, for an evaluation; train stays empty and n_pool,
 * n_train, n_valid 0). On failure d is left freed. */
int nlp_logic_load(struct nlp_logic_data *d, const char *dir,
                   enum nlp_logic_split split, int32_t max_train_ops);
void nlp_logic_data_free(struct nlp_logic_data *d);

/* ---- generator (§1.7) -------------------------------------------------- */

struct nlp_logic_gen_stats {
    int64_t draws;       /* pairs drawn */
    int64_t degenerate;  /* rejected: a tautology or contradiction */
    int64_t out_of_range; /* rejected: k outside [min_k, max_k] */
    int64_t duplicates;  /* rejected: the same line was accepted before */
};

/* Appends n new distinct pairs whose k lies in [min_k, max_k] (0..12) to s
 * (file name "generated"): each pair draws 4 of the 6 variables, builds
 * both sides with gen(vars, 12) of §1.7, rejects degenerate pairs and
 * labels it with nlp_logic_relation; duplicates of pairs accepted in this
 * call are drawn again. Deterministic from `seed` (Philox). GR_EINVAL when
 * 200,000 draws in a row bring no new pair (the range is exhausted: e.g.
 * more than the 36 pairs with k = 0); the set is then as before the call.
 * `stats` may be NULL. */
int nlp_logic_generate(struct nlp_logic_set *s, int32_t n, int32_t min_k,
                       int32_t max_k, uint64_t seed,
                       struct nlp_logic_gen_stats *stats);

#endif
