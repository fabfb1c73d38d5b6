/* Penn Treebank reader and preprocessing: see nlp/data/treebank.h.
 *
 * A tree is parsed into a node array in pre-order (parent before
 * children), so one backward pass computes each node's kept-word interval
 * and the number of its children that keep words, without recursion (a
 * hostile file cannot overflow the stack). */
#define _POSIX_C_SOURCE 200809L
#include "nlp/data/treebank.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "core/files.h"
#include "core/zip.h"

#define MRG_MAX_BYTES ((size_t)1 << 30)
#define FOLDER_MAX_DEPTH 16

/* ---- growable arrays ------------------------------------------------- */

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) {
        return 0;
    }
    size_t n = *cap ? *cap : 64;
    while (n < need) {
        n *= 2;
    }
    void *q = realloc(*p, n * elem);
    if (q == NULL) {
        return gr_error(GR_ENOMEM, "treebank: out of memory");
    }
    *p = q;
    *cap = n;
    return 0;
}

#define GROW(arr, cap, need) grow((void **)&(arr), &(cap), (need), sizeof *(arr))

struct sent_build {
    int32_t file, index, n_words, n_gold, n_labeled;
    size_t word_first, gold_first, labeled_first;
    size_t tree_off; /* the tree's text in st->text (issue 24) */
    int32_t line;
};

struct nlp_treebank_store {
    char *text; /* words, labels, file names, NUL-separated */
    size_t text_len, text_cap;
    size_t *word_offs;
    size_t n_words, word_cap;
    struct nlp_span *gold;
    size_t n_gold, gold_cap;
    struct nlp_labeled_span *labeled;
    size_t n_labeled, labeled_cap;
    struct sent_build *sents;
    size_t n_sents, sent_cap;
    size_t *label_offs;
    size_t n_label_offs, label_cap;
    size_t *file_name_offs;
    size_t file_cap;
    /* final pointer tables */
    const char **word_ptrs;
    const char **label_ptrs;
    /* per-tree scratch */
    struct node *nodes;
    size_t node_cap;
    int32_t *stack;
    size_t stack_cap;
    struct nlp_labeled_span *items;
    size_t items_cap;
};

static int add_text(struct nlp_treebank_store *st, const char *s, size_t n,
                    size_t *off)
{
    int rc = GROW(st->text, st->text_cap, st->text_len + n + 1);
    if (rc < 0) {
        return rc;
    }
    *off = st->text_len;
    memcpy(st->text + st->text_len, s, n);
    st->text[st->text_len + n] = '\0';
    st->text_len += n + 1;
    return 0;
}

/* ---- word tags and labels -------------------------------------------- */

static const char *const word_tags[] = {
    "CC", "CD",  "DT",  "EX",  "FW",   "IN",  "JJ",  "JJR", "JJS",
    "LS", "MD",  "NN",  "NNS", "NNP",  "NNPS", "PDT", "POS", "PRP",
    "PRP$", "RB", "RBR", "RBS", "RP",  "SYM", "TO",  "UH",  "VB",
    "VBD", "VBG", "VBN", "VBP", "VBZ", "WDT", "WP",  "WP$", "WRB"};

int nlp_is_word_tag(const char *tag, size_t len)
{
    for (size_t i = 0; i < sizeof word_tags / sizeof word_tags[0]; i++) {
        if (strlen(word_tags[i]) == len && memcmp(word_tags[i], tag, len) == 0) {
            return 1;
        }
    }
    return 0;
}

static int intern_label(struct nlp_treebank *tb, const char *s, size_t n,
                        int32_t *id)
{
    struct nlp_treebank_store *st = tb->store;
    for (size_t i = 0; i < st->n_label_offs; i++) {
        const char *l = st->text + st->label_offs[i];
        if (strlen(l) == n && memcmp(l, s, n) == 0) {
            *id = (int32_t)i;
            return 0;
        }
    }
    int rc = GROW(st->label_offs, st->label_cap, st->n_label_offs + 1);
    size_t off = 0;
    if (rc == 0) {
        rc = add_text(st, s, n, &off);
    }
    if (rc < 0) {
        return rc;
    }
    st->label_offs[st->n_label_offs] = off;
    *id = (int32_t)st->n_label_offs++;
    return 0;
}

