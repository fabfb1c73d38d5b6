/* Vocabulary: see nlp/data/vocab.h. Linear probing over a power-of-two table of
 * ids; the words' hashes are kept so that growing never rehashes text. */
#include "nlp/data/vocab.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/hash.h"

void nlp_vocab_init(struct nlp_vocab *v) { memset(v, 0, sizeof *v); }

void nlp_vocab_free(struct nlp_vocab *v)
{
    for (int32_t i = 0; i < v->size; i++) {
        free(v->words[i]);
    }
    free(v->words);
    free(v->lens);
    free(v->table);
    free(v->hashes);
    memset(v, 0, sizeof *v);
}

static size_t slot_of(const struct nlp_vocab *v, uint64_t h, const char *word,
                      size_t len)
{
    size_t mask = v->n_slots - 1;
    size_t s = (size_t)h & mask;
    for (;;) {
        int32_t id = v->table[s];
        if (id < 0 || (v->hashes[id] == h && v->lens[id] == len &&
                       memcmp(v->words[id], word, len) == 0)) {
            return s;
        }
        s = (s + 1) & mask;
    }
}

int32_t nlp_vocab_find(const struct nlp_vocab *v, const char *word,
                       size_t len)
{
    if (v->n_slots == 0) {
        return -1;
    }
    uint64_t h = gr_fnv1a64(word, len);
    return v->table[slot_of(v, h, word, len)];
}

static int grow_table(struct nlp_vocab *v)
{
    size_t n = v->n_slots ? v->n_slots * 2 : 1024;
    int32_t *t = malloc(n * sizeof *t);
    if (t == NULL) {
        return gr_error(GR_ENOMEM, "vocabulary: out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        t[i] = -1;
    }
    for (int32_t id = 0; id < v->size; id++) {
        size_t s = (size_t)v->hashes[id] & (n - 1);
        while (t[s] >= 0) {
            s = (s + 1) & (n - 1);
        }
        t[s] = id;
    }
    free(v->table);
    v->table = t;
    v->n_slots = n;
    return 0;
}

int nlp_vocab_add(struct nlp_vocab *v, const char *word, size_t len,
                  int32_t *id)
{
    if (len > 0xFFFFFFFFu) {
        return gr_error(GR_EINVAL, "vocabulary: a word of %zu bytes", len);
    }
    if ((size_t)(v->size + 1) * 2 >= v->n_slots) {
        int rc = grow_table(v);
        if (rc < 0) {
            return rc;
        }
    }
    uint64_t h = gr_fnv1a64(word, len);
    size_t s = slot_of(v, h, word, len);
    if (v->table[s] >= 0) {
        if (id != NULL) {
            *id = v->table[s];
        }
        return 0;
    }
    if (v->size == INT32_MAX) {
        return gr_error(GR_EINVAL, "vocabulary: more than 2^31 words");
    }
    if (v->size == v->cap) {
        int32_t cap = v->cap ? (v->cap > INT32_MAX / 2 ? INT32_MAX : v->cap * 2)
                             : 1024;
        char **w = realloc(v->words, (size_t)cap * sizeof *w);
        if (w != NULL) {
            v->words = w;
        }
        uint32_t *l = realloc(v->lens, (size_t)cap * sizeof *l);
        if (l != NULL) {
            v->lens = l;
        }
        uint64_t *hs = realloc(v->hashes, (size_t)cap * sizeof *hs);
        if (hs != NULL) {
            v->hashes = hs;
        }
        if (w == NULL || l == NULL || hs == NULL) {
            return gr_error(GR_ENOMEM, "vocabulary: out of memory");
        }
        v->cap = cap;
    }
    char *copy = malloc(len + 1);
    if (copy == NULL) {
        return gr_error(GR_ENOMEM, "vocabulary: out of memory");
    }
    memcpy(copy, word, len);
    copy[len] = '\0';
    int32_t new_id = v->size++;
    v->words[new_id] = copy;
    v->lens[new_id] = (uint32_t)len;
    v->hashes[new_id] = h;
    v->table[s] = new_id;
    if (id != NULL) {
        *id = new_id;
    }
    return 0;
}

const char *nlp_vocab_word(const struct nlp_vocab *v, int32_t id)
{
    return v->words[id];
}
