/* Targeted syntactic evaluation: see nlp/tasks/syneval.h. */
#include "nlp/tasks/syneval.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/progress.h"
#include "core/files.h"

#define SYNEVAL_MAX_BYTES ((size_t)1 << 31)

/* Thesis Table 3.3, in its order. NaN-free entries only where published. */
struct case_info {
    const char *key, *title;
    double onlstm[3], lstm[3];
};

static const struct case_info known_cases[] = {
    {"simple_agrmt", "SVA simple", {0.99}, {1.00}},
    {"sent_comp", "SVA in a sentential complement", {0.95}, {0.98}},
    {"vp_coord", "SVA short VP coordination", {0.89}, {0.92}},
    {"obj_rel_within", "SVA in an object relative clause", {0.84}, {0.88}},
    {"obj_rel_no_comp_within", "SVA in an object relative (no that)",
     {0.78}, {0.81}},
    {"simple_reflexives", "reflexive simple", {0.89}, {0.82}},
    {"reflexive_sent_comp", "reflexive in a sentential complement", {0.86},
     {0.80}},
    {"simple_npi", "NPI simple", {0.18, 0.50, 0.07}, {1.00, 0.01, 0.63}},
    {"long_vp_coord", "SVA long VP coordination", {0.74}, {0.74}},
    {"prep", "SVA across a prepositional phrase", {0.67}, {0.68}},
    {"subj_rel", "SVA across a subject relative clause", {0.66}, {0.60}},
    {"obj_rel_across", "SVA across an object relative clause", {0.57},
     {0.52}},
    {"obj_rel_no_comp_across", "SVA across an object relative (no that)",
     {0.54}, {0.51}},
    {"reflexives_across", "reflexive across a relative clause", {0.57},
     {0.58}},
    {"npi_across", "NPI across a relative clause", {0.59, 0.20, 0.11},
     {0.95, 0.00, 0.04}},
};
#define N_KNOWN (int32_t)(sizeof known_cases / sizeof known_cases[0])

void nlp_syneval_free(struct nlp_syneval *s)
{
    nlp_vocab_free(&s->tasks);
    nlp_vocab_free(&s->conditions);
    nlp_vocab_free(&s->sentences);
    free(s->items);
    memset(s, 0, sizeof *s);
}

/* Splits line[0, n) at tabs into at most `cap` fields. Returns the count
 * (cap + 1 when there are more). */
static int split_tabs(const char *line, size_t n, const char **f, size_t *len,
                      int cap)
{
    int k = 0;
    size_t a = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || line[i] == '\t') {
            if (k == cap) {
                return cap + 1;
            }
            f[k] = line + a;
            len[k] = i - a;
            k++;
            a = i + 1;
        }
    }
    return k;
}

int nlp_syneval_parse(struct nlp_syneval *s, const char *text, size_t n,
                      const char *name)
{
    memset(s, 0, sizeof *s);
    snprintf(s->source, sizeof s->source, "%s", name);
    nlp_vocab_init(&s->tasks);
    nlp_vocab_init(&s->conditions);
    nlp_vocab_init(&s->sentences);
    size_t cap = 0, pos = 0;
    int64_t line_no = 0;
    int rc = 0;
    while (rc == 0 && pos < n) {
        size_t end = pos;
        while (end < n && text[end] != '\n') {
            end++;
        }
        size_t len = end - pos;
        if (len > 0 && text[pos + len - 1] == '\r') {
            len--;
        }
        const char *line = text + pos;
        pos = end < n ? end + 1 : end;
        line_no++;
        const char *f[5];
        size_t fl[5];
        int nf = split_tabs(line, len, f, fl, 5);
        if (line_no == 1) {
            static const char *const want[5] = {
                "task", "condition", "grammatical", "ungrammatical",
                "ungrammatical2"};
            int ok = nf >= 4;
            for (int k = 0; ok && k < nf && k < 5; k++) {
                ok = fl[k] == strlen(want[k]) && memcmp(f[k], want[k], fl[k]) == 0;
            }
            if (!ok) {
                rc = gr_error(GR_EFORMAT, "%s:1: header is not \"task, "
                              "condition, grammatical, ungrammatical, "
                              "ungrammatical2\" (tab-separated)", name);
            }
            continue;
        }
        if (len == 0 && pos >= n) {
            break; /* a final empty line */
        }
        if (nf < 4 || nf > 5) {
            rc = gr_error(GR_EFORMAT, "%s:%lld: %d tab-separated fields, "
                          "expected 4 or 5", name, (long long)line_no, nf);
            break;
        }
        for (int k = 0; k < 4; k++) {
            if (fl[k] == 0) {
                rc = gr_error(GR_EFORMAT, "%s:%lld: field %d is empty", name,
                              (long long)line_no, k + 1);
            }
        }
        if (rc < 0) {
            break;
        }
        if ((size_t)s->n_items == cap) {
            size_t nc = cap ? cap * 2 : 4096;
            struct nlp_syneval_item *it = realloc(s->items, nc * sizeof *it);
            if (it == NULL) {
                rc = gr_error(GR_ENOMEM, "%s: out of memory", name);
                break;
            }
            s->items = it;
            cap = nc;
        }
        struct nlp_syneval_item *it = &s->items[s->n_items];
        it->line = line_no;
        it->n = (nf == 5 && fl[4] > 0) ? 3 : 2;
        rc = nlp_vocab_add(&s->tasks, f[0], fl[0], &it->task);
        if (rc == 0) {
            rc = nlp_vocab_add(&s->conditions, f[1], fl[1], &it->condition);
        }
        for (int k = 0; rc == 0 && k < it->n; k++) {
            rc = nlp_vocab_add(&s->sentences, f[2 + k], fl[2 + k],
                               &it->sent[k]);
        }
        if (it->n == 2) {
            it->sent[2] = -1;
        }
        if (rc == 0) {
            s->n_items++;
        }
    }
    if (rc == 0 && line_no == 0) {
        rc = gr_error(GR_EFORMAT, "%s: empty file (no header)", name);
    }
    if (rc < 0) {
        nlp_syneval_free(s);
    }
    return rc;
}

