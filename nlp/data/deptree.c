/* Dependency trees: see nlp/data/deptree.h.
 *
 * Each sentence lives in one malloc'd block (pointer tables, heads and
 * its strings), built by struct builder and owned by the store. The
 * bracket parser is iterative (a hostile file cannot overflow the stack);
 * heads are found in one backward pass over the pre-order node array. */
#define _POSIX_C_SOURCE 200809L
#include "nlp/data/deptree.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/files.h"

#define CONLL_MAX_BYTES ((size_t)1 << 31)

struct nlp_dep_sentence_store {
    void **blocks;
    size_t n_blocks, cap;
};

/* ---- building sentences --------------------------------------------- */

struct builder {
    int32_t n, cap;
    size_t *form, *tag, *label; /* offsets into buf */
    int32_t *heads, *orig;
    char *buf;
    size_t len, buf_cap;
};

static void builder_free(struct builder *b)
{
    free(b->form);
    free(b->tag);
    free(b->label);
    free(b->heads);
    free(b->orig);
    free(b->buf);
    memset(b, 0, sizeof *b);
}

static int oom(void)
{
    return gr_error(GR_ENOMEM, "dependency trees: out of memory");
}

static int add_str(struct builder *b, const char *s, size_t n, size_t *off)
{
    if (b->len + n + 1 > b->buf_cap) {
        size_t c = b->buf_cap ? b->buf_cap : 256;
        while (c < b->len + n + 1) {
            c *= 2;
        }
        char *q = realloc(b->buf, c);
        if (q == NULL) {
            return oom();
        }
        b->buf = q;
        b->buf_cap = c;
    }
    *off = b->len;
    memcpy(b->buf + b->len, s, n);
    b->buf[b->len + n] = '\0';
    b->len += n + 1;
    return 0;
}

static int add_token(struct builder *b, const char *form, size_t nf,
                     const char *tag, size_t nt, const char *label, size_t nl,
                     int32_t head, int32_t orig)
{
    if (b->n == b->cap) {
        if (b->cap >= INT32_MAX / 2) {
            return gr_error(GR_EFORMAT, "a sentence of more than 2^30 "
                            "tokens");
        }
        int32_t c = b->cap ? 2 * b->cap : 32;
        size_t *f = realloc(b->form, (size_t)c * sizeof *f);
        if (f) b->form = f;
        size_t *t = realloc(b->tag, (size_t)c * sizeof *t);
        if (t) b->tag = t;
        size_t *l = realloc(b->label, (size_t)c * sizeof *l);
        if (l) b->label = l;
        int32_t *h = realloc(b->heads, (size_t)c * sizeof *h);
        if (h) b->heads = h;
        int32_t *o = realloc(b->orig, (size_t)c * sizeof *o);
        if (o) b->orig = o;
        if (!f || !t || !l || !h || !o) {
            return oom();
        }
        b->cap = c;
    }
    int32_t i = b->n;
    int rc = add_str(b, form, nf, &b->form[i]);
    if (rc == 0) rc = add_str(b, tag, nt, &b->tag[i]);
    if (rc == 0) rc = add_str(b, label, nl, &b->label[i]);
    if (rc < 0) {
        return rc;
    }
    b->heads[i] = head;
    b->orig[i] = orig;
    b->n++;
    return 0;
}

static int store_init(struct nlp_deptrees *d, const char *name)
{
    memset(d, 0, sizeof *d);
    size_t k = strlen(name);
    if (k >= sizeof d->name) {
        k = sizeof d->name - 1;
    }
    memcpy(d->name, name, k);
    d->name[k] = '\0';
    d->store = calloc(1, sizeof *d->store);
    return d->store ? 0 : oom();
}

