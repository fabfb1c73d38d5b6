/* Logical inference: reader, labeller, splits, generator. See
 * nlp/data/logic.h and formal_tasks.md §1. */
#include "nlp/data/logic.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/files.h"
#include "core/random.h"

#define LOGIC_MAX_FILE_BYTES ((size_t)1 << 31)
#define NLP_GEN_STALL_DRAWS 200000 /* see nlp_logic_generate */

static const char *const token_names[NLP_LOGIC_VOCAB] = {
    "(", ")", "a", "b", "c", "d", "e", "f", "or", "and", "not", "<pad>"};
static const char relation_symbols[NLP_LOGIC_N_RELATIONS] = {
    '<', '>', '=', '^', '|', '#', 'v'};
static const char *const relation_names[NLP_LOGIC_N_RELATIONS] = {
    "forward entailment", "reverse entailment", "equivalence", "negation",
    "alternation",        "independence",       "cover"};

const char *nlp_logic_token_name(int id)
{
    return (unsigned)id < NLP_LOGIC_VOCAB ? token_names[id] : "?";
}

int nlp_logic_token_id(const char *s, size_t n)
{
    /* the padding is no input token */
    if (n == 1) {
        if (s[0] == '(') {
            return NLP_LOGIC_LPAREN;
        }
        if (s[0] == ')') {
            return NLP_LOGIC_RPAREN;
        }
        if (s[0] >= 'a' && s[0] <= 'f') {
            return NLP_LOGIC_VAR_A + (s[0] - 'a');
        }
        return -1;
    }
    if (n == 2 && s[0] == 'o' && s[1] == 'r') {
        return NLP_LOGIC_OR;
    }
    if (n == 3 && memcmp(s, "and", 3) == 0) {
        return NLP_LOGIC_AND;
    }
    if (n == 3 && memcmp(s, "not", 3) == 0) {
        return NLP_LOGIC_NOT;
    }
    return -1;
}

char nlp_logic_relation_symbol(int rel)
{
    return (unsigned)rel < NLP_LOGIC_N_RELATIONS ? relation_symbols[rel] : '?';
}

int nlp_logic_relation_id(const char *s, size_t n)
{
    if (n != 1) {
        return -1;
    }
    for (int i = 0; i < NLP_LOGIC_N_RELATIONS; i++) {
        if (relation_symbols[i] == s[0]) {
            return i;
        }
    }
    return -1;
}

const char *nlp_logic_relation_name(int rel)
{
    return (unsigned)rel < NLP_LOGIC_N_RELATIONS ? relation_names[rel] : "?";
}

/* ---- parser and labeller ---------------------------------------------- */

/* The worlds where variable v (0 = a) is true: bit w set iff bit v of w. */
static uint64_t var_mask(int v)
{
    uint64_t m = 0;
    for (int w = 0; w < 64; w++) {
        if ((w >> v) & 1) {
            m |= (uint64_t)1 << w;
        }
    }
    return m;
}

struct pctx {
    const uint8_t *tok;
    int32_t n, pos, word, ops, n_spans;
    struct nlp_span *spans;
    uint64_t vars[6];
};

static int perr(const struct pctx *c, const char *what)
{
    if (c->pos >= c->n) {
        return gr_error(GR_EFORMAT, "the expression ends early (%s after "
                        "token %d)", what, c->n);
    }
    return gr_error(GR_EFORMAT, "token %d '%s': %s", c->pos + 1,
                    nlp_logic_token_name(c->tok[c->pos]), what);
}

static int expect(struct pctx *c, int token, const char *what)
{
    if (c->pos >= c->n || c->tok[c->pos] != token) {
        return perr(c, what);
    }
    c->pos++;
    return 0;
}

static int32_t new_span(struct pctx *c, int32_t start)
{
    int32_t i = c->n_spans++;
    if (c->spans != NULL) {
        c->spans[i].start = start;
    }
    return i;
}

static void end_span(struct pctx *c, int32_t i)
{
    if (c->spans != NULL) {
        c->spans[i].end = c->word;
    }
}

