/* Task loaders of the classifier harness: see nlp/tasks/classify_tasks.h. */
#define _POSIX_C_SOURCE 200809L
#include "nlp/tasks/classify_tasks.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/files.h"
#include "nlp/data/listops.h"
#include "nlp/data/snli.h"
#include "nlp/data/sst_deps.h"
#include "nlp/data/vocab.h"
#include "nlp/models/treenets.h"

#define SST_MAX_FILE_BYTES ((size_t)1 << 31)

void nlp_cls_task_options_default(struct nlp_cls_task_options *o)
{
    memset(o, 0, sizeof *o);
    o->logic_split = NLP_LOGIC_SPLIT_FULL;
    o->max_train_ops = 6;
    o->listops_generate = NLP_CLS_LISTOPS_GENERATE;
    o->valid_n = 1000;
    o->max_train_tokens = 50;
    o->seed = 1111;
    o->sst_train_unit = NLP_SST_SENTENCES;
    o->only_split = -1;
}

/* 1 if the load keeps split s (o->only_split: an evaluation of one). */
static int wants(const struct nlp_cls_task_options *o, int s)
{
    return o->only_split < 0 || o->only_split == s;
}

int nlp_cls_task_known(const char *task)
{
    return strcmp(task, "logic") == 0 || strcmp(task, "listops") == 0 ||
           strcmp(task, "sst2") == 0 || strcmp(task, "sst5") == 0 ||
           strcmp(task, "snli") == 0;
}

/* "12,345" */
static const char *thousands(int64_t v, char *buf, size_t cap)
{
    char raw[32];
    snprintf(raw, sizeof raw, "%lld", (long long)(v < 0 ? -v : v));
    size_t n = strlen(raw), k = 0;
    if (v < 0 && k + 1 < cap) {
        buf[k++] = '-';
    }
    for (size_t i = 0; i < n && k + 2 < cap; i++) {
        if (i > 0 && (n - i) % 3 == 0) {
            buf[k++] = ',';
        }
        buf[k++] = raw[i];
    }
    buf[k] = '\0';
    return buf;
}

/* Writes (append 0) or appends to d->summary; a long path is cut there. */
__attribute__((format(printf, 3, 4))) static void
summary_add(struct nlp_cls_data *d, int append, const char *fmt, ...)
{
    size_t len = append ? strlen(d->summary) : 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->summary + len, sizeof d->summary - len, fmt, ap);
    va_end(ap);
}

/* ---- logic ------------------------------------------------------------ */

/* "k = LO-HI" (or "k = K"): the operator counts of split s's pairs. */
static const char *k_range(const struct nlp_cls_data *d, int s, char *buf,
                           size_t cap)
{
    const struct nlp_cls_split *sp = &d->split[s];
    int32_t lo = NLP_LOGIC_MAX_K, hi = 0;
    for (int64_t i = 0; i < sp->n; i++) {
        lo = sp->ex[i].group < lo ? sp->ex[i].group : lo;
        hi = sp->ex[i].group > hi ? sp->ex[i].group : hi;
    }
    if (sp->n == 0) {
        snprintf(buf, cap, "none");
    } else if (lo == hi) {
        snprintf(buf, cap, "k = %d", (int)lo);
    } else {
        snprintf(buf, cap, "k = %d-%d", (int)lo, (int)hi);
    }
    return buf;
}

/* The gold tree of one expression (the bracketing in the file; the
 * parentheses are no nodes), for the models given their trees. */
static int logic_tree(struct nlp_cls_data *d, int s, int second,
                      const uint8_t *tok, int32_t n)
{
    struct nlp_span spans[NLP_LOGIC_MAX_TOKENS];
    int32_t parent[2 * NLP_LOGIC_MAX_TOKENS], word[2 * NLP_LOGIC_MAX_TOKENS];
    struct nlp_logic_expr e;
    int rc = nlp_logic_parse(tok, n, &e, spans);
    if (rc < 0) {
        return rc;
    }
    int open = nlp_logic_token_id("(", 1), close = nlp_logic_token_id(")", 1);
    int32_t w = 0;
    for (int32_t j = 0; j < n; j++) {
        if (tok[j] != open && tok[j] != close) {
            word[w++] = tok[j];
        }
    }
    if (w != e.n_words || w < 1) {
        return gr_error(GR_EFORMAT, "logic: %d words, the parser found %d",
                        (int)w, (int)e.n_words);
    }
    rc = nlp_tree_from_spans(w, spans, w - 1, parent);
    for (int32_t j = w; j < 2 * w - 1; j++) {
        word[j] = -1;
    }
    return rc < 0 ? rc
                  : nlp_cls_add_tree(d, s, second, 2 * w - 1, parent, word,
                                     NULL);
}

static int logic_add(struct nlp_cls_data *d, int s,
                     const struct nlp_logic_set *set, int32_t i)
{
    const struct nlp_logic_pair *p = &set->pairs[i];
    int32_t a[NLP_LOGIC_MAX_TOKENS], b[NLP_LOGIC_MAX_TOKENS];
    for (int32_t j = 0; j < p->n_left; j++) {
        a[j] = set->tokens[p->left + j];
    }
    for (int32_t j = 0; j < p->n_right; j++) {
        b[j] = set->tokens[p->right + j];
    }
    int rc = nlp_cls_add(d, s, a, p->n_left, b, p->n_right, p->label, p->k);
    if (rc == 0) {
        d->split[s].ex[d->split[s].n - 1].line = p->line;
        rc = logic_tree(d, s, 0, set->tokens + p->left, p->n_left);
    }
    if (rc == 0) {
        rc = logic_tree(d, s, 1, set->tokens + p->right, p->n_right);
    }
    return rc;
}

