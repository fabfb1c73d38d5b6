/* grove nlp classify train | eval | trees: sentence and sentence-pair
 * classification (logic inference, ListOps, SST-2/5) with any encoder of
 * nlp/models/encoder.h, on the harness of nlp/tasks/classify.h and the
 * loaders of nlp/tasks/classify_tasks.h. */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/lm_common.h"
#include "core/error.h"
#include "core/files.h"
#include "kernels/checkpoint.h"
#include "kernels/tensor.h"
#include "nlp/data/listops.h"
#include "nlp/data/logic.h"
#include "nlp/models/encoder.h"
#include "nlp/tasks/classify.h"
#include "nlp/tasks/classify_tasks.h"
#include "render/plot.h"
#include "render/pngfile.h"
#include "train/mpi.h"
#include "train/train.h"

/* curves.png of a run: train and validation accuracy per epoch. */
static void draw_curves(const char *dir)
{
    char metrics[GR_PATH_MAX], png[GR_PATH_MAX];
    if (gr_path_join(metrics, sizeof metrics, dir, "metrics.csv") < 0 ||
        gr_path_join(png, sizeof png, dir, "curves.png") < 0) {
        return;
    }
    struct render_csv csv;
    if (render_csv_read(metrics, &csv) < 0) {
        return;
    }
    const char *ys[] = {"train_acc", "valid_acc", "test_acc"};
    struct render_plot_options po = render_plot_defaults();
    po.title = "classification accuracy";
    po.x_label = "epoch";
    struct render_image img;
    if (render_plot_csv(&csv, "epoch", ys, 3, &po, &img) == 0) {
        if (render_png_write(png, &img, 1) < 0) {
            fprintf(stderr, "grove nlp classify train: warning: %s\n",
                    gr_last_error());
        }
        render_image_free(&img);
    }
    render_csv_free(&csv);
}

/* The loader options from the data flags; the split word for the config.
 * `only_split`: -1 for training; for classify eval the split it scores
 * (NLP_CLS_TEST or NLP_CLS_VALID), where a test (or validation) file alone
 * is enough and only the data that split needs is read. */
static int task_options(const struct cli_command *cmd, const char *task,
                        const char *split, const char *data,
                        const char *train, const char *valid,
                        const char *test, uint64_t seed, int listops_n,
                        int only_split, struct nlp_cls_task_options *o)
{
    int eval = only_split >= 0;
    const char *paths[4] = {data, train, valid, test};
    const char *flags[4] = {"--data", "--train", "--valid", "--test"};
    for (int i = 0; i < 4; i++) {
        if (paths[i] != NULL && !gr_path_exists(paths[i])) {
            return cli_usage_error(cmd, "%s %s: it does not exist", flags[i],
                                   paths[i]);
        }
    }
    nlp_cls_task_options_default(o);
    o->data = data;
    o->train = train;
    o->valid = valid;
    o->test = test;
    o->seed = seed;
    o->only_split = only_split;
    if (listops_n > 0) {
        o->listops_generate = listops_n;
    }
    if (strcmp(task, "logic") == 0) {
        if (nlp_logic_split_parse(split, &o->logic_split) < 0) {
            return cli_usage_error(cmd, "--split '%s' is not full, A, B or C",
                                   split);
        }
        if (data == NULL && train == NULL && !eval) {
            return cli_usage_error(cmd, "--task logic needs --data DIR (the "
                                        "released train0..12/test0..12) or "
                                        "--train FILE");
        }
        if (data == NULL && train == NULL && valid == NULL && test == NULL) {
            return cli_usage_error(cmd, "--task logic needs --data DIR (the "
                                        "released train0..12/test0..12) or "
                                        "--test FILE");
        }
    } else if (strcmp(split, "full") != 0) {
        return cli_usage_error(cmd, "--split is for --task logic only");
    }
    if (strcmp(task, "listops") == 0 && only_split == NLP_CLS_TEST &&
        data == NULL && test == NULL) {
        return cli_usage_error(cmd, "--task listops: the test split needs "
                                    "--test FILE or --data DIR (with "
                                    "test_d20s.tsv)");
    }
    /* an evaluation needs only the file of the split it scores */
    const char *scored = only_split == NLP_CLS_TEST    ? test
                         : only_split == NLP_CLS_VALID ? valid
                                                       : NULL;
    /* sst and snli read a folder of their own files or one file per split */
    const char *dir_holds = strncmp(task, "sst", 3) == 0 ? "the SST trees"
                            : strcmp(task, "snli") == 0
                                ? "the snli_1.0_*.jsonl files"
                                : NULL;
    if (dir_holds != NULL && data == NULL && eval && scored == NULL) {
        int on_test = only_split == NLP_CLS_TEST;
        return cli_usage_error(cmd, "--task %s: the %s split needs --data "
                                    "DIR (%s) or --%s FILE",
                               task, on_test ? "test" : "validation",
                               dir_holds, on_test ? "test" : "valid");
    }
    if (dir_holds != NULL && data == NULL && !eval &&
        (train == NULL || valid == NULL || test == NULL)) {
        return cli_usage_error(cmd, "--task %s needs --data DIR (%s) or "
                                    "--train, --valid and --test",
                               task, dir_holds);
    }
    return CLI_CONTINUE;
}

/* --listops-n N given: refused where nothing is generated (another task,
 * --train FILE, a --data DIR holding train_d20s.tsv: load_listops of
 * nlp/tasks/classify_tasks.c) and below the count that can leave a
 * training tree: the loader holds valid_n (1,000) of the generated trees
 * out for validation unless --valid FILE is given, and trains on the
 * rest (those of at most max_train_tokens, 50, tokens), so N <= 1,000
 * leaves none. Above it the seed decides whether one of the rest is short
 * enough (about 3 trees in 4 are); the loader says so when none is. */
static int check_listops_n(const struct cli_command *cmd, const char *task,
                           const char *data, const char *train,
                           const char *valid, int listops_n)
{
    if (strcmp(task, "listops") != 0) {
        return cli_usage_error(cmd, "--listops-n is for --task listops (the "
                                    "generated ListOps training trees), not "
                                    "%s",
                               task);
    }
    char path[GR_PATH_MAX];
    if (train != NULL) {
        return cli_usage_error(cmd, "--listops-n: nothing is generated with "
                                    "--train FILE (the training trees are "
                                    "read from it)");
    }
    if (data != NULL &&
        gr_path_join(path, sizeof path, data, "train_d20s.tsv") == 0 &&
        gr_path_exists(path)) {
        return cli_usage_error(cmd, "--listops-n: nothing is generated: the "
                                    "training trees are read from %s",
                               path);
    }
    struct nlp_cls_task_options def;
    nlp_cls_task_options_default(&def);
    int min = valid != NULL ? 1 : def.valid_n + 1;
    if (listops_n >= min) {
        return CLI_CONTINUE;
    }
    if (valid != NULL) {
        return cli_usage_error(cmd, "--listops-n %d is out of range (>= 1)",
                               listops_n);
    }
    return cli_usage_error(cmd, "--listops-n %d is out of range (>= %d): "
                                "%d generated trees are held out for "
                                "validation (without --valid FILE), and "
                                "training needs at least one more",
                           listops_n, min, def.valid_n);
}

