/* grove nlp deps convert | eval: dependency trees (issue 24 §1;
 * nlp/data/deptree.h, nlp/tasks/depeval.h). convert writes grove's
 * Collins-rule conversion of a treebank as CoNLL-X; eval scores predicted
 * heads (a CoNLL file, or a chain baseline) against gold trees (CoNLL, or
 * a treebank converted on the fly) after the §3 filtering. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/commands.h"
#include "core/error.h"
#include "core/files.h"
#include "nlp/data/deptree.h"
#include "nlp/data/treebank.h"
#include "nlp/tasks/depeval.h"

static const char not_comparable[] =
    "NOTE: these trees come from grove's Collins-rule converter, not from "
    "Stanford basic\ndependencies: UAS on them is NOT comparable with the "
    "thesis's (Stanford basic\ndependencies of WSJ section 23; see "
    "docs/tasks.md, 'Dependency trees').\n";

static int ends_with_ci(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    if (a < b) {
        return 0;
    }
    for (size_t i = 0; i < b; i++) {
        if (tolower((unsigned char)s[a - b + i]) !=
            tolower((unsigned char)suffix[i])) {
            return 0;
        }
    }
    return 1;
}

/* A treebank (zip, folder, .mrg) rather than a CoNLL file? */
static int is_treebank_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        return 1;
    }
    return ends_with_ci(path, ".zip") || ends_with_ci(path, ".mrg");
}

static int read_converted(struct nlp_deptrees *d, const char *path,
                          int coord)
{
    struct nlp_treebank tb;
    int rc = nlp_treebank_read(&tb, path);
    if (rc < 0) {
        return rc;
    }
    rc = nlp_deps_from_treebank(d, &tb, coord);
    nlp_treebank_free(&tb);
    return rc;
}

/* ---- grove nlp deps convert ---------------------------------------------- */

