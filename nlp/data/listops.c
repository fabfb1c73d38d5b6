/* ListOps: reader, evaluator, gold trees, generator. See
 * nlp/data/listops.h and formal_tasks.md §2. Every walk over an
 * expression uses explicit stacks: a hostile file cannot overflow the C
 * stack. */
#include "nlp/data/listops.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/files.h"
#include "core/random.h"

#define LISTOPS_MAX_FILE_BYTES ((size_t)1 << 31)
#define NLP_GEN_STALL_DRAWS 200000 /* see nlp_listops_generate */

static const char *const token_names[NLP_LISTOPS_VOCAB] = {
    "_PAD", "0",    "1",    "2",   "3",   "4",    "5",  "6",   "7",      "8",
    "9",    "[MIN", "[MAX", "[FIRST", "[LAST", "[MED", "[SM", "[PM", "[FLSUM",
    "]"};

const char *nlp_listops_token_name(int id)
{
    return (unsigned)id < NLP_LISTOPS_VOCAB ? token_names[id] : "?";
}

int nlp_listops_token_id(const char *s, size_t n)
{
    for (int i = 1; i < NLP_LISTOPS_VOCAB; i++) {
        if (strlen(token_names[i]) == n && memcmp(token_names[i], s, n) == 0) {
            return i;
        }
    }
    return -1;
}

static int is_digit_id(int t)
{
    return t >= NLP_LISTOPS_DIGIT0 && t < NLP_LISTOPS_DIGIT0 + 10;
}