static void logic_header(struct nlp_cls_data *d)
{
    snprintf(d->task, sizeof d->task, "logic");
    d->pair = 1;
    d->n_classes = NLP_LOGIC_N_RELATIONS;
    for (int r = 0; r < NLP_LOGIC_N_RELATIONS; r++) {
        d->class_names[r][0] = nlp_logic_relation_symbol(r);
        d->class_names[r][1] = '\0';
    }
    d->n_groups = NLP_LOGIC_N_K;
    d->vocab_size = NLP_LOGIC_VOCAB;
    d->pad_id = NLP_LOGIC_PAD;
}

/* Explicit files: the pool is --train minus the split's pairs, validation
 * --valid or every 10th kept pair, test --test (all its pairs for full;
 * those with the pattern for A/B/C). Any of them may be missing (an
 * evaluation needs only --test). */
static int logic_files(struct nlp_cls_data *d,
                       const struct nlp_cls_task_options *o)
{
    struct nlp_logic_set tr, va, te;
    nlp_logic_set_init(&tr);
    nlp_logic_set_init(&va);
    nlp_logic_set_init(&te);
    int rc = 0;
    /* an evaluation reads the training file only for the validation
     * pairs it holds */
    int read_train = o->train != NULL &&
                     (o->only_split < 0 ||
                      (o->only_split == NLP_CLS_VALID && o->valid == NULL));
    if (read_train) {
        rc = nlp_logic_read_file(&tr, o->train);
    }
    if (rc == 0 && o->valid != NULL && wants(o, NLP_CLS_VALID)) {
        rc = nlp_logic_read_file(&va, o->valid);
    }
    if (rc == 0 && o->test != NULL && wants(o, NLP_CLS_TEST)) {
        rc = nlp_logic_read_file(&te, o->test);
    }
    int32_t pool = 0, removed = 0;
    for (int32_t i = 0; rc == 0 && i < tr.n; i++) {
        if (nlp_logic_pair_matches(&tr, i, o->logic_split)) {
            removed++;
            continue;
        }
        pool++;
        int s = o->valid == NULL && pool % 10 == 0 ? NLP_CLS_VALID
                                                   : NLP_CLS_TRAIN;
        if (wants(o, s)) {
            rc = logic_add(d, s, &tr, i);
        }
    }
    for (int32_t i = 0; rc == 0 && i < va.n; i++) {
        rc = logic_add(d, NLP_CLS_VALID, &va, i);
    }
    int32_t n_test = 0;
    for (int32_t i = 0; rc == 0 && i < te.n; i++) {
        if (o->logic_split == NLP_LOGIC_SPLIT_FULL ||
            nlp_logic_pair_matches(&te, i, o->logic_split)) {
            rc = logic_add(d, NLP_CLS_TEST, &te, i);
            n_test++;
        }
    }
    char a[32], b[32], c[32], e[32], f[32], kv[32], kt[32];
    const char *split_name = nlp_logic_split_name(o->logic_split);
    if (rc == 0 && o->only_split == NLP_CLS_TEST) {
        summary_add(d, 0,
                    "logic: %s: test %s pairs (%s) of the file's %s (split "
                    "%s); no training data read; labels that differ from "
                    "the truth-table labeller: %d",
                    o->test != NULL ? o->test : "no --test",
                    thousands(n_test, f, sizeof f),
                    k_range(d, NLP_CLS_TEST, kt, sizeof kt),
                    thousands(te.n, a, sizeof a), split_name, te.n_differ);
    } else if (rc == 0 && o->only_split == NLP_CLS_VALID && o->valid) {
        summary_add(d, 0,
                    "logic: %s: validation %s pairs (%s); no training data "
                    "read; labels that differ from the truth-table "
                    "labeller: %d",
                    o->valid, thousands(va.n, e, sizeof e),
                    k_range(d, NLP_CLS_VALID, kv, sizeof kv), va.n_differ);
    } else if (rc == 0 && o->only_split == NLP_CLS_VALID) {
        summary_add(d, 0,
                    "logic: %s: validation %s pairs (%s), every 10th of the "
                    "%s that split %s keeps of the file's %s; test not "
                    "read; labels that differ from the truth-table "
                    "labeller: %d",
                    o->train != NULL ? o->train : "no --train",
                    thousands(d->split[NLP_CLS_VALID].n, e, sizeof e),
                    k_range(d, NLP_CLS_VALID, kv, sizeof kv),
                    thousands(pool, b, sizeof b), split_name,
                    thousands(tr.n, a, sizeof a), tr.n_differ);
    } else if (rc == 0) {
        summary_add(d, 0,
                 "logic: %s: %s pairs, split %s keeps %s; train %s / "
                 "validation %s (%s; %s); test %s pairs (%s) of %s; labels "
                 "that differ from the truth-table labeller: %d",
                 o->train != NULL ? o->train : "no --train",
                 thousands(tr.n, a, sizeof a),
                 split_name, thousands(pool, b, sizeof b),
                 thousands(d->split[NLP_CLS_TRAIN].n, c, sizeof c),
                 thousands(d->split[NLP_CLS_VALID].n, e, sizeof e),
                 o->valid != NULL ? o->valid : "every 10th kept pair",
                 k_range(d, NLP_CLS_VALID, kv, sizeof kv),
                 thousands(n_test, f, sizeof f),
                 k_range(d, NLP_CLS_TEST, kt, sizeof kt),
                 o->test != NULL ? o->test : "no --test",
                 tr.n_differ + va.n_differ + te.n_differ);
    }
    (void)removed;
    nlp_logic_set_free(&tr);
    nlp_logic_set_free(&va);
    nlp_logic_set_free(&te);
    return rc;
}