/* Moves the builder's tokens into a new sentence of d; empties b. */
static int commit(struct nlp_deptrees *d, struct builder *b, int32_t source,
                  int32_t line)
{
    struct nlp_dep_sentence_store *st = d->store;
    size_t n = (size_t)b->n;
    size_t ptrs = 3 * n * sizeof(char *), ints = 2 * n * sizeof(int32_t);
    char *blk = malloc(ptrs + ints + b->len + 1);
    if (blk == NULL) {
        return oom();
    }
    if (st->n_blocks == st->cap) {
        size_t c = st->cap ? 2 * st->cap : 256;
        void **q = realloc(st->blocks, c * sizeof *q);
        struct nlp_dep_sentence *s =
            realloc(d->sentences, c * sizeof *d->sentences);
        if (q) st->blocks = q;
        if (s) d->sentences = s;
        if (!q || !s || c > INT32_MAX) {
            free(blk);
            return oom();
        }
        st->cap = c;
    }
    st->blocks[st->n_blocks++] = blk;
    const char **forms = (const char **)(void *)blk;
    const char **tags = forms + n, **labels = tags + n;
    int32_t *heads = (int32_t *)(void *)(blk + ptrs), *orig = heads + n;
    char *text = blk + ptrs + ints;
    if (b->len) {
        memcpy(text, b->buf, b->len);
    }
    int32_t roots = 0;
    for (size_t i = 0; i < n; i++) {
        forms[i] = text + b->form[i];
        tags[i] = text + b->tag[i];
        labels[i] = text + b->label[i];
        heads[i] = b->heads[i];
        orig[i] = b->orig[i];
        roots += heads[i] == (int32_t)i;
    }
    d->n_multi_root += roots > 1;
    d->sentences[d->n_sentences++] = (struct nlp_dep_sentence){
        b->n, forms, tags, labels, heads, orig, source, line};
    b->n = 0;
    b->len = 0;
    return 0;
}

void nlp_deptrees_free(struct nlp_deptrees *d)
{
    if (d->store) {
        for (size_t i = 0; i < d->store->n_blocks; i++) {
            free(d->store->blocks[i]);
        }
        free(d->store->blocks);
        free(d->store);
    }
    free(d->sentences);
    memset(d, 0, sizeof *d);
}

/* ---- CoNLL ------------------------------------------------------------- */

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static int is_conllu_id(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '-' || s[i] == '.') {
            return 1;
        }
    }
    return 0;
}

/* Parses a positive decimal (no sign, no spaces); -1 if not one. */
static long parse_uint(const char *s, size_t n)
{
    if (n == 0 || n > 9) {
        return -1;
    }
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return -1;
        }
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

/* Splits a line into at most 11 fields (by TAB, or by spaces if it has no
 * TAB); returns the number of fields (11 = more than 10). */
static int split_fields(const char *s, size_t n, const char **f, size_t *fl)
{
    int tabs = memchr(s, '\t', n) != NULL;
    int k = 0;
    size_t i = 0;
    if (tabs) {
        for (;;) {
            size_t a = i;
            while (i < n && s[i] != '\t') {
                i++;
            }
            if (k == 11) {
                return 11;
            }
            f[k] = s + a;
            fl[k++] = i - a;
            if (i >= n) {
                return k;
            }
            i++;
        }
    }
    while (i < n) {
        while (i < n && s[i] == ' ') {
            i++;
        }
        if (i >= n) {
            break;
        }
        size_t a = i;
        while (i < n && s[i] != ' ') {
            i++;
        }
        if (k == 11) {
            return 11;
        }
        f[k] = s + a;
        fl[k++] = i - a;
    }
    return k;
}

/* Checks the sentence just read: every HEAD in 0..n; converts to 0-based
 * with the root pointing to itself. */
static int finish_conll(struct nlp_deptrees *d, struct builder *b,
                        const char *name, int32_t first_line,
                        const int32_t *head_lines, int32_t source)
{
    for (int32_t i = 0; i < b->n; i++) {
        int32_t h = b->heads[i];
        if (h > b->n) {
            return gr_error(GR_EFORMAT, "%s:%d: HEAD %d is beyond the "
                            "sentence's %d tokens", name, head_lines[i], h,
                            b->n);
        }
        if (h == i + 1) {
            return gr_error(GR_EFORMAT, "%s:%d: token %d is its own HEAD "
                            "(the root has HEAD 0)", name, head_lines[i],
                            i + 1);
        }
        b->heads[i] = h == 0 ? i : h - 1;
    }
    return commit(d, b, source, first_line);
}