static int is_op_id(int t)
{
    return t == NLP_LISTOPS_MIN || t == NLP_LISTOPS_MAX ||
           t == NLP_LISTOPS_MED || t == NLP_LISTOPS_SM;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static int apply(int op, int *v, int32_t n)
{
    int acc = v[0];
    switch (op) {
    case NLP_LISTOPS_MIN:
        for (int32_t i = 1; i < n; i++) {
            acc = v[i] < acc ? v[i] : acc;
        }
        return acc;
    case NLP_LISTOPS_MAX:
        for (int32_t i = 1; i < n; i++) {
            acc = v[i] > acc ? v[i] : acc;
        }
        return acc;
    case NLP_LISTOPS_SM:
        for (int32_t i = 1; i < n; i++) {
            acc = (acc + v[i]) % 10;
        }
        return acc % 10;
    default: /* MED: the floor of the mean of the middle two when even */
        qsort(v, (size_t)n, sizeof *v, cmp_int);
        return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    }
}

int nlp_listops_eval(const uint8_t *tok, int32_t n, int *value, int *depth)
{
    if (n <= 0) {
        return gr_error(GR_EFORMAT, "empty expression");
    }
    int *vals = malloc((size_t)n * sizeof *vals);
    int32_t *fstart = malloc((size_t)n * sizeof *fstart);
    int *fop = malloc((size_t)n * sizeof *fop);
    if (vals == NULL || fstart == NULL || fop == NULL) {
        free(vals);
        free(fstart);
        free(fop);
        return gr_error(GR_ENOMEM, "listops: out of memory");
    }
    int32_t nv = 0, nf = 0, max_nf = 0;
    int result = -1, rc = 0;
    for (int32_t i = 0; i < n && rc == 0; i++) {
        int t = tok[i];
        if (result >= 0) {
            rc = gr_error(GR_EFORMAT, "token %d '%s': extra token after a "
                          "complete expression", i + 1,
                          nlp_listops_token_name(t));
            break;
        }
        int v = -1;
        if (is_digit_id(t)) {
            v = t - NLP_LISTOPS_DIGIT0;
        } else if (is_op_id(t)) {
            fop[nf] = t;
            fstart[nf++] = nv;
            max_nf = nf > max_nf ? nf : max_nf;
            continue;
        } else if (t == NLP_LISTOPS_CLOSE) {
            if (nf == 0) {
                rc = gr_error(GR_EFORMAT, "token %d ']': no list is open",
                              i + 1);
                break;
            }
            nf--;
            int32_t count = nv - fstart[nf];
            if (count == 0) {
                rc = gr_error(GR_EFORMAT, "token %d ']': an empty list",
                              i + 1);
                break;
            }
            v = apply(fop[nf], vals + fstart[nf], count);
            nv = fstart[nf];
        } else {
            rc = gr_error(GR_EFORMAT, "token %d '%s': %s", i + 1,
                          nlp_listops_token_name(t),
                          t == NLP_LISTOPS_PAD ? "padding inside an expression"
                                               : "operator without defined "
                                                 "semantics (docs/tasks.md: "
                                                 "MIN MAX MED SM)");
            break;
        }
        if (nf == 0) {
            result = v;
        } else {
            vals[nv++] = v;
        }
    }
    if (rc == 0 && result < 0) {
        rc = gr_error(GR_EFORMAT, "%d list%s not closed by ']'", nf,
                      nf == 1 ? "" : "s");
    }
    free(vals);
    free(fstart);
    free(fop);
    if (rc == 0) {
        *value = result;
        if (depth != NULL) {
            *depth = max_nf;
        }
    }
    return rc;
}

int32_t nlp_listops_tree(const uint8_t *tok, int32_t n, struct nlp_span *out)
{
    int32_t *stack = malloc(((size_t)n + 1) * sizeof *stack);
    if (stack == NULL) {
        return -1;
    }
    int32_t ns = 0, k = 0;
    for (int32_t i = 0; i < n; i++) {
        int t = tok[i];
        if (is_op_id(t)) {
            stack[ns++] = i;
            continue;
        }
        if (t == NLP_LISTOPS_CLOSE) {
            if (ns == 0) {
                k = -1;
                break;
            }
            out[k].start = stack[ns - 1];
            out[k++].end = i + 1;
            ns--;
        } else if (!is_digit_id(t)) {
            k = -1;
            break;
        }
        /* an argument (digit or closed list) joins its list's left spine */
        if (ns > 0) {
            out[k].start = stack[ns - 1];
            out[k++].end = i + 1;
        }
    }
    free(stack);
    if (k >= 0 && (ns != 0 || k != n - 1)) {
        k = -1;
    }
    return k;
}

int64_t nlp_listops_bracketed(const uint8_t *tok, int32_t n, char *buf,
                              size_t cap)
{
    /* the argument count of each list, at its operator's index */
    int32_t *args = calloc((size_t)n + 1, sizeof *args);
    int32_t *stack = malloc(((size_t)n + 1) * sizeof *stack);
    if (args == NULL || stack == NULL) {
        free(args);
        free(stack);
        return -1;
    }
    int32_t ns = 0;
    int bad = 0;
    for (int32_t i = 0; i < n && !bad; i++) {
        int t = tok[i];
        if (is_op_id(t)) {
            stack[ns++] = i;
            continue;
        }
        if (t == NLP_LISTOPS_CLOSE) {
            if (ns == 0) {
                bad = 1;
                break;
            }
            ns--;
        } else if (!is_digit_id(t)) {
            bad = 1;
            break;
        }
        if (ns > 0) {
            args[stack[ns - 1]]++;
        }
    }
    bad |= ns != 0;
    size_t k = 0;
#define PUT(str)                                                              \
    do {                                                                      \
        const char *s_ = (str);                                               \
        size_t l_ = strlen(s_);                                               \
        if (k + l_ + 2 > cap) {                                               \
            bad = 1;                                                          \
        } else {                                                              \
            if (k > 0) {                                                      \
                buf[k++] = ' ';                                               \
            }                                                                 \
            memcpy(buf + k, s_, l_);                                          \
            k += l_;                                                          \
        }                                                                     \
    } while (0)
    ns = 0;
    for (int32_t i = 0; i < n && !bad; i++) {
        int t = tok[i];
        if (is_op_id(t)) {
            for (int32_t j = 0; j <= args[i]; j++) {
                PUT("(");
            }
            PUT(token_names[t]);
            ns++;
            continue;
        }
        PUT(token_names[t]);
        if (t == NLP_LISTOPS_CLOSE) {
            PUT(")");
            ns--;
        }
        if (ns > 0) {
            PUT(")");
        }
    }
#undef PUT
    free(args);
    free(stack);
    if (bad) {
        return -1;
    }
    if (cap > 0) {
        buf[k] = '\0';
    }
    return (int64_t)k;
}

/* ---- sets ------------------------------------------------------------- */

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
        return gr_error(GR_ENOMEM, "listops: out of memory");
    }
    *p = q;
    *cap = n;
    return 0;
}

void nlp_listops_free(struct nlp_listops_set *s)
{
    free(s->examples);
    free(s->tokens);
    free(s->spans);
    memset(s, 0, sizeof *s);
}

static void set_init(struct nlp_listops_set *s, const char *name)
{
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
}

/* Appends an example whose model tokens are already at s->tokens[off ..
 * s->n_tokens) and whose spans (if have_spans) at s->spans[span_off ..
 * s->n_spans); evaluates it, computes the spans if not given. */
