/* grove nlp classify train | eval: sentence and sentence-pair
 * classification (logic inference, ListOps, SST-2/5) with any encoder of
 * nlp/models/encoder.h, on the harness of nlp/tasks/classify.h and the
 * loaders of nlp/tasks/classify_tasks.h. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/lm_common.h"
#include "core/error.h"
#include "core/files.h"
#include "kernels/checkpoint.h"
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

/* The loader options from the data flags; the split word for the config. */
static int task_options(const struct cli_command *cmd, const char *task,
                        const char *split, const char *data,
                        const char *train, const char *valid,
                        const char *test, uint64_t seed, int listops_n,
                        struct nlp_cls_task_options *o)
{
    nlp_cls_task_options_default(o);
    o->data = data;
    o->train = train;
    o->valid = valid;
    o->test = test;
    o->seed = seed;
    if (listops_n > 0) {
        o->listops_generate = listops_n;
    }
    if (strcmp(task, "logic") == 0) {
        if (nlp_logic_split_parse(split, &o->logic_split) < 0) {
            return cli_usage_error(cmd, "--split '%s' is not full, A, B or C",
                                   split);
        }
        if (data == NULL && train == NULL) {
            return cli_usage_error(cmd, "--task logic needs --data DIR (the "
                                        "released train0..12/test0..12) or "
                                        "--train FILE");
        }
    } else if (strcmp(split, "full") != 0) {
        return cli_usage_error(cmd, "--split is for --task logic only");
    }
    if (strncmp(task, "sst", 3) == 0 && data == NULL &&
        (train == NULL || valid == NULL || test == NULL)) {
        return cli_usage_error(cmd, "--task %s needs --data DIR (the SST "
                                    "trees) or --train, --valid and --test",
                               task);
    }
    return CLI_CONTINUE;
}