static int load_logic(struct nlp_cls_data *d,
                      const struct nlp_cls_task_options *o)
{
    logic_header(d);
    if (o->train != NULL || (o->data == NULL &&
                              (o->valid != NULL || o->test != NULL))) {
        return logic_files(d, o);
    }
    if (o->data == NULL) {
        return gr_error(GR_EINVAL, "logic: give the folder of train0-12 / "
                        "test0-12 (--data DIR), --train FILE or --test FILE");
    }
    struct nlp_logic_data ld;
    /* an evaluation of the tests reads no training file (-1) */
    int rc = nlp_logic_load(&ld, o->data, o->logic_split,
                            o->only_split == NLP_CLS_TEST ? -1
                                                          : o->max_train_ops);
    if (rc < 0) {
        return rc;
    }
    for (int32_t i = 0; rc == 0 && wants(o, NLP_CLS_TRAIN) && i < ld.n_train;
         i++) {
        rc = logic_add(d, NLP_CLS_TRAIN, &ld.train, ld.train_idx[i]);
    }
    for (int32_t i = 0; rc == 0 && wants(o, NLP_CLS_VALID) && i < ld.n_valid;
         i++) {
        rc = logic_add(d, NLP_CLS_VALID, &ld.train, ld.valid_idx[i]);
    }
    int32_t n_test = 0, n_long = 0;
    for (int k = 0; rc == 0 && k < NLP_LOGIC_N_K; k++) {
        for (int32_t i = 0; rc == 0 && wants(o, NLP_CLS_TEST) &&
                            i < ld.n_test[k];
             i++) {
            rc = logic_add(d, NLP_CLS_TEST, &ld.test, ld.test_idx[k][i]);
        }
        n_test += ld.n_test[k];
        n_long += k >= 7 ? ld.n_test[k] : 0;
    }
    char a[32], b[32], c[32], e[32], f[32], g[32], kt[32];
    if (rc == 0 && o->only_split == NLP_CLS_TEST) {
        summary_add(d, 0,
                    "logic: %s: test %s pairs%s (%s; %s with k = 7-12); no "
                    "training data read; labels that differ from the "
                    "truth-table labeller: %d",
                    o->data, thousands(n_test, f, sizeof f),
                    o->logic_split == NLP_LOGIC_SPLIT_FULL
                        ? " in test0-12"
                        : " with the split's pattern",
                    k_range(d, NLP_CLS_TEST, kt, sizeof kt),
                    thousands(n_long, g, sizeof g), ld.test.n_differ);
    } else if (rc == 0 && o->only_split == NLP_CLS_VALID) {
        summary_add(d, 0,
                    "logic: %s: validation %s pairs (%s), every 10th of the "
                    "%s that split %s keeps of train0-%d's %s; labels that "
                    "differ from the truth-table labeller: %d",
                    o->data, thousands(ld.n_valid, e, sizeof e),
                    k_range(d, NLP_CLS_VALID, kt, sizeof kt),
                    thousands(ld.n_pool, b, sizeof b),
                    nlp_logic_split_name(o->logic_split), o->max_train_ops,
                    thousands(ld.train.n, a, sizeof a), ld.train.n_differ);
    } else if (rc == 0) {
        summary_add(d, 0,
                 "logic: %s: train0-%d %s pairs; split %s keeps %s (before "
                 "the hold-out); train %s / validation %s (every 10th kept "
                 "pair); test %s pairs%s (%s; %s with k = 7-12); labels that "
                 "differ from the truth-table labeller: %d",
                 o->data, o->max_train_ops, thousands(ld.train.n, a, sizeof a),
                 nlp_logic_split_name(o->logic_split),
                 thousands(ld.n_pool, b, sizeof b),
                 thousands(ld.n_train, c, sizeof c),
                 thousands(ld.n_valid, e, sizeof e),
                 thousands(n_test, f, sizeof f),
                 o->logic_split == NLP_LOGIC_SPLIT_FULL
                     ? " in test0-12"
                     : " with the split's pattern",
                 k_range(d, NLP_CLS_TEST, kt, sizeof kt),
                 thousands(n_long, g, sizeof g),
                 ld.train.n_differ + ld.test.n_differ);
    }
    nlp_logic_data_free(&ld);
    return rc;
}

/* ---- ListOps ---------------------------------------------------------- */