/* ---- one tree ---------------------------------------------------------- */

struct node {
    size_t text_off; /* label (internal) or atom (leaf) in the file text */
    size_t text_len;
    size_t byte;     /* where the node starts, for messages */
    int32_t line;
    int32_t first_child, last_child, next_sibling;
    int32_t start, count, eff; /* kept words: first, how many; children keeping */
    uint8_t is_leaf, is_word;
};

struct file_ctx {
    struct nlp_treebank *tb;
    const char *text;
    size_t n;
    const char *where; /* "archive:entry" or the path */
    int32_t file;
};

static int is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
           c == '\f';
}

static int new_node(struct nlp_treebank_store *st, size_t *n_nodes,
                    int32_t *id)
{
    int rc = GROW(st->nodes, st->node_cap, *n_nodes + 1);
    if (rc < 0) {
        return rc;
    }
    if (*n_nodes >= INT32_MAX) {
        return gr_error(GR_EFORMAT, "treebank: a tree of more than 2^31 "
                        "nodes");
    }
    *id = (int32_t)(*n_nodes)++;
    struct node *nd = &st->nodes[*id];
    memset(nd, 0, sizeof *nd);
    nd->first_child = nd->last_child = nd->next_sibling = -1;
    return 0;
}

static void add_child(struct nlp_treebank_store *st, int32_t parent,
                      int32_t child)
{
    struct node *p = &st->nodes[parent];
    if (p->last_child < 0) {
        p->first_child = child;
    } else {
        st->nodes[p->last_child].next_sibling = child;
    }
    p->last_child = child;
}

/* Parses the tree starting at text[*pos] == '('. */
static int parse_tree(struct file_ctx *fc, size_t *pos, int32_t *line,
                      size_t *n_nodes)
{
    struct nlp_treebank_store *st = fc->tb->store;
    const char *t = fc->text;
    size_t p = *pos, depth = 0;
    int32_t tree_line = *line;
    size_t tree_byte = p;
    *n_nodes = 0;
    for (;;) {
        while (p < fc->n && is_ws(t[p])) {
            if (t[p] == '\n') {
                (*line)++;
            }
            p++;
        }
        if (p >= fc->n) {
            return gr_error(GR_EFORMAT, "%s:%d: the tree begun here (byte %zu) "
                            "is not closed at the end of the file (%zu "
                            "bracket%s open)", fc->where, tree_line,
                            tree_byte, depth, depth == 1 ? "" : "s");
        }
        int32_t id = 0;
        int rc;
        if (t[p] == '(') {
            rc = new_node(st, n_nodes, &id);
            if (rc < 0) {
                return rc;
            }
            st->nodes[id].byte = p;
            st->nodes[id].line = *line;
            p++;
            while (p < fc->n && is_ws(t[p])) {
                if (t[p] == '\n') {
                    (*line)++;
                }
                p++;
            }
            size_t a = p;
            while (p < fc->n && !is_ws(t[p]) && t[p] != '(' && t[p] != ')') {
                p++;
            }
            st->nodes[id].text_off = a;
            st->nodes[id].text_len = p - a;
            if (depth > 0) {
                add_child(st, st->stack[depth - 1], id);
            }
            rc = GROW(st->stack, st->stack_cap, depth + 1);
            if (rc < 0) {
                return rc;
            }
            st->stack[depth++] = id;
        } else if (t[p] == ')') {
            p++;
            if (--depth == 0) {
                *pos = p;
                return 0;
            }
        } else {
            rc = new_node(st, n_nodes, &id);
            if (rc < 0) {
                return rc;
            }
            size_t a = p;
            while (p < fc->n && !is_ws(t[p]) && t[p] != '(' && t[p] != ')') {
                p++;
            }
            struct node *nd = &st->nodes[id];
            nd->byte = a;
            nd->line = *line;
            nd->text_off = a;
            nd->text_len = p - a;
            nd->is_leaf = 1;
            add_child(st, st->stack[depth - 1], id);
        }
    }
}

static int cmp_labeled(const void *pa, const void *pb)
{
    const struct nlp_labeled_span *a = pa, *b = pb;
    if (a->start != b->start) {
        return a->start < b->start ? -1 : 1;
    }
    if (a->end != b->end) {
        return a->end < b->end ? -1 : 1;
    }
    return (a->label > b->label) - (a->label < b->label);
}

