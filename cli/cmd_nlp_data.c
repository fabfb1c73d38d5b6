/* grove nlp data | listops generate | logic generate: the data of the
 * sequence-classification tasks (issue 27 §1; nlp/data/logic.h, listops.h,
 * sst.h): a summary of what a folder holds as a trainer will read it, and
 * the two generators, which write the released files' formats. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/commands.h"
#include "core/error.h"
#include "core/files.h"
#include "nlp/data/listops.h"
#include "nlp/data/logic.h"
#include "nlp/data/sst.h"

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

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Lengths of a ListOps set: mean / median / max, > 50, > 100. */
static void listops_lengths(const struct nlp_listops_set *s)
{
    if (s->n == 0) {
        return;
    }
    int32_t *len = malloc((size_t)s->n * sizeof *len);
    if (len == NULL) {
        return;
    }
    int64_t total = 0;
    int32_t over50 = 0, over100 = 0, depth[NLP_LISTOPS_MAX_DEPTH + 1] = {0};
    int deepest = 0;
    for (int32_t i = 0; i < s->n; i++) {
        len[i] = s->examples[i].n_tokens;
        total += len[i];
        over50 += len[i] > 50;
        over100 += len[i] > 100;
        int d = s->examples[i].depth;
        d = d > NLP_LISTOPS_MAX_DEPTH ? NLP_LISTOPS_MAX_DEPTH : d;
        depth[d]++;
        deepest = d > deepest ? d : deepest;
    }
    qsort(len, (size_t)s->n, sizeof *len, cmp_i32);
    char a[32], b[32];
    printf("tokens (no parentheses): mean %.1f, median %d, max %d; %s > 50 "
           "(dropped from training by the reference), %s > 100\n",
           (double)total / s->n, len[s->n / 2], len[s->n - 1],
           thousands(over50, a, sizeof a), thousands(over100, b, sizeof b));
    printf("deepest nesting %d (%s examples)\n", deepest,
           thousands(depth[deepest], a, sizeof a));
    free(len);
}

static void listops_answers(const struct nlp_listops_set *s)
{
    int32_t c[10] = {0};
    for (int32_t i = 0; i < s->n; i++) {
        c[s->examples[i].answer]++;
    }
    printf("answers:");
    for (int d = 0; d < 10; d++) {
        printf(" %d:%d", d, c[d]);
    }
    printf("\n");
}

/* ---- grove nlp data ----------------------------------------------------- */

static int data_logic(const struct cli_command *cmd, const char *dir,
                      const char *split_text, int max_ops)
{
    enum nlp_logic_split split;
    if (nlp_logic_split_parse(split_text, &split) < 0) {
        return cli_usage_error(cmd, "--split expects full, A, B or C, got "
                               "'%s'", split_text);
    }
    if (max_ops < 0 || max_ops > 12) {
        return cli_usage_error(cmd, "--max-train-ops must be 0..12, got %d",
                               max_ops);
    }
    struct nlp_logic_data d;
    if (nlp_logic_load(&d, dir, split, max_ops) < 0) {
        return cli_fail(cmd);
    }
    char a[32], b[32], c[32];
    printf("logic inference: %s (split %s, train0-%d)\n", dir,
           nlp_logic_split_name(split), max_ops);
    printf("train0-%d: %s pairs; the split keeps %s (removes %s)\n", max_ops,
           thousands(d.train.n, a, sizeof a), thousands(d.n_pool, b, sizeof b),
           thousands(d.n_removed, c, sizeof c));
    printf("train %s / validation %s (every 10th kept pair)\n",
           thousands(d.n_train, a, sizeof a), thousands(d.n_valid, b, sizeof b));
    printf("test pairs per k%s:", split == NLP_LOGIC_SPLIT_FULL
                                      ? ""
                                      : " (those with the split's pattern)");
    int32_t all = 0, long7 = 0;
    for (int k = 0; k < NLP_LOGIC_N_K; k++) {
        printf(" %d:%d", k, d.n_test[k]);
        all += d.n_test[k];
        long7 += k >= 7 ? d.n_test[k] : 0;
    }
    printf("\ntest pairs: %s in all, %s with k = 7-12\n",
           thousands(all, a, sizeof a), thousands(long7, b, sizeof b));
    int32_t labels[NLP_LOGIC_N_RELATIONS] = {0};
    for (int32_t i = 0; i < d.train.n; i++) {
        labels[d.train.pairs[i].label]++;
    }
    printf("train labels:");
    for (int r = 0; r < NLP_LOGIC_N_RELATIONS; r++) {
        printf(" %c %d", nlp_logic_relation_symbol(r), labels[r]);
    }
    printf("\nlabeller: %s of %s labels differ from the truth-table "
           "relation\n",
           thousands(d.train.n_differ + d.test.n_differ, a, sizeof a),
           thousands(d.train.n + d.test.n, b, sizeof b));
    nlp_logic_data_free(&d);
    return CLI_EXIT_OK;
}