static int listops_add(struct nlp_cls_data *d, int s,
                       const struct nlp_listops_set *set, int32_t i,
                       int32_t **buf, int32_t *cap)
{
    const struct nlp_listops_example *e = &set->examples[i];
    if (e->n_tokens > *cap) {
        int32_t *p = realloc(*buf, (size_t)e->n_tokens * sizeof *p);
        if (p == NULL) {
            return gr_error(GR_ENOMEM, "listops: out of memory");
        }
        *buf = p;
        *cap = e->n_tokens;
    }
    for (int32_t j = 0; j < e->n_tokens; j++) {
        (*buf)[j] = set->tokens[e->tokens + j];
    }
    int rc = nlp_cls_add(d, s, *buf, e->n_tokens, NULL, 0, e->answer, -1);
    if (rc < 0) {
        return rc;
    }
    /* the gold tree: the binary brackets of the reader (the n-ary list
     * nodes binarised), for the models given their trees */
    int32_t n = e->n_tokens, nn = 2 * n - 1;
    int32_t *tr = malloc((size_t)nn * 2 * sizeof *tr);
    if (tr == NULL) {
        return gr_error(GR_ENOMEM, "listops: out of memory");
    }
    d->split[s].ex[d->split[s].n - 1].line = e->line;
    rc = nlp_tree_from_spans(n, set->spans + e->spans, n - 1, tr);
    for (int32_t j = 0; j < nn; j++) {
        tr[nn + j] = j < n ? (*buf)[j] : -1;
    }
    if (rc == 0) {
        rc = nlp_cls_add_tree(d, s, 0, nn, tr, tr + nn, NULL);
    }
    free(tr);
    return rc;
}

/* DIR/name into out[cap] when DIR is given and the file exists: 1, else 0. */
static int optional_file(const char *dir, const char *name, char *out,
                         size_t cap)
{
    return dir != NULL && gr_path_join(out, cap, dir, name) == 0 &&
           gr_path_exists(out);
}

