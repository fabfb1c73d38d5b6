/* The SNLI JSON-lines reader (see nlp/data/snli.h). A small JSON scanner of
 * its own: an object of string keys whose values are strings, numbers,
 * booleans, null, or nested arrays/objects (skipped); strings with every
 * JSON escape (\uXXXX, surrogate pairs included, written as UTF-8). */
#include "nlp/data/snli.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/files.h"

#define SNLI_MAX_FILE_BYTES ((size_t)1 << 31)
#define SNLI_MAX_STRING 65536

const char *nlp_snli_label_name(int label)
{
    static const char *const names[NLP_SNLI_CLASSES] = {
        "entailment", "neutral", "contradiction"};
    return label >= 0 && label < NLP_SNLI_CLASSES ? names[label] : "?";
}

void nlp_snli_init(struct nlp_snli *s)
{
    memset(s, 0, sizeof *s);
    nlp_vocab_init(&s->vocab);
}

void nlp_snli_free(struct nlp_snli *s)
{
    nlp_vocab_free(&s->vocab);
    free(s->tokens);
    for (int i = 0; i < NLP_N_SPLITS; i++) {
        free(s->pairs[i]);
    }
    memset(s, 0, sizeof *s);
}

/* ---- a line's JSON ---- */

struct scan {
    const char *p, *end;
    const char *what;
    int64_t line;
    char *scratch; /* SNLI_MAX_STRING bytes: keys and skipped strings */
};

static int bad(const struct scan *sc, const char *msg)
{
    return gr_error(GR_EFORMAT, "%s:%lld: %s", sc->what, (long long)sc->line,
                    msg);
}

static void ws(struct scan *sc)
{
    while (sc->p < sc->end && (*sc->p == ' ' || *sc->p == '\t' ||
                               *sc->p == '\r')) {
        sc->p++;
    }
}

static int hex4(const char *p, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') {
            v |= (unsigned)(c - '0');
        } else if (c >= 'a' && c <= 'f') {
            v |= (unsigned)(c - 'a' + 10);
        } else if (c >= 'A' && c <= 'F') {
            v |= (unsigned)(c - 'A' + 10);
        } else {
            return -1;
        }
    }
    *out = v;
    return 0;
}

static size_t put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* A JSON string at sc->p (the opening quote) decoded into out[cap]
 * (NUL-terminated); *len its length. */
static int string(struct scan *sc, char *out, size_t cap, size_t *len)
{
    if (sc->p >= sc->end || *sc->p != '"') {
        return bad(sc, "expected a string");
    }
    sc->p++;
    size_t n = 0;
    while (sc->p < sc->end && *sc->p != '"') {
        if (n + 5 > cap) {
            return bad(sc, "string too long");
        }
        char c = *sc->p++;
        if ((unsigned char)c < 0x20) {
            return bad(sc, "control character in a string");
        }
        if (c != '\\') {
            out[n++] = c;
            continue;
        }
        if (sc->p >= sc->end) {
            break;
        }
        c = *sc->p++;
        switch (c) {
        case '"': out[n++] = '"'; break;
        case '\\': out[n++] = '\\'; break;
        case '/': out[n++] = '/'; break;
        case 'b': out[n++] = '\b'; break;
        case 'f': out[n++] = '\f'; break;
        case 'n': out[n++] = '\n'; break;
        case 'r': out[n++] = '\r'; break;
        case 't': out[n++] = '\t'; break;
        case 'u': {
            unsigned cp;
            if (sc->end - sc->p < 4 || hex4(sc->p, &cp) < 0) {
                return bad(sc, "bad \\u escape");
            }
            sc->p += 4;
            if (cp >= 0xD800 && cp < 0xDC00) {
                unsigned lo;
                if (sc->end - sc->p < 6 || sc->p[0] != '\\' ||
                    sc->p[1] != 'u' || hex4(sc->p + 2, &lo) < 0 ||
                    lo < 0xDC00 || lo >= 0xE000) {
                    return bad(sc, "unpaired surrogate in a \\u escape");
                }
                sc->p += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp < 0xE000) {
                return bad(sc, "unpaired surrogate in a \\u escape");
            }
            n += put_utf8(out + n, cp);
            break;
        }
        default: return bad(sc, "unknown escape in a string");
        }
    }
    if (sc->p >= sc->end) {
        return bad(sc, "unterminated string");
    }
    sc->p++;
    out[n] = '\0';
    *len = n;
    return 0;
}