static int data_listops(const struct cli_command *cmd, const char *path)
{
    struct stat st;
    char file[GR_PATH_MAX];
    snprintf(file, sizeof file, "%s", path);
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode) &&
        gr_path_join(file, sizeof file, path, "test_d20s.tsv") < 0) {
        return cli_fail(cmd);
    }
    struct nlp_listops_set s;
    if (nlp_listops_read_file(&s, file) < 0) {
        return cli_fail(cmd);
    }
    char a[32];
    printf("ListOps: %s: %s examples (%d bare digit%s; the reference loader "
           "drops those)\n",
           file, thousands(s.n, a, sizeof a), s.n_bare,
           s.n_bare == 1 ? "" : "s");
    listops_answers(&s);
    listops_lengths(&s);
    printf("every answer checked by evaluation; every bracketing binary\n");
    nlp_listops_free(&s);
    return CLI_EXIT_OK;
}

static int data_sst(const struct cli_command *cmd, const char *dir,
                    enum nlp_sst_task task)
{
    struct nlp_sst s;
    if (nlp_sst_load(&s, dir) < 0) {
        return cli_fail(cmd);
    }
    char a[32], b[32], c[32], d[32];
    printf("SST-%d: %s (vocabulary %s types, %s from train)\n", (int)task, dir,
           thousands(s.vocab.size, a, sizeof a),
           thousands(s.n_types_train, b, sizeof b));
    printf("%-6s %7s %10s %9s %9s\n", "split", "trees", "sentences", "nodes",
           "phrases");
    for (int sp = 0; sp < NLP_N_SPLITS; sp++) {
        int32_t n[3] = {0}, neutral = 0;
        for (int u = 0; u < 3; u++) {
            struct nlp_sst_item *it = NULL;
            if (nlp_sst_items(&s, sp, task, (enum nlp_sst_unit)u, &it, &n[u],
                              u == 0 ? &neutral : NULL, NULL) < 0) {
                nlp_sst_free(&s);
                return cli_fail(cmd);
            }
            free(it);
        }
        printf("%-6s %7s %10s %9s %9s\n", sp == NLP_VALID ? "dev"
                                                          : nlp_split_name(sp),
               thousands(s.n_trees[sp], a, sizeof a),
               thousands(n[0], b, sizeof b), thousands(n[1], c, sizeof c),
               thousands(n[2], d, sizeof d));
        (void)neutral;
    }
    printf("sentences: %s; nodes: every %slabelled node, leaves included, "
           "duplicates kept; phrases: distinct nodes\n",
           task == NLP_SST2 ? "roots labelled 2 dropped, 0-1 negative, 3-4 "
                              "positive"
                            : "the root label 0-4",
           task == NLP_SST2 ? "non-neutral " : "");
    nlp_sst_free(&s);
    return CLI_EXIT_OK;
}

