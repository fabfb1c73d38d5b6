/* PTB corpus, batching, unigram oracle: see nlp/data/corpus.h. */
#include "nlp/data/corpus.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/files.h"

#define CORPUS_MAX_BYTES ((size_t)1 << 32)

const char *nlp_split_name(enum nlp_split split)
{
    static const char *const names[NLP_N_SPLITS] = {"train", "valid", "test"};
    return (unsigned)split < NLP_N_SPLITS ? names[split] : "?";
}

/* str.split()'s ASCII whitespace: space, \t, \v, \f and \x1c-\x1f (line
 * ends are handled by the caller). */
static int is_space(unsigned char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\v' || ch == '\f' ||
           (ch >= 0x1c && ch <= 0x1f);
}

struct id_array {
    int32_t *ids;
    size_t n, cap;
};

static int push_id(struct id_array *a, int32_t id, const char *path)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 65536;
        int32_t *grown = realloc(a->ids, cap * sizeof *grown);
        if (grown == NULL) {
            return gr_error(GR_ENOMEM, "%s: out of memory", path);
        }
        a->ids = grown;
        a->cap = cap;
    }
    a->ids[a->n++] = id;
    return 0;
}

static int read_split(struct nlp_corpus *c, enum nlp_split split,
                      const char *path)
{
    char *text = NULL;
    size_t size = 0;
    int rc = gr_read_file(path, CORPUS_MAX_BYTES, &text, &size);
    if (rc < 0) {
        return rc;
    }
    struct id_array a = {NULL, 0, 0};
    size_t pos = 0, lines = 0;
    int32_t eos = 0;
    while (rc == 0 && pos < size) {
        /* one line: [pos, end) */
        size_t end = pos;
        while (end < size && text[end] != '\n' && text[end] != '\r') {
            end++;
        }
        size_t p = pos;
        while (rc == 0) {
            while (p < end && is_space((unsigned char)text[p])) {
                p++;
            }
            if (p == end) {
                break;
            }
            size_t w = p;
            while (p < end && !is_space((unsigned char)text[p])) {
                p++;
            }
            int32_t id;
            rc = nlp_vocab_add(&c->vocab, text + w, p - w, &id);
            if (rc == 0) {
                rc = push_id(&a, id, path);
            }
        }
        if (rc == 0) {
            rc = nlp_vocab_add(&c->vocab, "<eos>", 5, &eos);
        }
        if (rc == 0) {
            rc = push_id(&a, eos, path);
        }
        lines++;
        if (end + 1 < size && text[end] == '\r' && text[end + 1] == '\n') {
            pos = end + 2;
        } else {
            pos = end < size ? end + 1 : end;
        }
    }
    free(text);
    if (rc < 0) {
        free(a.ids);
        return rc;
    }
    c->ids[split] = a.ids;
    c->n_tokens[split] = a.n;
    c->n_lines[split] = lines;
    return 0;
}

void nlp_corpus_free(struct nlp_corpus *c)
{
    nlp_vocab_free(&c->vocab);
    for (int s = 0; s < NLP_N_SPLITS; s++) {
        free(c->ids[s]);
    }
    memset(c, 0, sizeof *c);
}