/* Words, gold brackets and labelled items of the parsed tree. */
static int process_tree(struct file_ctx *fc, size_t n_nodes, int32_t index)
{
    struct nlp_treebank *tb = fc->tb;
    struct nlp_treebank_store *st = tb->store;
    struct node *nodes = st->nodes;
    const char *t = fc->text;
    int32_t root = 0;
    /* NLTK: an empty outer label with one child is stripped. */
    if (!nodes[0].is_leaf && nodes[0].text_len == 0 &&
        nodes[0].first_child >= 0 &&
        nodes[0].first_child == nodes[0].last_child) {
        root = nodes[0].first_child;
    }
    struct sent_build sb = {fc->file, index, 0, 0, 0, st->n_words,
                            st->n_gold, st->n_labeled, 0, 0};
    int rc = 0;
    /* Forward: words, in order. */
    for (size_t i = (size_t)root; i < n_nodes && rc == 0; i++) {
        struct node *nd = &nodes[i];
        nd->is_word = !nd->is_leaf &&
                      nlp_is_word_tag(t + nd->text_off, nd->text_len);
        if (!nd->is_word) {
            continue;
        }
        int32_t children = 0, leaves = 0;
        for (int32_t c = nd->first_child; c >= 0; c = nodes[c].next_sibling) {
            children++;
            leaves += nodes[c].is_leaf;
        }
        if (children == 0 || children > 2 || leaves != children) {
            return gr_error(GR_EFORMAT, "%s:%d: preterminal '%.*s' (byte %zu) "
                            "has %s; expected one word", fc->where, nd->line,
                            (int)nd->text_len, t + nd->text_off, nd->byte,
                            children == 0 ? "no word"
                            : leaves != children ? "a subtree"
                                                 : "more than two atoms");
        }
        const struct node *leaf = &nodes[nd->first_child];
        char word[1024];
        size_t len = 0;
        for (size_t k = 0; k < leaf->text_len; k++) {
            char ch = t[leaf->text_off + k];
            if (ch >= '0' && ch <= '9') {
                char prev = k > 0 ? t[leaf->text_off + k - 1] : ' ';
                if (!(prev >= '0' && prev <= '9') && len < sizeof word) {
                    word[len++] = 'N'; /* one N per maximal digit run */
                }
            } else if (len < sizeof word) {
                word[len++] = (char)tolower((unsigned char)ch);
            }
        }
        if (len == sizeof word) {
            return gr_error(GR_EFORMAT, "%s:%d: a word of more than %zu bytes "
                            "(byte %zu)", fc->where, leaf->line, sizeof word - 1,
                            leaf->byte);
        }
        size_t off;
        rc = add_text(st, word, len, &off);
        if (rc == 0) {
            rc = GROW(st->word_offs, st->word_cap, st->n_words + 1);
        }
        if (rc == 0) {
            st->word_offs[st->n_words++] = off;
            nd->start = sb.n_words++;
        }
    }
    if (rc < 0) {
        return rc;
    }
    /* Backward: kept-word intervals and children keeping words. */
    for (size_t i = n_nodes; i-- > (size_t)root;) {
        struct node *nd = &nodes[i];
        if (nd->is_leaf) {
            nd->count = 0;
            continue;
        }
        if (nd->is_word) {
            nd->count = 1;
            nd->eff = 1;
            continue;
        }
        nd->count = 0;
        nd->eff = 0;
        nd->start = -1;
        for (int32_t c = nd->first_child; c >= 0; c = nodes[c].next_sibling) {
            if (nodes[c].count > 0) {
                if (nd->start < 0) {
                    nd->start = nodes[c].start;
                }
                nd->count += nodes[c].count;
                nd->eff++;
            }
        }
    }
    /* Forward again: gold brackets in pre-order, labelled items. */
    size_t n_items = 0;
    for (size_t i = (size_t)root; i < n_nodes && rc == 0; i++) {
        struct node *nd = &nodes[i];
        if (nd->is_leaf || nd->is_word || nd->count < 2) {
            continue;
        }
        if (nd->eff >= 2) {
            rc = GROW(st->gold, st->gold_cap, st->n_gold + 1);
            if (rc == 0) {
                st->gold[st->n_gold++] =
                    (struct nlp_span){nd->start, nd->start + nd->count};
                sb.n_gold++;
            }
        }
        size_t cut = 0;
        while (cut < nd->text_len && t[nd->text_off + cut] != '-' &&
               t[nd->text_off + cut] != '=') {
            cut++;
        }
        int32_t label = 0;
        if (rc == 0) {
            rc = intern_label(tb, t + nd->text_off, cut, &label);
        }
        if (rc == 0) {
            rc = GROW(st->items, st->items_cap, n_items + 1);
        }
        if (rc == 0) {
            st->items[n_items++] = (struct nlp_labeled_span){
                nd->start, nd->start + nd->count, label};
        }
    }
    if (rc < 0) {
        return rc;
    }
    if (n_items > 1) {
        qsort(st->items, n_items, sizeof *st->items, cmp_labeled);
    }
    for (size_t i = 0; i < n_items; i++) {
        if (i > 0 && cmp_labeled(&st->items[i - 1], &st->items[i]) == 0) {
            continue;
        }
        rc = GROW(st->labeled, st->labeled_cap, st->n_labeled + 1);
        if (rc < 0) {
            return rc;
        }
        st->labeled[st->n_labeled++] = st->items[i];
        sb.n_labeled++;
    }
    rc = GROW(st->sents, st->sent_cap, st->n_sents + 1);
    if (rc < 0) {
        return rc;
    }
    if (st->n_sents >= INT32_MAX) {
        return gr_error(GR_EFORMAT, "treebank: more than 2^31 sentences");
    }
    st->sents[st->n_sents++] = sb;
    tb->n_empty += sb.n_words == 0;
    return 0;
}