static int run_data(const struct cli_command *cmd, int argc, char **argv)
{
    struct cli_common common;
    int first = 0;
    const char *task = NULL, *data = NULL, *split = "full";
    int max_ops = 6;
    const struct cli_option opts[] = {
        CLI_STRING_REQUIRED("task", "logic|listops|sst2|sst5", "which task",
                            &task),
        CLI_STRING_REQUIRED("data", "PATH",
                            "logic: the folder of train0-12/test0-12; "
                            "listops: test_d20s.tsv or its folder; "
                            "sst2/sst5: the folder of train.txt, dev.txt, "
                            "test.txt",
                            &data),
        CLI_STRING("split", "full|A|B|C", "full",
                   "logic: the systematic-generalisation split", &split),
        CLI_INT("max-train-ops", "K", "6", "logic: train on train0..trainK",
                &max_ops),
        CLI_END,
    };
    int rc = cli_parse(cmd, opts, 0, 0, 0, argc, argv, &common, &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    if (strcmp(task, "logic") == 0) {
        return data_logic(cmd, data, split, max_ops);
    }
    if (strcmp(task, "listops") == 0) {
        return data_listops(cmd, data);
    }
    if (strcmp(task, "sst2") == 0 || strcmp(task, "sst5") == 0) {
        return data_sst(cmd, data, task[3] == '2' ? NLP_SST2 : NLP_SST5);
    }
    return cli_usage_error(cmd, "--task expects logic, listops, sst2 or sst5, "
                           "got '%s'", task);
}

const struct cli_command cmd_nlp_data = {
    "nlp data",
    "Read the data of a classification task (logic, ListOps, SST) and show "
    "what a trainer sees: splits, sizes, labels.",
    "",
    "Every file is checked as a trainer reads it (malformed lines are "
    "errors naming file and line;\nlogic labels are recomputed by the "
    "truth-table labeller, ListOps answers by evaluation). Examples:\n"
    "  grove nlp data --task logic --data data/logic_inference --split C\n"
    "  grove nlp data --task listops --data data/listops/test_d20s.tsv\n"
    "  grove nlp data --task sst2 --data data/sst2",
    run_data,
};

/* ---- grove nlp listops generate ----------------------------------------- */

static int run_listops_generate(const struct cli_command *cmd, int argc,
                                char **argv)
{
    struct cli_common common;
    int first = 0, n = 90000, max_depth = NLP_LISTOPS_MAX_DEPTH;
    const struct cli_option opts[] = {
        CLI_INT("n", "N", "90000", "distinct trees to write (the OM paper's "
                "training set size)", &n),
        CLI_INT("max-depth", "D", "20", "depth at which a node is always a "
                "digit (the released d20 files: 20)", &max_depth),
        CLI_END,
    };
    int rc = cli_parse(cmd, opts,
                       CLI_COMMON_SEED | CLI_COMMON_OUT_REQUIRED |
                           CLI_COMMON_FORCE | CLI_COMMON_QUIET,
                       0, 0, argc, argv, &common, &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    if (n < 1) {
        return cli_usage_error(cmd, "--n must be 1 or more, got %d", n);
    }
    if (max_depth < 1 || max_depth > 100) {
        return cli_usage_error(cmd, "--max-depth must be 1..100, got %d",
                               max_depth);
    }
    struct gr_atomic_file af;
    if (gr_atomic_open(&af, common.out, common.force) < 0) {
        return cli_fail(cmd);
    }
    struct nlp_listops_set s;
    struct nlp_listops_gen_stats st;
    if (nlp_listops_generate(&s, n, common.seed, max_depth, &st) < 0) {
        gr_atomic_abort(&af);
        return cli_fail(cmd);
    }
    rc = 0;
    for (int32_t i = 0; i < s.n && rc == 0; i++) {
        rc = nlp_listops_write(af.fp, &s, i);
    }
    if (rc < 0) {
        gr_atomic_abort(&af);
    } else {
        rc = gr_atomic_commit(&af);
    }
    if (rc < 0) {
        nlp_listops_free(&s);
        return cli_fail(cmd);
    }
    char a[32], b[32];
    printf("wrote %s distinct ListOps trees to %s (seed %llu, %s draws)\n",
           thousands(s.n, a, sizeof a), common.out,
           (unsigned long long)common.seed, thousands(st.draws, b, sizeof b));
    if (!common.quiet) {
        listops_answers(&s);
        listops_lengths(&s);
    }
    nlp_listops_free(&s);
    return CLI_EXIT_OK;
}

const struct cli_command cmd_nlp_listops_generate = {
    "nlp listops generate",
    "Generate a ListOps set (the published generator's distribution, "
    "docs/tasks.md) in the released TSV format, deterministic per seed.",
    "",
    "Trees are distinct; each line is ANSWER<TAB>bracketed expression, as "
    "test_d20s.tsv. Example:\n"
    "  grove nlp listops generate --n 90000 --seed 1 --out train_d20s.tsv",
    run_listops_generate,
};

/* ---- grove nlp logic generate ------------------------------------------- */

/* --layout released: DIR/train0-12 and DIR/test0-12 must not exist
 * unless force. */
static int logic_check_folder(const char *dir, int force)
{
    if (gr_mkdir_p(dir) < 0) {
        return -1;
    }
    for (int t = 0; t < 2 && !force; t++) {
        for (int k = 0; k < NLP_LOGIC_N_K; k++) {
            char name[16], path[GR_PATH_MAX];
            snprintf(name, sizeof name, "%s%d", t ? "test" : "train", k);
            if (gr_path_join(path, sizeof path, dir, name) < 0) {
                return -1;
            }
            if (gr_path_exists(path)) {
                return gr_error(GR_EEXIST, "%s already exists (use --force "
                                "to overwrite)", path);
            }
        }
    }
    return 0;
}

/* Per k in order of generation: the first floor(0.85 n_k) pairs to
 * trainK, the rest to testK (formal_tasks.md §1.7 step 5; the pairs are
 * already distinct). Every one of the 26 files is written, empty or not. */
static int logic_write_folder(const struct nlp_logic_set *s, const char *dir)
{
    int32_t n_k[NLP_LOGIC_N_K] = {0};
    for (int32_t i = 0; i < s->n; i++) {
        n_k[s->pairs[i].k]++;
    }
    for (int k = 0; k < NLP_LOGIC_N_K; k++) {
        int32_t n_train = (int32_t)((int64_t)n_k[k] * 85 / 100), j = 0;
        struct gr_atomic_file af[2];
        for (int t = 0; t < 2; t++) {
            char name[16], path[GR_PATH_MAX];
            snprintf(name, sizeof name, "%s%d", t ? "test" : "train", k);
            if (gr_path_join(path, sizeof path, dir, name) < 0 ||
                gr_atomic_open(&af[t], path, 1) < 0) {
                if (t == 1) {
                    gr_atomic_abort(&af[0]);
                }
                return -1;
            }
        }
        int rc = 0;
        for (int32_t i = 0; i < s->n && rc == 0; i++) {
            if (s->pairs[i].k == k) {
                rc = nlp_logic_write_pair(af[j++ < n_train ? 0 : 1].fp, s, i);
            }
        }
        if (rc < 0) {
            gr_atomic_abort(&af[0]);
            gr_atomic_abort(&af[1]);
            return rc;
        }
        if (gr_atomic_commit(&af[0]) < 0) {
            gr_atomic_abort(&af[1]);
            return -1;
        }
        if (gr_atomic_commit(&af[1]) < 0) {
            return -1;
        }
    }
    return 0;
}

/* "LO-HI" or "K" within 0..12. */
static int parse_ops(const char *text, int *lo, int *hi)
{
    char *end = NULL;
    long a = strtol(text, &end, 10), b;
    if (end == text) {
        return -1;
    }
    if (*end == '-') {
        const char *p = end + 1;
        b = strtol(p, &end, 10);
        if (end == p) {
            return -1;
        }
    } else {
        b = a;
    }
    if (*end != '\0' || a < 0 || b > 12 || a > b) {
        return -1;
    }
    *lo = (int)a;
    *hi = (int)b;
    return 0;
}

static int run_logic_generate(const struct cli_command *cmd, int argc,
                              char **argv)
{
    struct cli_common common;
    int first = 0, n = 0;
    const char *ops = "1-12", *layout = "one";
    const struct cli_option opts[] = {
        CLI_INT_REQUIRED("n", "N", "distinct pairs to write", &n),
        CLI_STRING("ops", "LO-HI", "1-12",
                   "keep pairs whose k = min(12, max operators of a side) is "
                   "in LO..HI (0..12; one number for one k)", &ops),
        CLI_STRING("layout", "one|released", "one",
                   "one: --out is one file of pairs in generation order; "
                   "released: --out is a folder that receives train0-12 and "
                   "test0-12, the first 85 % of each k's pairs in trainK and "
                   "the rest in testK, as the reference split its files",
                   &layout),
        CLI_END,
    };
    int rc = cli_parse(cmd, opts,
                       CLI_COMMON_SEED | CLI_COMMON_OUT_REQUIRED |
                           CLI_COMMON_FORCE | CLI_COMMON_QUIET,
                       0, 0, argc, argv, &common, &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    if (n < 1) {
        return cli_usage_error(cmd, "--n must be 1 or more, got %d", n);
    }
    int lo = 0, hi = 0;
    if (parse_ops(ops, &lo, &hi) < 0) {
        return cli_usage_error(cmd, "--ops expects LO-HI with 0 <= LO <= HI "
                               "<= 12 (or one number), got '%s'", ops);
    }
    int released = strcmp(layout, "released") == 0;
    if (!released && strcmp(layout, "one") != 0) {
        return cli_usage_error(cmd, "--layout expects one or released, got "
                               "'%s'", layout);
    }
    struct gr_atomic_file af;
    if (!released && gr_atomic_open(&af, common.out, common.force) < 0) {
        return cli_fail(cmd);
    }
    if (released && logic_check_folder(common.out, common.force) < 0) {
        return cli_fail(cmd);
    }
    struct nlp_logic_set s;
    nlp_logic_set_init(&s);
    struct nlp_logic_gen_stats st;
    if (nlp_logic_generate(&s, n, lo, hi, common.seed, &st) < 0) {
        if (!released) {
            gr_atomic_abort(&af);
        }
        nlp_logic_set_free(&s);
        return cli_fail(cmd);
    }
    rc = 0;
    if (released) {
        rc = logic_write_folder(&s, common.out);
    } else {
        for (int32_t i = 0; i < s.n && rc == 0; i++) {
            rc = nlp_logic_write_pair(af.fp, &s, i);
        }
        if (rc < 0) {
            gr_atomic_abort(&af);
        } else {
            rc = gr_atomic_commit(&af);
        }
    }
    if (rc < 0) {
        nlp_logic_set_free(&s);
        return cli_fail(cmd);
    }
    char a[32], b[32], c[32], d[32], e[32];
    printf("wrote %s distinct pairs with k in %d-%d to %s%s (seed %llu)\n",
           thousands(s.n, a, sizeof a), lo, hi, common.out,
           released ? "/train0-12, test0-12" : "",
           (unsigned long long)common.seed);
    if (!common.quiet) {
        printf("draws %s: %s degenerate (a tautology or contradiction), %s "
               "outside k %d-%d, %s repeated\n",
               thousands(st.draws, a, sizeof a),
               thousands(st.degenerate, b, sizeof b),
               thousands(st.out_of_range, c, sizeof c), lo, hi,
               thousands(st.duplicates, d, sizeof d));
        int32_t per_k[NLP_LOGIC_N_K] = {0}, rel[NLP_LOGIC_N_RELATIONS] = {0};
        for (int32_t i = 0; i < s.n; i++) {
            per_k[s.pairs[i].k]++;
            rel[s.pairs[i].label]++;
        }
        printf("pairs per k:");
        for (int k = lo; k <= hi; k++) {
            printf(" %d:%d", k, per_k[k]);
        }
        printf("\nrelations:");
        for (int r = 0; r < NLP_LOGIC_N_RELATIONS; r++) {
            printf(" %c %s", nlp_logic_relation_symbol(r),
                   thousands(rel[r], e, sizeof e));
        }
        printf("\n");
    }
    nlp_logic_set_free(&s);
    return CLI_EXIT_OK;
}

const struct cli_command cmd_nlp_logic_generate = {
    "nlp logic generate",
    "Generate logical-inference pairs (the released set's recipe, "
    "docs/tasks.md) in its files' format, labelled by truth tables.",
    "",
    "Pairs are distinct; each line is RELATION<TAB>LEFT<TAB>RIGHT as in "
    "train0-12/test0-12. --layout released writes a folder that grove nlp "
    "data (and the trainers' --data) read like the released one.\n\n"
    "Examples:\n"
    "  grove nlp logic generate --n 1000 --ops 1-12 --seed 1 --out "
    "pairs.tsv\n"
    "  grove nlp logic generate --n 250000 --ops 0-12 --seed 1 "
    "\\\n      --layout released --out data/logic_gen",
    run_logic_generate,
};