int nlp_corpus_load(struct nlp_corpus *c, const char *dir)
{
    memset(c, 0, sizeof *c);
    nlp_vocab_init(&c->vocab);
    for (int s = 0; s < NLP_N_SPLITS; s++) {
        char name[64];
        snprintf(name, sizeof name, "ptb.%s.txt", nlp_split_name(s));
        int rc = gr_path_join(c->paths[s], sizeof c->paths[s], dir, name);
        if (rc == 0 && !gr_path_exists(c->paths[s])) {
            snprintf(name, sizeof name, "%s.txt", nlp_split_name(s));
            rc = gr_path_join(c->paths[s], sizeof c->paths[s], dir, name);
            if (rc == 0 && !gr_path_exists(c->paths[s])) {
                nlp_corpus_free(c);
                return gr_error(GR_EIO, "%s: no ptb.%s.txt or %s.txt there "
                                "(expected Mikolov's PTB: ptb.train.txt, "
                                "ptb.valid.txt, ptb.test.txt)", dir,
                                nlp_split_name(s), nlp_split_name(s));
            }
        }
        if (rc == 0) {
            rc = read_split(c, s, c->paths[s]);
        }
        if (rc == 0 && c->n_tokens[s] == 0) {
            /* else the first complaint is a vocabulary of 0 words */
            rc = gr_error(GR_EFORMAT, "%s: the file is empty (a PTB split "
                          "has one sentence a line)", c->paths[s]);
        }
        if (rc < 0) {
            nlp_corpus_free(c);
            return rc;
        }
        if (s == NLP_TRAIN) {
            c->n_types_train = c->vocab.size;
        }
    }
    c->eos = nlp_vocab_find(&c->vocab, "<eos>", 5);
    c->unk = nlp_vocab_find(&c->vocab, "<unk>", 5);
    return 0;
}

size_t nlp_batchify_rows(size_t n_tokens, int32_t batch)
{
    return batch > 0 ? n_tokens / (size_t)batch : 0;
}

int nlp_batchify(const int32_t *ids, size_t n_tokens, int32_t batch,
                 int32_t *out)
{
    if (batch < 1) {
        return gr_error(GR_EINVAL, "batchify: batch size %d (must be >= 1)",
                        batch);
    }
    size_t rows = nlp_batchify_rows(n_tokens, batch);
    if (rows == 0) {
        return gr_error(GR_EINVAL, "batchify: %zu tokens cannot fill one row "
                        "of %d", n_tokens, batch);
    }
    for (size_t b = 0; b < (size_t)batch; b++) {
        const int32_t *col = ids + b * rows;
        for (size_t r = 0; r < rows; r++) {
            out[r * (size_t)batch + b] = col[r];
        }
    }
    return 0;
}

int32_t nlp_batch_window(size_t rows, size_t i, int32_t bptt)
{
    if (i + 1 >= rows || bptt <= 0) {
        return 0;
    }
    size_t left = rows - 1 - i;
    return left < (size_t)bptt ? (int32_t)left : bptt;
}

int nlp_unigram_fit(struct nlp_unigram *u, const int32_t *ids, size_t n,
                    int32_t vocab_size)
{
    memset(u, 0, sizeof *u);
    if (vocab_size < 1 || n == 0) {
        return gr_error(GR_EINVAL, "unigram: %zu tokens over %d types: "
                        "nothing to fit", n, vocab_size);
    }
    u->logp = malloc((size_t)vocab_size * sizeof *u->logp);
    u->counts = calloc((size_t)vocab_size, sizeof *u->counts);
    if (u->logp == NULL || u->counts == NULL) {
        nlp_unigram_free(u);
        return gr_error(GR_ENOMEM, "unigram: out of memory");
    }
    for (size_t k = 0; k < n; k++) {
        if (ids[k] < 0 || ids[k] >= vocab_size) {
            int32_t bad = ids[k];
            nlp_unigram_free(u);
            return gr_error(GR_EINVAL, "unigram: token %zu has id %d, outside "
                            "[0, %d)", k, bad, vocab_size);
        }
        u->counts[ids[k]]++;
    }
    for (int32_t w = 0; w < vocab_size; w++) {
        u->logp[w] = u->counts[w] > 0 ? log((double)u->counts[w] / (double)n)
                                      : -INFINITY;
    }
    u->vocab_size = vocab_size;
    u->n_tokens = n;
    return 0;
}

void nlp_unigram_free(struct nlp_unigram *u)
{
    free(u->logp);
    free(u->counts);
    memset(u, 0, sizeof *u);
}

double nlp_unigram_perplexity(const struct nlp_unigram *u, const int32_t *ids,
                              size_t n)
{
    double sum = 0.0;
    for (size_t k = 0; k < n; k++) {
        if (ids[k] < 0 || ids[k] >= u->vocab_size) {
            return INFINITY;
        }
        sum += u->logp[ids[k]];
    }
    return n > 0 ? exp(-sum / (double)n) : NAN;
}