/* Parses every tree of one file's text. */
static int parse_file(struct file_ctx *fc, int32_t *n_trees)
{
    size_t pos = 0;
    int32_t line = 1;
    *n_trees = 0;
    for (;;) {
        while (pos < fc->n && is_ws(fc->text[pos])) {
            if (fc->text[pos] == '\n') {
                line++;
            }
            pos++;
        }
        if (pos >= fc->n) {
            return 0;
        }
        if (fc->text[pos] != '(') {
            size_t a = pos;
            while (pos < fc->n && !is_ws(fc->text[pos]) && pos - a < 20 &&
                   (pos == a || (fc->text[pos] != '(' &&
                                 fc->text[pos] != ')')) &&
                   fc->text[a] != ')') {
                pos++;
            }
            if (fc->text[a] == ')') {
                pos = a + 1;
            }
            return gr_error(GR_EFORMAT, "%s:%d: %s '%.*s' outside a tree "
                            "(byte %zu); expected '('", fc->where, line,
                            fc->text[a] == ')' ? "unmatched" : "text",
                            (int)(pos - a), fc->text + a, a);
        }
        size_t n_nodes = 0;
        size_t tree_start = pos;
        int32_t tree_line = line;
        int rc = parse_tree(fc, &pos, &line, &n_nodes);
        if (rc == 0) {
            rc = process_tree(fc, n_nodes, *n_trees);
        }
        /* The tree's own text, for readers of other views of it (the
         * dependency converter, nlp/data/deptree.h). */
        size_t off = 0;
        if (rc == 0) {
            rc = add_text(fc->tb->store, fc->text + tree_start,
                          pos - tree_start, &off);
        }
        if (rc < 0) {
            return rc;
        }
        struct nlp_treebank_store *st = fc->tb->store;
        st->sents[st->n_sents - 1].tree_off = off;
        st->sents[st->n_sents - 1].line = tree_line;
        (*n_trees)++;
    }
}

/* ---- files ------------------------------------------------------------- */

/* NNNN if the last path component is wsj_NNNN.mrg (any case), else -1. */
static int32_t wsj_number(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (strlen(base) != 12) {
        return -1;
    }
    char low[13];
    for (int i = 0; i < 12; i++) {
        low[i] = (char)tolower((unsigned char)base[i]);
    }
    low[12] = '\0';
    if (strncmp(low, "wsj_", 4) != 0 || strcmp(low + 8, ".mrg") != 0) {
        return -1;
    }
    int32_t n = 0;
    for (int i = 4; i < 8; i++) {
        if (low[i] < '0' || low[i] > '9') {
            return -1;
        }
        n = n * 10 + (low[i] - '0');
    }
    return n;
}