/* Recursion depth is bounded by n / 2 <= NLP_LOGIC_MAX_TOKENS / 2. */
static int parse_e(struct pctx *c, uint64_t *den)
{
    if (c->pos >= c->n) {
        return perr(c, "expected a variable or '('");
    }
    int t = c->tok[c->pos];
    if (t >= NLP_LOGIC_VAR_A && t < NLP_LOGIC_VAR_A + 6) {
        *den = c->vars[t - NLP_LOGIC_VAR_A];
        c->pos++;
        c->word++;
        return 0;
    }
    if (t != NLP_LOGIC_LPAREN) {
        return perr(c, "expected a variable or '('");
    }
    c->pos++;
    int rc;
    if (c->pos < c->n && c->tok[c->pos] == NLP_LOGIC_NOT) {
        int32_t s = new_span(c, c->word);
        c->pos++;
        c->word++;
        c->ops++;
        uint64_t x = 0;
        if ((rc = parse_e(c, &x)) < 0 ||
            (rc = expect(c, NLP_LOGIC_RPAREN, "expected ')' closing "
                         "'( not'")) < 0) {
            return rc;
        }
        end_span(c, s);
        *den = ~x;
        return 0;
    }
    int32_t outer = new_span(c, c->word);
    uint64_t l = 0, r = 0;
    if ((rc = parse_e(c, &l)) < 0 ||
        (rc = expect(c, NLP_LOGIC_LPAREN, "expected '(' before 'and'/'or' "
                     "(a binary node is '( L ( op R ) )')")) < 0) {
        return rc;
    }
    if (c->pos >= c->n || (c->tok[c->pos] != NLP_LOGIC_AND &&
                           c->tok[c->pos] != NLP_LOGIC_OR)) {
        return perr(c, "expected 'and' or 'or'");
    }
    int op = c->tok[c->pos];
    int32_t inner = new_span(c, c->word);
    c->pos++;
    c->word++;
    c->ops++;
    if ((rc = parse_e(c, &r)) < 0 ||
        (rc = expect(c, NLP_LOGIC_RPAREN, "expected ')' closing "
                     "'( op R'")) < 0) {
        return rc;
    }
    end_span(c, inner);
    if ((rc = expect(c, NLP_LOGIC_RPAREN, "expected ')' closing "
                     "'( L ( op R )'")) < 0) {
        return rc;
    }
    end_span(c, outer);
    *den = op == NLP_LOGIC_AND ? (l & r) : (l | r);
    return 0;
}

int nlp_logic_parse(const uint8_t *tok, int32_t n, struct nlp_logic_expr *e,
                    struct nlp_span *spans)
{
    if (n <= 0) {
        return gr_error(GR_EFORMAT, "empty expression");
    }
    if (n > NLP_LOGIC_MAX_TOKENS) {
        return gr_error(GR_EFORMAT, "expression of %d tokens (at most %d)", n,
                        NLP_LOGIC_MAX_TOKENS);
    }
    struct pctx c;
    memset(&c, 0, sizeof c);
    c.tok = tok;
    c.n = n;
    c.spans = spans;
    for (int v = 0; v < 6; v++) {
        c.vars[v] = var_mask(v);
    }
    uint64_t den = 0;
    int rc = parse_e(&c, &den);
    if (rc < 0) {
        return rc;
    }
    if (c.pos != n) {
        return perr(&c, "extra token after a complete expression");
    }
    e->denotation = den;
    e->ops = c.ops;
    e->n_words = c.word;
    return 0;
}

int nlp_logic_relation(uint64_t x, uint64_t y)
{
    const uint64_t w = ~(uint64_t)0;
    if (x == 0 || x == w || y == 0 || y == w) {
        return -1;
    }
    if (x == y) {
        return NLP_LOGIC_EQUIVALENT;
    }
    if ((x & y) == x) {
        return NLP_LOGIC_FORWARD;
    }
    if ((x & y) == y) {
        return NLP_LOGIC_REVERSE;
    }
    if ((x & y) == 0) {
        return (x | y) == w ? NLP_LOGIC_NEGATION : NLP_LOGIC_ALTERNATION;
    }
    if ((x | y) == w) {
        return NLP_LOGIC_COVER;
    }
    return NLP_LOGIC_INDEPENDENT;
}

