/* Byte-pair encoding (nlp/data/bpe.h). */
#include "nlp/data/bpe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/files.h"

#define EOW "</w>"

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
           c == '\f';
}

/* Bytes of the UTF-8 character starting at s (1 for a stray byte). */
static size_t char_len(const char *s, size_t left)
{
    unsigned char c = (unsigned char)s[0];
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3
                              : (c >> 3) == 30 ? 4 : 1;
    if (n > left) {
        n = 1;
    }
    for (size_t i = 1; i < n; i++) {
        if (((unsigned char)s[i] >> 6) != 2) {
            return 1;
        }
    }
    return n;
}

/* The symbol ids of one word: characters, "</w>" glued to the last. */
static int word_symbols(struct nlp_vocab *sym, const char *w, size_t len,
                        int32_t *out, int32_t *n, int add)
{
    *n = 0;
    char buf[16];
    for (size_t i = 0; i < len;) {
        size_t cl = char_len(w + i, len - i);
        memcpy(buf, w + i, cl);
        size_t bl = cl;
        if (i + cl == len) {
            memcpy(buf + cl, EOW, 4);
            bl += 4;
        }
        int32_t id = nlp_vocab_find(sym, buf, bl);
        if (id < 0 && add) {
            if (nlp_vocab_add(sym, buf, bl, &id) < 0) {
                return GR_ENOMEM;
            }
        }
        out[(*n)++] = id; /* -1: a character never seen (kept as is) */
        i += cl;
    }
    return 0;
}

static int pair_key(int32_t l, int32_t r, char *key)
{
    return snprintf(key, 32, "%d %d", (int)l, (int)r);
}

struct word {
    int32_t *s;
    int32_t n;
    int64_t freq;
};

/* strcmp of "left right" texts of two pairs. */
static int pair_cmp(const struct nlp_vocab *sym, int32_t l1, int32_t r1,
                    int32_t l2, int32_t r2)
{
    int c = strcmp(nlp_vocab_word(sym, l1), nlp_vocab_word(sym, l2));
    if (c != 0) {
        /* "a b" vs "ab c": compare as the joined texts with a space */
        char a[600], b[600];
        snprintf(a, sizeof a, "%s %s", nlp_vocab_word(sym, l1),
                 nlp_vocab_word(sym, r1));
        snprintf(b, sizeof b, "%s %s", nlp_vocab_word(sym, l2),
                 nlp_vocab_word(sym, r2));
        return strcmp(a, b);
    }
    return strcmp(nlp_vocab_word(sym, r1), nlp_vocab_word(sym, r2));
}

/* Records merge (l, r) -> symbol l+r as the next rank. */
static int add_merge(struct nlp_bpe *b, int32_t l, int32_t r, int32_t *cap)
{
    char text[1024], key[32];
    const char *ls = nlp_vocab_word(&b->sym, l), *rs = nlp_vocab_word(&b->sym, r);
    int tl = snprintf(text, sizeof text, "%s%s", ls, rs);
    if (tl < 0 || (size_t)tl >= sizeof text) {
        return gr_error(GR_EINVAL, "bpe: a merged symbol longer than %zu "
                        "bytes", sizeof text - 1);
    }
    int32_t m;
    if (nlp_vocab_add(&b->sym, text, (size_t)tl, &m) < 0) {
        return GR_ENOMEM;
    }
    if (b->n_merges == *cap) {
        int32_t nc = *cap ? 2 * *cap : 256;
        int32_t *mm = realloc(b->merge, (size_t)nc * 3 * sizeof *mm);
        if (mm == NULL) {
            return gr_error(GR_ENOMEM, "bpe: out of memory");
        }
        b->merge = mm;
        *cap = nc;
    }
    int kl = pair_key(l, r, key);
    int32_t rank;
    if (nlp_vocab_add(&b->pairs, key, (size_t)kl, &rank) < 0) {
        return GR_ENOMEM;
    }
    if (rank != b->n_merges) {
        return gr_error(GR_EFORMAT, "bpe: the merge '%s %s' appears twice",
                        ls, rs);
    }
    b->merge[3 * b->n_merges] = l;
    b->merge[3 * b->n_merges + 1] = r;
    b->merge[3 * b->n_merges + 2] = m;
    b->n_merges++;
    return 0;
}

