/* Corpus BLEU with sacreBLEU's defaults (nlp/tasks/bleu.h). The 13a rules
 * are applied as sequential left-to-right substitution passes, the way a
 * regular-expression substitution scans (each pattern here matches one or
 * two characters, so a pass is a single scan). */
#include "nlp/tasks/bleu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

#define LINE_MAX_BYTES (1 << 16)

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* Rule 1's class: { | } ~  [ \ ] ^ _ `  space ! " # $ % &  ( ) * +
 * : ; < = > ? @  / */
static int is_split_char(unsigned char c)
{
    return (c >= '{' && c <= '~') || (c >= '[' && c <= '`') ||
           (c >= ' ' && c <= '&') || (c >= '(' && c <= '+') ||
           (c >= ':' && c <= '@') || c == '/';
}

/* One substitution pass; rule 1..4 as in the header. */
static size_t pass(int rule, const char *in, size_t n, char *out)
{
    size_t o = 0, i = 0;
    while (i < n) {
        char c = in[i], d = i + 1 < n ? in[i + 1] : '\0';
        int two = i + 1 < n;
        if (rule == 1 && is_split_char((unsigned char)c)) {
            out[o++] = ' ';
            out[o++] = c;
            out[o++] = ' ';
            i += 1;
        } else if (rule == 2 && two && !is_digit(c) && (d == '.' || d == ',')) {
            out[o++] = c;
            out[o++] = ' ';
            out[o++] = d;
            out[o++] = ' ';
            i += 2;
        } else if (rule == 3 && two && (c == '.' || c == ',') && !is_digit(d)) {
            out[o++] = ' ';
            out[o++] = c;
            out[o++] = ' ';
            out[o++] = d;
            i += 2;
        } else if (rule == 4 && two && is_digit(c) && d == '-') {
            out[o++] = c;
            out[o++] = ' ';
            out[o++] = d;
            out[o++] = ' ';
            i += 2;
        } else {
            out[o++] = c;
            i += 1;
        }
    }
    return o;
}

static size_t replace_all(char *s, size_t n, const char *from,
                          const char *to)
{
    size_t fl = strlen(from), tl = strlen(to), o = 0;
    for (size_t i = 0; i < n;) {
        if (i + fl <= n && memcmp(s + i, from, fl) == 0) {
            memcpy(s + o, to, tl); /* tl <= fl: in place is safe */
            o += tl;
            i += fl;
        } else {
            s[o++] = s[i++];
        }
    }
    return o;
}

int nlp_bleu_tokenize_13a(const char *line, char *out, size_t cap)
{
    size_t n = strlen(line);
    /* sacreBLEU strips trailing whitespace before tokenizing */
    while (n > 0 && (line[n - 1] == ' ' || line[n - 1] == '\t' ||
                     line[n - 1] == '\n' || line[n - 1] == '\r' ||
                     line[n - 1] == '\v' || line[n - 1] == '\f')) {
        n--;
    }
    if (n > LINE_MAX_BYTES) {
        return gr_error(GR_EINVAL, "bleu: a line of %zu bytes (at most %d)",
                        n, LINE_MAX_BYTES);
    }
    /* rule 1 grows a character into 3, rules 2-4 two characters into 4:
     * at most 3 * 2 * 2 * 2 times the input after the four passes */
    size_t big = 24 * (n + 2) + 1;
    char *a = malloc(big), *b = malloc(big);
    if (a == NULL || b == NULL) {
        free(a);
        free(b);
        return gr_error(GR_ENOMEM, "bleu: out of memory");
    }
    a[0] = ' ';
    memcpy(a + 1, line, n);
    size_t m = n + 1;
    m = replace_all(a, m, "<skipped>", "");
    m = replace_all(a, m, "-\n", "");
    for (size_t i = 0; i < m; i++) {
        a[i] = a[i] == '\n' ? ' ' : a[i];
    }
    if (memchr(a, '&', m) != NULL) {
        m = replace_all(a, m, "&quot;", "\"");
        m = replace_all(a, m, "&amp;", "&");
        m = replace_all(a, m, "&lt;", "<");
        m = replace_all(a, m, "&gt;", ">");
    }
    a[m++] = ' ';
    for (int rule = 1; rule <= 4; rule++) {
        m = pass(rule, a, m, b);
        char *t = a;
        a = b;
        b = t;
    }
    /* single spaces, no leading or trailing */
    size_t o = 0;
    int rc = 0;
    for (size_t i = 0; i < m; i++) {
        int space = a[i] == ' ' || a[i] == '\t' || a[i] == '\r' ||
                    a[i] == '\n' || a[i] == '\v' || a[i] == '\f';
        if (space) {
            continue;
        }
        if (i > 0 && o > 0 && (a[i - 1] == ' ' || a[i - 1] == '\t' ||
                               a[i - 1] == '\r' || a[i - 1] == '\v' ||
                               a[i - 1] == '\f' || a[i - 1] == '\n')) {
            if (o + 1 >= cap) {
                rc = -1;
                break;
            }
            out[o++] = ' ';
        }
        if (o + 1 >= cap) {
            rc = -1;
            break;
        }
        out[o++] = a[i];
    }
    if (cap > 0) {
        out[o < cap ? o : cap - 1] = '\0';
    }
    free(a);
    free(b);
    return rc < 0 ? gr_error(GR_EINVAL, "bleu: the tokenized line does not "
                             "fit %zu bytes", cap)
                  : 0;
}

