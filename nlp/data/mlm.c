/* The MLM corpus of udgn.md §6: see nlp/data/mlm.h. */
#define _POSIX_C_SOURCE 200809L
#include "nlp/data/mlm.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/files.h"
#include "core/random.h"

#define PTB_MAX_BYTES ((size_t)1 << 31)

static int oom(void)
{
    return gr_error(GR_ENOMEM, "mlm corpus: out of memory");
}

/* Words of one split before the vocabulary exists. */
struct raw {
    const char **w;
    uint32_t *len;
    int64_t n, cap;
    int64_t *off; /* [ns + 1] */
    int32_t ns, ocap;
};

static void raw_free(struct raw *r)
{
    free(r->w);
    free(r->len);
    free(r->off);
    memset(r, 0, sizeof *r);
}

static int raw_word(struct raw *r, const char *w, size_t n)
{
    if (r->n == r->cap) {
        int64_t c = r->cap ? 2 * r->cap : 1024;
        const char **a = realloc(r->w, (size_t)c * sizeof *a);
        if (a) r->w = a;
        uint32_t *b = realloc(r->len, (size_t)c * sizeof *b);
        if (b) r->len = b;
        if (!a || !b) {
            return oom();
        }
        r->cap = c;
    }
    r->w[r->n] = w;
    r->len[r->n++] = (uint32_t)n;
    return 0;
}

/* Ends a sentence (empty ones are dropped). */
static int raw_end(struct raw *r)
{
    if (r->off == NULL || r->ocap == 0) {
        r->off = malloc(64 * sizeof *r->off);
        if (r->off == NULL) {
            return oom();
        }
        r->ocap = 64;
        r->off[0] = 0;
    }
    if (r->n == r->off[r->ns]) {
        return 0;
    }
    if (r->ns + 2 > r->ocap) {
        if (r->ocap > INT32_MAX / 2) {
            return gr_error(GR_EFORMAT, "mlm corpus: too many sentences");
        }
        int32_t c = 2 * r->ocap;
        int64_t *q = realloc(r->off, (size_t)c * sizeof *q);
        if (q == NULL) {
            return oom();
        }
        r->off = q;
        r->ocap = c;
    }
    r->off[++r->ns] = r->n;
    return 0;
}

struct count_row {
    int32_t first; /* first-seen rank */
    int64_t count;
};

static int cmp_rank(const void *pa, const void *pb)
{
    const struct count_row *a = pa, *b = pb;
    if (a->count != b->count) {
        return a->count > b->count ? -1 : 1;
    }
    return a->first > b->first ? -1 : (a->first < b->first); /* reverse */
}

static int is_special(const char *w, size_t n)
{
    return (n == 5 && memcmp(w, "<unk>", 5) == 0) ||
           (n == 5 && memcmp(w, "<pad>", 5) == 0) ||
           (n == 6 && memcmp(w, "<mask>", 6) == 0);
}

static int map_split(struct nlp_mlm_split *s, const struct raw *r,
                     const struct nlp_vocab *v, int64_t *n_unk)
{
    s->n_sentences = r->ns;
    s->n_tokens = r->n;
    s->offsets = malloc((size_t)(r->ns + 1) * sizeof *s->offsets);
    s->ids = malloc((size_t)(r->n ? r->n : 1) * sizeof *s->ids);
    if (s->offsets == NULL || s->ids == NULL) {
        return oom();
    }
    for (int32_t i = 0; i <= r->ns; i++) {
        s->offsets[i] = r->off ? r->off[i] : 0;
    }
    for (int64_t i = 0; i < r->n; i++) {
        int32_t id = nlp_vocab_find(v, r->w[i], r->len[i]);
        s->ids[i] = id < 0 ? NLP_MLM_UNK : id;
        if (n_unk && s->ids[i] == NLP_MLM_UNK) {
            (*n_unk)++;
        }
    }
    return 0;
}

