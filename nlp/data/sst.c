/* Stanford Sentiment Treebank reader and the SST-2 / SST-5 items. See
 * nlp/data/sst.h. Trees are parsed with an explicit stack (no recursion). */
#include "nlp/data/sst.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/files.h"

#define SST_MAX_FILE_BYTES ((size_t)1 << 31)

struct split_store {
    int32_t *words;
    size_t n_words, cap_words;
    struct nlp_sst_node *nodes;
    size_t n_nodes, cap_nodes;
    size_t *word_off, *node_off; /* per tree */
    size_t cap_trees;
};

struct nlp_sst_store {
    struct split_store sp[NLP_N_SPLITS];
    int32_t *stack;   /* scratch: open nodes */
    uint8_t *has_word; /* scratch: per node of the current tree */
    size_t cap_stack, cap_has;
};

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) {
        return 0;
    }
    size_t n = *cap ? *cap : 256;
    while (n < need) {
        n *= 2;
    }
    void *q = realloc(*p, n * elem);
    if (q == NULL) {
        return gr_error(GR_ENOMEM, "sst: out of memory");
    }
    *p = q;
    *cap = n;
    return 0;
}

void nlp_sst_init(struct nlp_sst *s)
{
    memset(s, 0, sizeof *s);
    nlp_vocab_init(&s->vocab);
}

void nlp_sst_free(struct nlp_sst *s)
{
    if (s->store != NULL) {
        for (int i = 0; i < NLP_N_SPLITS; i++) {
            struct split_store *sp = &s->store->sp[i];
            free(sp->words);
            free(sp->nodes);
            free(sp->word_off);
            free(sp->node_off);
        }
        free(s->store->stack);
        free(s->store->has_word);
        free(s->store);
    }
    for (int i = 0; i < NLP_N_SPLITS; i++) {
        free(s->trees[i]);
    }
    nlp_vocab_free(&s->vocab);
    memset(s, 0, sizeof *s);
}

static int is_sep(char c)
{
    return c == ' ' || c == '(' || c == ')';
}

/* Parses one tree line into the split's arrays; on success appends the
 * tree (its pointers are set by fixup()). */