/* Skips any JSON value (depth-limited). */
static int skip_value(struct scan *sc, int depth)
{
    char *scratch = sc->scratch;
    size_t len;
    ws(sc);
    if (sc->p >= sc->end) {
        return bad(sc, "expected a value");
    }
    if (depth > 64) {
        return bad(sc, "nested too deeply");
    }
    char c = *sc->p;
    if (c == '"') {
        return string(sc, scratch, SNLI_MAX_STRING, &len);
    }
    if (c == '{' || c == '[') {
        char close = c == '{' ? '}' : ']';
        sc->p++;
        ws(sc);
        if (sc->p < sc->end && *sc->p == close) {
            sc->p++;
            return 0;
        }
        for (;;) {
            int rc;
            if (c == '{') {
                ws(sc);
                if ((rc = string(sc, scratch, SNLI_MAX_STRING, &len)) < 0) {
                    return rc;
                }
                ws(sc);
                if (sc->p >= sc->end || *sc->p != ':') {
                    return bad(sc, "expected ':'");
                }
                sc->p++;
            }
            if ((rc = skip_value(sc, depth + 1)) < 0) {
                return rc;
            }
            ws(sc);
            if (sc->p < sc->end && *sc->p == ',') {
                sc->p++;
                continue;
            }
            if (sc->p < sc->end && *sc->p == close) {
                sc->p++;
                return 0;
            }
            return bad(sc, "expected ',' or a closing bracket");
        }
    }
    /* number, true, false, null */
    const char *s0 = sc->p;
    while (sc->p < sc->end && (isalnum((unsigned char)*sc->p) ||
                               *sc->p == '-' || *sc->p == '+' ||
                               *sc->p == '.')) {
        sc->p++;
    }
    if (sc->p == s0) {
        return bad(sc, "expected a value");
    }
    return 0;
}

/* ---- tokens ---- */

static int add_token(struct nlp_snli *s, const char *w, size_t len)
{
    char low[256];
    if (len == 0) {
        return 0;
    }
    if (len >= sizeof low) {
        len = sizeof low - 1;
    }
    for (size_t i = 0; i < len; i++) {
        low[i] = (char)tolower((unsigned char)w[i]);
    }
    int32_t id;
    int rc = nlp_vocab_add(&s->vocab, low, len, &id);
    if (rc < 0) {
        return rc;
    }
    if (s->n_tokens == s->cap_tokens) {
        int64_t cap = s->cap_tokens ? 2 * s->cap_tokens : 4096;
        int32_t *t = realloc(s->tokens, (size_t)cap * sizeof *t);
        if (t == NULL) {
            return gr_error(GR_ENOMEM, "snli: out of memory");
        }
        s->tokens = t;
        s->cap_tokens = cap;
    }
    s->tokens[s->n_tokens++] = id;
    return 0;
}

/* The words of a binary parse "( ( The cat ) ( sat . ) )". */
static int tokens_parse(struct nlp_snli *s, const char *t)
{
    const char *p = t;
    while (*p) {
        while (*p == ' ' || *p == '(' || *p == ')') {
            p++;
        }
        const char *w = p;
        while (*p && *p != ' ' && *p != '(' && *p != ')') {
            p++;
        }
        int rc = add_token(s, w, (size_t)(p - w));
        if (rc < 0) {
            return rc;
        }
    }
    return 0;
}

/* A raw sentence: spaces separate; . , ! ? ; : " are tokens of their own. */
static int tokens_raw(struct nlp_snli *s, const char *t)
{
    const char *p = t;
    while (*p) {
        if (isspace((unsigned char)*p)) {
            p++;
            continue;
        }
        if (strchr(".,!?;:\"", *p) != NULL) {
            int rc = add_token(s, p, 1);
            if (rc < 0) {
                return rc;
            }
            p++;
            continue;
        }
        const char *w = p;
        while (*p && !isspace((unsigned char)*p) &&
               strchr(".,!?;:\"", *p) == NULL) {
            p++;
        }
        int rc = add_token(s, w, (size_t)(p - w));
        if (rc < 0) {
            return rc;
        }
    }
    return 0;
}

/* ---- lines ---- */

enum { F_LABEL, F_S1, F_S2, F_P1, F_P2, F_N };
static const char *const field_keys[F_N] = {
    "gold_label", "sentence1", "sentence2", "sentence1_binary_parse",
    "sentence2_binary_parse"};