/* Vocabulary from the training words, then every split mapped. */
static int build(struct nlp_mlm_corpus *c, struct raw *r, int32_t min_count)
{
    struct nlp_vocab seen;
    nlp_vocab_init(&seen);
    struct count_row *rows = NULL;
    int64_t cap = 0;
    int rc = 0;
    for (int64_t i = 0; i < r[0].n && rc == 0; i++) {
        if (is_special(r[0].w[i], r[0].len[i])) {
            continue;
        }
        int32_t id = 0;
        rc = nlp_vocab_add(&seen, r[0].w[i], r[0].len[i], &id);
        if (rc == 0 && id >= cap) {
            int64_t nc = cap ? 2 * cap : 1024;
            struct count_row *q = realloc(rows, (size_t)nc * sizeof *q);
            if (q == NULL) {
                rc = oom();
                break;
            }
            rows = q;
            for (int64_t k = cap; k < nc; k++) {
                rows[k] = (struct count_row){(int32_t)k, 0};
            }
            cap = nc;
        }
        if (rc == 0) {
            rows[id].count++;
        }
    }
    nlp_vocab_init(&c->vocab);
    if (rc == 0) {
        /* rows[k].first is word k's id in `seen` (its first-seen rank). */
        if (seen.size > 1) {
            qsort(rows, (size_t)seen.size, sizeof *rows, cmp_rank);
        }
        rc = nlp_vocab_add(&c->vocab, "<unk>", 5, NULL);
        if (rc == 0) rc = nlp_vocab_add(&c->vocab, "<pad>", 5, NULL);
        if (rc == 0) rc = nlp_vocab_add(&c->vocab, "<mask>", 6, NULL);
        for (int32_t i = 0; i < seen.size && rc == 0; i++) {
            if (rows[i].count >= min_count) {
                const char *w = nlp_vocab_word(&seen, rows[i].first);
                rc = nlp_vocab_add(&c->vocab, w, strlen(w), NULL);
            }
        }
    }
    if (rc == 0) rc = map_split(&c->train, &r[0], &c->vocab, &c->n_unk);
    if (rc == 0) rc = map_split(&c->valid, &r[1], &c->vocab, NULL);
    if (rc == 0) rc = map_split(&c->test, &r[2], &c->vocab, NULL);
    free(rows);
    nlp_vocab_free(&seen);
    return rc;
}

void nlp_mlm_free(struct nlp_mlm_corpus *c)
{
    nlp_vocab_free(&c->vocab);
    struct nlp_mlm_split *s[3] = {&c->train, &c->valid, &c->test};
    for (int i = 0; i < 3; i++) {
        free(s[i]->offsets);
        free(s[i]->ids);
    }
    memset(c, 0, sizeof *c);
}

int nlp_mlm_from_treebank(struct nlp_mlm_corpus *c,
                          const struct nlp_treebank *tb, int32_t min_count)
{
    memset(c, 0, sizeof *c);
    int by_section = 0;
    for (int32_t f = 0; f < tb->n_files; f++) {
        by_section |= tb->files[f].section >= 21;
    }
    c->by_file = !by_section;
    struct raw r[3];
    memset(r, 0, sizeof r);
    int rc = 0;
    for (int k = 0; k < 3 && rc == 0; k++) {
        rc = raw_end(&r[k]); /* allocates the offsets */
    }
    for (int32_t i = 0; i < tb->n_sentences && rc == 0; i++) {
        const struct nlp_sentence *s = &tb->sentences[i];
        const struct nlp_treebank_file *f = &tb->files[s->file];
        int k = 0;
        if (by_section) {
            k = f->section >= 23 ? 2 : f->section >= 21 ? 1 : 0;
            if (f->section < 0 || f->section > 24) {
                continue; /* outside 00-24 */
            }
        } else if (f->number >= 0) {
            k = f->number % 10 == 9 ? 2 : f->number % 10 == 8 ? 1 : 0;
        }
        for (int32_t j = 0; j < s->n_words && rc == 0; j++) {
            rc = raw_word(&r[k], s->words[j], strlen(s->words[j]));
        }
        if (rc == 0) {
            rc = raw_end(&r[k]);
        }
    }
    if (rc == 0) {
        rc = build(c, r, min_count);
    }
    for (int k = 0; k < 3; k++) {
        raw_free(&r[k]);
    }
    if (rc < 0) {
        nlp_mlm_free(c);
    }
    return rc;
}

int nlp_mlm_from_ptb(struct nlp_mlm_corpus *c, const char *dir,
                     int32_t min_count)
{
    memset(c, 0, sizeof *c);
    static const char *const names[3] = {"ptb.train.txt", "ptb.valid.txt",
                                         "ptb.test.txt"};
    char *data[3] = {NULL, NULL, NULL};
    struct raw r[3];
    memset(r, 0, sizeof r);
    int rc = 0;
    for (int k = 0; k < 3 && rc == 0; k++) {
        char path[GR_PATH_MAX];
        size_t n = 0;
        rc = gr_path_join(path, sizeof path, dir, names[k]);
        if (rc == 0) {
            rc = gr_read_file(path, PTB_MAX_BYTES, &data[k], &n);
        }
        if (rc == 0) {
            rc = raw_end(&r[k]);
        }
        for (size_t i = 0; i < n && rc == 0;) {
            while (i < n && (data[k][i] == ' ' || data[k][i] == '\t' ||
                             data[k][i] == '\r')) {
                i++;
            }
            if (i < n && data[k][i] == '\n') {
                rc = raw_end(&r[k]);
                i++;
                continue;
            }
            size_t a = i;
            while (i < n && data[k][i] != ' ' && data[k][i] != '\t' &&
                   data[k][i] != '\r' && data[k][i] != '\n') {
                i++;
            }
            if (i > a) {
                rc = raw_word(&r[k], data[k] + a, i - a);
            }
        }
        if (rc == 0) {
            rc = raw_end(&r[k]);
        }
    }
    if (rc == 0) {
        rc = build(c, r, min_count);
    }
    for (int k = 0; k < 3; k++) {
        raw_free(&r[k]);
        free(data[k]);
    }
    if (rc < 0) {
        nlp_mlm_free(c);
    }
    return rc;
}

