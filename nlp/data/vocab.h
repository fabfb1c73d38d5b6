/* nlp/data/vocab.h — a word vocabulary: words <-> dense int32 ids.
 *
 * Ids are assigned in order of first addition (0, 1, 2, ...), which is how
 * the reference builds the PTB dictionary (lm_and_parsing.md §1.2), so ids
 * line up with its fixtures and checkpoints. Words are byte strings
 * compared exactly (no normalisation). Lookup is an open-addressing hash
 * table (FNV-1a 64), O(1) expected.
 *
 * Memory: the vocabulary owns copies of its words; nlp_vocab_word's pointer
 * stays valid until nlp_vocab_free. Thread safety: lookups on a vocabulary
 * nobody is adding to are safe from any thread; adding is not.
 * Errors: only allocation failure (GR_ENOMEM), via core/error.h.
 *
 *   struct nlp_vocab v;
 *   nlp_vocab_init(&v);
 *   int32_t id;
 *   if (nlp_vocab_add(&v, "the", 3, &id) < 0) ...;
 *   int32_t same = nlp_vocab_find(&v, "the", 3);    // == id; -1 if absent
 *   printf("%s\n", nlp_vocab_word(&v, id));
 *   nlp_vocab_free(&v);
 */
#ifndef GROVE_NLP_VOCAB_H
#define GROVE_NLP_VOCAB_H

#include <stddef.h>
#include <stdint.h>

struct nlp_vocab {
    int32_t size;    /* number of words, ids 0 .. size-1 */
    char **words;    /* [size] NUL-terminated copies */
    uint32_t *lens;  /* [size] byte lengths */
    int32_t *table;  /* [n_slots] id or -1 */
    uint64_t *hashes; /* [size] FNV-1a 64 of each word */
    size_t n_slots;  /* power of two, kept > 2 * size */
    int32_t cap;     /* capacity of words/lens/hashes */
};

/* An empty vocabulary (no allocation until the first add). */
void nlp_vocab_init(struct nlp_vocab *v);

/* Frees everything; the struct is left empty and reusable. */
void nlp_vocab_free(struct nlp_vocab *v);

/* Adds word[0, len) if absent; *id (may be NULL) gets its id either way. */
int nlp_vocab_add(struct nlp_vocab *v, const char *word, size_t len,
                  int32_t *id);

/* Id of word[0, len), or -1 when absent. */
int32_t nlp_vocab_find(const struct nlp_vocab *v, const char *word,
                       size_t len);

/* The word of `id` (0 <= id < size), NUL-terminated. */
const char *nlp_vocab_word(const struct nlp_vocab *v, int32_t id);

#endif