int nlp_conll_read_text(struct nlp_deptrees *d, const char *text, size_t n,
                        const char *name, int tag_column)
{
    int rc = store_init(d, name);
    if (rc < 0) {
        return rc;
    }
    if (tag_column < 0 || tag_column > 10) {
        nlp_deptrees_free(d);
        return gr_error(GR_EINVAL, "--tag-column %d: expected 1..10 (4 = "
                        "CoNLL-X POSTAG, 5 = CoNLL-U XPOS)", tag_column);
    }
    if (tag_column == 0) {
        int u = ends_with(name, ".conllu");
        /* Content hints of CoNLL-U: sent_id/text comments, range IDs. */
        size_t i = 0;
        while (!u && i < n) {
            size_t a = i;
            while (i < n && text[i] != '\n') {
                i++;
            }
            const char *l = text + a;
            size_t len = i - a;
            if (len >= 9 && (strncmp(l, "# sent_id", 9) == 0 ||
                             strncmp(l, "# text =", 8) == 0)) {
                u = 1;
            } else if (len > 0 && l[0] != '#') {
                size_t j = 0;
                while (j < len && l[j] != '\t' && l[j] != ' ') {
                    j++;
                }
                u = is_conllu_id(l, j);
            }
            i++;
        }
        tag_column = u ? 5 : 4;
    }
    struct builder b = {0};
    int32_t *head_lines = NULL;
    size_t hl_cap = 0;
    int32_t line = 0, first_line = 0;
    size_t i = 0;
    while (rc == 0 && i <= n) {
        size_t a = i;
        while (i < n && text[i] != '\n') {
            i++;
        }
        size_t len = i - a;
        int at_end = i >= n;
        i++;
        line++;
        if (len > 0 && text[a + len - 1] == '\r') {
            len--;
        }
        if (at_end && len == 0) {
            break;
        }
        if (len == 0) {
            if (b.n > 0) {
                rc = finish_conll(d, &b, name, first_line, head_lines,
                                  d->n_sentences);
            }
            continue;
        }
        if (text[a] == '#') {
            continue;
        }
        if (memchr(text + a, '\0', len) != NULL) {
            rc = gr_error(GR_EFORMAT, "%s:%d: a NUL byte (not a text file?)",
                          name, line);
            break;
        }
        const char *f[11];
        size_t fl[11];
        int k = split_fields(text + a, len, f, fl);
        if (k != 10) {
            rc = gr_error(GR_EFORMAT, "%s:%d: %s%d columns, expected 10 "
                          "(ID FORM LEMMA CPOSTAG POSTAG FEATS HEAD DEPREL "
                          "...)", name, line, k > 10 ? "more than " : "",
                          k > 10 ? 10 : k);
            break;
        }
        if (is_conllu_id(f[0], fl[0])) {
            continue; /* a multiword range or an empty node */
        }
        long id = parse_uint(f[0], fl[0]);
        if (id != (long)b.n + 1) {
            rc = gr_error(GR_EFORMAT, "%s:%d: ID '%.*s', expected %d (IDs "
                          "count 1, 2, ... within a sentence; is a blank "
                          "line missing?)", name, line,
                          (int)(fl[0] > 40 ? 40 : fl[0]), f[0], b.n + 1);
            break;
        }
        long head = parse_uint(f[6], fl[6]);
        if (head < 0) {
            rc = gr_error(GR_EFORMAT, "%s:%d: HEAD '%.*s' is not a number",
                          name, line, (int)(fl[6] > 40 ? 40 : fl[6]), f[6]);
            break;
        }
        if (b.n == 0) {
            first_line = line;
        }
        if ((size_t)b.n >= hl_cap) {
            size_t c = hl_cap ? 2 * hl_cap : 64;
            int32_t *q = realloc(head_lines, c * sizeof *q);
            if (q == NULL) {
                rc = oom();
                break;
            }
            head_lines = q;
            hl_cap = c;
        }
        head_lines[b.n] = line;
        int tc = tag_column - 1;
        rc = add_token(&b, f[1], fl[1], f[tc], fl[tc], f[7], fl[7],
                       head > INT32_MAX ? INT32_MAX : (int32_t)head, b.n);
    }
    if (rc == 0 && b.n > 0) {
        rc = finish_conll(d, &b, name, first_line, head_lines,
                          d->n_sentences);
    }
    builder_free(&b);
    free(head_lines);
    if (rc < 0) {
        nlp_deptrees_free(d);
    }
    return rc;
}