int nlp_logic_k(int32_t ops_left, int32_t ops_right)
{
    int32_t m = ops_left > ops_right ? ops_left : ops_right;
    return m > NLP_LOGIC_MAX_K ? NLP_LOGIC_MAX_K : (int)m;
}

/* ---- sets ---------------------------------------------------------------- */

void nlp_logic_set_init(struct nlp_logic_set *s)
{
    memset(s, 0, sizeof *s);
}

void nlp_logic_set_free(struct nlp_logic_set *s)
{
    for (int32_t i = 0; i < s->n_files; i++) {
        free(s->files[i]);
    }
    free(s->files);
    free(s->pairs);
    free(s->tokens);
    memset(s, 0, sizeof *s);
}

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
        return gr_error(GR_ENOMEM, "logic: out of memory");
    }
    *p = q;
    *cap = n;
    return 0;
}

static int add_file(struct nlp_logic_set *s, const char *name)
{
    if (s->n_files == s->cap_files) {
        int32_t cap = s->cap_files ? s->cap_files * 2 : 16;
        char **f = realloc(s->files, (size_t)cap * sizeof *f);
        if (f == NULL) {
            return gr_error(GR_ENOMEM, "logic: out of memory");
        }
        s->files = f;
        s->cap_files = cap;
    }
    size_t len = strlen(name);
    char *copy = malloc(len + 1);
    if (copy == NULL) {
        return gr_error(GR_ENOMEM, "logic: out of memory");
    }
    memcpy(copy, name, len + 1);
    s->files[s->n_files++] = copy;
    return 0;
}

/* Appends the tokens of expression text f[0, n) to s->tokens. */
static int read_expr(struct nlp_logic_set *s, const char *f, size_t n,
                     int32_t *count, const char *where, const char *side)
{
    int32_t k = 0;
    size_t i = 0;
    /* at most one token per two bytes, plus one */
    int rc = grow((void **)&s->tokens, &s->cap_tokens,
                  s->n_tokens + n / 2 + 1, 1);
    if (rc < 0) {
        return rc;
    }
    while (i < n) {
        if (f[i] == ' ') {
            i++;
            continue;
        }
        size_t j = i;
        while (j < n && f[j] != ' ') {
            j++;
        }
        int id = nlp_logic_token_id(f + i, j - i);
        if (id < 0) {
            return gr_error(GR_EFORMAT, "%s: %s expression, token %d: "
                            "unknown token '%.*s' (expected ( ) a-f and or "
                            "not)", where, side, k + 1,
                            (int)(j - i > 40 ? 40 : j - i), f + i);
        }
        if (k >= NLP_LOGIC_MAX_TOKENS) {
            return gr_error(GR_EFORMAT, "%s: %s expression longer than %d "
                            "tokens", where, side, NLP_LOGIC_MAX_TOKENS);
        }
        s->tokens[s->n_tokens++] = (uint8_t)id;
        k++;
        i = j;
    }
    if (k == 0) {
        return gr_error(GR_EFORMAT, "%s: the %s expression is empty", where,
                        side);
    }
    *count = k;
    return 0;
}

static uint8_t sat8(int32_t v)
{
    return (uint8_t)(v > 255 ? 255 : v);
}