static int run_convert(const struct cli_command *cmd, int argc, char **argv)
{
    struct cli_common common;
    const char *trees = NULL;
    int first = 0, coord = 0, filter = 0;
    const struct cli_option opts[] = {
        CLI_STRING_REQUIRED("trees", "PATH", "the treebank: NLTK's "
                            "treebank.zip, a WSJ folder or a .mrg file",
                            &trees),
        CLI_FLAG("coord", "Collins' coordination tweak (a head child after "
                 "CC moves two children left)", &coord),
        CLI_FLAG("filter", "keep only word-tag tokens, heads rerouted "
                 "(docs/tasks.md), as every evaluation does",
                 &filter),
        CLI_END,
    };
    int rc = cli_parse(cmd, opts,
                       CLI_COMMON_OUT_REQUIRED | CLI_COMMON_FORCE |
                           CLI_COMMON_QUIET,
                       0, 0, argc, argv, &common, &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    rc = cli_need_path(cmd, "--trees", trees);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    struct nlp_deptrees d, k;
    if (read_converted(&d, trees, coord) < 0) {
        return cli_fail(cmd);
    }
    struct nlp_deptrees *out = &d;
    if (filter) {
        if (nlp_deps_filter(&k, &d) < 0) {
            nlp_deptrees_free(&d);
            return cli_fail(cmd);
        }
        out = &k;
    }
    struct gr_atomic_file af;
    rc = gr_atomic_open(&af, common.out, common.force);
    if (rc == 0) {
        rc = nlp_conll_write(out, af.fp);
        if (rc < 0) {
            gr_atomic_abort(&af);
        } else {
            rc = gr_atomic_commit(&af);
        }
    }
    if (rc < 0) {
        if (filter) {
            nlp_deptrees_free(&k);
        }
        nlp_deptrees_free(&d);
        return cli_fail(cmd);
    }
    int64_t tokens = 0;
    for (int32_t i = 0; i < out->n_sentences; i++) {
        tokens += out->sentences[i].n;
    }
    fputs(not_comparable, stdout);
    printf("wrote %d sentences, %lld tokens (%s) to %s\n", out->n_sentences,
           (long long)tokens,
           filter ? "word tags only, heads rerouted" : "every token",
           common.out);
    if (filter) {
        printf("%d sentences without a word token skipped; %d with several "
               "roots after filtering\n", k.n_skipped, k.n_multi_root);
        nlp_deptrees_free(&k);
    }
    nlp_deptrees_free(&d);
    return CLI_EXIT_OK;
}

const struct cli_command cmd_nlp_deps_convert = {
    "nlp deps convert",
    "Convert constituency trees to dependencies with Collins head rules "
    "(not comparable with the thesis's Stanford dependencies).",
    "",
    "-NONE- leaves and emptied constituents are deleted, function tags cut, "
    "head children chosen by the Collins (1999) table "
    "(docs/tasks.md, 'Dependency trees'); DEPREL is PARENT/CHILD of the constituent "
    "labels. Writes CoNLL-X (HEAD 0 = root, the tag in columns 4 and 5). "
    "\nExample:\n"
    "  grove nlp deps convert --trees treebank.zip "
    "--out wsj_sample.conll",
    run_convert,
};

/* ---- grove nlp deps eval --------------------------------------------------- */

struct label_row {
    const char *label;
    int64_t total;
    double recall;
};

static int cmp_rows(const void *pa, const void *pb)
{
    const struct label_row *a = pa, *b = pb;
    if (a->total != b->total) {
        return a->total > b->total ? -1 : 1;
    }
    return strcmp(a->label, b->label);
}

static int run_eval(const struct cli_command *cmd, int argc, char **argv)
{
    struct cli_common common;
    const char *gold_path = NULL, *pred_path = NULL, *baseline = NULL;
    int first = 0, tag_column = 0, coord = 0, no_filter = 0;
    const struct cli_option opts[] = {
        CLI_STRING_REQUIRED("gold", "PATH", "gold trees: a CoNLL-X/CoNLL-U "
                            "file, or a treebank (.zip, folder, .mrg) "
                            "converted by Collins rules", &gold_path),
        CLI_STRING("pred", "FILE", NULL, "predicted trees (CoNLL, the gold's "
                   "tokens in the same order)", &pred_path),
        CLI_STRING("baseline", "NAME", NULL, "instead of --pred: left (each "
                   "word headed by the previous one) or right (by the next)",
                   &baseline),
        CLI_INT("tag-column", "N", "0", "CoNLL column of the POS tag: 0 = 4 "
                "for CoNLL-X, 5 (XPOS) for CoNLL-U", &tag_column),
        CLI_FLAG("coord", "with a treebank --gold: Collins' coordination "
                 "tweak", &coord),
        CLI_FLAG("no-filter", "score every token (punctuation included) "
                 "instead of word tags only", &no_filter),
        CLI_END,
    };
    int rc = cli_parse(cmd, opts, CLI_COMMON_QUIET, 0, 0, argc, argv,
                       &common, &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    if ((pred_path == NULL) == (baseline == NULL)) {
        return cli_usage_error(cmd, "give exactly one of --pred and "
                               "--baseline");
    }
    int base = 0;
    if (baseline) {
        if (strcmp(baseline, "left") == 0) {
            base = 1;
        } else if (strcmp(baseline, "right") == 0) {
            base = 2;
        } else {
            return cli_usage_error(cmd, "--baseline '%s': expected left or "
                                   "right", baseline);
        }
    }
    if (tag_column < 0 || tag_column > 10) {
        return cli_usage_error(cmd, "--tag-column must be 0..10, got %d",
                               tag_column);
    }
    rc = cli_need_path(cmd, "--gold", gold_path);
    if (rc == CLI_CONTINUE) {
        rc = cli_need_path(cmd, "--pred", pred_path);
    }
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    rc = 0;
    int converted = is_treebank_path(gold_path);
    if (coord && !converted) {
        return cli_usage_error(cmd, "--coord applies to a treebank --gold "
                               "only (%s is read as CoNLL)", gold_path);
    }
    struct nlp_deptrees gold, pred = {0};
    if ((converted ? read_converted(&gold, gold_path, coord)
                   : nlp_conll_read(&gold, gold_path, tag_column)) < 0) {
        return cli_fail(cmd);
    }
    if (pred_path && nlp_conll_read(&pred, pred_path, 0) < 0) {
        nlp_deptrees_free(&gold);
        return cli_fail(cmd);
    }
    struct nlp_dep_eval ev;
    nlp_dep_eval_init(&ev);
    int32_t max_n = 1;
    for (int32_t i = 0; i < gold.n_sentences; i++) {
        max_n = gold.sentences[i].n > max_n ? gold.sentences[i].n : max_n;
    }
    uint8_t *keep = malloc((size_t)max_n);
    int32_t *buf = malloc(3 * (size_t)max_n * sizeof *buf);
    const char **labels = malloc((size_t)max_n * sizeof *labels);
    if (keep == NULL || buf == NULL || labels == NULL) {
        rc = gr_error(GR_ENOMEM, "out of memory");
    }
    int32_t *g = buf, *p = buf + max_n, *ph = buf + 2 * max_n;
    int32_t k = 0, skipped = 0;
    for (int32_t i = 0; i < gold.n_sentences && rc == 0; i++) {
        const struct nlp_dep_sentence *s = &gold.sentences[i];
        if (s->n == 0) {
            continue; /* a tree of -NONE- only: no token to match */
        }
        if (pred_path) {
            if (k >= pred.n_sentences) {
                rc = gr_error(GR_EFORMAT, "%s: %d sentences, fewer than "
                              "the gold's", pred_path, pred.n_sentences);
                break;
            }
            const struct nlp_dep_sentence *q = &pred.sentences[k];
            if (q->n != s->n) {
                rc = gr_error(GR_EFORMAT, "%s:%d: sentence %d has %d "
                              "tokens, the gold's (%s:%d) has %d", pred_path,
                              q->line, k + 1, q->n, gold_path, s->line,
                              s->n);
                break;
            }
            memcpy(ph, q->heads, (size_t)s->n * sizeof *ph);
        } else {
            for (int32_t j = 0; j < s->n; j++) {
                ph[j] = base == 1 ? (j == 0 ? 0 : j - 1)
                                  : (j == s->n - 1 ? j : j + 1);
            }
        }
        k++;
        for (int32_t j = 0; j < s->n; j++) {
            keep[j] = no_filter ||
                      nlp_is_word_tag(s->tags[j], strlen(s->tags[j]));
        }
        int32_t m = nlp_deps_reroute(s->n, s->heads, keep, g);
        if (m >= 0 && m > 0) {
            m = nlp_deps_reroute(s->n, ph, keep, p);
        }
        if (m < 0) {
            rc = m;
            break;
        }
        if (m == 0) {
            skipped++;
            continue;
        }
        for (int32_t j = 0, c = 0; j < s->n; j++) {
            if (keep[j]) {
                labels[c++] = s->labels[j];
            }
        }
        rc = nlp_dep_eval_add(&ev, m, p, g, labels);
    }
    if (rc == 0 && pred_path && k != pred.n_sentences) {
        rc = gr_error(GR_EFORMAT, "%s: %d sentences, the gold has %d",
                      pred_path, pred.n_sentences, k);
    }
    free(keep);
    free(buf);
    free(labels);
    nlp_deptrees_free(&gold);
    nlp_deptrees_free(&pred);
    if (rc < 0) {
        nlp_dep_eval_free(&ev);
        return cli_fail(cmd);
    }
    struct nlp_dep_scores sc;
    nlp_dep_eval_scores(&ev, &sc);
    if (converted) {
        fputs(not_comparable, stdout);
    }
    printf("gold: %s%s\n", gold_path,
           converted ? " (converted by Collins head rules)" : "");
    printf("pred: %s\n", pred_path ? pred_path
                         : base == 1 ? "left chain baseline"
                                     : "right chain baseline");
    printf("tokens: %s; %lld sentences, %lld tokens (%d without a word "
           "token skipped)\n",
           no_filter ? "all" : "word tags only, heads rerouted",
           (long long)sc.n_sentences, (long long)sc.n_tokens, skipped);
    printf("UAS %.1f  UUAS %.1f  root %.1f\n", sc.uas, sc.uuas, sc.root);
    if (!common.quiet && ev.n_labels > 0) {
        struct label_row *rows = malloc((size_t)ev.n_labels * sizeof *rows);
        if (rows) {
            for (int32_t i = 0; i < ev.n_labels; i++) {
                rows[i] = (struct label_row){ev.labels[i],
                                             ev.label_total[i],
                                             nlp_dep_eval_label_recall(&ev,
                                                                       i)};
            }
            qsort(rows, (size_t)ev.n_labels, sizeof *rows, cmp_rows);
            printf("attachment recall per gold label (label, tokens, %%):\n");
            for (int32_t i = 0; i < ev.n_labels; i++) {
                printf("  %-14s %8lld %6.1f\n", rows[i].label,
                       (long long)rows[i].total, rows[i].recall);
            }
            free(rows);
        }
    }
    nlp_dep_eval_free(&ev);
    return CLI_EXIT_OK;
}

const struct cli_command cmd_nlp_deps_eval = {
    "nlp deps eval",
    "Score predicted dependency heads against gold trees: UAS, UUAS, root "
    "accuracy, per-label recall.",
    "",
    "Tokens are filtered to word tags and heads rerouted over removed "
    "tokens first, on both sides (docs/tasks.md); UUAS counts "
    "unordered pairs as a set. A treebank --gold is converted by Collins "
    "rules and is NOT comparable with the thesis's Stanford dependencies. "
    "\nExamples:\n"
    "  grove nlp deps eval --gold treebank.zip "
    "--baseline right\n"
    "  grove nlp deps eval --gold wsj23.conll --pred induced.conll",
    run_eval,
};