/* Splits s (modified) into tokens; returns the count. */
static int64_t split(char *s, char **tok, int64_t cap)
{
    int64_t n = 0;
    for (char *p = strtok(s, " "); p != NULL && n < cap;
         p = strtok(NULL, " ")) {
        tok[n++] = p;
    }
    return n;
}

static int same_gram(char **a, char **b, int k)
{
    for (int i = 0; i < k; i++) {
        if (strcmp(a[i], b[i]) != 0) {
            return 0;
        }
    }
    return 1;
}

int nlp_bleu_add(struct nlp_bleu_acc *acc, const char *hyp,
                 const char *ref)
{
    size_t cap = 3 * (strlen(hyp) > strlen(ref) ? strlen(hyp) : strlen(ref)) +
                 16;
    char *th = malloc(cap), *tr = malloc(cap);
    char **hw = malloc(cap * sizeof *hw), **rw = malloc(cap * sizeof *rw);
    int rc = (th && tr && hw && rw) ? 0 : gr_error(GR_ENOMEM, "bleu: out of "
                                                   "memory");
    if (rc == 0) {
        rc = nlp_bleu_tokenize_13a(hyp, th, cap);
    }
    if (rc == 0) {
        rc = nlp_bleu_tokenize_13a(ref, tr, cap);
    }
    if (rc == 0) {
        int64_t nh = split(th, hw, (int64_t)cap);
        int64_t nr = split(tr, rw, (int64_t)cap);
        acc->sys_len += nh;
        acc->ref_len += nr;
        acc->segments++;
        for (int k = 1; k <= NLP_BLEU_ORDER; k++) {
            int64_t grams = nh - k + 1 > 0 ? nh - k + 1 : 0;
            acc->total[k - 1] += grams;
            for (int64_t i = 0; i < grams; i++) {
                /* count each distinct hypothesis n-gram once, at its first
                 * occurrence: min(count in hyp, count in ref) */
                int first = 1;
                for (int64_t j = 0; j < i && first; j++) {
                    first = !same_gram(hw + j, hw + i, k);
                }
                if (!first) {
                    continue;
                }
                int64_t ch = 0, cr = 0;
                for (int64_t j = i; j < grams; j++) {
                    ch += same_gram(hw + j, hw + i, k);
                }
                for (int64_t j = 0; j + k <= nr; j++) {
                    cr += same_gram(rw + j, hw + i, k);
                }
                acc->correct[k - 1] += ch < cr ? ch : cr;
            }
        }
    }
    free(th);
    free(tr);
    free(hw);
    free(rw);
    return rc;
}

void nlp_bleu_score(const struct nlp_bleu_acc *acc, struct nlp_bleu *out)
{
    memset(out, 0, sizeof *out);
    out->sys_len = acc->sys_len;
    out->ref_len = acc->ref_len;
    double smooth = 1.0;
    for (int k = 0; k < NLP_BLEU_ORDER; k++) {
        if (acc->total[k] == 0) {
            break; /* this order and the higher ones stay 0 */
        }
        if (acc->correct[k] == 0) {
            smooth *= 2.0;
            out->precisions[k] = 100.0 / (smooth * (double)acc->total[k]);
        } else {
            out->precisions[k] =
                100.0 * (double)acc->correct[k] / (double)acc->total[k];
        }
    }
    out->bp = 1.0;
    if (acc->sys_len < acc->ref_len) {
        out->bp = acc->sys_len > 0
                      ? exp(1.0 - (double)acc->ref_len / (double)acc->sys_len)
                      : 0.0;
    }
    double logs = 0.0;
    for (int k = 0; k < NLP_BLEU_ORDER; k++) {
        if (out->precisions[k] <= 0.0) {
            out->score = 0.0;
            return;
        }
        logs += log(out->precisions[k] / 100.0);
    }
    out->score = 100.0 * out->bp * exp(logs / NLP_BLEU_ORDER);
}