/* Parses one line (without its end) into a new pair. */
static int read_line(struct nlp_logic_set *s, const char *line, size_t len,
                     const char *name, int32_t lineno)
{
    char where[GR_PATH_MAX + 32];
    snprintf(where, sizeof where, "%s:%d", name, lineno);
    if (len == 0) {
        return gr_error(GR_EFORMAT, "%s: empty line (expected RELATION "
                        "<TAB> LEFT <TAB> RIGHT)", where);
    }
    const char *field[3];
    size_t flen[3];
    int nf = 0;
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i == len || line[i] == '\t') {
            if (nf < 3) {
                field[nf] = line + start;
                flen[nf] = i - start;
            }
            nf++;
            start = i + 1;
        }
    }
    if (nf != 3) {
        return gr_error(GR_EFORMAT, "%s: %d tab-separated field%s, expected "
                        "3 (RELATION <TAB> LEFT <TAB> RIGHT)", where, nf,
                        nf == 1 ? "" : "s");
    }
    int rel = nlp_logic_relation_id(field[0], flen[0]);
    if (rel < 0) {
        return gr_error(GR_EFORMAT, "%s: unknown relation '%.*s' (expected "
                        "one of < > = ^ | # v)", where,
                        (int)(flen[0] > 20 ? 20 : flen[0]), field[0]);
    }
    int rc = grow((void **)&s->pairs, &s->cap_pairs, (size_t)s->n + 1,
                  sizeof *s->pairs);
    if (rc < 0) {
        return rc;
    }
    struct nlp_logic_pair *p = &s->pairs[s->n];
    memset(p, 0, sizeof *p);
    struct nlp_logic_expr e[2];
    static const char *const sides[2] = {"left", "right"};
    for (int side = 0; side < 2; side++) {
        size_t off = s->n_tokens;
        int32_t count = 0;
        if ((rc = read_expr(s, field[1 + side], flen[1 + side], &count, where,
                            sides[side])) < 0) {
            return rc;
        }
        if (nlp_logic_parse(s->tokens + off, count, &e[side], NULL) < 0) {
            return gr_error_wrap(GR_EFORMAT, "%s: %s expression", where,
                                 sides[side]);
        }
        if (side == 0) {
            p->left = (uint32_t)off;
            p->n_left = (uint16_t)count;
        } else {
            p->right = (uint32_t)off;
            p->n_right = (uint16_t)count;
        }
    }
    p->label = (int8_t)rel;
    p->den_left = e[0].denotation;
    p->den_right = e[1].denotation;
    p->computed = (int8_t)nlp_logic_relation(p->den_left, p->den_right);
    p->ops_left = sat8(e[0].ops);
    p->ops_right = sat8(e[1].ops);
    p->k = (int8_t)nlp_logic_k(e[0].ops, e[1].ops);
    p->file = s->n_files - 1;
    p->line = lineno;
    s->n++;
    return 0;
}

int nlp_logic_read_text(struct nlp_logic_set *s, const char *text, size_t n,
                        const char *name)
{
    int32_t n0 = s->n, differ0 = s->n_differ;
    size_t t0 = s->n_tokens;
    int rc = add_file(s, name);
    if (rc < 0) {
        return rc;
    }
    size_t pos = 0;
    int32_t lineno = 0;
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
        if ((rc = read_line(s, text + pos, len, name, lineno)) < 0) {
            break;
        }
        const struct nlp_logic_pair *p = &s->pairs[s->n - 1];
        if (p->label != p->computed) {
            s->n_differ++;
        }
        pos = end + 1;
    }
    if (rc < 0) {
        s->n = n0;
        s->n_tokens = t0;
        s->n_differ = differ0;
        free(s->files[--s->n_files]);
        return rc;
    }
    return 0;
}

int nlp_logic_read_file(struct nlp_logic_set *s, const char *path)
{
    char *text = NULL;
    size_t size = 0;
    int rc = gr_read_file(path, LOGIC_MAX_FILE_BYTES, &text, &size);
    if (rc < 0) {
        return rc;
    }
    rc = nlp_logic_read_text(s, text, size, path);
    free(text);
    return rc;
}

int nlp_logic_expr_text(const uint8_t *tok, int32_t n, char *buf, size_t cap)
{
    size_t k = 0;
    for (int32_t i = 0; i < n; i++) {
        const char *w = nlp_logic_token_name(tok[i]);
        size_t len = strlen(w);
        if (k + len + (i > 0) + 1 > cap) {
            if (cap > 0) {
                buf[0] = '\0';
            }
            return -1;
        }
        if (i > 0) {
            buf[k++] = ' ';
        }
        memcpy(buf + k, w, len);
        k += len;
    }
    if (cap > 0) {
        buf[k] = '\0';
    }
    return (int)k;
}