struct pending {
    char *name;     /* path inside the archive/folder */
    char *fs_path;  /* path on disk (folder), NULL for zip entries */
    long zip_index; /* entry (zip), -1 otherwise */
    int32_t number;
};

static int cmp_pending(const void *pa, const void *pb)
{
    const struct pending *a = pa, *b = pb;
    if (a->number != b->number) {
        return a->number < b->number ? -1 : 1;
    }
    return strcmp(a->name, b->name);
}

struct pending_list {
    struct pending *items;
    size_t n, cap;
};

static void pending_free(struct pending_list *pl)
{
    for (size_t i = 0; i < pl->n; i++) {
        free(pl->items[i].name);
        free(pl->items[i].fs_path);
    }
    free(pl->items);
    memset(pl, 0, sizeof *pl);
}

static int pending_add(struct pending_list *pl, const char *name,
                       const char *fs_path, long zip_index, int32_t number)
{
    int rc = GROW(pl->items, pl->cap, pl->n + 1);
    if (rc < 0) {
        return rc;
    }
    struct pending *p = &pl->items[pl->n];
    p->name = strdup(name);
    p->fs_path = fs_path ? strdup(fs_path) : NULL;
    p->zip_index = zip_index;
    p->number = number;
    if (p->name == NULL || (fs_path != NULL && p->fs_path == NULL)) {
        free(p->name);
        free(p->fs_path);
        return gr_error(GR_ENOMEM, "treebank: out of memory");
    }
    pl->n++;
    return 0;
}

/* Two copies of one WSJ file (two layouts side by side) would count its
 * trees twice: refused. pl is sorted by number. */
static int check_duplicates(const struct pending_list *pl, const char *path)
{
    for (size_t i = 1; i < pl->n; i++) {
        if (pl->items[i].number == pl->items[i - 1].number) {
            return gr_error(GR_EINVAL, "%s: %s and %s are the same WSJ file "
                            "(%04d): pass one copy", path,
                            pl->items[i - 1].name, pl->items[i].name,
                            pl->items[i].number);
        }
    }
    return 0;
}

static int walk_folder(struct nlp_treebank *tb, struct pending_list *pl,
                       const char *dir, const char *rel, int depth)
{
    if (depth > FOLDER_MAX_DEPTH) {
        return gr_error(GR_EINVAL, "%s: folders nested more than %d deep "
                        "(a link loop?)", dir, FOLDER_MAX_DEPTH);
    }
    DIR *d = opendir(dir);
    if (d == NULL) {
        return gr_error(GR_EIO, "cannot read folder %s", dir);
    }
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') {
            continue;
        }
        char path[GR_PATH_MAX], sub[GR_PATH_MAX];
        rc = gr_path_join(path, sizeof path, dir, e->d_name);
        if (rc == 0) {
            if (rel[0] != '\0') {
                rc = gr_path_join(sub, sizeof sub, rel, e->d_name);
            } else {
                snprintf(sub, sizeof sub, "%s", e->d_name);
            }
        }
        if (rc < 0) {
            break;
        }
        struct stat sbuf;
        if (stat(path, &sbuf) != 0) {
            continue; /* a dangling link */
        }
        if (S_ISDIR(sbuf.st_mode)) {
            rc = walk_folder(tb, pl, path, sub, depth + 1);
        } else if (S_ISREG(sbuf.st_mode)) {
            int32_t number = wsj_number(e->d_name);
            if (number >= 0) {
                rc = pending_add(pl, sub, path, -1, number);
            } else {
                tb->n_skipped_files++;
            }
        }
    }
    closedir(d);
    return rc;
}