static int load_listops(struct nlp_cls_data *d,
                        const struct nlp_cls_task_options *o)
{
    snprintf(d->task, sizeof d->task, "listops");
    d->pair = 0;
    d->n_classes = 10;
    for (int c = 0; c < 10; c++) {
        snprintf(d->class_names[c], sizeof d->class_names[c], "%d", c);
    }
    d->bucket = 1;
    d->vocab_size = NLP_LISTOPS_VOCAB;
    d->pad_id = NLP_LISTOPS_PAD;
    if (o->valid_n < 0 || o->max_train_tokens < 1) {
        return gr_error(GR_EINVAL, "listops: bad hold-out size %d or length "
                        "bound %d", o->valid_n, o->max_train_tokens);
    }
    char train_path[GR_PATH_MAX], test_path[GR_PATH_MAX], src[GR_PATH_MAX + 64];
    struct nlp_listops_set tr, va, te;
    memset(&tr, 0, sizeof tr);
    memset(&va, 0, sizeof va);
    memset(&te, 0, sizeof te);
    int rc = 0;
    /* an evaluation reads (or generates) the training trees only for the
     * validation part held out of them */
    int need_train = o->only_split < 0 ||
                     (o->only_split == NLP_CLS_VALID && o->valid == NULL);
    if (!need_train) {
        snprintf(src, sizeof src, "not read");
    } else if (o->train != NULL ||
               optional_file(o->data, "train_d20s.tsv", train_path,
                             sizeof train_path)) {
        const char *p = o->train != NULL ? o->train : train_path;
        rc = nlp_listops_read_file(&tr, p);
        snprintf(src, sizeof src, "%s", p);
    } else {
        struct nlp_listops_gen_stats st;
        rc = nlp_listops_generate(&tr, o->listops_generate, o->seed,
                                  NLP_LISTOPS_MAX_DEPTH, &st);
        d->listops_generated = o->listops_generate;
        snprintf(src, sizeof src, "generated (seed %llu, docs/tasks.md)", (unsigned long long)o->seed);
    }
    if (rc < 0) {
        return rc;
    }
    int have_test = wants(o, NLP_CLS_TEST) &&
                    (o->test != NULL ||
                     optional_file(o->data, "test_d20s.tsv", test_path,
                                   sizeof test_path));
    if (o->only_split == NLP_CLS_TEST && !have_test) {
        return gr_error(GR_EINVAL, "listops: no test data to evaluate (give "
                        "--test FILE, or --data DIR holding test_d20s.tsv)");
    }
    if (have_test) {
        rc = nlp_listops_read_file(&te, o->test != NULL ? o->test : test_path);
    }
    if (rc == 0 && o->valid != NULL && wants(o, NLP_CLS_VALID)) {
        rc = nlp_listops_read_file(&va, o->valid);
    }
    int32_t *perm = NULL, *buf = NULL, cap = 0, dropped = 0, held = 0;
    if (rc == 0) {
        perm = malloc(((size_t)tr.n + 1) * sizeof *perm);
        if (perm == NULL) {
            rc = gr_error(GR_ENOMEM, "listops: out of memory");
        }
    }
    if (rc == 0) {
        nlp_listops_holdout(tr.n, o->seed, perm);
        held = o->valid != NULL ? 0 : (o->valid_n < tr.n ? o->valid_n : tr.n);
        /* file order within each part, so the split is easy to inspect */
        uint8_t *is_valid = calloc((size_t)tr.n + 1, 1);
        if (is_valid == NULL) {
            rc = gr_error(GR_ENOMEM, "listops: out of memory");
        }
        for (int32_t i = 0; rc == 0 && i < held; i++) {
            is_valid[perm[i]] = 1;
        }
        for (int32_t i = 0; rc == 0 && i < tr.n; i++) {
            if (is_valid[i]) {
                rc = listops_add(d, NLP_CLS_VALID, &tr, i, &buf, &cap);
            } else if (tr.examples[i].n_tokens > o->max_train_tokens) {
                dropped++;
            } else if (wants(o, NLP_CLS_TRAIN)) {
                rc = listops_add(d, NLP_CLS_TRAIN, &tr, i, &buf, &cap);
            }
        }
        free(is_valid);
    }
    /* generated trees: whether one of those left for training is short
     * enough depends on the seed (the CLI refuses a count that leaves
     * none at all) */
    if (rc == 0 && need_train && d->listops_generated > 0 &&
        wants(o, NLP_CLS_TRAIN) && d->split[NLP_CLS_TRAIN].n == 0) {
        rc = gr_error(GR_EINVAL, "listops: no training examples: the %d "
                      "generated trees left after the %d held out for "
                      "validation all have more than %d tokens (seed %llu); "
                      "generate more trees (--listops-n)",
                      (int)(tr.n - held), (int)held, o->max_train_tokens,
                      (unsigned long long)o->seed);
    }
    for (int32_t i = 0; rc == 0 && i < va.n; i++) {
        rc = listops_add(d, NLP_CLS_VALID, &va, i, &buf, &cap);
    }
    for (int32_t i = 0; rc == 0 && i < te.n; i++) {
        rc = listops_add(d, NLP_CLS_TEST, &te, i, &buf, &cap);
    }
    if (rc == 0 && o->only_split == NLP_CLS_TEST) {
        char f[32];
        summary_add(d, 0,
                    "listops: test %s: %s examples (all lengths, %d bare "
                    "digit%s); no training data read or generated",
                    o->test != NULL ? o->test : test_path,
                    thousands(te.n, f, sizeof f), te.n_bare,
                    te.n_bare == 1 ? "" : "s");
    } else if (rc == 0 && o->only_split == NLP_CLS_VALID && o->valid) {
        char e[32];
        summary_add(d, 0,
                    "listops: validation %s: %s examples; no training data "
                    "read or generated",
                    o->valid, thousands(va.n, e, sizeof e));
    } else if (rc == 0 && o->only_split == NLP_CLS_VALID) {
        char a[32], e[32];
        summary_add(d, 0,
                    "listops: validation held out of train %s (%s "
                    "examples, seed %llu): %s examples; test not read",
                    src, thousands(tr.n, a, sizeof a),
                    (unsigned long long)o->seed,
                    thousands(d->split[NLP_CLS_VALID].n, e, sizeof e));
    } else if (rc == 0) {
        char a[32], b[32], c[32], e[32], f[32];
        char valid_desc[GR_PATH_MAX + 64];
        if (o->valid != NULL) {
            snprintf(valid_desc, sizeof valid_desc, "%s", o->valid);
        } else {
            snprintf(valid_desc, sizeof valid_desc, "held out of train, "
                     "seed %llu", (unsigned long long)o->seed);
        }
        summary_add(d, 0,
                 "listops: train %s: %s examples; train %s (%s longer than "
                 "%d tokens dropped) / validation %s (%s); test %s",
                 src, thousands(tr.n, a, sizeof a),
                 thousands(d->split[NLP_CLS_TRAIN].n, b, sizeof b),
                 thousands(dropped, c, sizeof c), o->max_train_tokens,
                 thousands(d->split[NLP_CLS_VALID].n, e, sizeof e),
                 valid_desc,
                 have_test ? thousands(te.n, f, sizeof f) : "none");
        if (have_test) {
            summary_add(d, 1,
                     " examples of %s (all lengths, %d bare digit%s)",
                     o->test != NULL ? o->test : test_path, te.n_bare,
                     te.n_bare == 1 ? "" : "s");
        }
    }
    free(perm);
    free(buf);
    nlp_listops_free(&tr);
    nlp_listops_free(&va);
    nlp_listops_free(&te);
    return rc;
}

/* ---- SST ---------------------------------------------------------------- */

static int sst_read(struct nlp_sst *s, enum nlp_split split, const char *path)
{
    char *text = NULL;
    size_t size = 0;
    int rc = gr_read_file(path, SST_MAX_FILE_BYTES, &text, &size);
    if (rc == 0) {
        rc = nlp_sst_read_text(s, split, text, size, path);
    }
    free(text);
    return rc;
}

/* d's vocabulary text (one word per line in id order) from v; padding =
 * the next id. */