int nlp_conll_read(struct nlp_deptrees *d, const char *path, int tag_column)
{
    char *data = NULL;
    size_t n = 0;
    memset(d, 0, sizeof *d);
    int rc = gr_read_file(path, CONLL_MAX_BYTES, &data, &n);
    if (rc < 0) {
        return rc;
    }
    rc = nlp_conll_read_text(d, data, n, path, tag_column);
    free(data);
    return rc;
}

int nlp_conll_write(const struct nlp_deptrees *d, void *file)
{
    FILE *f = file;
    for (int32_t s = 0; s < d->n_sentences; s++) {
        const struct nlp_dep_sentence *x = &d->sentences[s];
        for (int32_t i = 0; i < x->n; i++) {
            int32_t h = x->heads[i] == i ? 0 : x->heads[i] + 1;
            fprintf(f, "%d\t%s\t_\t%s\t%s\t_\t%d\t%s\t_\t_\n", i + 1,
                    x->forms[i], x->tags[i], x->tags[i], h, x->labels[i]);
        }
        fputc('\n', f);
    }
    if (ferror(f)) {
        return gr_error(GR_EIO, "writing CoNLL: %s", strerror(errno));
    }
    return 0;
}

/* ---- filtering (§3) ---------------------------------------------------- */

/* The new head of kept token i given map[] (-1 = removed): climb over
 * removed heads; a root reached (or a cycle in malformed input, stopped
 * after n steps) makes i a root. */
static int32_t climb(int32_t n, const int32_t *heads, const int32_t *map,
                     int32_t i)
{
    int32_t h = heads[i], steps = 0;
    while (h != i && map[h] < 0 && heads[h] != h && steps++ < n) {
        h = heads[h];
    }
    return (h == i || map[h] < 0) ? map[i] : map[h];
}

int32_t nlp_deps_reroute(int32_t n, const int32_t *heads,
                         const uint8_t *keep, int32_t *out)
{
    int32_t *map = malloc((size_t)(n > 0 ? n : 1) * sizeof *map);
    if (map == NULL) {
        return oom();
    }
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++) {
        map[i] = keep[i] ? m++ : -1;
    }
    for (int32_t i = 0; i < n; i++) {
        if (map[i] >= 0) {
            out[map[i]] = climb(n, heads, map, i);
        }
    }
    free(map);
    return m;
}

int nlp_deps_filter(struct nlp_deptrees *out, const struct nlp_deptrees *in)
{
    int rc = store_init(out, in->name);
    if (rc < 0) {
        return rc;
    }
    struct builder b = {0};
    int32_t *map = NULL;
    size_t map_cap = 0;
    for (int32_t s = 0; s < in->n_sentences && rc == 0; s++) {
        const struct nlp_dep_sentence *x = &in->sentences[s];
        if ((size_t)x->n > map_cap) {
            int32_t *q = realloc(map, (size_t)x->n * sizeof *q);
            if (q == NULL) {
                rc = oom();
                break;
            }
            map = q;
            map_cap = (size_t)x->n;
        }
        int32_t m = 0;
        for (int32_t i = 0; i < x->n; i++) {
            map[i] = nlp_is_word_tag(x->tags[i], strlen(x->tags[i])) ? m++
                                                                     : -1;
        }
        if (m == 0) {
            out->n_skipped++;
            continue;
        }
        for (int32_t i = 0; i < x->n && rc == 0; i++) {
            if (map[i] < 0) {
                continue;
            }
            int32_t nh = climb(x->n, x->heads, map, i);
            rc = add_token(&b, x->forms[i], strlen(x->forms[i]), x->tags[i],
                           strlen(x->tags[i]), x->labels[i],
                           strlen(x->labels[i]), nh, x->orig[i]);
        }
        if (rc == 0) {
            rc = commit(out, &b, x->source, x->line);
        }
    }
    builder_free(&b);
    free(map);
    if (rc < 0) {
        nlp_deptrees_free(out);
    }
    return rc;
}