static int finish_example(struct nlp_listops_set *s, size_t off,
                          size_t span_off, int have_spans, int answer,
                          int32_t line, const char *where)
{
    int32_t n = (int32_t)(s->n_tokens - off);
    int value = 0, depth = 0;
    if (nlp_listops_eval(s->tokens + off, n, &value, &depth) < 0) {
        return gr_error_wrap(GR_EFORMAT, "%s: the list structure (tokens "
                             "counted without parentheses)", where);
    }
    if (answer >= 0 && value != answer) {
        return gr_error(GR_EFORMAT, "%s: the answer is %d but the expression "
                        "evaluates to %d (docs/tasks.md)", where,
                        answer, value);
    }
    if (!have_spans) {
        int rc = grow((void **)&s->spans, &s->cap_spans,
                      s->n_spans + (size_t)n, sizeof *s->spans);
        if (rc < 0) {
            return rc;
        }
        if (nlp_listops_tree(s->tokens + off, n, s->spans + span_off) !=
            n - 1) {
            return gr_error(GR_EFORMAT, "%s: no gold tree", where);
        }
        s->n_spans = span_off + (size_t)(n - 1);
    }
    int rc = grow((void **)&s->examples, &s->cap_examples, (size_t)s->n + 1,
                  sizeof *s->examples);
    if (rc < 0) {
        return rc;
    }
    struct nlp_listops_example *e = &s->examples[s->n++];
    e->tokens = (uint32_t)off;
    e->n_tokens = n;
    e->spans = (uint32_t)span_off;
    e->answer = (int8_t)value;
    e->depth = (int8_t)(depth > 127 ? 127 : depth);
    e->line = line;
    s->n_bare += n == 1;
    if (n > s->max_tokens) {
        s->max_tokens = n;
    }
    return 0;
}

struct group {
    int32_t start, parts;
};

static int read_line(struct nlp_listops_set *s, const char *line, size_t len,
                     int32_t lineno, struct group **stack, size_t *stack_cap)
{
    char where[4200];
    snprintf(where, sizeof where, "%s:%d", s->name, lineno);
    if (len == 0) {
        return gr_error(GR_EFORMAT, "%s: empty line (expected ANSWER <TAB> "
                        "EXPRESSION)", where);
    }
    const char *tab = memchr(line, '\t', len);
    if (tab == NULL || memchr(tab + 1, '\t', len - (size_t)(tab + 1 - line))) {
        return gr_error(GR_EFORMAT, "%s: expected 2 tab-separated fields "
                        "(ANSWER <TAB> EXPRESSION), got %s", where,
                        tab == NULL ? "1" : "more");
    }
    if (tab - line != 1 || line[0] < '0' || line[0] > '9') {
        return gr_error(GR_EFORMAT, "%s: the answer '%.*s' is not one digit "
                        "0-9", where, (int)(tab - line > 20 ? 20 : tab - line),
                        line);
    }
    int answer = line[0] - '0';
    size_t off = s->n_tokens, span_off = s->n_spans;
    const char *f = tab + 1;
    size_t n = len - (size_t)(f - line);
    size_t depth = 0;
    int32_t top = 0, model = 0, k = 0;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0;) {
        if (f[i] == ' ') {
            i++;
            continue;
        }
        size_t j = i;
        while (j < n && f[j] != ' ') {
            j++;
        }
        k++;
        if (j - i == 1 && f[i] == '(') {
            if ((rc = grow((void **)stack, stack_cap, depth + 1,
                           sizeof **stack)) < 0) {
                break;
            }
            (*stack)[depth].start = model;
            (*stack)[depth++].parts = 0;
        } else if (j - i == 1 && f[i] == ')') {
            if (depth == 0) {
                rc = gr_error(GR_EFORMAT, "%s: token %d: ')' without an open "
                              "'('", where, k);
                break;
            }
            struct group g = (*stack)[--depth];
            if (g.parts != 2) {
                rc = gr_error(GR_EFORMAT, "%s: token %d: a bracket of %d "
                              "part%s (the gold trees are binary)", where, k,
                              g.parts, g.parts == 1 ? "" : "s");
                break;
            }
            if ((rc = grow((void **)&s->spans, &s->cap_spans, s->n_spans + 1,
                           sizeof *s->spans)) < 0) {
                break;
            }
            s->spans[s->n_spans].start = g.start;
            s->spans[s->n_spans++].end = model;
            if (depth > 0) {
                (*stack)[depth - 1].parts++;
            } else {
                top++;
            }
        } else {
            int id = nlp_listops_token_id(f + i, j - i);
            if (id < 0) {
                rc = gr_error(GR_EFORMAT, "%s: token %d: unknown token "
                              "'%.*s' (expected ( ) [MIN [MAX [MED [SM 0-9 ])",
                              where, k, (int)(j - i > 20 ? 20 : j - i), f + i);
                break;
            }
            if (!is_digit_id(id) && !is_op_id(id) &&
                id != NLP_LISTOPS_CLOSE) {
                rc = gr_error(GR_EFORMAT, "%s: token %d '%s': operator "
                              "without defined semantics (docs/tasks.md: "
                              "MIN MAX MED SM)", where, k,
                              token_names[id]);
                break;
            }
            if ((rc = grow((void **)&s->tokens, &s->cap_tokens,
                           s->n_tokens + 1, 1)) < 0) {
                break;
            }
            s->tokens[s->n_tokens++] = (uint8_t)id;
            model++;
            if (depth > 0) {
                (*stack)[depth - 1].parts++;
            } else {
                top++;
            }
        }
        i = j;
    }
    if (rc == 0 && depth > 0) {
        rc = gr_error(GR_EFORMAT, "%s: %zu '(' not closed", where, depth);
    }
    if (rc == 0 && model == 0) {
        rc = gr_error(GR_EFORMAT, "%s: the expression is empty", where);
    }
    if (rc == 0 && top != 1) {
        rc = gr_error(GR_EFORMAT, "%s: %d items at the top level (expected "
                      "one bracketed tree or one digit)", where, top);
    }
    if (rc == 0) {
        rc = finish_example(s, off, span_off, 1, answer, lineno, where);
    }
    return rc;
}