int nlp_syneval_read(struct nlp_syneval *s, const char *path)
{
    char *text = NULL;
    size_t n = 0;
    memset(s, 0, sizeof *s);
    int rc = gr_read_file(path, SYNEVAL_MAX_BYTES, &text, &n);
    if (rc < 0) {
        return rc;
    }
    rc = nlp_syneval_parse(s, text, n, path);
    free(text);
    return rc;
}

void nlp_syneval_results_free(struct nlp_syneval_results *res)
{
    free(res->cases);
    nlp_vocab_free(&res->oov);
    nlp_vocab_free(&res->names);
    memset(res, 0, sizeof *res);
}

double nlp_syneval_accuracy(const struct nlp_syneval_case *c, int k)
{
    int64_t n = c->items - c->skipped;
    return n > 0 ? (double)c->correct[k] / (double)n : NAN;
}

/* Pooled key of a task: the name without a trailing _anim / _inanim. */
static size_t pooled_len(const char *task)
{
    size_t n = strlen(task);
    if (n > 5 && strcmp(task + n - 5, "_anim") == 0) {
        return n - 5;
    }
    if (n > 7 && strcmp(task + n - 7, "_inanim") == 0) {
        return n - 7;
    }
    return n;
}

static int is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r' ||
           c == '\n';
}

void nlp_syneval_limit(struct nlp_syneval *s, int64_t n)
{
    if (n <= 0 || n >= s->n_items) {
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        s->items[i] = s->items[(int64_t)((double)i * (double)s->n_items /
                                         (double)n)];
    }
    s->n_items = n;
}

int nlp_syneval_run(const struct nlp_syneval *s, const struct nlp_vocab *v,
                    int32_t eos, int32_t unk, nlp_syneval_score_fn score,
                    void *ctx, int32_t batch,
                    struct nlp_syneval_results *res)
{
    return nlp_syneval_run_progress(s, v, eos, unk, score, ctx, batch, NULL,
                                    res);
}

int nlp_syneval_run_progress(const struct nlp_syneval *s,
                             const struct nlp_vocab *v, int32_t eos,
                             int32_t unk, nlp_syneval_score_fn score,
                             void *ctx, int32_t batch,
                             struct gr_progress *progress,
                             struct nlp_syneval_results *res)
{
    memset(res, 0, sizeof *res);
    nlp_vocab_init(&res->oov);
    nlp_vocab_init(&res->names);
    if (batch < 1) {
        nlp_syneval_results_free(res);
        return gr_error(GR_EINVAL, "syneval: batch %d (must be >= 1)", batch);
    }
    int rc = 0;
    int32_t n_sent = s->sentences.size;
    int32_t *seq_of = malloc(((size_t)n_sent + 1) * sizeof *seq_of);
    struct nlp_vocab seqs; /* distinct id sequences, as bytes */
    nlp_vocab_init(&seqs);
    int32_t *ids = NULL;
    size_t ids_cap = 0;
    double *scores = NULL;
    uint8_t *needed = NULL;
    int32_t *task_case = NULL;
    if (seq_of == NULL) {
        nlp_syneval_results_free(res);
        return gr_error(GR_ENOMEM, "syneval: out of memory");
    }
    int32_t dot = nlp_vocab_find(v, ".", 1);
    res->dot_is_unk = dot < 0;
    if (dot < 0) {
        dot = unk;
    }