int nlp_logic_write_pair(FILE *fp, const struct nlp_logic_set *s, int32_t i)
{
    const struct nlp_logic_pair *p = &s->pairs[i];
    char l[NLP_LOGIC_MAX_TOKENS * 4], r[NLP_LOGIC_MAX_TOKENS * 4];
    if (nlp_logic_expr_text(s->tokens + p->left, p->n_left, l, sizeof l) < 0 ||
        nlp_logic_expr_text(s->tokens + p->right, p->n_right, r, sizeof r) <
            0) {
        return gr_error(GR_EINVAL, "logic: pair %d too long to write", i);
    }
    if (fprintf(fp, "%c\t%s\t%s\n", nlp_logic_relation_symbol(p->label), l,
                r) < 0) {
        return gr_error(GR_EIO, "logic: write failed");
    }
    return 0;
}

/* ---- splits --------------------------------------------------------------- */

const char *nlp_logic_split_name(enum nlp_logic_split split)
{
    static const char *const names[NLP_LOGIC_N_SPLITS] = {"full", "A", "B",
                                                          "C"};
    return (unsigned)split < NLP_LOGIC_N_SPLITS ? names[split] : "?";
}

int nlp_logic_split_parse(const char *name, enum nlp_logic_split *out)
{
    static const char *const lower[NLP_LOGIC_N_SPLITS] = {"full", "a", "b",
                                                          "c"};
    for (int i = 0; i < NLP_LOGIC_N_SPLITS; i++) {
        if (strcmp(name, lower[i]) == 0 ||
            strcmp(name, nlp_logic_split_name(i)) == 0) {
            *out = (enum nlp_logic_split)i;
            return 0;
        }
    }
    return gr_error(GR_EINVAL, "unknown logic split '%s' (expected full, A, "
                    "B or C)", name);
}

static const uint8_t pat_a[] = {NLP_LOGIC_LPAREN, NLP_LOGIC_AND,
                                NLP_LOGIC_LPAREN, NLP_LOGIC_NOT,
                                NLP_LOGIC_VAR_A,  NLP_LOGIC_RPAREN,
                                NLP_LOGIC_RPAREN};
static const uint8_t pat_and_not[] = {NLP_LOGIC_LPAREN, NLP_LOGIC_AND,
                                      NLP_LOGIC_LPAREN, NLP_LOGIC_NOT};
static const uint8_t pat_or_not[] = {NLP_LOGIC_LPAREN, NLP_LOGIC_OR,
                                     NLP_LOGIC_LPAREN, NLP_LOGIC_NOT};

/* Token-sequence search equals the spec's substring search: every token
 * is delimited by spaces, and the patterns begin with '(' and end with a
 * whole token (a trailing space in "( and ( not " ends "not"). */
static int contains(const uint8_t *t, int32_t n, const uint8_t *pat,
                    int32_t m)
{
    for (int32_t i = 0; i + m <= n; i++) {
        if (memcmp(t + i, pat, (size_t)m) == 0) {
            return 1;
        }
    }
    return 0;
}

static int expr_matches(const uint8_t *t, int32_t n, enum nlp_logic_split sp)
{
    switch (sp) {
    case NLP_LOGIC_SPLIT_A:
        return contains(t, n, pat_a, (int32_t)sizeof pat_a);
    case NLP_LOGIC_SPLIT_B:
        return contains(t, n, pat_and_not, (int32_t)sizeof pat_and_not);
    case NLP_LOGIC_SPLIT_C:
        return contains(t, n, pat_and_not, (int32_t)sizeof pat_and_not) ||
               contains(t, n, pat_or_not, (int32_t)sizeof pat_or_not);
    default:
        return 0;
    }
}

int nlp_logic_pair_matches(const struct nlp_logic_set *s, int32_t i,
                           enum nlp_logic_split split)
{
    const struct nlp_logic_pair *p = &s->pairs[i];
    return expr_matches(s->tokens + p->left, p->n_left, split) ||
           expr_matches(s->tokens + p->right, p->n_right, split);
}

/* ---- the protocol ------------------------------------------------------- */