/* ---- Collins head rules (§2) ------------------------------------------ */

struct head_rule {
    const char *label;
    char dir;          /* 'L' or 'R' */
    const char *list;  /* space-separated priority list */
};

static const struct head_rule head_rules[] = {
    {"ADJP", 'L', "NNS QP NN $ ADVP JJ VBN VBG ADJP JJR NP JJS DT FW RBR "
                  "RBS SBAR RB"},
    {"ADVP", 'R', "RB RBR RBS FW ADVP TO CD JJR JJ IN NP JJS NN"},
    {"CONJP", 'R', "CC RB IN"},
    {"FRAG", 'R', ""},
    {"INTJ", 'L', ""},
    {"LST", 'R', "LS :"},
    {"NAC", 'L', "NN NNS NNP NNPS NP NAC EX $ CD QP PRP VBG JJ JJS JJR ADJP "
                 "FW"},
    {"PP", 'R', "IN TO VBG VBN RP FW"},
    {"PRN", 'L', ""},
    {"PRT", 'R', "RP"},
    {"QP", 'L', "$ IN NNS NN JJ RB DT CD NCD QP JJR JJS"},
    {"RRC", 'R', "VP NP ADVP ADJP PP"},
    {"S", 'L', "TO IN VP S SBAR ADJP UCP NP"},
    {"SBAR", 'L', "WHNP WHPP WHADVP WHADJP IN DT S SQ SINV SBAR FRAG"},
    {"SBARQ", 'L', "SQ S SINV SBARQ FRAG"},
    {"SINV", 'L', "VBZ VBD VBP VB MD VP S SINV ADJP NP"},
    {"SQ", 'L', "VBZ VBD VBP VB MD VP SQ"},
    {"UCP", 'R', ""},
    {"VP", 'L', "TO VBD VBN MD VBZ VB VBG VBP VP ADJP NN NNS NP"},
    {"WHADJP", 'L', "CC WRB JJ ADJP"},
    {"WHADVP", 'R', "CC WRB"},
    {"WHNP", 'L', "WDT WP WP$ WHADJP WHPP WHNP"},
    {"WHPP", 'R', "IN TO FW"},
    {"NX", 'L', ""},
    {"X", 'R', ""},
};

struct tnode {
    size_t off, len;    /* label (or word) in the text */
    size_t clen;        /* label length after cutting function tags */
    int32_t line;
    int32_t first_child, next_sibling, parent;
    int is_leaf, kept;
    int32_t token;      /* preterminal: its token index; else -1 */
    int32_t lexhead;    /* token index of the lexical head */
};

/* Does the space-separated list `list` contain word w[0, n)? */
static int in_list(const char *list, const char *w, size_t n)
{
    const char *p = list;
    while (*p) {
        const char *e = strchr(p, ' ');
        size_t k = e ? (size_t)(e - p) : strlen(p);
        if (k == n && memcmp(p, w, n) == 0) {
            return 1;
        }
        if (e == NULL) {
            break;
        }
        p = e + 1;
    }
    return 0;
}

static int label_is(const struct tnode *nd, const char *text, const char *s)
{
    size_t n = strlen(s);
    return nd->clen == n && memcmp(text + nd->off, s, n) == 0;
}

/* Chooses the head among kids[0, k) (node ids) of a constituent with label
 * lab[0, ln). Returns the position in kids. */