    /* 1. Map each distinct sentence to ids; intern the sequences. */
    for (int32_t i = 0; i < n_sent && rc == 0; i++) {
        const char *text = nlp_vocab_word(&s->sentences, i);
        size_t n = 0, p = 0, len = strlen(text);
        for (;;) {
            while (p < len && is_ws(text[p])) {
                p++;
            }
            if (p == len) {
                break;
            }
            size_t a = p;
            while (p < len && !is_ws(text[p])) {
                p++;
            }
            if (n + 3 > ids_cap) {
                size_t c = ids_cap ? ids_cap * 2 : 64;
                int32_t *g = realloc(ids, c * sizeof *g);
                if (g == NULL) {
                    rc = gr_error(GR_ENOMEM, "syneval: out of memory");
                    break;
                }
                ids = g;
                ids_cap = c;
            }
            int32_t id = nlp_vocab_find(v, text + a, p - a);
            if (id < 0) {
                rc = nlp_vocab_add(&res->oov, text + a, p - a, NULL);
                if (rc == 0 && unk < 0) {
                    rc = gr_error(GR_EINVAL, "syneval: '%.*s' is not in the "
                                  "vocabulary, which has no <unk>",
                                  (int)(p - a), text + a);
                }
                if (rc < 0) {
                    break;
                }
                id = unk;
            }
            ids[1 + n++] = id;
        }
        if (rc < 0) {
            break;
        }
        if (ids_cap < n + 2) {
            int32_t *g = realloc(ids, (n + 2) * sizeof *g);
            if (g == NULL) {
                rc = gr_error(GR_ENOMEM, "syneval: out of memory");
                break;
            }
            ids = g;
            ids_cap = n + 2;
        }
        if (dot < 0) {
            rc = gr_error(GR_EINVAL, "syneval: '.' is not in the vocabulary, "
                          "which has no <unk>");
            break;
        }
        ids[0] = eos;
        ids[n + 1] = dot;
        rc = nlp_vocab_add(&seqs, (const char *)ids,
                           (n + 2) * sizeof *ids, &seq_of[i]);
    }

    /* 2. Cases and collapsed items; which sequences need a score. */
    int32_t n_tasks = s->tasks.size;
    if (rc == 0) {
        res->cases = calloc((size_t)N_KNOWN + (size_t)n_tasks,
                            sizeof *res->cases);
        task_case = malloc(((size_t)n_tasks + 1) * sizeof *task_case);
        scores = malloc(((size_t)seqs.size + 1) * sizeof *scores);
        needed = calloc((size_t)seqs.size + 1, 1);
        if (res->cases == NULL || task_case == NULL || scores == NULL ||
            needed == NULL) {
            rc = gr_error(GR_ENOMEM, "syneval: out of memory");
        }
    }
    if (rc == 0) {
        for (int32_t c = 0; c < N_KNOWN; c++) {
            struct nlp_syneval_case *cs = &res->cases[c];
            cs->key = known_cases[c].key;
            cs->title = known_cases[c].title;
            for (int k = 0; k < 3; k++) {
                cs->published_onlstm[k] = NAN;
                cs->published_lstm[k] = NAN;
            }
            int triple = strstr(cs->key, "npi") != NULL;
            for (int k = 0; k < (triple ? 3 : 1); k++) {
                cs->published_onlstm[k] = known_cases[c].onlstm[k];
                cs->published_lstm[k] = known_cases[c].lstm[k];
            }
        }
        res->n_cases = N_KNOWN;
        for (int32_t t = 0; t < n_tasks && rc == 0; t++) {
            const char *name = nlp_vocab_word(&s->tasks, t);
            size_t pl = pooled_len(name);
            int32_t found = -1;
            for (int32_t c = 0; c < res->n_cases && found < 0; c++) {
                if (strlen(res->cases[c].key) == pl &&
                    strncmp(res->cases[c].key, name, pl) == 0) {
                    found = c;
                }
            }
            if (found < 0) {
                /* Not in the thesis table: its own case, named as is. */
                int32_t id;
                rc = nlp_vocab_add(&res->names, name, pl, &id);
                if (rc < 0) {
                    break;
                }
                found = res->n_cases++;
                struct nlp_syneval_case *cs = &res->cases[found];
                cs->key = nlp_vocab_word(&res->names, id);
                cs->title = cs->key;
                for (int k = 0; k < 3; k++) {
                    cs->published_onlstm[k] = NAN;
                    cs->published_lstm[k] = NAN;
                }
            }
            task_case[t] = found;
        }
    }
    for (int64_t i = 0; rc == 0 && i < s->n_items; i++) {
        const struct nlp_syneval_item *it = &s->items[i];
        struct nlp_syneval_case *cs = &res->cases[task_case[it->task]];
        int triple = it->n == 3;
        if (cs->items > 0 && cs->is_triple != triple) {
            rc = gr_error(GR_EFORMAT, "%s:%lld: case '%s' mixes minimal pairs "
                          "and triples", s->source, (long long)it->line,
                          cs->key);
            break;
        }
        cs->is_triple = triple;
        cs->items++;
        res->n_items++;
        int32_t q[3] = {-1, -1, -1};
        for (int k = 0; k < it->n; k++) {
            q[k] = seq_of[it->sent[k]];
        }
        int collapsed = q[0] == q[1] ||
                        (triple && (q[0] == q[2] || q[1] == q[2]));
        if (collapsed) {
            cs->skipped++;
            res->n_skipped++;
            continue;
        }
        for (int k = 0; k < it->n; k++) {
            needed[q[k]] = 1;
        }
    }