int nlp_bpe_learn(struct nlp_bpe *b, const char *const *lines,
                  int64_t n_lines, int32_t n_merges)
{
    memset(b, 0, sizeof *b);
    nlp_vocab_init(&b->sym);
    nlp_vocab_init(&b->pairs);
    if (n_merges < 0) {
        return gr_error(GR_EINVAL, "bpe: %d merges", (int)n_merges);
    }
    struct nlp_vocab words, pk;
    nlp_vocab_init(&words);
    nlp_vocab_init(&pk);
    int64_t *freq = NULL, *cnt = NULL, fcap = 0, ccap = 0;
    struct word *wv = NULL;
    int32_t mcap = 0;
    int rc = 0;
    /* distinct words and their frequencies */
    for (int64_t l = 0; l < n_lines && rc == 0; l++) {
        const char *p = lines[l];
        while (*p && rc == 0) {
            while (*p && is_space(*p)) {
                p++;
            }
            const char *s0 = p;
            while (*p && !is_space(*p)) {
                p++;
            }
            if (p == s0) {
                continue;
            }
            int32_t id;
            if (nlp_vocab_add(&words, s0, (size_t)(p - s0), &id) < 0) {
                rc = GR_ENOMEM;
                break;
            }
            if (id >= fcap) {
                int64_t nc = fcap ? 2 * fcap : 1024;
                int64_t *f = realloc(freq, (size_t)nc * sizeof *f);
                if (f == NULL) {
                    rc = gr_error(GR_ENOMEM, "bpe: out of memory");
                    break;
                }
                memset(f + fcap, 0, (size_t)(nc - fcap) * sizeof *f);
                freq = f;
                fcap = nc;
            }
            freq[id]++;
        }
    }
    if (rc == 0) {
        wv = calloc((size_t)words.size + 1, sizeof *wv);
        rc = wv ? 0 : gr_error(GR_ENOMEM, "bpe: out of memory");
    }
    for (int32_t i = 0; rc == 0 && i < words.size; i++) {
        const char *w = nlp_vocab_word(&words, i);
        size_t len = strlen(w);
        wv[i].s = malloc((len + 1) * sizeof *wv[i].s);
        wv[i].freq = freq[i];
        rc = wv[i].s ? word_symbols(&b->sym, w, len, wv[i].s, &wv[i].n, 1)
                     : gr_error(GR_ENOMEM, "bpe: out of memory");
    }
    char key[32];
    while (rc == 0 && b->n_merges < n_merges) {
        /* count every adjacent pair, weighted by word frequency */
        nlp_vocab_free(&pk);
        nlp_vocab_init(&pk);
        for (int32_t i = 0; i < words.size && rc == 0; i++) {
            for (int32_t j = 0; j + 1 < wv[i].n; j++) {
                int kl = pair_key(wv[i].s[j], wv[i].s[j + 1], key);
                int32_t before = pk.size, id;
                if (nlp_vocab_add(&pk, key, (size_t)kl, &id) < 0) {
                    rc = GR_ENOMEM;
                    break;
                }
                if (id >= ccap) {
                    int64_t nc = ccap ? 2 * ccap : 4096;
                    int64_t *c = realloc(cnt, (size_t)nc * sizeof *c);
                    if (c == NULL) {
                        rc = gr_error(GR_ENOMEM, "bpe: out of memory");
                        break;
                    }
                    cnt = c;
                    ccap = nc;
                }
                if (pk.size > before) {
                    cnt[id] = 0;
                }
                cnt[id] += wv[i].freq;
            }
        }
        if (rc < 0) {
            break;
        }
        int32_t best = -1, bl = 0, br = 0;
        for (int32_t id = 0; id < pk.size; id++) {
            int l, r;
            sscanf(nlp_vocab_word(&pk, id), "%d %d", &l, &r);
            if (best < 0 || cnt[id] > cnt[best] ||
                (cnt[id] == cnt[best] &&
                 pair_cmp(&b->sym, l, r, bl, br) < 0)) {
                best = id;
                bl = l;
                br = r;
            }
        }
        if (best < 0 || cnt[best] < 2) {
            break; /* no pair occurs twice */
        }
        rc = add_merge(b, bl, br, &mcap);
        if (rc < 0) {
            break;
        }
        int32_t m = b->merge[3 * (b->n_merges - 1) + 2];
        for (int32_t i = 0; i < words.size; i++) {
            int32_t o = 0;
            for (int32_t j = 0; j < wv[i].n;) {
                if (j + 1 < wv[i].n && wv[i].s[j] == bl &&
                    wv[i].s[j + 1] == br) {
                    wv[i].s[o++] = m;
                    j += 2;
                } else {
                    wv[i].s[o++] = wv[i].s[j++];
                }
            }
            wv[i].n = o;
        }
    }
    nlp_vocab_free(&pk);
    free(cnt);
    for (int32_t i = 0; wv && i < words.size; i++) {
        free(wv[i].s);
    }
    free(wv);
    free(freq);
    nlp_vocab_free(&words);
    if (rc < 0) {
        nlp_bpe_free(b);
    }
    return rc;
}