static int32_t head_child(const struct tnode *nodes, const char *text,
                          const int32_t *kids, int32_t k, const char *lab,
                          size_t ln, int coord)
{
    int32_t h = -1;
#define KL(i) (text + nodes[kids[i]].off), nodes[kids[i]].clen
    if (ln == 2 && memcmp(lab, "NP", 2) == 0) {
        if (label_is(&nodes[kids[k - 1]], text, "POS")) {
            h = k - 1;
        }
        for (int32_t i = k - 1; h < 0 && i >= 0; i--) {
            if (in_list("NN NNP NNPS NNS NX POS JJR", KL(i))) h = i;
        }
        for (int32_t i = 0; h < 0 && i < k; i++) {
            if (label_is(&nodes[kids[i]], text, "NP")) h = i;
        }
        for (int32_t i = k - 1; h < 0 && i >= 0; i--) {
            if (in_list("$ ADJP PRN", KL(i))) h = i;
        }
        for (int32_t i = k - 1; h < 0 && i >= 0; i--) {
            if (label_is(&nodes[kids[i]], text, "CD")) h = i;
        }
        for (int32_t i = k - 1; h < 0 && i >= 0; i--) {
            if (in_list("JJ JJS RB QP", KL(i))) h = i;
        }
        if (h < 0) {
            h = k - 1;
        }
    } else {
        const struct head_rule *r = NULL;
        for (size_t i = 0; i < sizeof head_rules / sizeof *head_rules; i++) {
            if (strlen(head_rules[i].label) == ln &&
                memcmp(head_rules[i].label, lab, ln) == 0) {
                r = &head_rules[i];
                break;
            }
        }
        if (r == NULL) {
            h = 0;
        } else {
            const char *p = r->list;
            while (*p && h < 0) {
                const char *e = strchr(p, ' ');
                size_t n = e ? (size_t)(e - p) : strlen(p);
                for (int32_t j = 0; j < k && h < 0; j++) {
                    int32_t i = r->dir == 'L' ? j : k - 1 - j;
                    const struct tnode *c = &nodes[kids[i]];
                    if (c->clen == n && memcmp(text + c->off, p, n) == 0) {
                        h = i;
                    }
                }
                p = e ? e + 1 : p + n;
            }
            if (h < 0) {
                h = r->dir == 'L' ? 0 : k - 1;
            }
        }
    }
#undef KL
    if (coord && h >= 2 && label_is(&nodes[kids[h - 1]], text, "CC")) {
        h -= 2;
    }
    return h;
}

struct conv {
    struct tnode *nodes;
    size_t n_nodes, node_cap;
    int32_t *stack;
    size_t stack_cap;
    int32_t *kids;
    size_t kids_cap;
    int32_t *heads;
    size_t heads_cap;
    size_t *lab_from; /* per token: label = parent/child node pair */
    int32_t *lab_par, *lab_kid;
    size_t lab_cap;
};

static void conv_free(struct conv *c)
{
    free(c->nodes);
    free(c->stack);
    free(c->kids);
    free(c->heads);
    free(c->lab_from);
    free(c->lab_par);
    free(c->lab_kid);
}

static int grow32(int32_t **p, size_t *cap, size_t need)
{
    if (need <= *cap) {
        return 0;
    }
    size_t c = *cap ? *cap : 64;
    while (c < need) {
        c *= 2;
    }
    int32_t *q = realloc(*p, c * sizeof *q);
    if (q == NULL) {
        return oom();
    }
    *p = q;
    *cap = c;
    return 0;
}

static int is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
           c == '\f';
}