    /* 3. Score the needed sequences in batches. */
    if (rc == 0 && progress != NULL) {
        uint64_t total = 0;
        for (int32_t q = 0; q < seqs.size; q++) {
            total += needed[q];
        }
        progress->total = total;
    }
    if (rc == 0) {
        const int32_t **bids = malloc((size_t)batch * sizeof *bids);
        int32_t *blens = malloc((size_t)batch * sizeof *blens);
        int32_t *bseq = malloc((size_t)batch * sizeof *bseq);
        double *bout = malloc((size_t)batch * sizeof *bout);
        if (bids == NULL || blens == NULL || bseq == NULL || bout == NULL) {
            rc = gr_error(GR_ENOMEM, "syneval: out of memory");
        }
        int32_t k = 0;
        for (int32_t q = 0; rc == 0 && q <= seqs.size; q++) {
            if (q < seqs.size && needed[q]) {
                bids[k] = (const int32_t *)(const void *)nlp_vocab_word(&seqs, q);
                blens[k] = (int32_t)(seqs.lens[q] / sizeof(int32_t));
                bseq[k] = q;
                k++;
            }
            if (k == batch || (q == seqs.size && k > 0)) {
                rc = score(ctx, k, bids, blens, bout);
                if (rc < 0) {
                    rc = gr_error_wrap(rc, "syneval: the language model "
                                       "failed to score %d sentences", k);
                    break;
                }
                for (int32_t j = 0; j < k; j++) {
                    scores[bseq[j]] = bout[j];
                }
                res->n_scored += k;
                k = 0;
            }
        }
        free(bids);
        free(blens);
        free(bseq);
        free(bout);
    }

    /* 4. Tally: strict comparisons, a tie is wrong. */
    for (int64_t i = 0; rc == 0 && i < s->n_items; i++) {
        const struct nlp_syneval_item *it = &s->items[i];
        struct nlp_syneval_case *cs = &res->cases[task_case[it->task]];
        int32_t q0 = seq_of[it->sent[0]], q1 = seq_of[it->sent[1]];
        if (it->n == 2) {
            if (q0 != q1) {
                cs->correct[0] += scores[q0] > scores[q1];
            }
            continue;
        }
        int32_t q2 = seq_of[it->sent[2]];
        if (q0 == q1 || q0 == q2 || q1 == q2) {
            continue;
        }
        cs->correct[0] += scores[q0] > scores[q1]; /* G > I */
        cs->correct[1] += scores[q1] > scores[q2]; /* I > U */
        cs->correct[2] += scores[q0] > scores[q2]; /* G > U */
    }

    /* Drop thesis cases the file does not have. */
    if (rc == 0) {
        int32_t kept = 0;
        for (int32_t c = 0; c < res->n_cases; c++) {
            if (res->cases[c].items > 0) {
                res->cases[kept++] = res->cases[c];
            }
        }
        res->n_cases = kept;
    }
    free(seq_of);
    free(ids);
    free(scores);
    free(needed);
    free(task_case);
    nlp_vocab_free(&seqs);
    if (rc < 0) {
        nlp_syneval_results_free(res);
    }
    return rc;
}