static int vocab_to_text(struct nlp_cls_data *d, const struct nlp_vocab *v,
                         const char *what)
{
    size_t bytes = 1;
    for (int32_t i = 0; i < v->size; i++) {
        bytes += strlen(nlp_vocab_word(v, i)) + 1;
    }
    if ((d->vocab_text = malloc(bytes)) == NULL) {
        return gr_error(GR_ENOMEM, "%s: out of memory", what);
    }
    size_t k = 0;
    for (int32_t i = 0; i < v->size; i++) {
        const char *w = nlp_vocab_word(v, i);
        size_t len = strlen(w);
        memcpy(d->vocab_text + k, w, len);
        k += len;
        d->vocab_text[k++] = '\n';
    }
    d->vocab_text[k] = '\0';
    d->vocab_size = v->size + 1;
    d->pad_id = v->size;
    return 0;
}

/* The subtree of t rooted at node k (pre-order: nodes k .. k + 2w - 2)
 * with the task's label on every node (-1 for SST-2's neutral ones), for
 * the models given their trees. */
static int sst_tree(struct nlp_cls_data *d, int s,
                    const struct nlp_sst_tree *t, int32_t k,
                    enum nlp_sst_task task)
{
    const struct nlp_sst_node *root = &t->nodes[k];
    int32_t n = 2 * (root->end - root->start) - 1;
    int32_t *a = malloc((size_t)n * 3 * sizeof *a);
    if (a == NULL) {
        return gr_error(GR_ENOMEM, "sst: out of memory");
    }
    int32_t *parent = a, *word = a + n, *label = a + 2 * n;
    parent[0] = -1;
    for (int32_t j = 0; j < n; j++) {
        const struct nlp_sst_node *nd = &t->nodes[k + j];
        word[j] = nd->left < 0 ? t->words[nd->start] : -1;
        label[j] = nlp_sst_label(task, nd->label);
        if (nd->left >= 0) {
            parent[nd->left - k] = j;
            parent[nd->right - k] = j;
        }
    }
    int rc = nlp_cls_add_tree(d, s, 0, n, parent, word, label);
    free(a);
    return rc;
}

/* The same subtree as a dependency tree (nlp/data/sst_deps.h): node j is
 * word j of the span and reads it; its parent is its head (-1: the root),
 * its label the task's label of its maximal projection. */
static int sst_dep_tree(struct nlp_cls_data *d, int s,
                        const struct nlp_sst_tree *t, int32_t k,
                        enum nlp_sst_task task, const struct nlp_vocab *v)
{
    const struct nlp_sst_node *root = &t->nodes[k];
    int32_t n = root->end - root->start;
    int32_t *a = malloc((size_t)n * 3 * sizeof *a);
    int8_t *lab = malloc((size_t)n);
    if (a == NULL || lab == NULL) {
        free(a);
        free(lab);
        return gr_error(GR_ENOMEM, "sst: out of memory");
    }
    int32_t *parent = a, *word = a + n, *label = a + 2 * n;
    int rc = nlp_sst_dependency(t, k, v, parent, lab);
    for (int32_t j = 0; rc == 0 && j < n; j++) {
        word[j] = t->words[root->start + j];
        label[j] = nlp_sst_label(task, lab[j]);
    }
    if (rc == 0) {
        rc = nlp_cls_add_tree(d, s, 0, n, parent, word, label);
    }
    free(a);
    free(lab);
    return rc;
}