void nlp_logic_data_free(struct nlp_logic_data *d)
{
    nlp_logic_set_free(&d->train);
    nlp_logic_set_free(&d->test);
    free(d->train_idx);
    free(d->valid_idx);
    for (int k = 0; k < NLP_LOGIC_N_K; k++) {
        free(d->test_idx[k]);
    }
    memset(d, 0, sizeof *d);
}

/* Reads DIR/PREFIXk into s and checks that its pairs have k = K. */
static int read_k_file(struct nlp_logic_set *s, const char *dir,
                       const char *prefix, int k)
{
    char name[32], path[GR_PATH_MAX];
    snprintf(name, sizeof name, "%s%d", prefix, k);
    int rc = gr_path_join(path, sizeof path, dir, name);
    if (rc < 0) {
        return rc;
    }
    int32_t first = s->n;
    if ((rc = nlp_logic_read_file(s, path)) < 0) {
        return rc;
    }
    for (int32_t i = first; i < s->n; i++) {
        const struct nlp_logic_pair *p = &s->pairs[i];
        if (p->k != k) {
            return gr_error(GR_EFORMAT, "%s:%d: the pair has %d and %d "
                            "operators (k = %d) but the file is %s (k = "
                            "min(12, max ops), docs/tasks.md)", path,
                            p->line, p->ops_left, p->ops_right, p->k, name);
        }
    }
    return 0;
}

int nlp_logic_load(struct nlp_logic_data *d, const char *dir,
                   enum nlp_logic_split split, int32_t max_train_ops)
{
    memset(d, 0, sizeof *d);
    if (max_train_ops < -1 || max_train_ops > NLP_LOGIC_MAX_K) {
        return gr_error(GR_EINVAL, "logic: max train ops %d outside -1..12",
                        max_train_ops);
    }
    if ((unsigned)split >= NLP_LOGIC_N_SPLITS) {
        return gr_error(GR_EINVAL, "logic: bad split %d", (int)split);
    }
    d->split = split;
    d->max_train_ops = max_train_ops;
    int rc = 0;
    for (int k = 0; rc == 0 && k <= max_train_ops; k++) {
        rc = read_k_file(&d->train, dir, "train", k);
    }
    for (int k = 0; rc == 0 && k < NLP_LOGIC_N_K; k++) {
        rc = read_k_file(&d->test, dir, "test", k);
    }
    if (rc == 0) {
        size_t n = (size_t)d->train.n + 1;
        d->train_idx = malloc(n * sizeof *d->train_idx);
        d->valid_idx = malloc(n * sizeof *d->valid_idx);
        if (d->train_idx == NULL || d->valid_idx == NULL) {
            rc = gr_error(GR_ENOMEM, "logic: out of memory");
        }
    }
    for (int32_t i = 0; rc == 0 && i < d->train.n; i++) {
        if (nlp_logic_pair_matches(&d->train, i, split)) {
            d->n_removed++;
            continue;
        }
        d->n_pool++;
        if (d->n_pool % 10 == 0) {
            d->valid_idx[d->n_valid++] = i;
        } else {
            d->train_idx[d->n_train++] = i;
        }
    }
    for (int k = 0; rc == 0 && k < NLP_LOGIC_N_K; k++) {
        d->test_idx[k] = malloc(((size_t)d->test.n + 1) * sizeof(int32_t));
        if (d->test_idx[k] == NULL) {
            rc = gr_error(GR_ENOMEM, "logic: out of memory");
            break;
        }
        for (int32_t i = 0; i < d->test.n; i++) {
            if (d->test.pairs[i].file == k &&
                (split == NLP_LOGIC_SPLIT_FULL ||
                 nlp_logic_pair_matches(&d->test, i, split))) {
                d->test_idx[k][d->n_test[k]++] = i;
            }
        }
    }
    if (rc < 0) {
        nlp_logic_data_free(d);
    }
    return rc;
}

/* ---- generator ---------------------------------------------------------- */