static int add_file(struct nlp_treebank *tb, const char *name, int32_t number,
                    const char *text, size_t n, const char *where)
{
    struct nlp_treebank_store *st = tb->store;
    int rc = GROW(tb->files, st->file_cap, (size_t)tb->n_files + 1);
    if (rc == 0) {
        size_t cap = st->file_cap;
        size_t *offs = realloc(st->file_name_offs, cap * sizeof *offs);
        if (offs == NULL) {
            return gr_error(GR_ENOMEM, "treebank: out of memory");
        }
        st->file_name_offs = offs;
    }
    size_t off = 0;
    if (rc == 0) {
        rc = add_text(st, name, strlen(name), &off);
    }
    if (rc < 0) {
        return rc;
    }
    int32_t f = tb->n_files;
    struct nlp_treebank_file *tf = &tb->files[f];
    memset(tf, 0, sizeof *tf);
    st->file_name_offs[f] = off;
    tf->number = number;
    tf->section = number >= 0 ? number / 100 : -1;
    tf->first_sentence = (int32_t)st->n_sents;
    struct file_ctx fc = {tb, text, n, where, f};
    int32_t n_trees = 0;
    rc = parse_file(&fc, &n_trees);
    if (rc < 0) {
        return rc;
    }
    tf->n_sentences = n_trees;
    tb->n_files++;
    return 0;
}

/* Turns offsets into the public pointers once everything is read. */
static int finalize(struct nlp_treebank *tb)
{
    struct nlp_treebank_store *st = tb->store;
    st->word_ptrs = malloc((st->n_words ? st->n_words : 1) * sizeof(char *));
    st->label_ptrs =
        malloc((st->n_label_offs ? st->n_label_offs : 1) * sizeof(char *));
    tb->sentences = calloc(st->n_sents ? st->n_sents : 1,
                           sizeof *tb->sentences);
    if (st->word_ptrs == NULL || st->label_ptrs == NULL ||
        tb->sentences == NULL) {
        return gr_error(GR_ENOMEM, "treebank: out of memory");
    }
    for (size_t i = 0; i < st->n_words; i++) {
        st->word_ptrs[i] = st->text + st->word_offs[i];
    }
    for (size_t i = 0; i < st->n_label_offs; i++) {
        st->label_ptrs[i] = st->text + st->label_offs[i];
    }
    for (int32_t f = 0; f < tb->n_files; f++) {
        tb->files[f].name = st->text + st->file_name_offs[f];
    }
    for (size_t i = 0; i < st->n_sents; i++) {
        const struct sent_build *b = &st->sents[i];
        struct nlp_sentence *s = &tb->sentences[i];
        s->file = b->file;
        s->index = b->index;
        s->n_words = b->n_words;
        s->words = st->word_ptrs + b->word_first;
        s->n_gold = b->n_gold;
        s->gold = st->gold ? st->gold + b->gold_first : NULL;
        s->n_labeled = b->n_labeled;
        s->labeled = st->labeled ? st->labeled + b->labeled_first : NULL;
        s->tree = st->text + b->tree_off;
        s->line = b->line;
    }
    tb->n_sentences = (int32_t)st->n_sents;
    tb->n_labels = (int32_t)st->n_label_offs;
    tb->labels = st->label_ptrs;
    return 0;
}

void nlp_treebank_free(struct nlp_treebank *tb)
{
    struct nlp_treebank_store *st = tb->store;
    if (st != NULL) {
        free(st->text);
        free(st->word_offs);
        free(st->gold);
        free(st->labeled);
        free(st->sents);
        free(st->label_offs);
        free(st->file_name_offs);
        free(st->word_ptrs);
        free(st->label_ptrs);
        free(st->nodes);
        free(st->stack);
        free(st->items);
        free(st);
    }
    free(tb->files);
    free(tb->sentences);
    memset(tb, 0, sizeof *tb);
}

static int start(struct nlp_treebank *tb, const char *source)
{
    memset(tb, 0, sizeof *tb);
    snprintf(tb->source, sizeof tb->source, "%s", source);
    tb->store = calloc(1, sizeof *tb->store);
    if (tb->store == NULL) {
        return gr_error(GR_ENOMEM, "treebank: out of memory");
    }
    return 0;
}

int nlp_treebank_read_text(struct nlp_treebank *tb, const char *text,
                           size_t n, const char *name)
{
    int rc = start(tb, name);
    if (rc == 0) {
        tb->kind = NLP_TREEBANK_FILE;
        rc = add_file(tb, name, wsj_number(name), text, n, name);
    }
    if (rc == 0) {
        rc = finalize(tb);
    }
    if (rc < 0) {
        nlp_treebank_free(tb);
    }
    return rc;
}