static int read_tree(struct nlp_sst *s, enum nlp_split split, const char *l,
                     size_t len, const char *name, int32_t lineno)
{
    struct nlp_sst_store *st = s->store;
    struct split_store *sp = &st->sp[split];
    char where[GR_PATH_MAX + 32];
    snprintf(where, sizeof where, "%s:%d", name, lineno);
    if (len == 0) {
        return gr_error(GR_EFORMAT, "%s: empty line (one tree per line)",
                        where);
    }
    size_t w0 = sp->n_words, n0 = sp->n_nodes;
    size_t depth = 0;
    int done = 0, rc = 0;
    size_t i = 0;
#define FAIL(...)                                                             \
    do {                                                                      \
        char msg_[256];                                                       \
        snprintf(msg_, sizeof msg_, __VA_ARGS__);                             \
        rc = gr_error(GR_EFORMAT, "%s: %s (column %zu)", where, msg_, i + 1); \
        goto out;                                                             \
    } while (0)
    while (i < len) {
        char c = l[i];
        if (c == ' ') {
            i++;
            continue;
        }
        if (done) {
            FAIL("text after the end of the tree");
        }
        if (c == '(') {
            size_t j = i + 1;
            while (j < len && !is_sep(l[j])) {
                j++;
            }
            if (j != i + 2 || l[i + 1] < '0' || l[i + 1] > '4') {
                FAIL("a node must begin with a label 0-4, got '%.*s'",
                     (int)(j - i - 1 > 20 ? 20 : j - i - 1), l + i + 1);
            }
            size_t k = sp->n_nodes - n0;
            if (k >= INT32_MAX / 2) {
                FAIL("tree too large");
            }
            if ((rc = grow((void **)&sp->nodes, &sp->cap_nodes,
                           sp->n_nodes + 1, sizeof *sp->nodes)) < 0 ||
                (rc = grow((void **)&st->has_word, &st->cap_has, k + 1, 1)) <
                    0 ||
                (rc = grow((void **)&st->stack, &st->cap_stack, depth + 1,
                           sizeof *st->stack)) < 0) {
                goto out;
            }
            if (depth > 0) {
                int32_t p = st->stack[depth - 1];
                struct nlp_sst_node *pn = &sp->nodes[n0 + (size_t)p];
                if (st->has_word[p]) {
                    FAIL("a node holds both a word and a child node");
                }
                if (pn->left < 0) {
                    pn->left = (int32_t)k;
                } else if (pn->right < 0) {
                    pn->right = (int32_t)k;
                } else {
                    FAIL("a node with a third child (SST trees are binary)");
                }
            } else if (k > 0) {
                FAIL("a second tree on the line");
            }
            struct nlp_sst_node *nd = &sp->nodes[sp->n_nodes++];
            nd->start = (int32_t)(sp->n_words - w0);
            nd->end = -1;
            nd->left = nd->right = -1;
            nd->label = (int8_t)(l[i + 1] - '0');
            st->has_word[k] = 0;
            st->stack[depth++] = (int32_t)k;
            i = j;
            continue;
        }
        if (c == ')') {
            if (depth == 0) {
                FAIL("')' without an open node");
            }
            int32_t k = st->stack[depth - 1];
            struct nlp_sst_node *nd = &sp->nodes[n0 + (size_t)k];
            if (!st->has_word[k] && nd->left < 0) {
                FAIL("an empty node (no word, no children)");
            }
            if (!st->has_word[k] && nd->right < 0) {
                FAIL("a node with one child (SST trees are binary)");
            }
            nd->end = (int32_t)(sp->n_words - w0);
            depth--;
            done = depth == 0;
            i++;
            continue;
        }
        /* a word */
        size_t j = i;
        while (j < len && !is_sep(l[j])) {
            j++;
        }
        if (depth == 0) {
            FAIL("a word outside any node");
        }
        int32_t k = st->stack[depth - 1];
        if (st->has_word[k] || sp->nodes[n0 + (size_t)k].left >= 0) {
            FAIL("a second word or a word beside child nodes in one node");
        }
        int32_t id = 0;
        if ((rc = nlp_vocab_add(&s->vocab, l + i, j - i, &id)) < 0 ||
            (rc = grow((void **)&sp->words, &sp->cap_words, sp->n_words + 1,
                       sizeof *sp->words)) < 0) {
            goto out;
        }
        sp->words[sp->n_words++] = id;
        st->has_word[k] = 1;
        i = j;
    }
    if (depth > 0) {
        FAIL("%zu node%s not closed at the end of the line", depth,
             depth == 1 ? "" : "s");
    }
    if (!done) {
        FAIL("no tree on the line");
    }
#undef FAIL
    int32_t t = s->n_trees[split];
    if ((rc = grow((void **)&s->trees[split], &sp->cap_trees, (size_t)t + 1,
                   sizeof *s->trees[split])) < 0) {
        goto out;
    }
    /* the offset arrays share cap_trees with trees[split] */
    size_t *wo = realloc(sp->word_off, sp->cap_trees * sizeof *wo);
    if (wo == NULL) {
        rc = gr_error(GR_ENOMEM, "sst: out of memory");
        goto out;
    }
    sp->word_off = wo;
    size_t *no = realloc(sp->node_off, sp->cap_trees * sizeof *no);
    if (no == NULL) {
        rc = gr_error(GR_ENOMEM, "sst: out of memory");
        goto out;
    }
    sp->node_off = no;
    struct nlp_sst_tree *tr = &s->trees[split][t];
    memset(tr, 0, sizeof *tr);
    tr->n_words = (int32_t)(sp->n_words - w0);
    tr->n_nodes = (int32_t)(sp->n_nodes - n0);
    tr->line = lineno;
    sp->word_off[t] = w0;
    sp->node_off[t] = n0;
    s->n_trees[split]++;
out:
    if (rc < 0) {
        sp->n_words = w0;
        sp->n_nodes = n0;
    }
    return rc;
}

static void fixup(struct nlp_sst *s, enum nlp_split split)
{
    struct split_store *sp = &s->store->sp[split];
    for (int32_t t = 0; t < s->n_trees[split]; t++) {
        s->trees[split][t].words = sp->words + sp->word_off[t];
        s->trees[split][t].nodes = sp->nodes + sp->node_off[t];
    }
}

int nlp_sst_read_text(struct nlp_sst *s, enum nlp_split split,
                      const char *text, size_t n, const char *name)
{
    if ((unsigned)split >= NLP_N_SPLITS) {
        return gr_error(GR_EINVAL, "sst: bad split %d", (int)split);
    }
    if (s->store == NULL) {
        s->store = calloc(1, sizeof *s->store);
        if (s->store == NULL) {
            return gr_error(GR_ENOMEM, "sst: out of memory");
        }
    }
    snprintf(s->paths[split], sizeof s->paths[split], "%s", name);
    int32_t t0 = s->n_trees[split];
    size_t pos = 0;
    int32_t lineno = 0;
    int rc = 0;
    while (pos < n) {
        size_t end = pos;
        while (end < n && text[end] != '\n') {
            end++;
        }
        size_t len = end - pos;
        if (len > 0 && text[pos + len - 1] == '\r') {
            len--;
        }
        lineno++;
        if ((rc = read_tree(s, split, text + pos, len, name, lineno)) < 0) {
            break;
        }
        pos = end + 1;
    }
    if (rc < 0) {
        struct split_store *sp = &s->store->sp[split];
        if (t0 < s->n_trees[split]) {
            sp->n_words = sp->word_off[t0];
            sp->n_nodes = sp->node_off[t0];
        }
        s->n_trees[split] = t0;
    }
    fixup(s, split);
    return rc;
}