static uint32_t draw_below(struct gr_philox_stream *s, uint32_t m)
{
    uint64_t lim = (((uint64_t)1 << 32) / m) * m;
    uint32_t r;
    do {
        r = gr_philox_next_u32(s);
    } while ((uint64_t)r >= lim);
    return r % m;
}

/* gen(vars, budget) of §1.7, written as tokens into t[*n ...]. The
 * negation coin is drawn first (the order of independent draws does not
 * change the distribution), so "( not" can be written before the node. At
 * most 3 binary levels and 15 nodes: < 128 tokens. */
static void gen_expr(struct gr_philox_stream *s, const int vars[4], int budget,
                     uint8_t *t, int32_t *n)
{
    int negate = draw_below(s, 3) == 0;
    if (negate) {
        t[(*n)++] = NLP_LOGIC_LPAREN;
        t[(*n)++] = NLP_LOGIC_NOT;
    }
    /* and, or, and, or, none x 5 */
    uint32_t op = draw_below(s, 9);
    if (op >= 4 || budget < 2) {
        t[(*n)++] = (uint8_t)(NLP_LOGIC_VAR_A + vars[draw_below(s, 4)]);
    } else {
        t[(*n)++] = NLP_LOGIC_LPAREN;
        gen_expr(s, vars, budget / 2, t, n);
        t[(*n)++] = NLP_LOGIC_LPAREN;
        t[(*n)++] = (op & 1) ? NLP_LOGIC_OR : NLP_LOGIC_AND;
        gen_expr(s, vars, budget / 2, t, n);
        t[(*n)++] = NLP_LOGIC_RPAREN;
        t[(*n)++] = NLP_LOGIC_RPAREN;
    }
    if (negate) {
        t[(*n)++] = NLP_LOGIC_RPAREN;
    }
}

static uint64_t pair_hash(const uint8_t *l, int32_t nl, const uint8_t *r,
                          int32_t nr)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (int32_t i = 0; i < nl; i++) {
        h = (h ^ l[i]) * 0x100000001b3ull;
    }
    h = (h ^ 0xff) * 0x100000001b3ull;
    for (int32_t i = 0; i < nr; i++) {
        h = (h ^ r[i]) * 0x100000001b3ull;
    }
    return h;
}

struct seen {
    int32_t *slot; /* pair index or -1 */
    size_t n_slots, used;
};