static int run_train(const struct cli_command *cmd, int argc, char **argv)
{
    const char *task = NULL, *model = "om", *split = "full", *data = NULL;
    const char *train = NULL, *valid = NULL, *test = NULL;
    int epochs = -1, batch = -1, emsize = -1, nhid = -1, chunk = -1;
    int slots = -1, slots_eval = -1, max_batches = 0, resume = 0;
    int select_on_test = 0, test_every = 1, eval_batch = 256, listops_n = 0;
    int head_hidden = -2;
    double lr = 1e-3, clip = 1.0, wdecay = 1.2e-6, dropouti = -1,
           dropout = -1, dropoutm = -1, dropouto = -1;
    struct cli_common common;
    int first = 0;
    char models_help[256];
    snprintf(models_help, sizeof models_help,
             "the encoder (%s); om is Ordered Memory", nlp_encoder_names());
    const struct cli_option opts[] = {
        CLI_STRING("task", "logic|listops|sst2|sst5", NULL,
                   "the task (required; grove nlp tasks lists them)", &task),
        CLI_STRING("model", "NAME", "om", models_help, &model),
        CLI_STRING("split", "full|A|B|C", "full",
                   "logic: the training pairs kept (formal_tasks.md §1.6's "
                   "systematic splits A, B, C)",
                   &split),
        CLI_STRING("data", "DIR", NULL,
                   "the task's folder (logic: train0..12/test0..12; sst: the "
                   "trees; listops: train_d20s.tsv/test_d20s.tsv when there)",
                   &data),
        CLI_STRING("train", "FILE", NULL, "training file (instead of DIR's)",
                   &train),
        CLI_STRING("valid", "FILE", NULL, "validation file", &valid),
        CLI_STRING("test", "FILE", NULL, "test file", &test),
        CLI_INT("listops-n", "N", "90000",
                "ListOps without a training file: examples generated",
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
        CLI_DOUBLE("lr", "LR", "0.001", "Adam learning rate", &lr),
        CLI_DOUBLE("clip", "NORM", "1", "global gradient-norm clipping",
                   &clip),
        CLI_DOUBLE("wdecay", "W", "1.2e-6", "weight decay", &wdecay),
        CLI_INT("emsize", "N", NULL, "embedding size (default: the model's "
                                     "for the task)",
                &emsize),
        CLI_INT("nhid", "N", NULL, "state size D (default: the model's)",
                &nhid),
        CLI_INT("chunk-size", "N", NULL, "ON-LSTM chunk size (default 10)",
                &chunk),
        CLI_INT("slots", "N", NULL,
                "OM memory slots while training (default: the task's)",
                &slots),
        CLI_INT("slots-eval", "N", NULL,
                "OM memory slots for validation, test and trees (default: "
                "the task's)",
                &slots_eval),
        CLI_DOUBLE("dropouti", "P", NULL,
                   "dropout on the embeddings (default: the model's)",
                   &dropouti),
        CLI_DOUBLE("dropout", "P", NULL, "OM cell dropout r_c (default: the "
                                         "task's)",
                   &dropout),
        CLI_DOUBLE("dropoutm", "P", NULL,
                   "OM memory dropout r_m (default: the task's)", &dropoutm),
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
        CLI_FLAG("select-on-test",
                 "pick the model and drive the schedule on test accuracy "
                 "(the ListOps reference's protocol; ordered_memory.md §9 "
                 "note); default: on validation",
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
                                    "sst2 or sst5)");
    }
    if (!nlp_cls_task_known(task)) {
        return cli_usage_error(cmd, "--task '%s' is not logic, listops, sst2 "
                                    "or sst5",
                               task);
    }
    if (common.out == NULL) {
        return cli_usage_error(cmd, "--out DIR (the run folder) is required");
    }
    if (resume && common.force) {
        return cli_usage_error(cmd, "--resume and --force exclude each other");
    }
    struct nlp_cls_train_config tc;
    nlp_cls_train_config_default(&tc, task);
    if (nlp_encoder_config_default(&tc.enc, model, task) < 0) {
        return cli_usage_error(cmd, "--model: %s", gr_last_error());
    }
    if ((epochs != -1 && epochs < 0) || (batch != -1 && batch < 1) ||
        max_batches < 0 || test_every < 1 || eval_batch < 1 ||
        !(lr > 0) || !(clip >= 0) || !(wdecay >= 0)) {
        return cli_usage_error(cmd, "--epochs >= 0, --batch >= 1, "
                                    "--max-batches >= 0, --test-every >= 1, "
                                    "--lr > 0, --clip and --wdecay >= 0");
    }
    const double *drops[] = {&dropouti, &dropout, &dropoutm, &dropouto};
    const char *dnames[] = {"--dropouti", "--dropout", "--dropoutm",
                            "--dropouto"};
    for (int i = 0; i < 4; i++) {
        if (*drops[i] != -1 && !(*drops[i] >= 0 && *drops[i] < 1)) {
            return cli_usage_error(cmd, "%s %g must be in [0, 1)", dnames[i],
                                   *drops[i]);
        }
    }
    if (epochs != -1) {
        tc.epochs = epochs;
    }
    if (batch != -1) {
        tc.batch = batch;
    }
    if (emsize != -1) {
        tc.enc.emsize = emsize;
    }
    if (nhid != -1) {
        tc.enc.hidden = nhid;
    }
    if (chunk != -1) {
        tc.enc.chunk = chunk;
    }
    if (slots != -1) {
        tc.enc.slots_train = slots;
    }
    if (slots_eval != -1) {
        tc.enc.slots_eval = slots_eval;
    }
    if (dropouti != -1) {
        tc.enc.dropout_in = (float)dropouti;
    }
    if (dropout != -1) {
        tc.enc.dropout_cell = (float)dropout;
    }
    if (dropoutm != -1) {
        tc.enc.dropout_mem = (float)dropoutm;
    }
    if (dropouto != -1) {
        tc.dropout_out = (float)dropouto;
    }
    if (head_hidden != -2) {
        if (head_hidden < 0) {
            return cli_usage_error(cmd, "--head-hidden must be 0 or more");
        }
        tc.head_hidden = head_hidden;
    }
    tc.lr = (float)lr;
    tc.clip = (float)clip;
    tc.wdecay = (float)wdecay;
    tc.max_batches = max_batches;
    tc.test_every = test_every;
    tc.eval_batch = eval_batch;
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
                      listops_n, &o);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
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
    if (nlp_encoder_config_check(&tc.enc) < 0) {
        nlp_cls_data_free(&d);
        return cli_usage_error(cmd, "%s", gr_last_error());
    }
    if (!common.quiet) {
        fprintf(stderr, "model: %s, emsize %d, D %d, on %s, %d epochs of "
                        "batch %d\n",
                tc.enc.model, (int)tc.enc.emsize, (int)tc.enc.hidden,
                common.device == CLI_DEVICE_CUDA ? "cuda" : "cpu",
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
    }
    printf("wrote %s/metrics.csv, curves.png, last.ckpt\n", common.out);
    return CLI_EXIT_OK;
}

const struct cli_command cmd_nlp_classify_train = {
    "nlp classify train",
    "Train a sentence (pair) classifier: logic inference, ListOps, SST.",
    "",
    "Defaults are the reference's (ordered_memory.md §9; on_lstm.md §11 for "
    "lstm and onlstm). Prints a data summary first. Writes into --out: "
    "command, config, metrics.csv (epoch, global_step, train_loss, "
    "train_acc, valid_acc, test_acc, lr, wall_s and, for logic, test_acc_1 "
    "to test_acc_12 by number of operators), curves.png, best.ckpt (best "
    "validation accuracy) and last.ckpt (--resume continues it bit for "
    "bit). Example: grove nlp classify train --task listops --model lstm "
    "--epochs 2 --max-batches 20 --out runs/listops-smoke",
    run_train,
};

static int run_eval(const struct cli_command *cmd, int argc, char **argv)
{
    const char *ckpt = NULL, *split = NULL, *data = NULL, *train = NULL,
               *valid = NULL, *test = NULL, *which = "test";
    int per_length = 0, batch = 256;
    struct cli_common common;
    int first = 0;
    const struct cli_option opts[] = {
        CLI_STRING("checkpoint", "FILE", NULL,
                   "a checkpoint of grove nlp classify train (required)",
                   &ckpt),
        CLI_STRING("data", "DIR", NULL, "the task's folder", &data),
        CLI_STRING("train", "FILE", NULL, "training file (listops: the "
                                          "validation hold-out comes from it)",
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
        CLI_END,
    };
    int rc = cli_parse(cmd, opts,
                       CLI_COMMON_DEVICE | CLI_COMMON_THREADS | CLI_COMMON_OUT |
                           CLI_COMMON_FORCE | CLI_COMMON_QUIET | CLI_COMMON_SEED,
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
    if (s < 0 || batch < 1) {
        return cli_usage_error(cmd, "--on valid|test, --batch >= 1");
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
    char run_split[16] = "full";
    const char *dl = strstr(config, "\ndata ");
    if (dl != NULL) {
        sscanf(dl + 6, "%15s", run_split);
    }
    free(config);
    if (nlp_cls_model_load(&m, ckpt, &cc, task, NULL) < 0) {
        return cli_fail(cmd);
    }
    struct nlp_cls_task_options o;
    rc = task_options(cmd, task, split ? split : run_split, data, train, valid,
                      test, 1111, 0, &o);
    if (rc != CLI_CONTINUE) {
        nlp_cls_model_free(m);
        return rc;
    }
    struct nlp_cls_data d;
    if (nlp_cls_load_task(&d, task, &o) < 0) {
        nlp_cls_model_free(m);
        return cli_fail(cmd);
    }
    struct nlp_cls_eval ev;
    rc = nlp_cls_evaluate(m, &d, s, batch, &ev);
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
    "--data or the file flags as for training. --out writes a CSV (group, "
    "n, accuracy). Example: grove nlp classify eval --checkpoint "
    "runs/om-logic/best.ckpt --data ../shared/data/logic_inference "
    "--per-length",
    run_eval,
};