static int read_zip(struct nlp_treebank *tb, const char *path)
{
    struct gr_zip z;
    int rc = gr_zip_open(&z, path);
    if (rc < 0) {
        return rc;
    }
    struct pending_list pl = {NULL, 0, 0};
    for (size_t i = 0; i < z.n_entries && rc == 0; i++) {
        const struct gr_zip_entry *en = &z.entries[i];
        int32_t number = en->is_dir ? -1 : wsj_number(en->name);
        if (number >= 0) {
            rc = pending_add(&pl, en->name, NULL, (long)i, number);
        } else if (!en->is_dir) {
            tb->n_skipped_files++;
        }
    }
    if (rc == 0 && pl.n == 0) {
        rc = gr_error(GR_EINVAL, "%s: no wsj_NNNN.mrg entry among its %zu "
                      "(expected NLTK's treebank.zip or a zip of the WSJ "
                      ".mrg files)", path, z.n_entries);
    }
    if (pl.n > 1) {
        qsort(pl.items, pl.n, sizeof *pl.items, cmp_pending);
    }
    if (rc == 0) {
        rc = check_duplicates(&pl, path);
    }
    for (size_t i = 0; i < pl.n && rc == 0; i++) {
        unsigned char *data = NULL;
        size_t size = 0;
        rc = gr_zip_read(&z, (size_t)pl.items[i].zip_index, &data, &size);
        if (rc == 0) {
            char where[GR_PATH_MAX + 512];
            snprintf(where, sizeof where, "%s:%s", path, pl.items[i].name);
            rc = add_file(tb, pl.items[i].name, pl.items[i].number,
                          (const char *)data, size, where);
        }
        free(data);
    }
    pending_free(&pl);
    gr_zip_close(&z);
    return rc;
}

static int read_folder(struct nlp_treebank *tb, const char *path)
{
    struct pending_list pl = {NULL, 0, 0};
    int rc = walk_folder(tb, &pl, path, "", 0);
    if (rc == 0 && pl.n == 0) {
        rc = gr_error(GR_EINVAL, "%s: no wsj_NNNN.mrg file in this folder or "
                      "below (expected WSJ/NN/WSJ_NNNN.MRG, "
                      "wsj/NN/wsj_NNNN.mrg or NLTK's combined/)", path);
    }
    if (pl.n > 1) {
        qsort(pl.items, pl.n, sizeof *pl.items, cmp_pending);
    }
    if (rc == 0) {
        rc = check_duplicates(&pl, path);
    }
    for (size_t i = 0; i < pl.n && rc == 0; i++) {
        char *data = NULL;
        size_t size = 0;
        rc = gr_read_file(pl.items[i].fs_path, MRG_MAX_BYTES, &data, &size);
        if (rc == 0) {
            rc = add_file(tb, pl.items[i].name, pl.items[i].number, data, size,
                          pl.items[i].fs_path);
        }
        free(data);
    }
    pending_free(&pl);
    return rc;
}

int nlp_treebank_read(struct nlp_treebank *tb, const char *path)
{
    int rc = start(tb, path);
    if (rc < 0) {
        return rc;
    }
    struct stat sbuf;
    if (stat(path, &sbuf) != 0) {
        nlp_treebank_free(tb);
        return gr_error(GR_EIO, "cannot read %s: no such file or folder",
                        path);
    }
    if (S_ISDIR(sbuf.st_mode)) {
        tb->kind = NLP_TREEBANK_FOLDER;
        rc = read_folder(tb, path);
    } else {
        unsigned char magic[4] = {0, 0, 0, 0};
        FILE *fp = fopen(path, "rb");
        if (fp == NULL) {
            nlp_treebank_free(tb);
            return gr_error(GR_EIO, "cannot open %s", path);
        }
        size_t got = fread(magic, 1, 4, fp);
        fclose(fp);
        if (got == 4 && magic[0] == 'P' && magic[1] == 'K' &&
            ((magic[2] == 3 && magic[3] == 4) ||
             (magic[2] == 5 && magic[3] == 6))) {
            tb->kind = NLP_TREEBANK_ZIP;
            rc = read_zip(tb, path);
        } else {
            tb->kind = NLP_TREEBANK_FILE;
            char *data = NULL;
            size_t size = 0;
            rc = gr_read_file(path, MRG_MAX_BYTES, &data, &size);
            if (rc == 0) {
                rc = add_file(tb, path, wsj_number(path), data, size, path);
            }
            free(data);
        }
    }
    if (rc == 0) {
        rc = finalize(tb);
    }
    if (rc < 0) {
        nlp_treebank_free(tb);
    }
    return rc;
}