static int seen_grow(struct seen *h, const struct nlp_logic_set *s,
                     int32_t first)
{
    size_t n = h->n_slots ? h->n_slots * 2 : 1024;
    int32_t *slot = malloc(n * sizeof *slot);
    if (slot == NULL) {
        return gr_error(GR_ENOMEM, "logic: out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        slot[i] = -1;
    }
    for (int32_t i = first; i < s->n; i++) {
        const struct nlp_logic_pair *p = &s->pairs[i];
        uint64_t hv = pair_hash(s->tokens + p->left, p->n_left,
                                s->tokens + p->right, p->n_right);
        size_t j = (size_t)hv & (n - 1);
        while (slot[j] >= 0) {
            j = (j + 1) & (n - 1);
        }
        slot[j] = i;
    }
    free(h->slot);
    h->slot = slot;
    h->n_slots = n;
    return 0;
}

int nlp_logic_generate(struct nlp_logic_set *s, int32_t n, int32_t min_k,
                       int32_t max_k, uint64_t seed,
                       struct nlp_logic_gen_stats *stats)
{
    struct nlp_logic_gen_stats st;
    memset(&st, 0, sizeof st);
    if (n < 0 || min_k < 0 || max_k > NLP_LOGIC_MAX_K || min_k > max_k) {
        return gr_error(GR_EINVAL, "logic generate: need n >= 0 and 0 <= "
                        "min_k <= max_k <= 12 (got n %d, k %d-%d)", n, min_k,
                        max_k);
    }
    int32_t first = s->n, n0 = s->n;
    size_t t0 = s->n_tokens;
    int rc = add_file(s, "generated");
    if (rc < 0) {
        return rc;
    }
    struct seen h = {NULL, 0, 0};
    struct gr_philox_stream rng = gr_philox_stream_init(seed, 0);
    int64_t last_new = 0; /* draws when the last pair was accepted */
    uint8_t t[2][256];
    while (rc == 0 && s->n - first < n) {
        if (st.draws - last_new >= NLP_GEN_STALL_DRAWS) {
            rc = gr_error(GR_EINVAL, "logic generate: only %d distinct pairs "
                          "with k in %d-%d after %lld draws, the last %d "
                          "of them all rejected (%d asked)",
                          s->n - first, min_k, max_k, (long long)st.draws,
                          NLP_GEN_STALL_DRAWS, n);
            break;
        }
        st.draws++;
        int pool[6] = {0, 1, 2, 3, 4, 5};
        for (int i = 0; i < 4; i++) {
            int j = i + (int)draw_below(&rng, (uint32_t)(6 - i));
            int tmp = pool[i];
            pool[i] = pool[j];
            pool[j] = tmp;
        }
        int32_t len[2] = {0, 0};
        struct nlp_logic_expr e[2];
        for (int side = 0; side < 2; side++) {
            gen_expr(&rng, pool, 12, t[side], &len[side]);
            if (nlp_logic_parse(t[side], len[side], &e[side], NULL) < 0) {
                rc = gr_error_wrap(GR_EINVAL, "logic generate: bug");
                break;
            }
        }
        if (rc < 0) {
            break;
        }
        int rel = nlp_logic_relation(e[0].denotation, e[1].denotation);
        if (rel < 0) {
            st.degenerate++;
            continue;
        }
        int k = nlp_logic_k(e[0].ops, e[1].ops);
        if (k < min_k || k > max_k) {
            st.out_of_range++;
            continue;
        }
        if ((h.used + 1) * 2 > h.n_slots &&
            (rc = seen_grow(&h, s, first)) < 0) {
            break;
        }
        uint64_t hv = pair_hash(t[0], len[0], t[1], len[1]);
        size_t j = (size_t)hv & (h.n_slots - 1);
        int dup = 0;
        while (h.slot[j] >= 0) {
            const struct nlp_logic_pair *q = &s->pairs[h.slot[j]];
            if (q->n_left == len[0] && q->n_right == len[1] &&
                memcmp(s->tokens + q->left, t[0], (size_t)len[0]) == 0 &&
                memcmp(s->tokens + q->right, t[1], (size_t)len[1]) == 0) {
                dup = 1;
                break;
            }
            j = (j + 1) & (h.n_slots - 1);
        }
        if (dup) {
            st.duplicates++;
            continue;
        }
        if ((rc = grow((void **)&s->pairs, &s->cap_pairs, (size_t)s->n + 1,
                       sizeof *s->pairs)) < 0 ||
            (rc = grow((void **)&s->tokens, &s->cap_tokens,
                       s->n_tokens + (size_t)len[0] + (size_t)len[1], 1)) <
                0) {
            break;
        }
        struct nlp_logic_pair *p = &s->pairs[s->n];
        memset(p, 0, sizeof *p);
        p->left = (uint32_t)s->n_tokens;
        p->n_left = (uint16_t)len[0];
        memcpy(s->tokens + s->n_tokens, t[0], (size_t)len[0]);
        s->n_tokens += (size_t)len[0];
        p->right = (uint32_t)s->n_tokens;
        p->n_right = (uint16_t)len[1];
        memcpy(s->tokens + s->n_tokens, t[1], (size_t)len[1]);
        s->n_tokens += (size_t)len[1];
        p->label = p->computed = (int8_t)rel;
        p->k = (int8_t)k;
        p->ops_left = sat8(e[0].ops);
        p->ops_right = sat8(e[1].ops);
        p->den_left = e[0].denotation;
        p->den_right = e[1].denotation;
        p->file = s->n_files - 1;
        p->line = s->n - first + 1;
        h.slot[j] = s->n;
        h.used++;
        last_new = st.draws;
        s->n++;
    }
    free(h.slot);
    if (stats != NULL) {
        *stats = st;
    }
    if (rc < 0) {
        s->n = n0;
        s->n_tokens = t0;
        free(s->files[--s->n_files]);
    }
    return rc;
}