void nlp_bpe_free(struct nlp_bpe *b)
{
    nlp_vocab_free(&b->sym);
    nlp_vocab_free(&b->pairs);
    free(b->merge);
    memset(b, 0, sizeof *b);
}

int nlp_bpe_save(const struct nlp_bpe *b, const char *path, int force)
{
    struct gr_atomic_file af;
    int rc = gr_atomic_open(&af, path, force);
    if (rc < 0) {
        return rc;
    }
    fprintf(af.fp, "#version: grove-bpe 1\n");
    for (int32_t k = 0; k < b->n_merges; k++) {
        fprintf(af.fp, "%s %s\n", nlp_vocab_word(&b->sym, b->merge[3 * k]),
                nlp_vocab_word(&b->sym, b->merge[3 * k + 1]));
    }
    return gr_atomic_commit(&af);
}

int nlp_bpe_load(struct nlp_bpe *b, const char *path)
{
    memset(b, 0, sizeof *b);
    nlp_vocab_init(&b->sym);
    nlp_vocab_init(&b->pairs);
    char *buf = NULL;
    size_t size = 0;
    int rc = gr_read_file(path, (size_t)1 << 28, &buf, &size);
    if (rc < 0) {
        return rc;
    }
    const char *head = "#version: grove-bpe 1\n";
    if (strncmp(buf, head, strlen(head)) != 0) {
        free(buf);
        return gr_error(GR_EFORMAT, "%s: line 1: not a grove BPE codes file "
                        "(want '#version: grove-bpe 1')", path);
    }
    int32_t mcap = 0;
    char *p = buf + strlen(head);
    for (int line = 2; *p && rc == 0; line++) {
        char *nl = strchr(p, '\n');
        if (nl) {
            *nl = '\0';
        }
        char *sp = strchr(p, ' ');
        if (sp == NULL || sp == p || sp[1] == '\0' || strchr(sp + 1, ' ')) {
            rc = gr_error(GR_EFORMAT, "%s: line %d: want 'left right' (two "
                          "symbols, one space): '%s'", path, line, p);
            break;
        }
        int32_t l, r;
        if (nlp_vocab_add(&b->sym, p, (size_t)(sp - p), &l) < 0 ||
            nlp_vocab_add(&b->sym, sp + 1, strlen(sp + 1), &r) < 0) {
            rc = GR_ENOMEM;
            break;
        }
        rc = add_merge(b, l, r, &mcap);
        if (rc < 0) {
            rc = gr_error(rc, "%s: line %d: %s", path, line, gr_last_error());
        }
        p = nl ? nl + 1 : p + strlen(p);
    }
    free(buf);
    if (rc < 0) {
        nlp_bpe_free(b);
    }
    return rc;
}