static int load_sst(struct nlp_cls_data *d, enum nlp_sst_task task,
                    const struct nlp_cls_task_options *o)
{
    snprintf(d->task, sizeof d->task, "sst%d", (int)task);
    d->pair = 0;
    d->n_classes = (int)task;
    static const char *const names2[2] = {"neg", "pos"};
    static const char *const names5[5] = {"--", "-", "0", "+", "++"};
    for (int c = 0; c < d->n_classes; c++) {
        snprintf(d->class_names[c], sizeof d->class_names[c], "%s",
                 task == NLP_SST2 ? names2[c] : names5[c]);
    }
    static const char *const files[NLP_N_SPLITS] = {"train.txt", "dev.txt",
                                                    "test.txt"};
    const char *given[NLP_N_SPLITS] = {o->train, o->valid, o->test};
    struct nlp_sst s;
    nlp_sst_init(&s);
    int rc = 0;
    for (int sp = 0; sp < NLP_N_SPLITS && rc == 0; sp++) {
        char path[GR_PATH_MAX];
        if (!wants(o, sp)) {
            continue; /* an evaluation reads only the split it scores */
        }
        if (given[sp] != NULL) {
            snprintf(path, sizeof path, "%s", given[sp]);
        } else if (o->data == NULL) {
            rc = gr_error(GR_EINVAL, "sst: give the folder of train.txt, "
                          "dev.txt, test.txt (--data DIR) or the %s file",
                          nlp_split_name(sp));
            break;
        } else if ((rc = gr_path_join(path, sizeof path, o->data,
                                      files[sp])) < 0) {
            break;
        }
        rc = sst_read(&s, (enum nlp_split)sp, path);
        if (sp == NLP_TRAIN) {
            s.n_types_train = s.vocab.size;
        }
    }
    /* the vocabulary as text, one word per line; padding = the next id */
    if (rc == 0) {
        rc = vocab_to_text(d, &s.vocab, "sst");
    }
    int32_t counts[NLP_N_SPLITS] = {0}, neutral[NLP_N_SPLITS] = {0};
    for (int sp = 0; sp < NLP_N_SPLITS && rc == 0; sp++) {
        struct nlp_sst_item *it = NULL;
        if (!wants(o, sp)) {
            continue;
        }
        enum nlp_sst_unit unit =
            sp == NLP_TRAIN ? o->sst_train_unit : NLP_SST_SENTENCES;
        rc = nlp_sst_items(&s, (enum nlp_split)sp, task, unit, &it,
                           &counts[sp], &neutral[sp], NULL);
        for (int32_t i = 0; rc == 0 && i < counts[sp]; i++) {
            const struct nlp_sst_tree *t = &s.trees[sp][it[i].tree];
            const struct nlp_sst_node *nd = &t->nodes[it[i].node];
            rc = nlp_cls_add(d, sp, t->words + nd->start, nd->end - nd->start,
                             NULL, 0, it[i].label, -1);
            if (rc == 0) {
                d->split[sp].ex[d->split[sp].n - 1].line = t->line;
                rc = o->sst_dependency
                         ? sst_dep_tree(d, sp, t, it[i].node, task, &s.vocab)
                         : sst_tree(d, sp, t, it[i].node, task);
            }
        }
        free(it);
    }
    if (rc == 0 && o->only_split >= 0) {
        char a[32], e[32];
        summary_add(d, 0, "sst%d: %s: %s %s sentences%s; vocabulary %s "
                    "words (that split's, mapped onto the checkpoint's)",
                    (int)task,
                    given[o->only_split] != NULL ? given[o->only_split]
                                                 : o->data,
                    nlp_split_name((enum nlp_split)o->only_split),
                    thousands(counts[o->only_split], a, sizeof a),
                    task == NLP_SST2 ? " (neutral ones dropped)" : "",
                    thousands(s.vocab.size, e, sizeof e));
        d->dep_trees = o->sst_dependency != 0;
    } else if (rc == 0) {
        static const char *const unit_names[3] = {
            "sentences", "nodes (every labelled node, duplicates kept)",
            "distinct phrases"};
        char a[32], b[32], c[32], e[32], f[32];
        summary_add(d, 0,
                 "sst%d: %s: train %s %s / dev %s / test %s sentences%s; "
                 "vocabulary %s words (%s in train)%s",
                 (int)task, o->data != NULL ? o->data : "(files)",
                 thousands(counts[0], a, sizeof a),
                 unit_names[o->sst_train_unit], thousands(counts[1], b, sizeof b),
                 thousands(counts[2], c, sizeof c),
                 task == NLP_SST2 ? " (neutral ones dropped)" : "",
                 thousands(s.vocab.size, e, sizeof e),
                 thousands(s.n_types_train, f, sizeof f),
                 o->sst_dependency ? "; dependency trees by grove's "
                                     "right-head rule (docs/nlp/trees.md)"
                                   : "");
        d->dep_trees = o->sst_dependency != 0;
        d->sst_train_unit = (int)o->sst_train_unit;
    }
    nlp_sst_free(&s);
    return rc;
}

/* SNLI (fasttrees.md §6.4): pairs, 3 classes, one vocabulary of every
 * split's words (lower-cased; padding = the last id), "-" pairs skipped
 * and counted. DIR/snli_1.0_{train,dev,test}.jsonl or the three files. */
static int load_snli(struct nlp_cls_data *d,
                     const struct nlp_cls_task_options *o)
{
    snprintf(d->task, sizeof d->task, "snli");
    d->pair = 1;
    d->n_classes = NLP_SNLI_CLASSES;
    static const char *const names[NLP_SNLI_CLASSES] = {"entail", "neutral",
                                                        "contra"};
    for (int c = 0; c < d->n_classes; c++) {
        snprintf(d->class_names[c], sizeof d->class_names[c], "%s",
                 names[c]);
    }
    static const char *const files[NLP_N_SPLITS] = {
        "snli_1.0_train.jsonl", "snli_1.0_dev.jsonl", "snli_1.0_test.jsonl"};
    const char *given[NLP_N_SPLITS] = {o->train, o->valid, o->test};
    struct nlp_snli s;
    nlp_snli_init(&s);
    int rc = 0;
    for (int sp = 0; sp < NLP_N_SPLITS && rc == 0; sp++) {
        char path[GR_PATH_MAX];
        if (!wants(o, sp)) {
            continue; /* an evaluation reads only the split it scores */
        }
        if (given[sp] != NULL) {
            snprintf(path, sizeof path, "%s", given[sp]);
        } else if (o->data == NULL) {
            rc = gr_error(GR_EINVAL, "snli: give the folder of %s, %s, %s "
                          "(--data DIR) or the %s file", files[0], files[1],
                          files[2], nlp_split_name(sp));
            break;
        } else if ((rc = gr_path_join(path, sizeof path, o->data,
                                      files[sp])) < 0) {
            break;
        }
        rc = nlp_snli_read_file(&s, (enum nlp_split)sp, path);
    }
    if (rc == 0) {
        rc = vocab_to_text(d, &s.vocab, "snli");
    }
    for (int sp = 0; sp < NLP_N_SPLITS && rc == 0; sp++) {
        for (int64_t i = 0; rc == 0 && i < s.n_pairs[sp]; i++) {
            const struct nlp_snli_pair *p = &s.pairs[sp][i];
            rc = nlp_cls_add(d, sp, s.tokens + p->a, p->len_a,
                             s.tokens + p->b, p->len_b, p->label, -1);
        }
    }
    if (rc == 0 && o->only_split >= 0) {
        char a[32], e[32];
        int sp = o->only_split;
        summary_add(d, 0, "snli: %s: %s %s pairs (%lld without a gold label "
                    "skipped); vocabulary %s words (that split's, mapped "
                    "onto the checkpoint's)",
                    given[sp] != NULL ? given[sp] : o->data,
                    nlp_split_name((enum nlp_split)sp), thousands(s.n_pairs[sp], a, sizeof a),
                    (long long)s.n_skipped[sp],
                    thousands(s.vocab.size, e, sizeof e));
    } else if (rc == 0) {
        char a[32], b[32], c[32], e[32];
        summary_add(d, 0,
                    "snli: %s: train %s / dev %s / test %s pairs (%lld "
                    "without a gold label skipped); vocabulary %s words",
                    o->data != NULL ? o->data : "(files)",
                    thousands(s.n_pairs[0], a, sizeof a),
                    thousands(s.n_pairs[1], b, sizeof b),
                    thousands(s.n_pairs[2], c, sizeof c),
                    (long long)(s.n_skipped[0] + s.n_skipped[1] +
                                s.n_skipped[2]),
                    thousands(s.vocab.size, e, sizeof e));
    }
    nlp_snli_free(&s);
    return rc;
}