static int read_line(struct nlp_snli *s, enum nlp_split split,
                     struct scan *sc, char *const *val, int *have)
{
    char *key = sc->scratch;
    memset(have, 0, F_N * sizeof *have);
    ws(sc);
    if (sc->p >= sc->end || *sc->p != '{') {
        return bad(sc, "expected a JSON object ('{')");
    }
    sc->p++;
    ws(sc);
    int first = 1;
    while (sc->p < sc->end && *sc->p != '}') {
        if (!first) {
            if (*sc->p != ',') {
                return bad(sc, "expected ',' or '}'");
            }
            sc->p++;
            ws(sc);
        }
        first = 0;
        size_t len;
        int rc = string(sc, key, SNLI_MAX_STRING, &len);
        if (rc < 0) {
            return rc;
        }
        ws(sc);
        if (sc->p >= sc->end || *sc->p != ':') {
            return bad(sc, "expected ':'");
        }
        sc->p++;
        ws(sc);
        int f = -1;
        for (int k = 0; k < F_N; k++) {
            if (strcmp(key, field_keys[k]) == 0) {
                f = k;
            }
        }
        if (f >= 0) {
            if ((rc = string(sc, val[f], SNLI_MAX_STRING, &len)) < 0) {
                return rc;
            }
            have[f] = 1;
        } else if ((rc = skip_value(sc, 0)) < 0) {
            return rc;
        }
        ws(sc);
    }
    if (sc->p >= sc->end) {
        return bad(sc, "unterminated object");
    }
    sc->p++;
    ws(sc);
    if (sc->p != sc->end) {
        return bad(sc, "text after the object");
    }
    for (int k = 0; k < 3; k++) {
        if (!have[k]) {
            char msg[96];
            snprintf(msg, sizeof msg, "no \"%s\"", field_keys[k]);
            return bad(sc, msg);
        }
    }
    int label = -1;
    for (int k = 0; k < NLP_SNLI_CLASSES; k++) {
        if (strcmp(val[F_LABEL], nlp_snli_label_name(k)) == 0) {
            label = k;
        }
    }
    if (strcmp(val[F_LABEL], "-") == 0) {
        s->n_skipped[split]++;
        return 0;
    }
    if (label < 0) {
        char msg[160];
        snprintf(msg, sizeof msg, "gold_label '%.60s' is not entailment, "
                 "neutral, contradiction or -", val[F_LABEL]);
        return bad(sc, msg);
    }
    struct nlp_snli_pair pr;
    memset(&pr, 0, sizeof pr);
    pr.label = label;
    for (int side = 0; side < 2; side++) {
        int64_t start = s->n_tokens;
        int rc = have[F_P1 + side] ? tokens_parse(s, val[F_P1 + side])
                                   : tokens_raw(s, val[F_S1 + side]);
        if (rc < 0) {
            return rc;
        }
        int32_t n = (int32_t)(s->n_tokens - start);
        if (n < 1) {
            return bad(sc, side ? "the hypothesis has no word"
                                : "the premise has no word");
        }
        if (side == 0) {
            pr.a = start;
            pr.len_a = n;
        } else {
            pr.b = start;
            pr.len_b = n;
        }
    }
    if (s->n_pairs[split] == s->cap_pairs[split]) {
        int64_t cap = s->cap_pairs[split] ? 2 * s->cap_pairs[split] : 256;
        struct nlp_snli_pair *p =
            realloc(s->pairs[split], (size_t)cap * sizeof *p);
        if (p == NULL) {
            return gr_error(GR_ENOMEM, "snli: out of memory");
        }
        s->pairs[split] = p;
        s->cap_pairs[split] = cap;
    }
    s->pairs[split][s->n_pairs[split]++] = pr;
    return 0;
}

int nlp_snli_read_text(struct nlp_snli *s, enum nlp_split split,
                       const char *text, size_t size, const char *what)
{
    if ((int)split < 0 || split >= NLP_N_SPLITS) {
        return gr_error(GR_EINVAL, "snli: split %d", (int)split);
    }
    char *val[F_N + 1] = {0}; /* the fields, then the scratch */
    int have[F_N];
    int rc = 0;
    for (int k = 0; k < F_N + 1 && rc == 0; k++) {
        val[k] = malloc(SNLI_MAX_STRING);
        if (val[k] == NULL) {
            rc = gr_error(GR_ENOMEM, "snli: out of memory");
        }
    }
    struct scan sc = {text, text, what, 0, val[F_N]};
    const char *end = text + size;
    const char *p = text;
    while (rc == 0 && p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *le = eol ? eol : end;
        sc.line++;
        sc.p = p;
        sc.end = le;
        ws(&sc);
        if (sc.p < sc.end) {
            if (memchr(p, '\0', (size_t)(le - p)) != NULL) {
                rc = bad(&sc, "NUL byte in the line");
            } else {
                rc = read_line(s, split, &sc, val, have);
            }
        }
        p = eol ? eol + 1 : end;
    }
    for (int k = 0; k < F_N + 1; k++) {
        free(val[k]);
    }
    return rc;
}

int nlp_snli_read_file(struct nlp_snli *s, enum nlp_split split,
                       const char *path)
{
    char *text = NULL;
    size_t size = 0;
    int rc = gr_read_file(path, SNLI_MAX_FILE_BYTES, &text, &size);
    if (rc == 0) {
        rc = nlp_snli_read_text(s, split, text, size, path);
    }
    free(text);
    return rc;
}