static int run_train(const struct cli_command *cmd, int argc, char **argv)
{
    const char *task = NULL, *model = "om", *split = "full", *data = NULL;
    const char *train = NULL, *valid = NULL, *test = NULL, *vectors = NULL;
    const char *tree_kind = NULL;
    const char *sst_train = NULL;
    /* Not given: CLI_UNSET and NaN, which cli_parse refuses on the command
     * line, so that every value a user can type (-1 included) is checked
     * against the flag's range below (cli_check_ranges), none taken for
     * "unset". */
    int epochs = CLI_UNSET, batch = CLI_UNSET;
    int emsize = CLI_UNSET, nhid = CLI_UNSET, chunk = CLI_UNSET;
    int slots = CLI_UNSET, slots_eval = CLI_UNSET, max_batches = 0, resume = 0;
    int select_on_test = 0, test_every = 1, eval_batch = 256;
    int eval_tokens = NLP_CLS_EVAL_TOKENS;
    int lr_patience = CLI_UNSET;
    int listops_n = CLI_UNSET; /* not given: NLP_CLS_LISTOPS_GENERATE */
    int head_hidden = CLI_UNSET, layers = CLI_UNSET, heads = CLI_UNSET,
        ffn = CLI_UNSET, post_norm = 0;
    double dropouta = NAN;
    double lr = NAN, clip = 1.0, wdecay = 1.2e-6, dropouti = NAN,
           dropout = NAN, dropoutm = NAN, dropouto = NAN;
    struct cli_common common;
    int first = 0;
    /* the names comma-separated, so that the help can wrap between them */
    char names[256], models_help[320];
    size_t nn = 0;
    for (const char *c = nlp_encoder_names(); *c && nn + 3 < sizeof names;
         c++) {
        if (*c == '|') {
            names[nn++] = ',';
            names[nn++] = ' ';
        } else {
            names[nn++] = *c;
        }
    }
    names[nn] = '\0';
    snprintf(models_help, sizeof models_help,
             "the encoder: %s; om is Ordered Memory", names);
    const struct cli_option opts[] = {
        CLI_STRING("task", "logic|listops|sst2|sst5|snli", NULL,
                   "the task (required; grove nlp tasks lists them)", &task),
        CLI_STRING("model", "NAME", "om", models_help, &model),
        CLI_STRING("split", "full|A|B|C", "full",
                   "logic: the training pairs kept (the systematic splits A, "
                   "B, C of docs/tasks.md)",
                   &split),
        CLI_STRING("data", "DIR", NULL,
                   "the task's folder (logic: train0..12/test0..12; sst: the "
                   "trees; listops: train_d20s.tsv/test_d20s.tsv when there)",
                   &data),
        CLI_STRING("train", "FILE", NULL, "training file (instead of DIR's)",
                   &train),
        CLI_STRING("valid", "FILE", NULL, "validation file", &valid),
        CLI_STRING("test", "FILE", NULL, "test file", &test),
        CLI_STRING("vectors", "PATH", NULL,
                   "word vectors in the GloVe text format for the word "
                   "table (sst, snli; the dimension must be --emsize; "
                   "default: random init)",
                   &vectors),
        CLI_STRING("tree-kind", "constituency|dependency", NULL,
                   "childsum only: the given constituency trees (default), "
                   "or on sst2/sst5 dependency trees converted from them by "
                   "grove's right-head rule (docs/nlp/trees.md)",
                   &tree_kind),
        CLI_STRING("sst-train", "sentences|phrases|nodes", NULL,
                   "sst2/sst5: the training examples: each tree's root "
                   "sentence (default), every distinct labelled phrase once "
                   "(FastTrees Table 3 trains SST-2 on phrases: 77,616 of "
                   "them in the released train trees), or every labelled "
                   "node with duplicates; dev "
                   "and test are sentences either way",
                   &sst_train),
        CLI_INT("listops-n", "N", NULL,
                "ListOps without a training file: trees generated (default "
                "90000; more than the 1000 held out for validation unless "
                "--valid is given)",
                &listops_n),
        CLI_INT("epochs", "N", NULL,
                "epochs (0: write the initial model and stop; default 50, "
                "sst 10)",
                &epochs),
        CLI_INT("batch", "B", NULL,
                "pairs or sequences per batch (default 128, sst 25)", &batch),
        CLI_INT("max-batches", "N", "0",
                "cut every epoch after N batches (smoke runs; 0: all)",
                &max_batches),
        CLI_DOUBLE("lr", "LR", NULL,
                   "Adam learning rate (default 0.001, snli 4e-4)", &lr),
        CLI_DOUBLE("clip", "NORM", "1", "global gradient-norm clipping",
                   &clip),
        CLI_DOUBLE("wdecay", "W", "1.2e-6", "weight decay", &wdecay),
        CLI_INT("lr-patience", "N", "2",
                "epochs without a better validation accuracy before the "
                "learning rate is cut (x0.5, snli x0.2); on a fraction of "
                "the data, scale it up to keep the updates between cuts",
                &lr_patience),
        CLI_INT("emsize", "N", NULL, "embedding size (default: the model's "
                                     "for the task)",
                &emsize),
        CLI_INT("nhid", "N", NULL, "state size D (default: the model's)",
                &nhid),
        CLI_INT("chunk-size", "N", NULL,
                "onlstm, ft, cft, fft, hybrid, hybrid-san: the ON-LSTM "
                "chunk size (default: the model's)",
                &chunk),
        CLI_INT("slots", "N", NULL,
                "om: memory slots while training (default: the task's)",
                &slots),
        CLI_INT("slots-eval", "N", NULL,
                "om: memory slots for validation, test and trees (default: "
                "the task's)",
                &slots_eval),
        CLI_DOUBLE("dropouti", "P", NULL,
                   "dropout on the embeddings (default: the model's)",
                   &dropouti),
        CLI_DOUBLE("dropout", "P", NULL,
                   "om: cell dropout r_c; transformer, ftt, ftt-conv, "
                   "structformer: residual dropout; hybrid, hybrid-san: "
                   "residual and ON-LSTM output dropout (default: the "
                   "model's)",
                   &dropout),
        CLI_INT("layers", "N", NULL,
                "transformer, ftt, ftt-conv, hybrid, hybrid-san, "
                "structformer: layers (hybrid, hybrid-san: of each kind; "
                "default: the model's)",
                &layers),
        CLI_INT("heads", "N", NULL,
                "transformer, ftt, ftt-conv, hybrid, hybrid-san, "
                "structformer: attention heads (default: the model's)",
                &heads),
        CLI_INT("ffn", "N", NULL,
                "transformer, ftt, ftt-conv, hybrid, hybrid-san, "
                "structformer: feed-forward size (default: the model's)",
                &ffn),
        CLI_DOUBLE("dropout-attn", "P", NULL,
                   "transformer, ftt, ftt-conv, hybrid, hybrid-san, "
                   "structformer: attention dropout (default 0.1)",
                   &dropouta),
        CLI_FLAG("post-norm", "transformer, ftt, ftt-conv: post-norm layers "
                              "(default pre-norm)",
                 &post_norm),
        CLI_DOUBLE("dropoutm", "P", NULL,
                   "om: memory dropout r_m (default: the task's)", &dropoutm),
        CLI_DOUBLE("dropouto", "P", NULL,
                   "dropout in the head r_o (default: the task's)",
                   &dropouto),
        CLI_INT("head-hidden", "H", NULL,
                "hidden size of the MLP head (0: linear; default D for "
                "pairs, 0 for one sequence)",
                &head_hidden),
        CLI_INT("test-every", "N", "1", "test accuracy every N epochs",
                &test_every),
        CLI_INT("eval-batch", "N", "256", "batch of evaluation", &eval_batch),
        CLI_INT("eval-tokens", "N", "16384",
                "at most N tokens in an evaluation batch, padding included "
                "(fewer rows on long sequences: memory; 0: no cap)",
                &eval_tokens),
        CLI_FLAG("select-on-test",
                 "pick the model and drive the schedule on test accuracy "
                 "(the ListOps reference's protocol, which has no "
                 "validation set); default: on validation",
                 &select_on_test),
        CLI_FLAG("resume", "continue the run in --out from its last.ckpt",
                 &resume),
        CLI_END,
    };
    int rc = cli_parse(cmd, opts, CLI_COMMON_ALL, 0, 0, argc, argv, &common,
                       &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    if (task == NULL) {
        return cli_usage_error(cmd, "--task is required (logic, listops, "
                                    "sst2, sst5 or snli)");
    }
    if (!nlp_cls_task_known(task)) {
        return cli_usage_error(cmd, "--task '%s' is not logic, listops, sst2, "
                                    "sst5 or snli",
                               task);
    }
    if (common.out == NULL) {
        return cli_usage_error(cmd, "--out DIR (the run folder) is required");
    }
    if (resume && common.force) {
        return cli_usage_error(cmd, "--resume and --force exclude each other");
    }
    /* every numeric flag given is in its range (the encoders' limits of
     * nlp_encoder_config_check where they have one) */
    const struct cli_range ranges[] = {
        CLI_AT_LEAST("--epochs", epochs, 0),
        CLI_AT_LEAST("--batch", batch, 1),
        CLI_AT_LEAST("--max-batches", max_batches, 0),
        CLI_AT_LEAST("--test-every", test_every, 1),
        CLI_AT_LEAST("--eval-batch", eval_batch, 1),
        CLI_AT_LEAST("--eval-tokens", eval_tokens, 0),
        CLI_RANGE("--emsize", emsize, 1, 65536),
        CLI_RANGE("--nhid", nhid, 1, 65536),
        CLI_RANGE("--chunk-size", chunk, 1, 65536),
        CLI_AT_LEAST("--slots", slots, 1),
        CLI_AT_LEAST("--slots-eval", slots_eval, 1),
        CLI_RANGE("--layers", layers, 1, 64),
        CLI_RANGE("--heads", heads, 1, 65536),
        CLI_RANGE("--ffn", ffn, 1, 262144),
        CLI_AT_LEAST("--head-hidden", head_hidden, 0),
        CLI_POSITIVE("--lr", lr),
        CLI_AT_LEAST("--clip", clip, 0),
        CLI_AT_LEAST("--wdecay", wdecay, 0),
        CLI_AT_LEAST("--lr-patience", lr_patience, 0),
        CLI_RATE("--dropouti", dropouti),
        CLI_RATE("--dropout", dropout),
        CLI_RATE("--dropoutm", dropoutm),
        CLI_RATE("--dropouto", dropouto),
        CLI_RATE("--dropout-attn", dropouta),
    };
    if ((rc = CLI_CHECK_RANGES(cmd, ranges)) != CLI_CONTINUE) {
        return rc;
    }
    if (listops_n != CLI_UNSET &&
        (rc = check_listops_n(cmd, task, data, train, valid, listops_n)) !=
            CLI_CONTINUE) {
        return rc;
    }
    /* cheap refusals before the data is read */
    struct train_run_spec spec = train_run_spec_default();
    spec.dir = common.out;
    spec.force = common.force;
    spec.resume = resume;
    spec.what = "nlp classify train";
    if (train_run_check(&spec) < 0) {
        return cli_fail(cmd);
    }
    struct nlp_cls_train_config tc;
    nlp_cls_train_config_default(&tc, task);
    if (nlp_encoder_config_default(&tc.enc, model, task) < 0) {
        return cli_usage_error(cmd, "--model: %s", gr_last_error());
    }
    int dep_trees = 0;
    if (tree_kind != NULL) {
        if (strcmp(tree_kind, "dependency") != 0 &&
            strcmp(tree_kind, "constituency") != 0) {
            return cli_usage_error(cmd, "--tree-kind '%s' is not "
                                        "constituency or dependency",
                                   tree_kind);
        }
        if (strcmp(tc.enc.model, "childsum") != 0) {
            return cli_usage_error(cmd, "--tree-kind is for --model childsum "
                                        "(%s reads the constituency trees "
                                        "as given, or none)",
                                   tc.enc.model);
        }
        dep_trees = strcmp(tree_kind, "dependency") == 0;
        if (dep_trees && strncmp(task, "sst", 3) != 0) {
            return cli_usage_error(cmd, "--tree-kind dependency is for --task "
                                        "sst2 or sst5 (the SST trees are "
                                        "converted), not %s",
                                   task);
        }
    }
    enum nlp_sst_unit sst_unit = NLP_SST_SENTENCES;
    if (sst_train != NULL) {
        if (strncmp(task, "sst", 3) != 0) {
            return cli_usage_error(cmd, "--sst-train is for --task sst2 or "
                                        "sst5, not %s",
                                   task);
        }
        if (strcmp(sst_train, "phrases") == 0) {
            sst_unit = NLP_SST_PHRASES;
        } else if (strcmp(sst_train, "nodes") == 0) {
            sst_unit = NLP_SST_NODES;
        } else if (strcmp(sst_train, "sentences") != 0) {
            return cli_usage_error(cmd, "--sst-train '%s' is not sentences, "
                                        "phrases or nodes",
                                   sst_train);
        }
    }
    /* a model-specific flag given to a model that does not read it is
     * refused: the model would take it silently and record a value that
     * means nothing (checked in the encoders of nlp/models/) */
    static const char *const chunked[] = {"onlstm", "ft",     "cft", "fft",
                                          "hybrid", "hybrid-san", NULL};
    static const char *const ordered_memory[] = {"om", NULL};
    static const char *const attention[] = {
        "transformer", "ftt",        "ftt-conv",     "hybrid",
        "hybrid-san",  "structformer", NULL};
    static const char *const post_normed[] = {"transformer", "ftt",
                                              "ftt-conv", NULL};
    static const char *const cell_dropout[] = {
        "om",     "transformer", "ftt",          "ftt-conv",
        "hybrid", "hybrid-san",  "structformer", NULL};
    const struct {
        const char *flag;
        int given;
        const char *const *models;
        const char *lacks; /* "(MODEL has no ...)" */
    } specific[] = {
        {"--chunk-size", chunk != CLI_UNSET, chunked, "chunked cell"},
        {"--slots", slots != CLI_UNSET, ordered_memory, "memory slots"},
        {"--slots-eval", slots_eval != CLI_UNSET, ordered_memory,
         "memory slots"},
        {"--dropoutm", !isnan(dropoutm), ordered_memory, "memory dropout"},
        {"--dropout", !isnan(dropout), cell_dropout,
         "cell or residual dropout; --dropouti is on the embeddings"},
        {"--layers", layers != CLI_UNSET, attention, "attention layers"},
        {"--heads", heads != CLI_UNSET, attention, "attention layers"},
        {"--ffn", ffn != CLI_UNSET, attention, "attention layers"},
        {"--dropout-attn", !isnan(dropouta), attention, "attention layers"},
        {"--post-norm", post_norm, post_normed, "post-norm option"},
    };
    for (size_t f = 0; f < sizeof specific / sizeof specific[0]; f++) {
        const char *const *ms = specific[f].models;
        int reads = 0, n = 0;
        for (; ms[n] != NULL; n++) {
            reads |= strcmp(tc.enc.model, ms[n]) == 0;
        }
        if (!specific[f].given || reads) {
            continue;
        }
        /* "a, b or c" */
        char list[160];
        size_t len = 0;
        for (int i = 0; i < n && len < sizeof list; i++) {
            int w = snprintf(list + len, sizeof list - len, "%s%s",
                             i == 0 ? "" : (i == n - 1 ? " or " : ", "),
                             ms[i]);
            len += w > 0 ? (size_t)w : 0;
        }
        return cli_usage_error(cmd, "%s is for --model %s (%s has no %s)",
                               specific[f].flag, list, tc.enc.model,
                               specific[f].lacks);
    }
    if (epochs != CLI_UNSET) {
        tc.epochs = epochs;
    }
    if (batch != CLI_UNSET) {
        tc.batch = batch;
    }
    if (emsize != CLI_UNSET) {
        tc.enc.emsize = emsize;
    }
    if (nhid != CLI_UNSET) {
        tc.enc.hidden = nhid;
    }
    if (chunk != CLI_UNSET) {
        tc.enc.chunk = chunk;
    }
    if (slots != CLI_UNSET) {
        tc.enc.slots_train = slots;
    }
    if (slots_eval != CLI_UNSET) {
        tc.enc.slots_eval = slots_eval;
    }
    if (!isnan(dropouti)) {
        tc.enc.dropout_in = (float)dropouti;
    }
    if (!isnan(dropout)) {
        tc.enc.dropout_cell = (float)dropout;
    }
    if (!isnan(dropoutm)) {
        tc.enc.dropout_mem = (float)dropoutm;
    }
    if (!isnan(dropouto)) {
        tc.dropout_out = (float)dropouto;
    }
    if (!isnan(dropouta)) {
        tc.enc.dropout_attn = (float)dropouta;
    }
    if (layers != CLI_UNSET) {
        tc.enc.layers = layers;
    }
    if (heads != CLI_UNSET) {
        tc.enc.heads = heads;
    }
    if (ffn != CLI_UNSET) {
        tc.enc.ffn = ffn;
    }
    if (post_norm) {
        tc.enc.post_norm = 1;
    }
    if (head_hidden != CLI_UNSET) {
        tc.head_hidden = head_hidden;
    }
    if (!isnan(lr)) {
        tc.lr = (float)lr;
    }
    tc.clip = (float)clip;
    tc.wdecay = (float)wdecay;
    if (lr_patience != CLI_UNSET) {
        tc.plateau_patience = lr_patience;
    }
    tc.max_batches = max_batches;
    tc.test_every = test_every;
    tc.eval_batch = eval_batch;
    tc.eval_tokens = eval_tokens;
    tc.select_on_test = select_on_test;
    tc.seed = common.seed;
    tc.out_dir = common.out;
    tc.force = common.force;
    tc.resume = resume;
    tc.quiet = common.quiet;
    tc.argc = argc;
    tc.argv = argv;
    struct gr_ctx_config cc;
    if ((rc = lm_cli_ctx_config(cmd, &common, &cc)) != CLI_CONTINUE) {
        return rc;
    }
    struct nlp_cls_task_options o;
    rc = task_options(cmd, task, split, data, train, valid, test, common.seed,
                      listops_n, -1, &o);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    o.sst_dependency = dep_trees;
    o.sst_train_unit = sst_unit;
    /* every check that reads a file runs before the run folder exists */
    struct nlp_cls_data d;
    if (nlp_cls_load_task(&d, task, &o) < 0) {
        return cli_fail(cmd);
    }
    if (!common.quiet) {
        fprintf(stderr, "%s\n", d.summary);
    }
    tc.enc.vocab = d.vocab_size;
    tc.enc.pad_id = d.pad_id;
    char desc[GR_PATH_MAX + 64];
    snprintf(desc, sizeof desc, "%s %s", split,
             data ? data : (train ? train : "generated"));
    tc.data_desc = desc;
    tc.vectors = vectors;
    if (nlp_encoder_config_check(&tc.enc) < 0) {
        nlp_cls_data_free(&d);
        return cli_usage_error(cmd, "%s", gr_last_error());
    }
    if (!common.quiet) {
        fprintf(stderr, "model: %s, emsize %d, D %d, on %s, %d epochs of "
                        "batch %d\n",
                tc.enc.model, (int)tc.enc.emsize, (int)tc.enc.hidden,
                gr_device_name(gr_device_resolve(cc.device)),
                (int)tc.epochs, (int)tc.batch);
    }
    struct nlp_cls_train_result res;
    train_signals_install();
    rc = nlp_cls_train(&tc, &d, &cc, &res);
    train_signals_restore();
    nlp_cls_data_free(&d);
    if (rc < 0) {
        return res.config_mismatch ? cli_usage_error(cmd, "%s", gr_last_error())
                                   : cli_fail(cmd);
    }
    draw_curves(common.out);
    if (res.stopped) {
        return 128 + train_stop_requested();
    }
    printf("run %s: %s with %s, %d epochs, %.1f s\n", common.out, task,
           tc.enc.model, (int)res.epochs_done, res.wall_s);
    if (res.epochs_done == 0) {
        printf("wrote the initial model to %s/best.ckpt and last.ckpt\n",
               common.out);
        return CLI_EXIT_OK;
    }
    printf("best validation accuracy %.4f at epoch %d -> %s/best.ckpt\n",
           res.best_valid_acc, (int)res.best_epoch, common.out);
    if (!isnan(res.test.acc)) {
        printf("test accuracy (best.ckpt) %.4f on %lld examples\n",
               res.test.acc, (long long)res.test.n);
        if (strcmp(task, "logic") == 0) {
            /* the published tables' layout: one column per number of
             * operators (the same numbers as classify eval --per-length) */
            printf("test accuracy by operators (best.ckpt):");
            for (int g = 1; g < NLP_CLS_MAX_GROUPS; g++) {
                if (res.test.group_n[g] > 0) {
                    printf(" %d: %.4f", g, res.test.group_acc[g]);
                }
            }
            printf("\n");
        }
        if (res.test.node_n > 0) {
            printf("test accuracy over all labelled nodes %.4f on %lld "
                   "nodes\n", res.test.node_acc, (long long)res.test.node_n);
        }
        if (res.test.neg_pos_n + res.test.neg_neg_n > 0) {
            printf("negation (docs/nlp/trees.md): negated positive %.4f on "
                   "%lld nodes, negated negative %.4f on %lld nodes\n",
                   res.test.neg_pos_acc, (long long)res.test.neg_pos_n,
                   res.test.neg_neg_acc, (long long)res.test.neg_neg_n);
        }
    }
    printf("wrote %s/metrics.csv, curves.png, last.ckpt\n", common.out);
    return CLI_EXIT_OK;
}

const struct cli_command cmd_nlp_classify_train = {
    "nlp classify train",
    "Train a sentence (pair) classifier: logic inference, ListOps, SST.",
    "",
    "Defaults are the references' (docs/models.md, Sentence classifiers). "
    " Prints a data summary first. Writes into --out: "
    "command, config, metrics.csv (epoch, global_step, train_loss, "
    "train_acc, valid_acc, test_acc, lr, wall_s and, for logic, test_acc_1 "
    "to test_acc_12 by number of operators), curves.png, best.ckpt (best "
    "validation accuracy) and last.ckpt (--resume continues it bit for "
    "bit). A model-specific flag (its help names the models that read it) "
    "is refused for any other model. A numeric flag given outside its "
    "range (a negative size, a dropout of 1, ...) is refused with one line "
    "naming the flag and the range; no value stands for \"not given\". "
    "Example: grove nlp classify train "
    "--task listops --model lstm "
    "--epochs 2 --max-batches 20 --out runs/listops-smoke",
    run_train,
};

static int run_eval(const struct cli_command *cmd, int argc, char **argv)
{
    const char *ckpt = NULL, *split = NULL, *data = NULL, *train = NULL,
               *valid = NULL, *test = NULL, *which = "test";
    int per_length = 0, batch = 256, max_tokens = NLP_CLS_EVAL_TOKENS;
    struct cli_common common;
    int first = 0;
    const struct cli_option opts[] = {
        CLI_STRING("checkpoint", "FILE", NULL,
                   "a checkpoint of grove nlp classify train (required)",
                   &ckpt),
        CLI_STRING("data", "DIR", NULL, "the task's folder", &data),
        CLI_STRING("train", "FILE", NULL, "training file (listops: the "
                                          "validation hold-out comes from it, "
                                          "with the run's seed)",
                   &train),
        CLI_STRING("valid", "FILE", NULL, "validation file", &valid),
        CLI_STRING("test", "FILE", NULL, "test file", &test),
        CLI_STRING("split", "full|A|B|C", NULL,
                   "logic: which systematic split's test pairs (default: "
                   "the run's)",
                   &split),
        CLI_STRING("on", "valid|test", "test", "the split evaluated", &which),
        CLI_FLAG("per-length",
                 "accuracy per group (logic: per number of operators)",
                 &per_length),
        CLI_INT("batch", "N", "256", "evaluation batch", &batch),
        CLI_INT("max-tokens", "N", "16384",
                "at most N tokens in a batch, padding included (fewer rows "
                "on long sequences: memory; 0: no cap)",
                &max_tokens),
        CLI_END,
    };
    int rc = cli_parse(cmd, opts,
                       CLI_COMMON_DEVICE | CLI_COMMON_THREADS | CLI_COMMON_OUT |
                           CLI_COMMON_FORCE | CLI_COMMON_QUIET,
                       0, 0, argc, argv, &common, &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    if (ckpt == NULL) {
        return cli_usage_error(cmd, "--checkpoint FILE is required");
    }
    int s = strcmp(which, "test") == 0    ? NLP_CLS_TEST
            : strcmp(which, "valid") == 0 ? NLP_CLS_VALID
                                          : -1;
    if (s < 0 || batch < 1 || max_tokens < 0) {
        return cli_usage_error(cmd, "--on valid|test, --batch >= 1, "
                                    "--max-tokens >= 0");
    }
    if (common.out != NULL && !common.force && gr_path_exists(common.out)) {
        gr_error(GR_EEXIST, "%s exists (use --force to overwrite)",
                 common.out);
        return cli_fail(cmd);
    }
    struct gr_ctx_config cc;
    if ((rc = lm_cli_ctx_config(cmd, &common, &cc)) != CLI_CONTINUE) {
        return rc;
    }
    /* the checkpoint first: the task and the split come from it */
    struct nlp_cls_model *m = NULL;
    char task[16];
    char *config = NULL;
    if (gr_checkpoint_read_config(ckpt, &config) < 0) {
        return cli_fail(cmd);
    }
    if (strncmp(config, "grove-classify ", 15) != 0) {
        free(config);
        return cli_usage_error(cmd, "%s is not a grove classifier checkpoint "
                                    "(grove nlp classify train writes those)",
                               ckpt);
    }
    char run_split[16] = "full";
    const char *dl = strstr(config, "\ndata ");
    if (dl != NULL) {
        sscanf(dl + 6, "%15s", run_split);
    }
    /* a run on SST's dependency conversion (--tree-kind dependency) is
     * evaluated on the same conversion */
    const char *vl = strstr(config, "\nvocab\n");
    const char *tl = strstr(config, "\ntrees dependency\n");
    int run_dep_trees = tl != NULL && (vl == NULL || tl < vl);
    /* the run's seed: ListOps holds its validation part out of the
     * training file (or generates that file) with it, so --on valid
     * scores the examples the run validated on, none it trained on */
    unsigned long long run_seed = 0;
    const char *sl = strstr(config, "\nseed ");
    if (sl == NULL || (vl != NULL && sl > vl) ||
        sscanf(sl + 6, "%llu", &run_seed) != 1) {
        free(config);
        gr_error(GR_EFORMAT, "%s: its config has no seed line", ckpt);
        return cli_fail(cmd);
    }
    /* and the count of its generated trees (no line: the default) */
    int run_listops_n = 0;
    const char *nl = strstr(config, "\nlistops-n ");
    if (nl != NULL && (vl == NULL || nl < vl) &&
        (sscanf(nl + 11, "%d", &run_listops_n) != 1 || run_listops_n < 1)) {
        free(config);
        gr_error(GR_EFORMAT, "%s: its config's listops-n line is not a "
                             "count", ckpt);
        return cli_fail(cmd);
    }
    free(config);
    char *ckpt_vocab = NULL; /* the words the model was trained with */
    if (nlp_cls_model_load(&m, ckpt, &cc, task, &ckpt_vocab) < 0) {
        return cli_fail(cmd);
    }
    struct nlp_cls_task_options o;
    rc = task_options(cmd, task, split ? split : run_split, data, train, valid,
                      test, (uint64_t)run_seed, run_listops_n, s, &o);
    if (rc != CLI_CONTINUE) {
        nlp_cls_model_free(m);
        free(ckpt_vocab);
        return rc;
    }
    o.sst_dependency = run_dep_trees;
    struct nlp_cls_data d;
    if (nlp_cls_load_task(&d, task, &o) < 0) {
        nlp_cls_model_free(m);
        free(ckpt_vocab);
        return cli_fail(cmd);
    }
    /* the data summary, as training prints it (stderr: stdout keeps the
     * results alone) */
    if (!common.quiet) {
        fprintf(stderr, "%s\n", d.summary);
    }
    /* the data's words through the checkpoint's vocabulary: the ids of a
     * vocabulary built from other files mean other words */
    if (ckpt_vocab != NULL && d.vocab_text != NULL) {
        int32_t unknown = 0;
        rc = nlp_cls_use_vocab(&d, ckpt_vocab, &unknown);
        if (rc == 0 && !common.quiet) {
            fprintf(stderr, "vocabulary: the checkpoint's %d words; %d "
                    "of the data's words not among them, read as unknown "
                    "(<unk>, or padding where it has none)\n",
                    (int)d.pad_id, (int)unknown);
        }
        if (rc < 0) {
            free(ckpt_vocab);
            nlp_cls_model_free(m);
            nlp_cls_data_free(&d);
            return cli_fail(cmd);
        }
    }
    free(ckpt_vocab);
    struct nlp_cls_eval ev;
    rc = nlp_cls_evaluate(m, &d, s, batch, max_tokens, &ev);
    nlp_cls_model_free(m);
    if (rc < 0) {
        nlp_cls_data_free(&d);
        return cli_fail(cmd);
    }
    if (ev.n == 0) {
        nlp_cls_data_free(&d);
        gr_error(GR_EINVAL, "%s: the %s split is empty (give --test FILE or "
                            "--data DIR)",
                 task, which);
        return cli_fail(cmd);
    }
    printf("%s %s: accuracy %.4f on %lld examples, loss %.4f (%s)\n", task,
           which, ev.acc, (long long)ev.n, ev.loss, ckpt);
    if (ev.node_n > 0) {
        printf("accuracy over all labelled nodes %.4f on %lld nodes\n",
               ev.node_acc, (long long)ev.node_n);
    }
    if (ev.neg_pos_n + ev.neg_neg_n > 0) {
        printf("negation (docs/nlp/trees.md): negated positive %.4f on %lld "
               "nodes, negated negative %.4f on %lld nodes\n",
               ev.neg_pos_acc, (long long)ev.neg_pos_n, ev.neg_neg_acc,
               (long long)ev.neg_neg_n);
    }
    FILE *csv = NULL;
    struct gr_atomic_file af;
    if (common.out != NULL) {
        if (gr_atomic_open(&af, common.out, 1) < 0) {
            nlp_cls_data_free(&d);
            return cli_fail(cmd);
        }
        csv = af.fp;
        fprintf(csv, "group,n,accuracy\n");
    }
    for (int g = 0; g < NLP_CLS_MAX_GROUPS; g++) {
        if (ev.group_n[g] == 0) {
            continue;
        }
        if (per_length) {
            printf("  %s %2d: %.4f (%lld)\n",
                   strcmp(task, "logic") == 0 ? "operators" : "group", g,
                   ev.group_acc[g], (long long)ev.group_n[g]);
        }
        if (csv != NULL) {
            fprintf(csv, "%d,%lld,%.6f\n", g, (long long)ev.group_n[g],
                    ev.group_acc[g]);
        }
    }
    nlp_cls_data_free(&d);
    if (csv != NULL) {
        fprintf(csv, "all,%lld,%.6f\n", (long long)ev.n, ev.acc);
        if (gr_atomic_commit(&af) < 0) {
            return cli_fail(cmd);
        }
        printf("wrote %s\n", common.out);
    }
    return CLI_EXIT_OK;
}

const struct cli_command cmd_nlp_classify_eval = {
    "nlp classify eval",
    "Accuracy of a trained classifier on its task's test (or validation) "
    "set.",
    "",
    "Reads the task and its split from the checkpoint; the data comes from "
    "--data or the file flags as for training; for sst2, sst5 and snli its "
    "words are read through the checkpoint's vocabulary (a word it lacks "
    "as <unk>, or as padding in a vocabulary without <unk>), so any test "
    "file can be scored. Only the data of the split scored is read: for "
    "the test split no training file is read, nor ListOps trees generated "
    "(a test file alone is enough). Prints the data summary first, on stderr as "
    "training does (the file or folder read, its examples; logic: their "
    "operator counts k), then the results on stdout. --on valid "
    "scores the run's own validation part "
    "(ListOps: held out of --train, or of the trees generated, with the "
    "seed and count the config records). --out writes a CSV (group, n, "
    "accuracy). Example: "
    "grove nlp classify eval --checkpoint "
    "runs/om-logic/best.ckpt --data ../shared/data/logic_inference "
    "--per-length",
    run_eval,
};

/* ---- grove nlp classify trees -------------------------------------------- */

/* What the trees command keeps across sequences. */
struct trees_run {
    struct nlp_cls_model *m;
    struct nlp_parse_eval ev;
    int64_t evaluated, skipped; /* sequences scored; of < 2 tokens */
    int32_t cap;                /* tokens the buffers below hold */
    int32_t *ids;
    uint8_t *drop;
    const char **words;
    struct nlp_span *pred, *gold, *work;
    char *text;
    size_t text_cap;
};

static int trees_reserve(struct trees_run *r, int32_t n)
{
    if (n <= r->cap) {
        return 0;
    }
    free(r->ids);
    free(r->drop);
    free(r->words);
    free(r->pred);
    free(r->gold);
    free(r->work);
    r->ids = malloc((size_t)n * sizeof *r->ids);
    r->drop = malloc((size_t)n);
    r->words = malloc((size_t)n * sizeof *r->words);
    r->pred = malloc((size_t)n * sizeof *r->pred);
    r->gold = malloc((size_t)n * sizeof *r->gold);
    r->work = malloc((size_t)n * 2 * sizeof *r->work);
    if (!r->ids || !r->drop || !r->words || !r->pred || !r->gold || !r->work) {
        r->cap = 0;
        return gr_error(GR_ENOMEM, "trees: out of memory");
    }
    r->cap = n;
    return 0;
}

static void trees_free(struct trees_run *r)
{
    free(r->ids);
    free(r->drop);
    free(r->words);
    free(r->pred);
    free(r->gold);
    free(r->work);
    free(r->text);
    nlp_parse_eval_free(&r->ev);
}

/* The induced tree of tok[0..n) (logic: the parentheses dropped), written
 * to fp in brackets and scored against gold[n_gold] (over the kept
 * tokens) when at least 2 tokens are kept. */
static int trees_one(struct trees_run *r, const uint8_t *tok, int32_t n,
                     int logic, const struct nlp_span *gold, int32_t n_gold,
                     FILE *fp)
{
    int32_t kept = 0;
    for (int32_t i = 0; i < n; i++) {
        r->ids[i] = tok[i];
        r->drop[i] = logic && (tok[i] == NLP_LOGIC_LPAREN ||
                               tok[i] == NLP_LOGIC_RPAREN);
        if (!r->drop[i]) {
            r->words[kept++] = logic ? nlp_logic_token_name(tok[i])
                                     : nlp_listops_token_name(tok[i]);
        }
    }
    int32_t k = 0;
    if (kept >= 2) {
        k = nlp_cls_tree(r->m, r->ids, n, logic ? r->drop : NULL, r->pred);
        if (k < 0) {
            return k;
        }
    }
    int need = nlp_tree_format(r->words, kept, r->pred, k, r->work, r->text,
                               r->text_cap);
    if (need >= 0 && (size_t)need >= r->text_cap) {
        free(r->text);
        r->text_cap = (size_t)need + 1;
        r->text = malloc(r->text_cap);
        if (r->text == NULL) {
            r->text_cap = 0;
            return gr_error(GR_ENOMEM, "trees: out of memory");
        }
        need = nlp_tree_format(r->words, kept, r->pred, k, r->work, r->text,
                               r->text_cap);
    }
    if (need < 0) {
        return need;
    }
    fputs(r->text, fp);
    if (kept < 2) {
        r->skipped++;
        return 0;
    }
    r->evaluated++;
    return nlp_parse_eval_add(&r->ev, kept, r->pred, k, gold, n_gold, NULL, 0);
}

static int trees_listops(struct trees_run *r, const char *path, int64_t limit,
                         int quiet, FILE *fp, int64_t *done)
{
    struct nlp_listops_set s;
    int rc = nlp_listops_read_file(&s, path);
    if (rc < 0) {
        return rc;
    }
    int64_t n = limit > 0 && limit < s.n ? limit : s.n;
    rc = trees_reserve(r, s.max_tokens > 1 ? s.max_tokens : 1);
    for (int64_t i = 0; rc == 0 && i < n; i++) {
        const struct nlp_listops_example *e = &s.examples[i];
        const uint8_t *tok = s.tokens + e->tokens;
        int32_t ng = nlp_listops_tree(tok, e->n_tokens, r->gold);
        if (ng < 0) {
            rc = gr_error(GR_EFORMAT, "%s:%d: no gold tree", path,
                          (int)e->line);
            break;
        }
        rc = trees_one(r, tok, e->n_tokens, 0, r->gold, ng, fp);
        if (rc == 0 && fputc('\n', fp) == EOF) {
            rc = gr_error(GR_EIO, "trees: write failed");
        }
        if (rc < 0) {
            gr_error_wrap(rc, "%s:%d", path, (int)e->line);
        }
        if (!quiet && (i + 1) % 1000 == 0) {
            fprintf(stderr, "  %lld / %lld\n", (long long)(i + 1),
                    (long long)n);
        }
        *done = i + 1;
    }
    nlp_listops_free(&s);
    return rc;
}

static int trees_logic(struct trees_run *r, const char *dir, const char *file,
                       int64_t limit, int quiet, FILE *fp, int64_t *done)
{
    struct nlp_logic_set s;
    nlp_logic_set_init(&s);
    int rc = 0;
    if (file != NULL) {
        rc = nlp_logic_read_file(&s, file);
    }
    for (int k = 0; file == NULL && rc == 0 && k <= NLP_LOGIC_MAX_K; k++) {
        char name[16], path[GR_PATH_MAX];
        snprintf(name, sizeof name, "test%d", k);
        rc = gr_path_join(path, sizeof path, dir, name);
        if (rc == 0) {
            rc = nlp_logic_read_file(&s, path);
        }
    }
    int64_t n = limit > 0 && limit < s.n ? limit : s.n;
    if (rc == 0) {
        rc = trees_reserve(r, NLP_LOGIC_MAX_TOKENS);
    }
    for (int64_t i = 0; rc == 0 && i < n; i++) {
        const struct nlp_logic_pair *p = &s.pairs[i];
        const uint8_t *side[2] = {s.tokens + p->left, s.tokens + p->right};
        int32_t len[2] = {p->n_left, p->n_right};
        for (int j = 0; rc == 0 && j < 2; j++) {
            struct nlp_logic_expr e;
            rc = nlp_logic_parse(side[j], len[j], &e, r->gold);
            if (rc == 0) {
                rc = trees_one(r, side[j], len[j], 1, r->gold,
                               e.n_words - 1, fp);
            }
            if (rc == 0 && fputc(j == 0 ? '\t' : '\n', fp) == EOF) {
                rc = gr_error(GR_EIO, "trees: write failed");
            }
        }
        if (rc < 0) {
            gr_error_wrap(rc, "%s:%d", s.files[p->file], (int)p->line);
        }
        if (!quiet && (i + 1) % 10000 == 0) {
            fprintf(stderr, "  %lld / %lld pairs\n", (long long)(i + 1),
                    (long long)n);
        }
        *done = i + 1;
    }
    nlp_logic_set_free(&s);
    return rc;
}

static int run_trees(const struct cli_command *cmd, int argc, char **argv)
{
    const char *ckpt = NULL, *data = NULL, *test = NULL;
    int limit = 0;
    struct cli_common common;
    int first = 0;
    const struct cli_option opts[] = {
        CLI_STRING("checkpoint", "FILE", NULL,
                   "a checkpoint of grove nlp classify train with an om, "
                   "onlstm, ft, cft, fft or structformer encoder (required)",
                   &ckpt),
        CLI_STRING("data", "DIR", NULL,
                   "the task's folder (logic: test0..test12; listops: "
                   "test_d20s.tsv)",
                   &data),
        CLI_STRING("test", "FILE", NULL,
                   "one test file in the released format (instead of DIR's)",
                   &test),
        CLI_INT("limit", "N", "0", "the first N examples only (0: all)",
                &limit),
        CLI_END,
    };
    int rc = cli_parse(cmd, opts,
                       CLI_COMMON_DEVICE | CLI_COMMON_THREADS | CLI_COMMON_OUT |
                           CLI_COMMON_FORCE | CLI_COMMON_QUIET,
                       0, 0, argc, argv, &common, &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    if (ckpt == NULL) {
        return cli_usage_error(cmd, "--checkpoint FILE is required");
    }
    if (common.out == NULL) {
        return cli_usage_error(cmd, "--out FILE (the trees) is required");
    }
    if (limit < 0) {
        return cli_usage_error(cmd, "--limit must be 0 (all) or more");
    }
    if (data == NULL && test == NULL) {
        return cli_usage_error(cmd, "--data DIR or --test FILE is required");
    }
    if (!common.force && gr_path_exists(common.out)) {
        gr_error(GR_EEXIST, "%s exists (use --force to overwrite)",
                 common.out);
        return cli_fail(cmd);
    }
    struct gr_ctx_config cc;
    if ((rc = lm_cli_ctx_config(cmd, &common, &cc)) != CLI_CONTINUE) {
        return rc;
    }
    struct trees_run r;
    memset(&r, 0, sizeof r);
    char task[16];
    if (nlp_cls_model_load(&r.m, ckpt, &cc, task, NULL) < 0) {
        return cli_fail(cmd);
    }
    char model[NLP_ENCODER_NAME_CAP];
    snprintf(model, sizeof model, "%s", nlp_cls_model_encoder(r.m)->model);
    if (!nlp_cls_has_trees(r.m)) {
        nlp_cls_model_free(r.m);
        return cli_usage_error(cmd, "%s: model %s induces no tree (om, "
                                    "onlstm, ft, cft, fft and structformer "
                                    "do)",
                               ckpt, model);
    }
    int logic = strcmp(task, "logic") == 0;
    if (!logic && strcmp(task, "listops") != 0) {
        nlp_cls_model_free(r.m);
        return cli_usage_error(cmd, "%s: task %s has no gold trees here "
                                    "(logic and listops do)",
                               ckpt, task);
    }
    char path[GR_PATH_MAX];
    if (!logic && test == NULL) {
        if (gr_path_join(path, sizeof path, data, "test_d20s.tsv") < 0) {
            nlp_cls_model_free(r.m);
            return cli_fail(cmd);
        }
        test = path;
    }
    nlp_parse_eval_init(&r.ev);
    struct gr_atomic_file af;
    if (gr_atomic_open(&af, common.out, common.force) < 0) {
        nlp_cls_model_free(r.m);
        trees_free(&r);
        return cli_fail(cmd);
    }
    int64_t done = 0;
    rc = logic ? trees_logic(&r, data, test, limit, common.quiet, af.fp, &done)
               : trees_listops(&r, test, limit, common.quiet, af.fp, &done);
    if (rc == 0) {
        rc = gr_atomic_commit(&af);
    } else {
        gr_atomic_abort(&af);
    }
    nlp_cls_model_free(r.m);
    if (rc < 0) {
        trees_free(&r);
        return cli_fail(cmd);
    }
    struct nlp_parse_scores sc;
    nlp_parse_eval_scores(&r.ev, &sc);
    printf("%s: trees of %lld %s induced by %s (%s) -> %s\n", task,
           (long long)done, logic ? "pairs (premise TAB hypothesis)"
                                  : "examples",
           model, ckpt, common.out);
    printf("scored %lld sequences of >= 2 tokens against the gold trees "
           "(%lld shorter ones skipped)\n",
           (long long)r.evaluated, (long long)r.skipped);
    if (r.evaluated > 0) {
        printf("corpus F1 %.2f %% (EVALB-style: brackets pooled over all "
               "sequences, the whole-sequence bracket included; "
               "docs/tasks.md)\n",
               sc.f1_corpus_evalb);
        printf("sentence-level mean F1 %.2f %% (per sequence, brackets "
               "strictly below the root; docs/tasks.md)\n",
               sc.f1_sentence_mean);
    }
    trees_free(&r);
    return CLI_EXIT_OK;
}

const struct cli_command cmd_nlp_classify_trees = {
    "nlp classify trees",
    "Induced trees of a trained om, onlstm, ft, cft, fft or structformer "
    "classifier, and their parsing F1 against the gold trees (logic, "
    "ListOps).",
    "",
    "Encodes every test sequence alone (batch of one, evaluation mode, the "
    "eval slot count for om) and writes its tree in brackets, one example "
    "a line (logic: premise TAB hypothesis). Ordered Memory: its pointers "
    "(docs/models.md); onlstm and the FastTrees cells (ft, cft, fft): their "
    "forget distances and the greedy top-down parser; structformer: its "
    "parser's distances (one per gap between tokens, the sentence "
    "calibrated alone), each span split at its largest gap "
    "(docs/models.md). "
    "Logic trees are "
    "built over the input with its parentheses, which are then deleted and "
    "unary nodes collapsed. Gold trees and F1: docs/tasks.md. Prints the "
    "corpus F1 (the published "
    "number) and the sentence-level mean F1; sequences of fewer than 2 "
    "tokens are skipped. Example: grove nlp classify trees --checkpoint "
    "runs/om-listops/best.ckpt --data ../shared/data/listops --out "
    "trees.txt",
    run_trees,
};