/* ---- selection and naming ---------------------------------------------- */

int32_t nlp_treebank_label(const struct nlp_treebank *tb, const char *name)
{
    for (int32_t i = 0; i < tb->n_labels; i++) {
        if (strcmp(tb->labels[i], name) == 0) {
            return i;
        }
    }
    return -1;
}

int nlp_treebank_selected(const struct nlp_treebank *tb, int32_t i,
                          enum nlp_tree_split split, int32_t max_len)
{
    const struct nlp_sentence *s = &tb->sentences[i];
    if (s->n_words < 1 || (max_len >= 0 && s->n_words > max_len)) {
        return 0;
    }
    int32_t section = tb->files[s->file].section;
    if (split == NLP_TREES_TEST) {
        return section == 23;
    }
    return section < 0 || section <= 24;
}

int nlp_treebank_coverage(const struct nlp_treebank *tb)
{
    int present[25] = {0};
    int only_00_01 = tb->n_files > 0;
    for (int32_t f = 0; f < tb->n_files; f++) {
        int32_t sec = tb->files[f].section;
        if (sec != 0 && sec != 1) {
            only_00_01 = 0;
        }
        if (sec >= 0 && sec <= 24) {
            present[sec] = 1;
        }
    }
    if (only_00_01) {
        return 1;
    }
    for (int s = 0; s < 25; s++) {
        if (!present[s]) {
            return 0;
        }
    }
    return 2;
}

const char *nlp_treebank_set_name(const struct nlp_treebank *tb,
                                  enum nlp_tree_split split, int32_t max_len,
                                  char *buf, size_t cap)
{
    char len_text[64];
    if (max_len < 0) {
        snprintf(len_text, sizeof len_text, "all lengths");
    } else {
        snprintf(len_text, sizeof len_text, "<= %d words", max_len);
    }
    int cov = nlp_treebank_coverage(tb);
    if (cov == 1) {
        if (max_len == 10) {
            snprintf(buf, cap, "NLTK-sample WSJ10");
        } else {
            snprintf(buf, cap, "NLTK-sample WSJ, %s", len_text);
        }
    } else if (cov == 2 && split == NLP_TREES_ALL && max_len == 10) {
        snprintf(buf, cap, "WSJ10");
    } else if (cov == 2 && split == NLP_TREES_TEST && max_len < 0) {
        snprintf(buf, cap, "WSJ test");
    } else if (cov == 2) {
        snprintf(buf, cap, "WSJ %s, %s",
                 split == NLP_TREES_TEST ? "section 23" : "sections 00-24",
                 len_text);
    } else {
        int32_t lo = 99, hi = -1;
        for (int32_t f = 0; f < tb->n_files; f++) {
            int32_t sec = tb->files[f].section;
            if (sec >= 0) {
                lo = sec < lo ? sec : lo;
                hi = sec > hi ? sec : hi;
            }
        }
        if (hi >= 0) {
            snprintf(buf, cap, "WSJ files (%d files, sections %02d-%02d)%s, %s",
                     tb->n_files, lo, hi,
                     split == NLP_TREES_TEST ? ", section 23 only" : "",
                     len_text);
        } else {
            snprintf(buf, cap, "trees of %s, %s", tb->source, len_text);
        }
    }
    return buf;
}

int32_t nlp_sentence_ids(const struct nlp_sentence *s,
                         const struct nlp_vocab *v, int32_t eos, int32_t unk,
                         int32_t *out)
{
    int32_t unknown = 0;
    out[0] = eos;
    for (int32_t i = 0; i < s->n_words; i++) {
        int32_t id = nlp_vocab_find(v, s->words[i], strlen(s->words[i]));
        if (id < 0) {
            id = unk;
            unknown++;
        }
        out[1 + i] = id;
    }
    out[s->n_words + 1] = eos;
    return unknown;
}