int nlp_cls_load_task(struct nlp_cls_data *d, const char *task,
                      const struct nlp_cls_task_options *o)
{
    nlp_cls_data_init(d);
    int rc;
    if (strcmp(task, "logic") == 0) {
        rc = load_logic(d, o);
    } else if (strcmp(task, "listops") == 0) {
        rc = load_listops(d, o);
    } else if (strcmp(task, "sst2") == 0) {
        rc = load_sst(d, NLP_SST2, o);
    } else if (strcmp(task, "sst5") == 0) {
        rc = load_sst(d, NLP_SST5, o);
    } else if (strcmp(task, "snli") == 0) {
        rc = load_snli(d, o);
    } else {
        rc = gr_error(GR_EINVAL, "unknown task '%s' (expected logic, listops, "
                      "sst2, sst5 or snli)", task);
    }
    if (rc < 0) {
        nlp_cls_data_free(d);
    }
    return rc;
}

int nlp_cls_use_vocab(struct nlp_cls_data *d, const char *vocab_text,
                      int32_t *n_unknown)
{
    if (n_unknown != NULL) {
        *n_unknown = 0;
    }
    if (d->vocab_text == NULL || vocab_text == NULL) {
        return gr_error(GR_EINVAL, "%s: no word vocabulary to map onto the "
                        "checkpoint's", d->task);
    }
    struct nlp_vocab v;
    nlp_vocab_init(&v);
    int rc = 0;
    for (const char *p = vocab_text; rc == 0 && *p != '\0';) {
        size_t n = strcspn(p, "\n");
        rc = nlp_vocab_add(&v, p, n, NULL);
        p += n + (p[n] == '\n');
    }
    int32_t ck_pad = v.size;
    int32_t unk = nlp_vocab_find(&v, "<unk>", 5);
    if (unk < 0) {
        unk = ck_pad;
    }
    /* map[old id] = the checkpoint's id; the old padding id -> its padding */
    int32_t *map = NULL;
    if (rc == 0 && (map = malloc(((size_t)d->vocab_size + 1) *
                                 sizeof *map)) == NULL) {
        rc = gr_error(GR_ENOMEM, "%s: out of memory", d->task);
    }
    int32_t old = 0, unknown = 0;
    for (const char *p = d->vocab_text; rc == 0 && *p != '\0' &&
                                        old < d->vocab_size;
         old++) {
        size_t n = strcspn(p, "\n");
        int32_t id = nlp_vocab_find(&v, p, n);
        if (id < 0) {
            id = unk;
            unknown++;
        }
        map[old] = id;
        p += n + (p[n] == '\n');
    }
    for (int32_t i = old; rc == 0 && i < d->vocab_size; i++) {
        map[i] = ck_pad; /* the data's padding (and anything past it) */
    }
    char *text = NULL;
    if (rc == 0 && (text = strdup(vocab_text)) == NULL) {
        rc = gr_error(GR_ENOMEM, "%s: out of memory", d->task);
    }
    for (int64_t i = 0; rc == 0 && i < d->n_tokens; i++) {
        int32_t t = d->tokens[i];
        if (t >= 0 && t < d->vocab_size) {
            d->tokens[i] = map[t];
        }
    }
    for (int64_t i = 0; rc == 0 && i < d->n_tree_nodes; i++) {
        int32_t t = d->tree_word[i];
        if (t >= 0 && t < d->vocab_size) {
            d->tree_word[i] = map[t];
        }
    }
    if (rc == 0) {
        free(d->vocab_text);
        d->vocab_text = text;
        d->vocab_size = ck_pad + 1;
        d->pad_id = ck_pad;
        if (n_unknown != NULL) {
            *n_unknown = unknown;
        }
    }
    free(map);
    nlp_vocab_free(&v);
    return rc;
}