/* ---- masking and batches ------------------------------------------------ */

int32_t nlp_mlm_mask(const int32_t *ids, int32_t n, float rate,
                     uint64_t seed, uint64_t offset, int32_t *input,
                     int32_t *target)
{
    struct gr_philox_stream st = gr_philox_stream_init(seed, offset);
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++) {
        float u = gr_philox_next_uniform(&st);
        int can = ids[i] != NLP_MLM_PAD && ids[i] != NLP_MLM_UNK;
        if (can && u < rate) {
            input[i] = NLP_MLM_MASK;
            target[i] = ids[i];
            m++;
        } else {
            input[i] = ids[i];
            target[i] = -1;
        }
    }
    return m;
}

struct len_idx {
    int64_t len;
    int32_t idx;
};

static int cmp_len(const void *pa, const void *pb)
{
    const struct len_idx *a = pa, *b = pb;
    if (a->len != b->len) {
        return a->len > b->len ? -1 : 1;
    }
    return (a->idx > b->idx) - (a->idx < b->idx);
}

int nlp_mlm_batches(struct nlp_mlm_batches *b, const struct nlp_mlm_split *s,
                    int32_t max_tokens)
{
    memset(b, 0, sizeof *b);
    if (max_tokens < 1) {
        return gr_error(GR_EINVAL, "mlm batches: max_tokens %d < 1",
                        max_tokens);
    }
    int32_t n = s->n_sentences;
    b->order = malloc((size_t)(n ? n : 1) * sizeof *b->order);
    b->batches = malloc((size_t)(n ? n : 1) * sizeof *b->batches);
    if (b->order == NULL || b->batches == NULL) {
        nlp_mlm_batches_free(b);
        return oom();
    }
    struct len_idx *li = malloc((size_t)(n ? n : 1) * sizeof *li);
    if (li == NULL) {
        nlp_mlm_batches_free(b);
        return oom();
    }
    for (int32_t i = 0; i < n; i++) {
        li[i] = (struct len_idx){s->offsets[i + 1] - s->offsets[i], i};
    }
    if (n > 1) {
        qsort(li, (size_t)n, sizeof *li, cmp_len);
    }
    for (int32_t i = 0; i < n; i++) {
        b->order[i] = li[i].idx;
    }
    free(li);
    int64_t total = 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t id = b->order[i];
        int64_t len = s->offsets[id + 1] - s->offsets[id];
        struct nlp_mlm_batch *cur =
            b->n_batches ? &b->batches[b->n_batches - 1] : NULL;
        if (cur == NULL || total + len >= max_tokens) {
            cur = &b->batches[b->n_batches++];
            *cur = (struct nlp_mlm_batch){i, 0, (int32_t)len};
            total = 0;
        }
        cur->count++;
        total += len;
    }
    return 0;
}

void nlp_mlm_batch_fill(const struct nlp_mlm_batches *b, int32_t k,
                        const struct nlp_mlm_split *s, int32_t *ids,
                        int32_t *lens)
{
    const struct nlp_mlm_batch *bt = &b->batches[k];
    for (int32_t r = 0; r < bt->count; r++) {
        int32_t id = b->order[bt->first + r];
        int32_t len = (int32_t)(s->offsets[id + 1] - s->offsets[id]);
        lens[r] = len;
        for (int32_t t = 0; t < bt->max_len; t++) {
            ids[(size_t)r * bt->max_len + t] =
                t < len ? s->ids[s->offsets[id] + t] : NLP_MLM_PAD;
        }
    }
}

void nlp_mlm_shuffle(int32_t n, uint64_t seed, int32_t *perm)
{
    uint64_t st = seed;
    for (int32_t i = 0; i < n; i++) {
        perm[i] = i;
    }
    for (int32_t i = n - 1; i > 0; i--) {
        int32_t j = (int32_t)(gr_splitmix64_next(&st) % (uint64_t)(i + 1));
        int32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

void nlp_mlm_batches_free(struct nlp_mlm_batches *b)
{
    free(b->order);
    free(b->batches);
    memset(b, 0, sizeof *b);
}