int nlp_sst_load(struct nlp_sst *s, const char *dir)
{
    static const char *const files[NLP_N_SPLITS] = {"train.txt", "dev.txt",
                                                    "test.txt"};
    nlp_sst_init(s);
    int rc = 0;
    for (int i = 0; i < NLP_N_SPLITS && rc == 0; i++) {
        char path[GR_PATH_MAX];
        char *text = NULL;
        size_t size = 0;
        if ((rc = gr_path_join(path, sizeof path, dir, files[i])) < 0 ||
            (rc = gr_read_file(path, SST_MAX_FILE_BYTES, &text, &size)) < 0) {
            break;
        }
        rc = nlp_sst_read_text(s, (enum nlp_split)i, text, size, path);
        free(text);
        if (i == NLP_TRAIN) {
            s->n_types_train = s->vocab.size;
        }
    }
    if (rc < 0) {
        nlp_sst_free(s);
    }
    return rc;
}

int nlp_sst_label(enum nlp_sst_task task, int sentiment)
{
    if (task == NLP_SST5) {
        return sentiment;
    }
    return sentiment < 2 ? 0 : sentiment > 2 ? 1 : -1;
}

static uint64_t phrase_hash(const int32_t *w, int32_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (int32_t i = 0; i < n; i++) {
        uint32_t v = (uint32_t)w[i];
        for (int b = 0; b < 4; b++) {
            h = (h ^ ((v >> (8 * b)) & 0xff)) * 0x100000001b3ull;
        }
    }
    return h;
}

int nlp_sst_items(const struct nlp_sst *s, enum nlp_split split,
                  enum nlp_sst_task task, enum nlp_sst_unit unit,
                  struct nlp_sst_item **out, int32_t *n, int32_t *n_neutral,
                  int32_t *n_repeated)
{
    *out = NULL;
    *n = 0;
    if ((unsigned)split >= NLP_N_SPLITS ||
        (task != NLP_SST2 && task != NLP_SST5)) {
        return gr_error(GR_EINVAL, "sst: bad split or task");
    }
    size_t cand = 0;
    for (int32_t t = 0; t < s->n_trees[split]; t++) {
        cand += unit == NLP_SST_SENTENCES ? 1 : (size_t)s->trees[split][t].n_nodes;
    }
    struct nlp_sst_item *it = malloc((cand + 1) * sizeof *it);
    int32_t *slot = NULL;
    size_t n_slots = 1;
    if (unit == NLP_SST_PHRASES) {
        while (n_slots < 2 * cand + 2) {
            n_slots *= 2;
        }
        slot = malloc(n_slots * sizeof *slot);
        if (slot != NULL) {
            for (size_t i = 0; i < n_slots; i++) {
                slot[i] = -1;
            }
        }
    }
    if (it == NULL || (unit == NLP_SST_PHRASES && slot == NULL)) {
        free(it);
        free(slot);
        return gr_error(GR_ENOMEM, "sst: out of memory");
    }
    int32_t k = 0, neutral = 0, repeated = 0;
    for (int32_t t = 0; t < s->n_trees[split]; t++) {
        const struct nlp_sst_tree *tr = &s->trees[split][t];
        int32_t last = unit == NLP_SST_SENTENCES ? 1 : tr->n_nodes;
        for (int32_t v = 0; v < last; v++) {
            const struct nlp_sst_node *nd = &tr->nodes[v];
            int label = nlp_sst_label(task, nd->label);
            if (label < 0) {
                neutral++;
                continue;
            }
            if (unit == NLP_SST_PHRASES) {
                const int32_t *w = tr->words + nd->start;
                int32_t len = nd->end - nd->start;
                size_t j = (size_t)phrase_hash(w, len) & (n_slots - 1);
                int dup = 0;
                while (slot[j] >= 0) {
                    const struct nlp_sst_item *o = &it[slot[j]];
                    const struct nlp_sst_tree *ot = &s->trees[split][o->tree];
                    const struct nlp_sst_node *on = &ot->nodes[o->node];
                    if (on->end - on->start == len &&
                        memcmp(ot->words + on->start, w,
                               (size_t)len * sizeof *w) == 0) {
                        dup = 1;
                        break;
                    }
                    j = (j + 1) & (n_slots - 1);
                }
                if (dup) {
                    repeated++;
                    continue;
                }
                slot[j] = k;
            }
            it[k].tree = t;
            it[k].node = v;
            it[k].label = label;
            k++;
        }
    }
    free(slot);
    *out = it;
    *n = k;
    if (n_neutral != NULL) {
        *n_neutral = neutral;
    }
    if (n_repeated != NULL) {
        *n_repeated = repeated;
    }
    return 0;
}