/* Parses one tree at text[*pos] == '(' into c->nodes (pre-order). */
static int parse_brackets(struct conv *c, const char *text, size_t n,
                          size_t *pos, int32_t *line, const char *name)
{
    size_t p = *pos, depth = 0;
    int32_t start_line = *line;
    c->n_nodes = 0;
    for (;;) {
        while (p < n && is_ws(text[p])) {
            *line += text[p] == '\n';
            p++;
        }
        if (p >= n) {
            return gr_error(GR_EFORMAT, "%s:%d: the tree begun here is not "
                            "closed at the end of the text", name,
                            start_line);
        }
        if (text[p] == ')') {
            p++;
            if (--depth == 0) {
                *pos = p;
                return 0;
            }
            continue;
        }
        if (c->n_nodes == c->node_cap) {
            size_t cap = c->node_cap ? 2 * c->node_cap : 256;
            struct tnode *q = realloc(c->nodes, cap * sizeof *q);
            if (q == NULL || cap > INT32_MAX) {
                if (q) {
                    c->nodes = q;
                }
                return oom();
            }
            c->nodes = q;
            c->node_cap = cap;
        }
        int32_t id = (int32_t)c->n_nodes++;
        struct tnode *nd = &c->nodes[id];
        memset(nd, 0, sizeof *nd);
        nd->first_child = nd->next_sibling = -1;
        nd->token = nd->lexhead = -1;
        nd->line = *line;
        nd->parent = depth > 0 ? c->stack[depth - 1] : -1;
        int open = text[p] == '(';
        if (open) {
            p++;
            while (p < n && is_ws(text[p])) {
                *line += text[p] == '\n';
                p++;
            }
        } else if (depth == 0) {
            return gr_error(GR_EFORMAT, "%s:%d: text outside a tree", name,
                            *line);
        }
        size_t a = p;
        while (p < n && !is_ws(text[p]) && text[p] != '(' && text[p] != ')') {
            p++;
        }
        nd->off = a;
        nd->len = p - a;
        nd->is_leaf = !open;
        /* Labels cut at the first '-' or '=' after the first character. */
        nd->clen = nd->len;
        if (open) {
            for (size_t i = 1; i < nd->len; i++) {
                if (text[a + i] == '-' || text[a + i] == '=') {
                    nd->clen = i;
                    break;
                }
            }
        }
        if (nd->parent >= 0) {
            /* Append as the last child: walk the siblings (children are
             * few) from the parent's first child. */
            struct tnode *par = &c->nodes[nd->parent];
            if (par->first_child < 0) {
                par->first_child = id;
            } else {
                int32_t s = par->first_child;
                while (c->nodes[s].next_sibling >= 0) {
                    s = c->nodes[s].next_sibling;
                }
                c->nodes[s].next_sibling = id;
            }
        }
        if (open) {
            int rc = grow32(&c->stack, &c->stack_cap, depth + 1);
            if (rc < 0) {
                return rc;
            }
            c->stack[depth++] = id;
        }
    }
}

/* Converts the parsed tree into b (all tokens, heads, labels). */
static int convert_tree(struct conv *c, const char *text, const char *name,
                        struct builder *b, int coord)
{
    struct tnode *nd = c->nodes;
    int32_t nn = (int32_t)c->n_nodes;
    /* Bottom-up (reverse pre-order): shape checks, kept flags. */
    int32_t n_tok = 0;
    for (int32_t i = nn - 1; i >= 0; i--) {
        if (nd[i].is_leaf) {
            continue;
        }
        int32_t leaves = 0, subtrees = 0;
        for (int32_t k = nd[i].first_child; k >= 0; k = nd[k].next_sibling) {
            leaves += nd[k].is_leaf;
            subtrees += !nd[k].is_leaf;
        }
        if (leaves > 0 && (subtrees > 0 || leaves > 1)) {
            return gr_error(GR_EFORMAT, "%s:%d: constituent '%.*s' holds %s "
                            "(expected one word under a tag, or subtrees)",
                            name, nd[i].line, (int)nd[i].len,
                            text + nd[i].off,
                            subtrees ? "a word beside subtrees"
                                     : "several words");
        }
        if (leaves == 1) {
            nd[i].kept = !(nd[i].len == 6 &&
                           memcmp(text + nd[i].off, "-NONE-", 6) == 0);
        } else {
            for (int32_t k = nd[i].first_child; k >= 0;
                 k = nd[k].next_sibling) {
                nd[i].kept |= nd[k].kept;
            }
        }
    }
    /* Tokens, in order. */
    b->n = 0;
    b->len = 0;
    for (int32_t i = 0; i < nn; i++) {
        if (!nd[i].is_leaf && nd[i].kept && nd[i].first_child >= 0 &&
            nd[nd[i].first_child].is_leaf) {
            const struct tnode *w = &nd[nd[i].first_child];
            nd[i].token = n_tok++;
            nd[i].lexhead = nd[i].token;
            int rc = add_token(b, text + w->off, w->len, text + nd[i].off,
                               nd[i].len, "ROOT", 4, nd[i].token,
                               nd[i].token);
            if (rc < 0) {
                return rc;
            }
        }
    }
    if (n_tok == 0) {
        return 0;
    }
    /* Heads bottom-up; each non-head kept child's head attaches. */
    for (int32_t i = nn - 1; i >= 0; i--) {
        if (nd[i].is_leaf || !nd[i].kept || nd[i].token >= 0) {
            continue;
        }
        int32_t k = 0;
        for (int32_t j = nd[i].first_child; j >= 0; j = nd[j].next_sibling) {
            if (nd[j].kept) {
                int rc = grow32(&c->kids, &c->kids_cap, (size_t)k + 1);
                if (rc < 0) {
                    return rc;
                }
                c->kids[k++] = j;
            }
        }
        int32_t h = head_child(nd, text, c->kids, k, text + nd[i].off,
                               nd[i].clen, coord);
        int32_t hd = nd[c->kids[h]].lexhead;
        nd[i].lexhead = hd;
        for (int32_t j = 0; j < k; j++) {
            if (j == h) {
                continue;
            }
            int32_t dep = nd[c->kids[j]].lexhead;
            b->heads[dep] = hd;
            /* Label "PARENT/CHILD" of the cut labels. */
            char lab[160];
            int m = snprintf(lab, sizeof lab, "%.*s/%.*s",
                             (int)(nd[i].clen > 70 ? 70 : nd[i].clen),
                             text + nd[i].off,
                             (int)(nd[c->kids[j]].clen > 70
                                       ? 70 : nd[c->kids[j]].clen),
                             text + nd[c->kids[j]].off);
            int rc = add_str(b, lab, (size_t)m, &b->label[dep]);
            if (rc < 0) {
                return rc;
            }
        }
    }
    return 0;
}