int nlp_listops_read_text(struct nlp_listops_set *s, const char *text,
                          size_t n, const char *name)
{
    set_init(s, name);
    struct group *stack = NULL;
    size_t stack_cap = 0;
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
        if ((rc = read_line(s, text + pos, len, lineno, &stack,
                            &stack_cap)) < 0) {
            break;
        }
        pos = end + 1;
    }
    free(stack);
    if (rc < 0) {
        nlp_listops_free(s);
    }
    return rc;
}

int nlp_listops_read_file(struct nlp_listops_set *s, const char *path)
{
    memset(s, 0, sizeof *s);
    char *text = NULL;
    size_t size = 0;
    int rc = gr_read_file(path, LISTOPS_MAX_FILE_BYTES, &text, &size);
    if (rc < 0) {
        return rc;
    }
    rc = nlp_listops_read_text(s, text, size, path);
    free(text);
    return rc;
}

int nlp_listops_write(FILE *fp, const struct nlp_listops_set *s, int32_t i)
{
    const struct nlp_listops_example *e = &s->examples[i];
    /* each model token takes at most 7 bytes with its parentheses' share */
    size_t cap = (size_t)e->n_tokens * 8 + 16;
    char *buf = malloc(cap);
    if (buf == NULL) {
        return gr_error(GR_ENOMEM, "listops: out of memory");
    }
    int64_t len = nlp_listops_bracketed(s->tokens + e->tokens, e->n_tokens,
                                        buf, cap);
    int rc = 0;
    if (len < 0) {
        rc = gr_error(GR_EINVAL, "listops: example %d is malformed", i);
    } else if (fprintf(fp, "%d\t%s\n", e->answer, buf) < 0) {
        rc = gr_error(GR_EIO, "listops: write failed");
    }
    free(buf);
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

struct tokbuf {
    uint8_t *t;
    size_t n, cap;
};

/* gen(depth) of §2.5, appended to b. Depth <= max_depth bounds the
 * recursion. */
static int gen_tree(struct gr_philox_stream *s, int depth, int max_depth,
                    struct tokbuf *b)
{
    /* uniform(0,1) > 0.25 <=> the u32 draw > 2^30 */
    int leaf = depth >= max_depth || gr_philox_next_u32(s) > (1u << 30);
    int rc = grow((void **)&b->t, &b->cap, b->n + 1, 1);
    if (rc < 0) {
        return rc;
    }
    if (leaf) {
        b->t[b->n++] = (uint8_t)(NLP_LISTOPS_DIGIT0 + draw_below(s, 10));
        return 0;
    }
    size_t op_at = b->n++;
    uint32_t nargs = 2 + draw_below(s, 4);
    for (uint32_t i = 0; i < nargs; i++) {
        if ((rc = gen_tree(s, depth + 1, max_depth, b)) < 0) {
            return rc;
        }
    }
    static const uint8_t ops[4] = {NLP_LISTOPS_MIN, NLP_LISTOPS_MAX,
                                   NLP_LISTOPS_MED, NLP_LISTOPS_SM};
    b->t[op_at] = ops[draw_below(s, 4)];
    if ((rc = grow((void **)&b->t, &b->cap, b->n + 1, 1)) < 0) {
        return rc;
    }
    b->t[b->n++] = NLP_LISTOPS_CLOSE;
    return 0;
}

static uint64_t tok_hash(const uint8_t *t, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ t[i]) * 0x100000001b3ull;
    }
    return h;
}