/* Appends s[0, n) to out at *o; -1 when it does not fit. */
static int put(char *out, size_t cap, size_t *o, const char *s, size_t n)
{
    if (*o + n + 1 > cap) {
        return -1;
    }
    memcpy(out + *o, s, n);
    *o += n;
    out[*o] = '\0';
    return 0;
}

int nlp_bpe_encode_line(const struct nlp_bpe *b, const char *line, char *out,
                        size_t cap)
{
    size_t o = 0;
    if (cap > 0) {
        out[0] = '\0';
    }
    size_t n = strlen(line);
    int32_t *id = malloc((n + 1) * sizeof *id);
    size_t *st = malloc((n + 2) * sizeof *st); /* span starts, + end */
    if (id == NULL || st == NULL) {
        free(id);
        free(st);
        return gr_error(GR_ENOMEM, "bpe: out of memory");
    }
    int rc = 0, first_word = 1;
    const char *p = line;
    char key[32];
    while (*p && rc == 0) {
        while (*p && is_space(*p)) {
            p++;
        }
        const char *w = p;
        while (*p && !is_space(*p)) {
            p++;
        }
        size_t len = (size_t)(p - w);
        if (len == 0) {
            continue;
        }
        int32_t k = 0;
        /* spans of the characters and their symbol ids */
        for (size_t i = 0; i < len;) {
            size_t cl = char_len(w + i, len - i);
            char buf[16];
            memcpy(buf, w + i, cl);
            size_t bl = cl;
            if (i + cl == len) {
                memcpy(buf + cl, EOW, 4);
                bl += 4;
            }
            id[k] = nlp_vocab_find(&b->sym, buf, bl);
            st[k++] = i;
            i += cl;
        }
        st[k] = len;
        for (;;) {
            int32_t best_rank = -1, at = -1;
            for (int32_t j = 0; j + 1 < k; j++) {
                if (id[j] < 0 || id[j + 1] < 0) {
                    continue;
                }
                int kl = pair_key(id[j], id[j + 1], key);
                int32_t rank = nlp_vocab_find(&b->pairs, key, (size_t)kl);
                if (rank >= 0 && (best_rank < 0 || rank < best_rank)) {
                    best_rank = rank;
                    at = j;
                }
            }
            if (at < 0) {
                break;
            }
            id[at] = b->merge[3 * best_rank + 2];
            for (int32_t j = at + 1; j + 1 < k; j++) {
                id[j] = id[j + 1];
                st[j] = st[j + 1];
            }
            k--;
            st[k] = len;
        }
        if (!first_word && put(out, cap, &o, " ", 1) < 0) {
            rc = -1;
            break;
        }
        first_word = 0;
        for (int32_t j = 0; j < k && rc == 0; j++) {
            if (put(out, cap, &o, w + st[j], st[j + 1] - st[j]) < 0 ||
                (j + 1 < k && put(out, cap, &o, "@@ ", 3) < 0)) {
                rc = -1;
            }
        }
    }
    free(id);
    free(st);
    return rc < 0 ? gr_error(GR_EINVAL, "bpe: the encoded line does not fit "
                             "%zu bytes", cap)
                  : 0;
}

int nlp_bpe_decode_line(const char *line, char *out, size_t cap)
{
    size_t o = 0, n = strlen(line);
    if (cap > 0) {
        out[0] = '\0';
    }
    for (size_t i = 0; i < n;) {
        if (i + 3 <= n && memcmp(line + i, "@@ ", 3) == 0) {
            i += 3;
        } else if (i + 2 == n && memcmp(line + i, "@@", 2) == 0) {
            i += 2;
        } else {
            if (put(out, cap, &o, line + i, 1) < 0) {
                return gr_error(GR_EINVAL, "bpe: the decoded line does not "
                                "fit %zu bytes", cap);
            }
            i++;
        }
    }
    return 0;
}