/* Converts every tree of text[0, n) into d. */
static int convert_text(struct nlp_deptrees *d, struct conv *c,
                        struct builder *b, const char *text, size_t n,
                        const char *name, int32_t line0, int coord,
                        int32_t source, int one)
{
    size_t pos = 0;
    int32_t line = line0;
    int trees = 0;
    for (;;) {
        while (pos < n && (is_ws(text[pos]) || text[pos] == '\0')) {
            line += text[pos] == '\n';
            pos++;
        }
        if (pos >= n) {
            return 0;
        }
        if (text[pos] != '(') {
            return gr_error(GR_EFORMAT, "%s:%d: '%c' outside a tree; "
                            "expected '('", name, line, text[pos]);
        }
        int32_t tree_line = line;
        int rc = parse_brackets(c, text, n, &pos, &line, name);
        if (rc == 0) {
            rc = convert_tree(c, text, name, b, coord);
        }
        if (rc == 0) {
            rc = commit(d, b, one ? source : d->n_sentences, tree_line);
        }
        if (rc < 0) {
            return rc;
        }
        trees++;
        if (one && trees > 1) {
            return gr_error(GR_EFORMAT, "%s:%d: two trees where one was "
                            "read", name, tree_line);
        }
    }
}

int nlp_deps_from_text(struct nlp_deptrees *d, const char *text, size_t n,
                       const char *name, int coord)
{
    int rc = store_init(d, name);
    if (rc < 0) {
        return rc;
    }
    struct conv c = {0};
    struct builder b = {0};
    rc = convert_text(d, &c, &b, text, n, name, 1, coord, 0, 0);
    conv_free(&c);
    builder_free(&b);
    if (rc < 0) {
        nlp_deptrees_free(d);
    }
    return rc;
}

int nlp_deps_from_treebank(struct nlp_deptrees *d,
                           const struct nlp_treebank *tb, int coord)
{
    int rc = store_init(d, tb->source);
    if (rc < 0) {
        return rc;
    }
    struct conv c = {0};
    struct builder b = {0};
    for (int32_t i = 0; i < tb->n_sentences && rc == 0; i++) {
        const struct nlp_sentence *s = &tb->sentences[i];
        char where[GR_PATH_MAX + 512];
        if (tb->kind == NLP_TREEBANK_FILE) {
            snprintf(where, sizeof where, "%s", tb->source);
        } else {
            snprintf(where, sizeof where, "%s:%s", tb->source,
                     tb->files[s->file].name);
        }
        rc = convert_text(d, &c, &b, s->tree, strlen(s->tree), where,
                          s->line, coord, i, 1);
    }
    conv_free(&c);
    builder_free(&b);
    if (rc < 0) {
        nlp_deptrees_free(d);
    }
    return rc;
}