static int seen_rehash(int32_t **slot, size_t *n_slots,
                       const struct nlp_listops_set *s)
{
    size_t n = *n_slots ? *n_slots * 2 : 1024;
    int32_t *t = malloc(n * sizeof *t);
    if (t == NULL) {
        return gr_error(GR_ENOMEM, "listops: out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        t[i] = -1;
    }
    for (int32_t i = 0; i < s->n; i++) {
        const struct nlp_listops_example *e = &s->examples[i];
        size_t j = (size_t)tok_hash(s->tokens + e->tokens,
                                    (size_t)e->n_tokens) & (n - 1);
        while (t[j] >= 0) {
            j = (j + 1) & (n - 1);
        }
        t[j] = i;
    }
    free(*slot);
    *slot = t;
    *n_slots = n;
    return 0;
}

int nlp_listops_generate(struct nlp_listops_set *s, int32_t n, uint64_t seed,
                         int max_depth, struct nlp_listops_gen_stats *stats)
{
    set_init(s, "generated");
    struct nlp_listops_gen_stats st = {0, 0};
    if (n < 0 || max_depth < 1 || max_depth > 100) {
        return gr_error(GR_EINVAL, "listops generate: need n >= 0 and a "
                        "max depth in 1..100 (got n %d, depth %d)", n,
                        max_depth);
    }
    struct gr_philox_stream rng = gr_philox_stream_init(seed, 0);
    struct tokbuf b = {NULL, 0, 0};
    int32_t *slot = NULL;
    size_t n_slots = 0;
    int64_t last_new = 0; /* draws when the last pair was accepted */
    int rc = 0;
    while (s->n < n) {
        if (st.draws - last_new >= NLP_GEN_STALL_DRAWS) {
            rc = gr_error(GR_EINVAL, "listops generate: only %d distinct "
                          "trees after %lld draws, the last %d of them all "
                          "rejected (%d asked)", s->n, (long long)st.draws,
                          NLP_GEN_STALL_DRAWS, n);
            break;
        }
        st.draws++;
        b.n = 0;
        if ((rc = gen_tree(&rng, 1, max_depth, &b)) < 0) {
            break;
        }
        if ((size_t)(s->n + 1) * 2 > n_slots &&
            (rc = seen_rehash(&slot, &n_slots, s)) < 0) {
            break;
        }
        size_t j = (size_t)tok_hash(b.t, b.n) & (n_slots - 1);
        int dup = 0;
        while (slot[j] >= 0) {
            const struct nlp_listops_example *e = &s->examples[slot[j]];
            if ((size_t)e->n_tokens == b.n &&
                memcmp(s->tokens + e->tokens, b.t, b.n) == 0) {
                dup = 1;
                break;
            }
            j = (j + 1) & (n_slots - 1);
        }
        if (dup) {
            st.duplicates++;
            continue;
        }
        size_t off = s->n_tokens;
        if ((rc = grow((void **)&s->tokens, &s->cap_tokens, off + b.n, 1)) <
            0) {
            break;
        }
        memcpy(s->tokens + off, b.t, b.n);
        s->n_tokens += b.n;
        if ((rc = finish_example(s, off, s->n_spans, 0, -1, s->n + 1,
                                 "generated")) < 0) {
            break;
        }
        slot[j] = s->n - 1;
        last_new = st.draws;
    }
    free(b.t);
    free(slot);
    if (stats != NULL) {
        *stats = st;
    }
    if (rc < 0) {
        nlp_listops_free(s);
    }
    return rc;
}

void nlp_listops_holdout(int32_t n, uint64_t seed, int32_t *perm)
{
    for (int32_t i = 0; i < n; i++) {
        perm[i] = i;
    }
    struct gr_philox_stream rng = gr_philox_stream_init(seed, 0);
    for (int32_t i = n - 1; i > 0; i--) {
        int32_t j = (int32_t)draw_below(&rng, (uint32_t)i + 1);
        int32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}
